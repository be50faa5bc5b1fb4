-- hvia.lua: Wireshark / tshark dissector for the VIA frames of HVIA-GE (hvia-sim).
--
-- The card puts a 40-byte VIA header (network byte order) after the Ethernet header,
-- EtherType 0x88B5; the layout is `via-abi/src/wire_header.rs`, the control frames'
-- payloads `nic-model/src/engine/frame.rs`. This file decodes every header field,
-- the flags bit by bit, the memory handle's index and generation, the payload
-- (its length and bytes), the parameters of connection frames, the VIA status bits
-- of an Ack (0 = positive acknowledgement, else an error Nak), and the go-back Nak
-- (op 8: `seq` is the next data frame the receiver expects). A malformed header
-- (short frame, version other than 1, reserved bits set, unknown operation, a data
-- fragment whose length, offset or FIRST / LAST flags disagree with its message)
-- gets expert info, so `_ws.expert` or `hvia.malformed` finds it.
--
-- Install: copy this file into Wireshark's personal plugin folder (Help > About
-- Wireshark > Folders > Personal Lua Plugins; on Linux ~/.local/lib/wireshark/plugins/)
-- or load it once:
--   tshark -X lua_script:tools/wireshark/hvia.lua -r f.pcap -T fields -e hvia.op
--   wireshark -X lua_script:tools/wireshark/hvia.lua f.pcap
-- Filter with the `hvia.*` field names, e.g. `hvia.op == 2 && hvia.flags.last`.

local HEADER_LEN = 40
local MAX_FRAGMENT_PAYLOAD = 1460
local ETHERTYPE_VIA = 0x88B5

local hvia = Proto("hvia", "HVIA-GE VIA")

local ops = {
    [1] = "Send",
    [2] = "RDMA write",
    [3] = "Connect request",
    [4] = "Connect accept",
    [5] = "Connect reject",
    [6] = "Disconnect",
    [7] = "Ack",
    [8] = "Nak (go-back)",
}

local reject_reasons = {
    [1] = "no room for another unmatched request",
    [2] = "reliability level mismatch",
    [3] = "rejected by the host",
}

local reliability_levels = {
    [0] = "unreliable",
    [1] = "reliable delivery",
    [2] = "reliable reception",
}

-- VIA 1.0 descriptor status bits, as an Ack's `immediate` carries them.
local status_bits = {
    { 0x00000002, "format error" },
    { 0x00000004, "protection error" },
    { 0x00000008, "length error" },
    { 0x00000010, "partial error" },
    { 0x00000020, "flushed" },
    { 0x00000040, "transport error" },
    { 0x00000080, "RDMA protection error" },
    { 0x00000100, "remote descriptor error" },
}

local f = hvia.fields
f.version = ProtoField.uint8("hvia.version", "Version", base.DEC)
f.op = ProtoField.uint8("hvia.op", "Operation", base.DEC, ops)
f.flags = ProtoField.uint8("hvia.flags", "Flags", base.HEX)
f.flag_first = ProtoField.bool("hvia.flags.first", "FIRST", 8, nil, 0x01)
f.flag_last = ProtoField.bool("hvia.flags.last", "LAST", 8, nil, 0x02)
f.flag_immediate = ProtoField.bool("hvia.flags.immediate", "IMMEDIATE", 8, nil, 0x04)
f.flag_ack_req = ProtoField.bool("hvia.flags.ack_req", "ACK_REQ", 8, nil, 0x08)
f.flag_unknown = ProtoField.uint8("hvia.flags.unknown", "Unknown flag bits", base.HEX, nil, 0xF0)
f.reserved0 = ProtoField.uint8("hvia.reserved0", "Reserved", base.HEX)
f.dst_vi = ProtoField.uint16("hvia.dst_vi", "Destination VI", base.DEC)
f.src_vi = ProtoField.uint16("hvia.src_vi", "Source VI", base.DEC)
f.seq = ProtoField.uint32("hvia.seq", "Sequence number", base.DEC)
f.msg_len = ProtoField.uint32("hvia.msg_len", "Message length", base.DEC)
f.frag_offset = ProtoField.uint32("hvia.frag_offset", "Fragment offset", base.DEC)
f.frag_len = ProtoField.uint16("hvia.frag_len", "Fragment length", base.DEC)
f.reserved1 = ProtoField.uint16("hvia.reserved1", "Reserved", base.HEX)
f.remote_va = ProtoField.uint64("hvia.remote_va", "Remote virtual address", base.HEX)
f.remote_handle = ProtoField.uint32("hvia.remote_handle", "Remote memory handle", base.HEX)
f.handle_index = ProtoField.uint32("hvia.remote_handle.index", "ATT L1 index", base.DEC, nil, 0x000FFFFF)
f.handle_generation = ProtoField.uint32("hvia.remote_handle.generation", "Generation", base.DEC, nil, 0xFFF00000)
f.immediate = ProtoField.uint32("hvia.immediate", "Immediate data", base.HEX)
f.ack_status = ProtoField.uint32("hvia.ack.status", "Ack status (VIA error bits)", base.HEX)
f.ack_positive = ProtoField.bool("hvia.ack.positive", "Positive acknowledgement")
f.nak_expected = ProtoField.uint32("hvia.nak.expected_seq", "Next sequence number expected", base.DEC)
f.discriminator = ProtoField.uint32("hvia.connect.discriminator", "Discriminator", base.HEX)
f.reliability = ProtoField.uint8("hvia.connect.reliability", "Reliability level", base.DEC, reliability_levels)
f.reject_reason = ProtoField.uint8("hvia.connect.reject_reason", "Reject reason", base.DEC, reject_reasons)
f.connect_reserved = ProtoField.uint8("hvia.connect.reserved", "Reserved", base.HEX)
f.mtu = ProtoField.uint16("hvia.connect.mtu", "MTU", base.DEC)
f.payload_len = ProtoField.uint32("hvia.payload_len", "Payload length", base.DEC)
f.payload = ProtoField.bytes("hvia.payload", "Payload")
f.malformed = ProtoField.bool("hvia.malformed", "Malformed header")

