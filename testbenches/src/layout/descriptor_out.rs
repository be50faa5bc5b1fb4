//! What `hvia layout descriptor` prints for a [`Described`] descriptor: one row per field
//! (names and byte ranges from via-abi's [`DescriptorRepr::field_spans`], values read from
//! the bytes), the JSON of the CLI contract, and the notes of the table form.

use serde::Serialize;
use via_abi::descriptor::{address_segment, control_segment, data_segment};
use via_abi::{CompletedOp, Control, DescriptorRepr, MemHandle, Op, Status, WorkQueue};

use super::descriptor::Described;
use super::num::{hex_compact, hex_value, le_value, plural};
use super::rows::{table, Row};
use super::Ranges;

/// Name of an operation as `--op` spells it (`reserved` for encoding 3).
#[must_use]
pub fn op_name(op: Op) -> &'static str {
    match op {
        Op::SendRecv => "send",
        Op::RdmaWrite => "rdma-write",
        Op::RdmaRead => "rdma-read",
        Op::Reserved => "reserved",
    }
}

/// One row per field of the descriptor, in byte order.
#[must_use]
pub fn rows(d: &Described) -> Vec<Row> {
    d.repr
        .field_spans()
        .into_iter()
        .map(|span| {
            let bytes = d.bytes.get(span.range.clone()).unwrap_or_default().to_vec();
            let raw = le_value(&d.bytes, span.range.clone()).unwrap_or(0);
            let leaf = span.name.rsplit('.').next().unwrap_or_default();
            let value = if matches!(leaf, "seg_count" | "length") {
                raw.to_string()
            } else {
                hex_value(raw, span.range.len())
            };
            let note = note(&d.repr, &span.name, leaf, raw);
            Row {
                field: span.name,
                range: span.range,
                value,
                bytes,
                note,
            }
        })
        .collect()
}

/// The table note of field `name` (last component `leaf`) holding `raw`.
fn note(repr: &DescriptorRepr, name: &str, leaf: &str, raw: u64) -> String {
    let top = !name.starts_with("segments[");
    match leaf {
        "control" => control_note(repr.control),
        "status" => status_note(repr.status),
        "seg_count" => format!(
            "{} address + {} data",
            usize::from(repr.address.is_some()),
            repr.data.len()
        ),
        "immediate" if !repr.control.contains(Control::IMMEDIATE) => {
            "unused (control has no immediate bit)".to_owned()
        }
        "length" if top => format!("sum of data segments: {}", repr.data_length_sum()),
        "remote_va" => "address segment: remote buffer".to_owned(),
        "local_va" => "data segment: local buffer".to_owned(),
        "reserved" if raw != 0 => "reserved, not zero".to_owned(),
        _ if leaf.ends_with("handle") => handle_note(u32::try_from(raw).unwrap_or(0)),
        _ => String::new(),
    }
}

/// Operation and flags of a control word.
fn control_note(c: Control) -> String {
    let mut parts = vec![op_name(c.op()).to_owned()];
    if c.contains(Control::IMMEDIATE) {
        parts.push("immediate".to_owned());
    }
    if c.contains(Control::QUEUE_FENCE) {
        parts.push("queue fence".to_owned());
    }
    if c.reserved_bits() != 0 {
        parts.push(format!("reserved bits {:#06x}", c.reserved_bits()));
    }
    parts.join(", ")
}

/// Flags and completed operation of a status word.
fn status_note(s: Status) -> String {
    if s.is_empty() {
        return "not done".to_owned();
    }
    let mut parts: Vec<String> = s
        .iter_names()
        .map(|(name, _)| name.to_lowercase().replace('_', " "))
        .collect();
    if s.is_done() {
        parts.push(format!("op {}", completed_op_name(s.completed_op())));
    }
    let reserved = s.bits() & Status::RESERVED_MASK;
    if reserved != 0 {
        parts.push(format!("reserved bits {reserved:#010x}"));
    }
    parts.join(", ")
}

fn completed_op_name(op: CompletedOp) -> String {
    match op {
        CompletedOp::Send => "send".to_owned(),
        CompletedOp::Receive => "receive".to_owned(),
        CompletedOp::RdmaWrite => "rdma-write".to_owned(),
        CompletedOp::RemoteRdmaWrite => "remote-rdma-write".to_owned(),
        CompletedOp::RdmaRead => "rdma-read".to_owned(),
        CompletedOp::Unknown(n) => format!("{n} (undefined)"),
    }
}

/// What a memory handle names (see `via_abi::handle`).
fn handle_note(raw: u32) -> String {
    let h = MemHandle(raw);
    if h == MemHandle::NULL {
        "null handle".to_owned()
    } else if h.is_well_formed() {
        format!("L1 index {}, generation {}", h.index(), h.generation())
    } else {
        format!("L1 index {}, generation 0 (never issued)", h.index())
    }
}

/// The `--format json` object (keys of the CLI contract first; more may be added).
#[derive(Debug, Serialize)]
pub struct DescriptorJson {
    /// The descriptor's bytes as in host memory, lowercase hex.
    pub hex: String,
    /// Every field's value.
    pub fields: FieldsJson,
    /// The operation in the control word (`send`, `rdma-write`, `rdma-read`, `reserved`).
    pub op: &'static str,
    /// Length of the descriptor \[bytes\].
    pub size_bytes: usize,
    /// Byte ranges `[start, end)` of the control segment fields.
    pub ranges: Ranges,
    /// The format check (VIA 1.0 format errors).
    pub validation: ValidationJson,
    /// Bytes after the descriptor in the `--decode` input, ignored.
    pub trailing_bytes: usize,
}

