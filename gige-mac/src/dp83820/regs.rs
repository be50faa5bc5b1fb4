//! The DP83820's operational registers as seen on the local bus (its memory BAR), and the
//! fields of TXCFG and RXCFG the model uses.
//!
//! Offsets and bit positions are the National DP83820 datasheet's register map (the
//! same values the Linux `ns83820` driver and gem5's DP83820 model use):
//!
//! | offset | name | model |
//! |---|---|---|
//! | 0x00 | CR, command | TXE (bit 0), TXD (1), RXE (2), RXD (3) act; TXR, RXR, SWI, RST are counted and ignored |
//! | 0x04 | CFG | stored |
//! | 0x10 | ISR | read clears; bits below |
//! | 0x14 | IMR, 0x18 IER | stored (no interrupt line on the local bus: the GEC watches write-backs) |
//! | 0x20 | TXDP | transmit descriptor pointer (low 32 bits) |
//! | 0x24 | TXDP_HI | stored (32-bit addressing) |
//! | 0x28 | TXCFG | ATP (28), MXDMA (22:20), FLTH (15:8, x32 bytes), DRTH (7:0, x32 bytes) |
//! | 0x30 | RXDP | receive descriptor pointer (low 32 bits) |
//! | 0x34 | RXDP_HI | stored |
//! | 0x38 | RXCFG | STRIPCRC (29), MXDMA (22:20), DRTH (5:1, x8 bytes) |
//!
//! Note: the brief's TXCFG 0x24 / RXCFG 0x34 are the DP83815's offsets; the DP83820 has
//! the high halves of the 64-bit descriptor pointers there.
//!
//! MXDMA (max DMA burst) encoding: 0 = 1024 bytes, n = 1..7 = `4 << n` bytes (8 .. 512).

/// Command register.
pub const CR: u64 = 0x00;
/// Configuration register.
pub const CFG: u64 = 0x04;
/// Interrupt status register (read clears).
pub const ISR: u64 = 0x10;
/// Interrupt mask register.
pub const IMR: u64 = 0x14;
/// Interrupt enable register.
pub const IER: u64 = 0x18;
/// Transmit descriptor pointer.
pub const TXDP: u64 = 0x20;
/// Transmit descriptor pointer, high 32 bits.
pub const TXDP_HI: u64 = 0x24;
/// Transmit configuration.
pub const TXCFG: u64 = 0x28;
/// Receive descriptor pointer.
pub const RXDP: u64 = 0x30;
/// Receive descriptor pointer, high 32 bits.
pub const RXDP_HI: u64 = 0x34;
/// Receive configuration.
pub const RXCFG: u64 = 0x38;
/// Bytes the register BAR decodes \[bytes\] (assumption: a 4 KB memory BAR; the registers
/// use the first 256 bytes).
pub const WINDOW_BYTES: u64 = 4096;

/// CR bits.
pub mod cr {
    /// Transmit enable: start (or poll) the transmit descriptor list at TXDP.
    pub const TXE: u32 = 1 << 0;
    /// Transmit disable.
    pub const TXD: u32 = 1 << 1;
    /// Receive enable: start (or resume) the receive descriptor list at RXDP.
    pub const RXE: u32 = 1 << 2;
    /// Receive disable.
    pub const RXD: u32 = 1 << 3;
    /// Transmit reset (not modelled).
    pub const TXR: u32 = 1 << 4;
    /// Receive reset (not modelled).
    pub const RXR: u32 = 1 << 5;
    /// Software interrupt (not modelled).
    pub const SWI: u32 = 1 << 7;
    /// Chip reset (not modelled).
    pub const RST: u32 = 1 << 8;
}