local e = hvia.experts
e.short = ProtoExpert.new("hvia.short", "Frame shorter than the 40-byte VIA header",
    expert.group.MALFORMED, expert.severity.ERROR)
e.version = ProtoExpert.new("hvia.bad_version", "Unsupported VIA header version (only 1 exists)",
    expert.group.MALFORMED, expert.severity.ERROR)
e.op = ProtoExpert.new("hvia.unknown_op", "Undefined VIA operation (the receiver drops the frame)",
    expert.group.MALFORMED, expert.severity.WARN)
e.reserved = ProtoExpert.new("hvia.reserved_set", "Reserved field is not zero",
    expert.group.PROTOCOL, expert.severity.WARN)
e.flags = ProtoExpert.new("hvia.unknown_flags", "Undefined flag bits set",
    expert.group.PROTOCOL, expert.severity.WARN)
e.truncated = ProtoExpert.new("hvia.payload_truncated", "Frame holds fewer payload bytes than frag_len",
    expert.group.MALFORMED, expert.severity.ERROR)
e.fragment = ProtoExpert.new("hvia.bad_fragment", "Data fragment disagrees with its message",
    expert.group.MALFORMED, expert.severity.ERROR)
e.nak = ProtoExpert.new("hvia.nak", "Go-back Nak: the sender resends from seq",
    expert.group.SEQUENCE, expert.severity.NOTE)
e.ack_error = ProtoExpert.new("hvia.ack_error", "Error Nak: the connection fails",
    expert.group.RESPONSE_CODE, expert.severity.WARN)

-- Marks the header malformed: a generated field plus the expert item.
local function malformed(tree, item, expert_field, text)
    local m = tree:add(f.malformed, true)
    m:set_generated()
    item:add_proto_expert_info(expert_field, text)
end

