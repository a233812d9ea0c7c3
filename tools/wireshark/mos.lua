-- Wireshark dissector for MOS (Media Object Server protocol 2.8.x) over TCP.
--
-- Ports 10540 (lower), 10541 (upper) and 10542 (query) by default; change
-- them with the preference mos.ports. Each <mos>...</mos> message is found
-- whatever the TCP segmentation (a message spanning segments is reassembled,
-- several messages in one segment are all shown), in UTF-16BE or UTF-8
-- (decided per message from its first bytes). Shown per message: the
-- message type, mosID, ncsID, messageID, the encoding and the MOS port, and
-- the pairing of a request and its reply (the same messageID coming back on
-- the same TCP connection from the other side): mos.response_in on the
-- request, mos.request_in and mos.response_time on the reply.
--
--   wireshark -X lua_script:tools/wireshark/mos.lua capture.pcapng
--   tshark -2 -X lua_script:tools/wireshark/mos.lua -r capture.pcapng -Y mos
--
-- Or copy it into ~/.local/lib/wireshark/plugins/.

local mos = Proto("mos", "MOS Protocol")

local f = mos.fields
f.type = ProtoField.string("mos.type", "Message type")
f.mosid = ProtoField.string("mos.mosid", "mosID")
f.ncsid = ProtoField.string("mos.ncsid", "ncsID")
f.messageid = ProtoField.uint32("mos.messageid", "messageID")
f.encoding = ProtoField.string("mos.encoding", "Encoding")
f.port = ProtoField.string("mos.port", "MOS port")
f.xml = ProtoField.string("mos.xml", "Message")
f.response_in = ProtoField.framenum("mos.response_in", "Reply in frame",
    base.NONE, frametype.RESPONSE)
f.request_in = ProtoField.framenum("mos.request_in", "Request in frame",
    base.NONE, frametype.REQUEST)
f.response_time = ProtoField.relative_time("mos.response_time",
    "Time since request")

local ef_unpaired = ProtoExpert.new("mos.unpaired", "Reply without request",
    expert.group.SEQUENCE, expert.severity.NOTE)
local ef_bad = ProtoExpert.new("mos.malformed", "Not a MOS message",
    expert.group.MALFORMED, expert.severity.WARN)
mos.experts = { ef_unpaired, ef_bad }

mos.prefs.ports = Pref.range("TCP ports", "10540-10542",
    "Lower, upper and query ports", 65535)

local tcp_stream = Field.new("tcp.stream")

-- Pairing, filled on the first pass: per "stream/messageID" the message
-- waiting for its reply; per "frame/index" what it pairs with.
local waiting = {}
local paired = {}

function mos.init()
	waiting = {}
	paired = {}
end

local port_names = { [0] = "lower", [1] = "upper", [2] = "query" }

-- lower/upper/query from the position of the port in the range.
local function port_name(pinfo)
	local base = 10540
	local p = pinfo.dst_port
	if p < base or p > base + 2 then p = pinfo.src_port end
	return port_names[p - base] or tostring(p)
end

local UTF16_END = "\0<\0/\0m\0o\0s\0>"

-- Where the message starting at start (1-based, in raw) ends: the index of
-- its last byte, or nil if more bytes are needed.
local function frame_end(raw, start, utf16)
	if not utf16 then
		local _, e = string.find(raw, "</mos>", start, true)
		return e
	end
	local from = start
	while true do
		local s, e = string.find(raw, UTF16_END, from, true)
		if s == nil then return nil end
		if (s - start) % 2 == 0 then return e end
		from = s + 1
	end
end