/// ISR bits the model sets.
pub mod isr {
    /// A good frame was received.
    pub const RXOK: u32 = 1 << 0;
    /// Receive error (a frame discarded: bad FCS, runt, too long, no room).
    pub const RXERR: u32 = 1 << 2;
    /// The receive engine reached a descriptor it does not own and went idle.
    pub const RXIDLE: u32 = 1 << 4;
    /// Receive FIFO overrun: a frame did not fit.
    pub const RXORN: u32 = 1 << 5;
    /// A frame was sent.
    pub const TXOK: u32 = 1 << 6;
    /// Transmit error.
    pub const TXERR: u32 = 1 << 8;
    /// The transmit engine reached a descriptor it does not own and went idle.
    pub const TXIDLE: u32 = 1 << 9;
    /// Transmit FIFO underrun.
    pub const TXURN: u32 = 1 << 10;
    /// A bus master access ended with target abort.
    pub const RTABT: u32 = 1 << 17;
    /// A bus master access ended with master abort.
    pub const RMABT: u32 = 1 << 18;
}

const MXDMA_SHIFT: u32 = 20;
const MXDMA_MASK: u32 = 0x7 << MXDMA_SHIFT;
const TX_ATP: u32 = 1 << 28;
const RX_STRIPCRC: u32 = 1 << 29;

/// The MXDMA code for a burst of at most `bytes` (rounded down to 8 .. 1024).
#[must_use]
pub fn mxdma_code(bytes: u64) -> u32 {
    if bytes >= 1024 {
        return 0;
    }
    // 4 << n <= bytes, n in 1..=7
    let mut n = 7u32;
    while n > 1 && (4u64 << n) > bytes {
        n -= 1;
    }
    n
}

/// Bytes of a burst of MXDMA code `code` (bits 22:20 of TXCFG/RXCFG).
#[must_use]
pub fn mxdma_bytes(code: u32) -> u64 {
    match code & 0x7 {
        0 => 1024,
        n => 4u64 << n,
    }
}

/// The TXCFG fields the model uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxCfg {
    /// Largest transmit DMA burst \[bytes\].
    pub mxdma: u64,
    /// Fill threshold: free FIFO bytes needed before the bus side fetches more \[bytes,
    /// multiple of 32\].
    pub fill: u64,
    /// Drain threshold: bytes of a frame in the FIFO before the MAC starts sending it
    /// (or the whole frame) \[bytes, multiple of 32\].
    pub drain: u64,
    /// Automatic padding of short frames to 60 bytes (before the FCS).
    pub auto_pad: bool,
}

impl TxCfg {
    /// Decodes a TXCFG value.
    #[must_use]
    pub fn decode(v: u32) -> Self {
        Self {
            mxdma: mxdma_bytes((v & MXDMA_MASK) >> MXDMA_SHIFT),
            fill: u64::from((v >> 8) & 0xFF) * 32,
            drain: u64::from(v & 0xFF) * 32,
            auto_pad: v & TX_ATP != 0,
        }
    }

    /// Encodes (thresholds rounded down to 32 bytes and capped at 255 units).
    #[must_use]
    pub fn encode(&self) -> u32 {
        let unit = |b: u64| u32::try_from((b / 32).min(255)).unwrap_or(255);
        (mxdma_code(self.mxdma) << MXDMA_SHIFT)
            | (unit(self.fill) << 8)
            | unit(self.drain)
            | if self.auto_pad { TX_ATP } else { 0 }
    }
}

/// The RXCFG fields the model uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxCfg {
    /// Largest receive DMA burst \[bytes\].
    pub mxdma: u64,
    /// Drain threshold: bytes of a frame in the FIFO before the bus side starts moving it
    /// (or the end of the frame) \[bytes, multiple of 8, at most 248\].
    pub drain: u64,
    /// Strip the FCS: it is not written to memory nor counted in the size.
    pub strip_crc: bool,
}

impl RxCfg {
    /// Decodes an RXCFG value.
    #[must_use]
    pub fn decode(v: u32) -> Self {
        Self {
            mxdma: mxdma_bytes((v & MXDMA_MASK) >> MXDMA_SHIFT),
            drain: u64::from((v >> 1) & 0x1F) * 8,
            strip_crc: v & RX_STRIPCRC != 0,
        }
    }