local function status_text(bits)
    local names = {}
    for _, b in ipairs(status_bits) do
        if bit.band(bits, b[1]) ~= 0 then
            names[#names + 1] = b[2]
        end
    end
    if #names == 0 then
        return string.format("0x%08x", bits)
    end
    return table.concat(names, ", ")
end

-- The payload of a connection frame: discriminator, reliability or reason, 0, MTU.
local function dissect_connect(op, payload, tree)
    if payload:len() < 8 then
        return
    end
    tree:add(f.discriminator, payload(0, 4))
    if op == 5 then
        tree:add(f.reject_reason, payload(4, 1))
    else
        tree:add(f.reliability, payload(4, 1))
    end
    tree:add(f.connect_reserved, payload(5, 1))
    tree:add(f.mtu, payload(6, 2))
end

-- Checks a data fragment as the receiving engine does (WireHeaderRepr::check_fragment).
local function fragment_problem(flags, msg_len, frag_offset, frag_len)
    if frag_len > MAX_FRAGMENT_PAYLOAD then
        return "fragment payload longer than 1460 bytes"
    end
    local fin = frag_offset + frag_len
    if fin > msg_len then
        return "fragment runs past the end of its message"
    end
    local first = bit.band(flags, 0x01) ~= 0
    local last = bit.band(flags, 0x02) ~= 0
    if first ~= (frag_offset == 0) then
        return "FIRST flag disagrees with the fragment offset"
    end
    if last ~= (fin == msg_len) then
        return "LAST flag disagrees with the fragment end"
    end
    return nil
end

function hvia.dissector(buf, pinfo, root)
    local len = buf:len()
    pinfo.cols.protocol:set("HVIA")
    local tree = root:add(hvia, buf(0, math.min(len, HEADER_LEN)))
    if len < HEADER_LEN then
        malformed(tree, tree, e.short, string.format("%d of 40 header bytes", len))
        pinfo.cols.info:set(string.format("VIA header truncated (%d bytes)", len))
        return len
    end

    local version = buf(0, 1):uint()
    local op = buf(1, 1):uint()
    local flags = buf(2, 1):uint()
    local seq = buf(8, 4):uint()
    local msg_len = buf(12, 4):uint()
    local frag_offset = buf(16, 4):uint()
    local frag_len = buf(20, 2):uint()
    local immediate = buf(36, 4):uint()

    local vi = tree:add(f.version, buf(0, 1))
    if version ~= 1 then
        malformed(tree, vi, e.version, string.format("version %d", version))
    end
    local opi = tree:add(f.op, buf(1, 1))
    if ops[op] == nil then
        malformed(tree, opi, e.op, string.format("operation %d", op))
    end
    local fl = tree:add(f.flags, buf(2, 1))
    fl:add(f.flag_first, buf(2, 1))
    fl:add(f.flag_last, buf(2, 1))
    fl:add(f.flag_immediate, buf(2, 1))
    fl:add(f.flag_ack_req, buf(2, 1))
    fl:add(f.flag_unknown, buf(2, 1))
    if bit.band(flags, 0xF0) ~= 0 then
        fl:add_proto_expert_info(e.flags, string.format("flags 0x%02x", flags))
    end
    local r0 = tree:add(f.reserved0, buf(3, 1))
    if buf(3, 1):uint() ~= 0 then
        r0:add_proto_expert_info(e.reserved)
    end
    tree:add(f.dst_vi, buf(4, 2))
    tree:add(f.src_vi, buf(6, 2))
    tree:add(f.seq, buf(8, 4))
    tree:add(f.msg_len, buf(12, 4))
    tree:add(f.frag_offset, buf(16, 4))
    local fli = tree:add(f.frag_len, buf(20, 2))
    local r1 = tree:add(f.reserved1, buf(22, 2))
    if buf(22, 2):uint() ~= 0 then
        r1:add_proto_expert_info(e.reserved)
    end
    tree:add(f.remote_va, buf(24, 8))
    local h = tree:add(f.remote_handle, buf(32, 4))
    h:add(f.handle_index, buf(32, 4))
    h:add(f.handle_generation, buf(32, 4))
    local imm = tree:add(f.immediate, buf(36, 4))

    local info = string.format("%s VI %d -> %d", ops[op] or string.format("op %d", op),
        buf(6, 2):uint(), buf(4, 2):uint())
    if op == 1 or op == 2 then
        local problem = fragment_problem(flags, msg_len, frag_offset, frag_len)
        if problem ~= nil then
            malformed(tree, fli, e.fragment, problem)
        end
        info = info .. string.format(" seq %d, bytes %d..%d of %d", seq, frag_offset,
            frag_offset + frag_len, msg_len)
    elseif op == 7 then
        local s = imm:add(f.ack_status, buf(36, 4))
        local p = imm:add(f.ack_positive, immediate == 0)
        p:set_generated()
        if immediate ~= 0 then
            s:add_proto_expert_info(e.ack_error, status_text(immediate))
            info = info .. string.format(" seq %d, error: %s", seq, status_text(immediate))
        else
            info = info .. string.format(" seq %d", seq)
        end
    elseif op == 8 then
        local n = tree:add(f.nak_expected, buf(8, 4))
        n:set_generated()
        n:add_proto_expert_info(e.nak, string.format("resend from seq %d", seq))
        info = info .. string.format(", expected seq %d", seq)
    end
    pinfo.cols.info:set(info)

    local present = math.min(frag_len, len - HEADER_LEN)
    local pl = tree:add(f.payload_len, present)
    pl:set_generated()
    if present < frag_len then
        malformed(tree, pl, e.truncated, string.format("%d of %d payload bytes", present, frag_len))
    end
    if present > 0 then
        local payload = buf(HEADER_LEN, present)
        tree:add(f.payload, payload)
        if op >= 3 and op <= 5 then
            dissect_connect(op, payload:tvb(), tree)
        end
    end
    tree:set_len(HEADER_LEN + present)
    -- Bytes after the payload are the Ethernet padding of a short frame.
    return HEADER_LEN + present
end

DissectorTable.get("ethertype"):add(ETHERTYPE_VIA, hvia)
