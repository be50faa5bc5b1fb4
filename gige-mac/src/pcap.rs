//! A classic pcap writer (and a small reader for tests and tools) with nanosecond
//! timestamps taken from simulated time.
//!
//! File layout, every field little-endian (a pcap file is in its writer's byte order; the
//! magic number tells a reader which):
//!
//! | bytes | global header field | value |
//! |---|---|---|
//! | 0..4 | magic | 0xA1B23C4D (nanosecond timestamps) |
//! | 4..6 | version major | 2 |
//! | 6..8 | version minor | 4 |
//! | 8..12 | thiszone (GMT offset) | 0 |
//! | 12..16 | sigfigs | 0 |
//! | 16..20 | snaplen | 65535 |
//! | 20..24 | network (link type) | 1, Ethernet; with [`FcsMode::Keep`] 0x2400_0001: bit 26 says an FCS length is given, bits 31:28 give it in 16-bit words (2: 4 bytes) |
//!
//! | bytes | record header field | meaning |
//! |---|---|---|
//! | 0..4 | ts_sec | seconds of simulated time |
//! | 4..8 | ts_nsec | nanoseconds within that second |
//! | 8..12 | incl_len | bytes stored (at most snaplen) |
//! | 12..16 | orig_len | bytes of the frame as written |
//!
//! Frames are written from the destination address on (no preamble, no SFD). The FCS is
//! stripped by default ([`FcsMode::Strip`]): for link type 1 Wireshark assumes frames carry
//! no FCS unless told otherwise, and would show the 4 FCS bytes as trailer. Keep it
//! ([`FcsMode::Keep`]) to inspect FCS values: the link type then carries the FCS length
//! (the pcap format's FCS bits), which Wireshark reads, showing `eth.fcs`. Timestamps are what the caller passes; [`crate::gmii::Captured`] gives the
//! edge of a frame's first preamble byte at its transmitter.

use sim_kernel::Time;
use std::io::Write;
use via_abi::ethernet::FCS_LEN;

/// Magic number of a nanosecond-resolution pcap file.
pub const MAGIC_NANOS: u32 = 0xA1B2_3C4D;
/// Link type of Ethernet (LINKTYPE_ETHERNET).
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Link-type bits that say every frame ends in a 4-byte FCS: bit 26 (an FCS length is
/// given) and bits 31:28 = 2 (the length in 16-bit words).
pub const LINKTYPE_FCS_4: u32 = 0x0400_0000 | (2 << 28);
/// Largest number of bytes stored per record.
pub const SNAPLEN: u32 = 65_535;
/// Length of the global header \[bytes\].
pub const GLOBAL_HEADER_LEN: usize = 24;
/// Length of a record header \[bytes\].
pub const RECORD_HEADER_LEN: usize = 16;

const NS_PER_S: u64 = 1_000_000_000;

/// Whether frames are written with or without their FCS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FcsMode {
    /// Drop the last 4 bytes (what Wireshark expects for link type 1).
    #[default]
    Strip,
    /// Write the frame as on the wire, FCS included.
    Keep,
}