-- Where a start marker may begin in the last bytes of raw (cut by the
-- segment), or nil.
local function partial_start(raw)
	local best = nil
	for _, m in ipairs({ "<mos", "\0<\0m\0o\0s" }) do
		for k = math.min(#m - 1, #raw), 1, -1 do
			if string.sub(raw, -k) == string.sub(m, 1, k) then
				local at = #raw - k + 1
				if best == nil or at < best then best = at end
				break
			end
		end
	end
	return best
end

-- Text of an element, or nil.
local function element(text, name)
	return string.match(text, "<" .. name .. ">%s*(.-)%s*</" .. name .. ">")
end

-- The message element: the first element after the envelope.
local function message_type(text)
	local body = string.gsub(text, "<(%a+)>[^<]*</%1>", function (n)
		if n == "mosID" or n == "ncsID" or n == "messageID" then
			return ""
		end
	end)
	return string.match(body, "^%s*<mos[^>]*>%s*<([%w_:]+)") or "unknown"
end

-- One message at [off, off + len) of tvb.
local function dissect_message(tvb, pinfo, tree, off, len, utf16, idx)
	local range = tvb(off, len)
	local text
	if utf16 then
		text = range:string(ENC_UTF_16 + ENC_BIG_ENDIAN)
	else
		text = range:string(ENC_UTF_8)
	end
	local mtype = message_type(text)
	local st = tree:add(mos, range)
	st:append_text(": " .. mtype)
	st:add(f.type, range, mtype)
	local mos_id = element(text, "mosID")
	local ncs_id = element(text, "ncsID")
	local mid_text = element(text, "messageID")
	if mos_id then st:add(f.mosid, range, mos_id) end
	if ncs_id then st:add(f.ncsid, range, ncs_id) end
	local mid = nil
	if mid_text then
		local hex = string.match(mid_text, "^0?[xX](%x+)$")
		mid = hex and tonumber(hex, 16) or tonumber(mid_text)
		if mid then st:add(f.messageid, range, mid) end
	end
	st:add(f.encoding, range, utf16 and "UTF-16BE" or "UTF-8")
	st:add(f.port, range, port_name(pinfo))
	st:add(f.xml, range, text)
	if mtype == "unknown" then st:add_proto_expert_info(ef_bad) end

	local me = pinfo.number .. "/" .. idx
	if mid and not pinfo.visited then
		local key = tostring(tcp_stream()) .. "/" .. mid
		local side = tostring(pinfo.src) .. ":" .. pinfo.src_port
		local w = waiting[key]
		if w and w.side ~= side then
			paired[w.me] = { reply = pinfo.number }
			paired[me] = { request = w.frame, t = w.t }
			waiting[key] = nil
		else
			waiting[key] = { me = me, frame = pinfo.number,
			    side = side, t = pinfo.abs_ts }
		end
	end
	local p = paired[me]
	if p and p.reply then
		st:add(f.response_in, p.reply):set_generated()
	elseif p and p.request then
		st:add(f.request_in, p.request):set_generated()
		st:add(f.response_time, NSTime(0, 0) + (pinfo.abs_ts - p.t))
		    :set_generated()
	end
	local info = mtype
	if mid then info = info .. " id=" .. mid end
	if p and p.request then info = info .. " (reply)" end
	return info
end

function mos.dissector(tvb, pinfo, tree)
	local total = tvb:len()
	local raw = tvb:raw(0, total)
	local pos = 1
	local infos = {}
	while pos <= total do
		-- the next <mos, in either encoding
		local s8 = string.find(raw, "<mos", pos, true)
		local s16 = string.find(raw, "\0<\0m\0o\0s", pos, true)
		local start, utf16
		if s16 and (not s8 or s16 < s8) then
			start, utf16 = s16, true
		elseif s8 then
			start, utf16 = s8, false
		else
			-- junk or whitespace, or the start of a message cut
			-- by the segment: then wait for more
			local at = partial_start(raw)
			if at and at >= pos then
				pinfo.desegment_offset = at - 1
				pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
			end
			break
		end
		local e = frame_end(raw, start, utf16)
		if e == nil then
			pinfo.desegment_offset = start - 1
			pinfo.desegment_len = DESEGMENT_ONE_MORE_SEGMENT
			break
		end
		infos[#infos + 1] = dissect_message(tvb, pinfo, tree, start - 1,
		    e - start + 1, utf16, #infos)
		pos = e + 1
	end
	if #infos > 0 then
		pinfo.cols.protocol = "MOS"
		pinfo.cols.info = table.concat(infos, ", ")
	end
	return total
end

local registered = nil

-- Register on the ports of the preference.
local function register_ports()
	local t = DissectorTable.get("tcp.port")
	if registered then t:remove(registered, mos) end
	t:add(mos.prefs.ports, mos)
	registered = mos.prefs.ports
end

function mos.prefs_changed()
	register_ports()
end

register_ports()