/// The fields of the descriptor (`fields` in the contract).
#[derive(Debug, Serialize)]
pub struct FieldsJson {
    next_va: String,
    next_handle: String,
    seg_count: u16,
    control: String,
    immediate: String,
    length: u32,
    status: String,
    reserved: String,
    segments: Vec<SegmentJson>,
}

/// One address or data segment, with its fields' byte ranges from the descriptor start.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SegmentJson {
    /// The address segment of an RDMA descriptor.
    Address {
        /// Remote buffer VA.
        remote_va: String,
        /// Remote memory handle.
        remote_handle: String,
        /// Reserved word.
        reserved: String,
        /// Byte ranges of the fields.
        ranges: Ranges,
    },
    /// A data segment.
    Data {
        /// Local buffer VA.
        local_va: String,
        /// Local memory handle.
        local_handle: String,
        /// Segment length \[bytes\].
        length: u32,
        /// Byte ranges of the fields.
        ranges: Ranges,
    },
}

/// The format check: the status a VI provider would complete the descriptor with.
#[derive(Debug, Serialize)]
pub struct ValidationJson {
    /// The queue assumed (`send` or `receive`).
    queue: &'static str,
    /// Whether the descriptor is malformed.
    format_error: bool,
    /// The error status it completes with: `0x00000002` (format error) or `0x00000000`.
    error_status: String,
    /// Every problem found, in check order.
    faults: Vec<String>,
}

/// The JSON object of `d`.
#[must_use]
pub fn json(d: &Described) -> DescriptorJson {
    use control_segment::field as cf;
    let r = &d.repr;
    let spans = r.field_spans();
    let in_segment = |i: usize| {
        let prefix = format!("segments[{i}].");
        Ranges(
            spans
                .iter()
                .filter_map(|s| Some((s.name.strip_prefix(&prefix)?.to_owned(), s.range.clone())))
                .collect(),
        )
    };
    let address = r.address.iter().map(|a| SegmentJson::Address {
        remote_va: hex_value(a.remote_va, address_segment::field::REMOTE_VA.len()),
        remote_handle: hex_value(
            a.remote_handle.raw().into(),
            address_segment::field::REMOTE_HANDLE.len(),
        ),
        reserved: hex_value(a.reserved.into(), address_segment::field::RESERVED.len()),
        ranges: in_segment(0),
    });
    let first_data = usize::from(r.address.is_some());
    let data = r.data.iter().enumerate().map(|(i, s)| SegmentJson::Data {
        local_va: hex_value(s.local_va, data_segment::field::LOCAL_VA.len()),
        local_handle: hex_value(
            s.local_handle.raw().into(),
            data_segment::field::LOCAL_HANDLE.len(),
        ),
        length: s.length,
        ranges: in_segment(first_data + i),
    });
    let faults = r.faults(d.queue);
    let error_status = faults.first().map_or(Status::empty(), |f| f.status());
    DescriptorJson {
        hex: hex_compact(&d.bytes),
        fields: FieldsJson {
            next_va: hex_value(r.next_va, cf::NEXT_VA.len()),
            next_handle: hex_value(r.next_handle.raw().into(), cf::NEXT_HANDLE.len()),
            seg_count: r.control_segment().seg_count,
            control: hex_value(r.control.bits().into(), cf::CONTROL.len()),
            immediate: hex_value(r.immediate.into(), cf::IMMEDIATE.len()),
            length: r.length,
            status: hex_value(r.status.bits().into(), cf::STATUS.len()),
            reserved: hex_value(r.reserved.into(), cf::RESERVED.len()),
            segments: address.chain(data).collect(),
        },
        op: op_name(r.control.op()),
        size_bytes: d.bytes.len(),
        ranges: Ranges(
            spans
                .iter()
                .filter(|s| !s.name.starts_with("segments["))
                .map(|s| (s.name.clone(), s.range.clone()))
                .collect(),
        ),
        validation: ValidationJson {
            queue: queue_name(d.queue),
            format_error: !faults.is_empty(),
            error_status: hex_value(error_status.bits().into(), cf::STATUS.len()),
            faults: faults.iter().map(ToString::to_string).collect(),
        },
        trailing_bytes: d.trailing,
    }
}

fn queue_name(q: WorkQueue) -> &'static str {
    match q {
        WorkQueue::Send => "send",
        WorkQueue::Receive => "receive",
    }
}

/// The table form: a title, the field table, the hex bytes and the format check.
#[must_use]
pub fn text(d: &Described) -> String {
    let r = &d.repr;
    let mut out = format!(
        "VI descriptor: {}, {} bytes: control segment{} + {}\n",
        op_name(r.control.op()),
        d.bytes.len(),
        if r.address.is_some() {
            " + address segment"
        } else {
            ""
        },
        plural(r.data.len() as u64, "data segment")
    );
    out.push_str(&table(&rows(d)));
    out.push_str(&format!("hex: {}\n", hex_compact(&d.bytes)));
    let faults = r.faults(d.queue);
    match faults.first() {
        None => out.push_str(&format!(
            "format: ok on the {} queue\n",
            queue_name(d.queue)
        )),
        Some(first) => {
            let list: Vec<String> = faults.iter().map(ToString::to_string).collect();
            out.push_str(&format!(
                "format: ERROR on the {} queue, completes with status {} (format error): {}\n",
                queue_name(d.queue),
                hex_value(
                    first.status().bits().into(),
                    control_segment::field::STATUS.len()
                ),
                list.join("; ")
            ));
        }
    }
    if d.trailing > 0 {
        out.push_str(&format!(
            "note: {} bytes after the descriptor were ignored\n",
            d.trailing
        ));
    }
    out
}
