//! `hvia layout descriptor`: its options, and the descriptor they describe - encoded from
//! fields, or decoded from `--decode HEX` - as the exact bytes in host memory plus their
//! parsed form ([`Described`]). Printing is in `descriptor_out`.

use clap::{Args, ValueEnum};
use via_abi::descriptor::control_segment;
use via_abi::{
    AddressSegmentRepr, Control, DataSegmentRepr, DescriptorRepr, MemHandle, Op, WorkQueue,
};

use super::error::LayoutError;
use super::num::{decode_hex, le_value, parse_u16, parse_u32, parse_u64, plural};

/// Options of `hvia layout descriptor`. Numbers are decimal or `0x` hex (`_` may separate
/// digits). Without `--decode`, the options give the fields of a descriptor to encode.
#[derive(Debug, Args)]
#[command(
    after_help = "Numbers are decimal or 0x hex (_ may separate digits). Example: hvia layout descriptor --immediate 7 --remote-va 0xbf003000 --remote-handle 0x00200003 --segment 0x08001040:0x00100001:4"
)]
pub struct DescriptorArgs {
    /// Decode these bytes instead of encoding: hex, optional 0x, spaces and _ ignored
    /// (e.g. the 128 hex digits of a 64-byte RDMA write descriptor).
    #[arg(long, value_name = "HEX", conflicts_with_all = ENCODE_OPTIONS)]
    pub decode: Option<String>,
    /// Operation (control bits 1:0).
    #[arg(long, value_enum, default_value_t = OpArg::RdmaWrite)]
    pub op: OpArg,
    /// Next descriptor virtual address.
    #[arg(long, value_name = "VA", default_value = "0", value_parser = parse_u64)]
    pub next_va: u64,
    /// Next descriptor memory handle.
    #[arg(long, value_name = "HANDLE", default_value = "0", value_parser = parse_u32)]
    pub next_handle: u32,
    /// Immediate data; also sets the control word's immediate bit (unless --control).
    #[arg(long, value_name = "DATA", value_parser = parse_u32)]
    pub immediate: Option<u32>,
    /// Set the queue-fence bit (control 0x8).
    #[arg(long)]
    pub fence: bool,
    /// Raw control word, replacing what --op, --fence and --immediate put there; reserved
    /// bits (0xFFF0) are encoded and reported as a format error.
    #[arg(long, value_name = "WORD", value_parser = parse_u16, conflicts_with_all = ["op", "fence"])]
    pub control: Option<u16>,
    /// Status word (written by the VI provider on completion; 0 when posted).
    #[arg(long, value_name = "WORD", default_value = "0", value_parser = parse_u32)]
    pub status: u32,
    /// Remote buffer virtual address (address segment; RDMA operations only) [default: 0].
    #[arg(long, value_name = "VA", value_parser = parse_u64)]
    pub remote_va: Option<u64>,
    /// Remote memory handle (address segment; RDMA operations only) [default: 0].
    #[arg(long, value_name = "HANDLE", value_parser = parse_u32)]
    pub remote_handle: Option<u32>,
    /// A data segment: local buffer VA, memory handle and length; repeat for more
    /// segments, in order.
    #[arg(
        long = "segment",
        value_name = "VA:HANDLE:LEN",
        default_value = "0:0:4",
        value_parser = parse_segment
    )]
    pub segments: Vec<DataSegmentRepr>,
    /// Total length [default: the sum of the data segment lengths].
    #[arg(long, value_name = "BYTES", value_parser = parse_u32)]
    pub length: Option<u32>,
    /// Work queue the format check assumes (the total length is checked only on send).
    #[arg(long, value_enum, default_value_t = QueueArg::Send)]
    pub queue: QueueArg,
}

/// Ids of the options that describe a descriptor to encode (they conflict with --decode).
const ENCODE_OPTIONS: [&str; 11] = [
    "op",
    "next_va",
    "next_handle",
    "immediate",
    "fence",
    "control",
    "status",
    "remote_va",
    "remote_handle",
    "segments",
    "length",
];

/// `--op`: the operation of an encoded descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OpArg {
    /// Send (on the send queue) or receive (on the receive queue): data segments only.
    #[value(alias = "recv", alias = "send-recv")]
    Send,
    /// RDMA write: an address segment (remote buffer), then data segments.
    RdmaWrite,
    /// RDMA read: an address segment (remote buffer), then data segments.
    RdmaRead,
}

impl From<OpArg> for Op {
    fn from(op: OpArg) -> Op {
        match op {
            OpArg::Send => Op::SendRecv,
            OpArg::RdmaWrite => Op::RdmaWrite,
            OpArg::RdmaRead => Op::RdmaRead,
        }
    }
}