/// Why writing or reading a pcap failed.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The underlying writer failed.
    #[error("pcap write failed: {0}")]
    Io(#[from] std::io::Error),
    /// The bytes are not a pcap file this module reads.
    #[error("not a little-endian nanosecond pcap file: {0}")]
    Format(&'static str),
}

/// The 24-byte global header.
#[must_use]
pub fn global_header() -> [u8; GLOBAL_HEADER_LEN] {
    global_header_with(FcsMode::Strip)
}

/// The 24-byte global header for frames written in `fcs` mode (the link type says
/// whether they end in an FCS).
#[must_use]
pub fn global_header_with(fcs: FcsMode) -> [u8; GLOBAL_HEADER_LEN] {
    let network = match fcs {
        FcsMode::Strip => LINKTYPE_ETHERNET,
        FcsMode::Keep => LINKTYPE_ETHERNET | LINKTYPE_FCS_4,
    };
    let mut h = [0u8; GLOBAL_HEADER_LEN];
    h[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
    h[4..6].copy_from_slice(&2u16.to_le_bytes());
    h[6..8].copy_from_slice(&4u16.to_le_bytes());
    // thiszone and sigfigs stay 0.
    h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
    h[20..24].copy_from_slice(&network.to_le_bytes());
    h
}

/// Writes frames to a pcap stream.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    fcs: FcsMode,
    records: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header to `out` and returns the writer.
    ///
    /// # Errors
    /// [`PcapError::Io`] if `out` fails.
    pub fn new(mut out: W, fcs: FcsMode) -> Result<Self, PcapError> {
        out.write_all(&global_header_with(fcs))?;
        Ok(Self {
            out,
            fcs,
            records: 0,
        })
    }

    /// Writes one frame (bytes after the SFD, FCS included) seen at simulated time `at`.
    /// Every [`Time`] fits: 2^64 ps is about 1.8 x 10^7 s, far below 2^32 s.
    ///
    /// # Errors
    /// [`PcapError::Io`] if `out` fails.
    pub fn write_frame(&mut self, at: Time, frame: &[u8]) -> Result<(), PcapError> {
        let ns = at.as_ps() / 1_000;
        let sec = u32::try_from(ns / NS_PER_S).unwrap_or(u32::MAX);
        #[allow(clippy::cast_possible_truncation)]
        let nsec = (ns % NS_PER_S) as u32; // < 10^9
        let data = match self.fcs {
            FcsMode::Strip => frame
                .get(..frame.len().saturating_sub(FCS_LEN))
                .unwrap_or_default(),
            FcsMode::Keep => frame,
        };
        let orig = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let incl = orig.min(SNAPLEN);
        let mut h = [0u8; RECORD_HEADER_LEN];
        h[0..4].copy_from_slice(&sec.to_le_bytes());
        h[4..8].copy_from_slice(&nsec.to_le_bytes());
        h[8..12].copy_from_slice(&incl.to_le_bytes());
        h[12..16].copy_from_slice(&orig.to_le_bytes());
        self.out.write_all(&h)?;
        self.out
            .write_all(data.get(..incl as usize).unwrap_or(data))?;
        self.records += 1;
        Ok(())
    }

    /// Records written so far.
    #[must_use]
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes and returns the underlying writer.
    ///
    /// # Errors
    /// [`PcapError::Io`] if flushing fails.
    pub fn finish(mut self) -> Result<W, PcapError> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// One record read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcapRecord {
    /// Seconds.
    pub ts_sec: u32,
    /// Nanoseconds within the second.
    pub ts_nsec: u32,
    /// Length of the frame as written (may exceed `data.len()` if it was cut at snaplen).
    pub orig_len: u32,
    /// The bytes stored.
    pub data: Vec<u8>,
}

/// Reads a little-endian nanosecond Ethernet pcap file as [`PcapWriter`] writes it.
///
/// # Errors
/// [`PcapError::Format`] for another magic, version or link type, or a truncated file.
pub fn parse(bytes: &[u8]) -> Result<Vec<PcapRecord>, PcapError> {
    let header = bytes
        .get(..GLOBAL_HEADER_LEN)
        .ok_or(PcapError::Format("shorter than the global header"))?;
    if u32_at(header, 0) != Some(MAGIC_NANOS) {
        return Err(PcapError::Format("magic"));
    }
    if header.get(4..8) != Some(&[2, 0, 4, 0][..]) {
        return Err(PcapError::Format("version"));
    }
    // The link type, with or without the FCS-length bits.
    if u32_at(header, 20).map(|n| n & !LINKTYPE_FCS_4) != Some(LINKTYPE_ETHERNET) {
        return Err(PcapError::Format("link type"));
    }
    let mut records = Vec::new();
    let mut rest = bytes.get(GLOBAL_HEADER_LEN..).unwrap_or_default();
    while !rest.is_empty() {
        let h = rest
            .get(..RECORD_HEADER_LEN)
            .ok_or(PcapError::Format("truncated record header"))?;
        let field = |o| u32_at(h, o).ok_or(PcapError::Format("record header"));
        let (ts_sec, ts_nsec, incl, orig_len) = (field(0)?, field(4)?, field(8)?, field(12)?);
        let end = RECORD_HEADER_LEN.saturating_add(incl as usize);
        let data = rest
            .get(RECORD_HEADER_LEN..end)
            .ok_or(PcapError::Format("truncated record data"))?;
        records.push(PcapRecord {
            ts_sec,
            ts_nsec,
            orig_len,
            data: data.to_vec(),
        });
        rest = rest.get(end..).unwrap_or_default();
    }
    Ok(records)
}

fn u32_at(b: &[u8], offset: usize) -> Option<u32> {
    let s = b.get(offset..offset.checked_add(4)?)?;
    let mut a = [0u8; 4];
    a.copy_from_slice(s);
    Some(u32::from_le_bytes(a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::build;
    use via_abi::{EtherType, MacAddr};

    #[test]
    fn global_header_bytes() {
        assert_eq!(
            global_header(),
            [
                0x4D, 0x3C, 0xB2, 0xA1, // magic, nanosecond resolution
                0x02, 0x00, 0x04, 0x00, // version 2.4
                0x00, 0x00, 0x00, 0x00, // thiszone
                0x00, 0x00, 0x00, 0x00, // sigfigs
                0xFF, 0xFF, 0x00, 0x00, // snaplen 65535
                0x01, 0x00, 0x00, 0x00, // Ethernet
            ]
        );
    }

    #[test]
    fn records_round_trip_with_and_without_fcs() {
        let f = build(MacAddr([2; 6]), MacAddr([4; 6]), EtherType::Via, &[9; 100]).unwrap();
        let mut w = PcapWriter::new(Vec::new(), FcsMode::Strip).unwrap();
        // 1.5 s + 1234.5 ns: ns are truncated.
        w.write_frame(Time(1_500_001_234_500), &f).unwrap();
        w.write_frame(Time(8_000), &f[..2]).unwrap();
        assert_eq!(w.records(), 2);
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len(), 24 + 16 + 114 + 16);
        // First record header, exactly.
        assert_eq!(
            &bytes[24..40],
            &[
                1, 0, 0, 0, // 1 s
                0xD2, 0x69, 0xCD, 0x1D, // 500 001 234 ns
                114, 0, 0, 0, 114, 0, 0, 0, // 114 bytes: 118-byte frame without FCS
            ]
        );
        let recs = parse(&bytes).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!((recs[0].ts_sec, recs[0].ts_nsec), (1, 500_001_234));
        assert_eq!(recs[0].data, &f[..114]);
        assert_eq!(
            (recs[1].ts_sec, recs[1].ts_nsec, recs[1].orig_len),
            (0, 8, 0)
        );
        assert!(recs[1].data.is_empty());

        let mut k = PcapWriter::new(Vec::new(), FcsMode::Keep).unwrap();
        k.write_frame(Time::ZERO, &f).unwrap();
        let kept = k.finish().unwrap();
        assert_eq!(
            &kept[20..24],
            &[0x01, 0x00, 0x00, 0x24],
            "Ethernet, 4-byte FCS"
        );
        let recs = parse(&kept).unwrap();
        assert_eq!(recs[0].data, f);
        assert_eq!(recs[0].orig_len, 118);
    }

    #[test]
    fn long_frames_are_cut_at_snaplen_and_bad_files_refused() {
        let big = vec![0xAB; 70_000];
        let mut w = PcapWriter::new(Vec::new(), FcsMode::Keep).unwrap();
        w.write_frame(Time::ZERO, &big).unwrap();
        w.write_frame(Time::MAX, &big[..64]).unwrap();
        let bytes = w.finish().unwrap();
        let recs = parse(&bytes).unwrap();
        assert_eq!((recs[0].data.len(), recs[0].orig_len), (65_535, 70_000));
        // The latest instant: 18 446 744 s + 73 709 551 ns.
        assert_eq!((recs[1].ts_sec, recs[1].ts_nsec), (18_446_744, 73_709_551));
        assert!(matches!(parse(&bytes[..20]), Err(PcapError::Format(_))));
        assert!(matches!(parse(&bytes[..30]), Err(PcapError::Format(_))));
        assert!(matches!(parse(&bytes[..50]), Err(PcapError::Format(_))));
        let mut wrong = bytes.clone();
        wrong[0] = 0xD4; // microsecond magic
        assert!(matches!(parse(&wrong), Err(PcapError::Format("magic"))));
        let mut wrong = bytes;
        wrong[20] = 101;
        assert!(matches!(parse(&wrong), Err(PcapError::Format("link type"))));
    }
}