    /// Encodes (drain threshold rounded down to 8 bytes and capped at 31 units).
    #[must_use]
    pub fn encode(&self) -> u32 {
        let unit = u32::try_from((self.drain / 8).min(31)).unwrap_or(31);
        (mxdma_code(self.mxdma) << MXDMA_SHIFT)
            | (unit << 1)
            | if self.strip_crc { RX_STRIPCRC } else { 0 }
    }
}

/// The register values the model keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Registers {
    /// CFG.
    pub cfg: u32,
    /// ISR (pending, not yet read).
    pub isr: u32,
    /// IMR.
    pub imr: u32,
    /// IER.
    pub ier: u32,
    /// TXDP: the descriptor the transmit engine works on or starts from.
    pub txdp: u32,
    /// TXDP_HI.
    pub txdp_hi: u32,
    /// TXCFG.
    pub txcfg: u32,
    /// RXDP: the descriptor the receive engine works on or starts from.
    pub rxdp: u32,
    /// RXDP_HI.
    pub rxdp_hi: u32,
    /// RXCFG.
    pub rxcfg: u32,
}

impl Registers {
    /// The value a read of the dword at `offset` returns (`cr`: the CR read value); ISR
    /// reads clear it.
    pub fn read(&mut self, offset: u64, cr: u32) -> u32 {
        match offset {
            CR => cr,
            CFG => self.cfg,
            ISR => std::mem::take(&mut self.isr),
            IMR => self.imr,
            IER => self.ier,
            TXDP => self.txdp,
            TXDP_HI => self.txdp_hi,
            TXCFG => self.txcfg,
            RXDP => self.rxdp,
            RXDP_HI => self.rxdp_hi,
            RXCFG => self.rxcfg,
            _ => 0,
        }
    }

    /// Stores a plain register (not CR, not ISR); false for an offset the model does not keep.
    pub fn store(&mut self, offset: u64, v: u32) -> bool {
        let r = match offset {
            CFG => &mut self.cfg,
            IMR => &mut self.imr,
            IER => &mut self.ier,
            TXDP => &mut self.txdp,
            TXDP_HI => &mut self.txdp_hi,
            TXCFG => &mut self.txcfg,
            RXDP => &mut self.rxdp,
            RXDP_HI => &mut self.rxdp_hi,
            RXCFG => &mut self.rxcfg,
            _ => return false,
        };
        *r = v;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mxdma_table() {
        assert_eq!(mxdma_bytes(0), 1024);
        assert_eq!(mxdma_bytes(7), 512);
        assert_eq!(mxdma_bytes(1), 8);
        assert_eq!(mxdma_code(512), 7);
        assert_eq!(mxdma_code(1024), 0);
        assert_eq!(mxdma_code(300), 6, "rounded down to 256");
        assert_eq!(mxdma_code(1), 1, "at least 8");
    }

    #[test]
    fn cfg_fields_both_ways() {
        // TXCFG = ATP | MXDMA512 | FLTH 512 | DRTH 1024: 0x1070_1020 (datasheet bit positions).
        let t = TxCfg {
            mxdma: 512,
            fill: 512,
            drain: 1024,
            auto_pad: true,
        };
        assert_eq!(t.encode(), 0x1070_1020);
        assert_eq!(TxCfg::decode(0x1070_1020), t);
        // RXCFG = STRIPCRC | MXDMA512 | DRTH 64 bytes (8 units in bits 5:1).
        let r = RxCfg {
            mxdma: 512,
            drain: 64,
            strip_crc: true,
        };
        assert_eq!(r.encode(), 0x2070_0010);
        assert_eq!(RxCfg::decode(0x2070_0010), r);
        assert_eq!(RxCfg::decode(0xFFFF_FFFF).drain, 248);
    }

    #[test]
    fn isr_reads_clear() {
        let mut r = Registers {
            isr: isr::TXOK | isr::RXOK,
            ..Registers::default()
        };
        assert_eq!(r.read(ISR, 0), 0x41);
        assert_eq!(r.read(ISR, 0), 0);
        assert!(r.store(TXDP, 5));
        assert!(!r.store(0x80, 5));
        assert_eq!(r.read(TXDP, 0), 5);
    }
}