/// `--queue`: where the descriptor is posted, for the format check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum QueueArg {
    /// The send queue (sends, RDMA writes and reads).
    Send,
    /// The receive queue (receives).
    Receive,
}

impl From<QueueArg> for WorkQueue {
    fn from(q: QueueArg) -> WorkQueue {
        match q {
            QueueArg::Send => WorkQueue::Send,
            QueueArg::Receive => WorkQueue::Receive,
        }
    }
}

/// Parses `VA:HANDLE:LEN` (each part decimal or `0x` hex) into a data segment.
///
/// # Errors
/// A message naming the part that is wrong.
pub fn parse_segment(text: &str) -> Result<DataSegmentRepr, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let [va, handle, len] = parts[..] else {
        return Err(format!(
            "`{text}` is not VA:HANDLE:LEN (e.g. 0x08001040:0x00100001:4)"
        ));
    };
    Ok(DataSegmentRepr {
        local_va: parse_u64(va).map_err(|e| format!("VA: {e}"))?,
        local_handle: MemHandle(parse_u32(handle).map_err(|e| format!("HANDLE: {e}"))?),
        length: parse_u32(len).map_err(|e| format!("LEN: {e}"))?,
    })
}

/// A descriptor to print: its bytes exactly as they are in host memory and their parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// The descriptor's bytes (32 + 16 per segment).
    pub bytes: Vec<u8>,
    /// The parsed fields.
    pub repr: DescriptorRepr,
    /// The queue the format check assumes.
    pub queue: WorkQueue,
    /// Bytes after the descriptor in the `--decode` input, ignored.
    pub trailing: usize,
}

/// The descriptor `args` asks for: decoded from `--decode`, else encoded from the fields.
///
/// # Errors
/// A [`LayoutError`] naming the option with bad input.
pub fn describe(args: &DescriptorArgs) -> Result<Described, LayoutError> {
    match &args.decode {
        Some(text) => decode(text, args.queue.into()),
        None => encode(args),
    }
}

/// Builds the descriptor from the encode options and emits it.
fn encode(args: &DescriptorArgs) -> Result<Described, LayoutError> {
    let control = match args.control {
        Some(raw) => Control::from_bits_retain(raw),
        None => {
            let mut c = Control::from_op(args.op.into());
            c.set(Control::IMMEDIATE, args.immediate.is_some());
            c.set(Control::QUEUE_FENCE, args.fence);
            c
        }
    };
    let op = control.op();
    let address = if op.is_rdma() {
        Some(AddressSegmentRepr {
            remote_va: args.remote_va.unwrap_or(0),
            remote_handle: MemHandle(args.remote_handle.unwrap_or(0)),
            reserved: 0,
        })
    } else {
        for (option, given) in [
            ("--remote-va", args.remote_va),
            ("--remote-handle", args.remote_handle.map(u64::from)),
        ] {
            if let Some(v) = given {
                return Err(LayoutError::new(
                    option,
                    &format!("{v:#x}"),
                    "only RDMA write and RDMA read descriptors have an address segment",
                )
                .help("use --op rdma-write or --op rdma-read, or leave the option out"));
            }
        }
        None
    };
    let sum: u64 = args.segments.iter().map(|s| u64::from(s.length)).sum();
    let length = match args.length {
        Some(len) => len,
        None => u32::try_from(sum).map_err(|_| {
            LayoutError::new(
                "--segment",
                &sum.to_string(),
                format!("the data segment lengths add up to {sum} bytes, more than the 32-bit total length holds"),
            )
            .help("give --length explicitly to encode an inconsistent total")
        })?,
    };
    let repr = DescriptorRepr {
        next_va: args.next_va,
        next_handle: MemHandle(args.next_handle),
        control,
        reserved: 0,
        immediate: args.immediate.unwrap_or(0),
        length,
        status: via_abi::Status::from_bits_retain(args.status),
        address,
        data: args.segments.clone(),
    };
    let bytes = repr.to_bytes().map_err(|e| {
        let option = if repr.seg_count().is_none() {
            "--segment"
        } else {
            "--control"
        };
        LayoutError::new(option, "", e.to_string())
    })?;
    Ok(Described {
        bytes,
        repr,
        queue: args.queue.into(),
        trailing: 0,
    })
}

/// Decodes `--decode HEX`.
fn decode(text: &str, queue: WorkQueue) -> Result<Described, LayoutError> {
    let mut bytes =
        decode_hex(text).map_err(|e| LayoutError::new("--decode", text, e.message).at(e.span))?;
    let repr = DescriptorRepr::parse(&bytes).map_err(|e| parse_error(text, &bytes, &e))?;
    let len = repr.buffer_len().min(bytes.len());
    let trailing = bytes.len() - len;
    bytes.truncate(len);
    Ok(Described {
        bytes,
        repr,
        queue,
        trailing,
    })
}

/// The error for bytes that do not parse as a descriptor (in practice: too short).
fn parse_error(text: &str, bytes: &[u8], err: &via_abi::Error) -> LayoutError {
    let got = bytes.len();
    let message = match err {
        via_abi::Error::Truncated { need, .. } if got < control_segment::CONTROL_SEGMENT_LEN => {
            format!(
                "{} is too short for a VI descriptor: the control segment alone is {need} bytes",
                plural(got as u64, "byte")
            )
        }
        via_abi::Error::Truncated { need, .. } => {
            let n = le_value(bytes, control_segment::field::SEG_COUNT).unwrap_or(0);
            format!(
                "{} is too short: its segment count {n} needs {need} bytes \
                 (32-byte control segment + 16 per segment)",
                plural(got as u64, "byte")
            )
        }
        other => other.to_string(),
    };
    LayoutError::new("--decode", text, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::layout::LayoutCommand;
    use clap::Parser;
    use proptest::prelude::*;

    /// The descriptor `hvia layout descriptor ARGS` describes.
    fn describe_args(args: &[&str]) -> Result<Described, LayoutError> {
        let argv = ["hvia", "layout", "descriptor"].iter().chain(args);
        let cli = Cli::try_parse_from(argv).expect("valid command line");
        match cli.command {
            Some(Command::Layout(LayoutCommand::Descriptor(a))) => describe(&a),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn segments_parse_with_each_part_named() {
        assert_eq!(
            parse_segment("0x1000:7:0x10"),
            Ok(DataSegmentRepr {
                local_va: 0x1000,
                local_handle: MemHandle(7),
                length: 16,
            })
        );
        assert!(parse_segment("1:2").unwrap_err().contains("VA:HANDLE:LEN"));
        assert!(parse_segment("1:2:3:4").is_err());
        assert!(parse_segment("x:2:3").unwrap_err().starts_with("VA: "));
        assert!(parse_segment("1:0x1_0000_0000:3")
            .unwrap_err()
            .starts_with("HANDLE: "));
        assert!(parse_segment("1:2:-3").unwrap_err().starts_with("LEN: "));
    }

    #[test]
    fn encode_builds_the_descriptor_the_options_describe() {
        let d = describe_args(&["--op", "send", "--segment", "1:2:3", "--fence"]).unwrap();
        assert_eq!(
            d.repr.control,
            Control::from_op(Op::SendRecv) | Control::QUEUE_FENCE
        );
        assert_eq!(d.repr.address, None);
        assert_eq!(d.repr.length, 3);
        assert_eq!(d.bytes.len(), 48);
        assert_eq!(DescriptorRepr::parse(&d.bytes), Ok(d.repr.clone()));
        let d = describe_args(&["--control", "0x3"]).unwrap();
        assert_eq!(d.repr.control.op(), Op::Reserved);
        assert_eq!(d.repr.address, None, "reserved op: no address segment");
    }

    #[test]
    fn encode_errors_name_the_option() {
        let e = describe_args(&["--op", "send", "--remote-handle", "5"]).unwrap_err();
        assert_eq!(e.option, "--remote-handle");
        let e = describe_args(&["--control", "0", "--remote-va", "5"]).unwrap_err();
        assert_eq!(e.option, "--remote-va");
        let e = describe_args(&["--segment", "0:0:0xffffffff", "--segment", "0:0:1"]).unwrap_err();
        assert_eq!(e.option, "--segment");
        assert!(describe_args(&[
            "--segment",
            "0:0:0xffffffff",
            "--segment",
            "0:0:1",
            "--length",
            "0"
        ])
        .is_ok());
    }

    #[test]
    fn decode_errors_point_into_the_input() {
        let e = describe_args(&["--decode", "00 0g"]).unwrap_err();
        assert_eq!((e.option, e.span()), ("--decode", Some(4..5)));
        let e = describe_args(&["--decode", "0x00"]).unwrap_err();
        assert!(
            e.message.starts_with("1 byte is too short"),
            "{}",
            e.message
        );
        let d = describe_args(&["--decode", &"00".repeat(40)]).unwrap();
        assert_eq!((d.bytes.len(), d.trailing), (32, 8));
    }

    proptest! {
        #[test]
        fn any_bytes_decode_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let hex = super::super::num::hex_compact(&bytes);
            if let Ok(d) = decode(&hex, WorkQueue::Send) {
                prop_assert_eq!(&bytes[..d.bytes.len()], &d.bytes[..]);
                let _ = crate::layout::descriptor_out::text(&d);
                let _ = crate::layout::descriptor_out::json(&d);
            }
        }
    }
}
