"""The cluster bus's messages in Redis 7.0's binary format (cluster.h's clusterMsg), sans I/O.

What it is.  Every message starts with the same 2256-byte header, big-endian: "RCmb", totlen,
ver (1), port, type, count, currentEpoch, configEpoch, offset, the sender's name, its slots bitmap,
slaveof, myip, the number of extensions, 30 unused bytes, pport, cport, flags, state, mflags[3].
PING, PONG and MEET carry `count` gossip entries of 104 bytes (name, ping_sent and pong_received in
seconds, ip, port, cport, flags, pport, unused), then, when mflags[0] has EXT_DATA, `extensions`
extensions (length, type, 2 unused bytes, data padded to a multiple of 8; type 0 is the
announced hostname, NUL-terminated).  FAIL carries a node name; UPDATE a config epoch, a name and
a slots bitmap; PUBLISH and PUBLISHSHARD the channel's and the message's lengths (32 bits each),
then the channel and the message, back to back (clusterSendPublish's totlen: no padding).

Rule: pure functions; a malformed message is a WireError naming what is wrong (the bus logs it and
ignores the packet, as clusterProcessPacket does); nothing here knows the cluster state.

Invariants: `expected_length(msg)` is the length clusterProcessPacket requires for the message's
type; `decode` accepts only messages whose totlen equals it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

SIG = b"RCmb"
VERSION = 1
HEADER = struct.Struct(">4sIHHHHQQQ40s2048s40s46sH30sHHHB3s")
GOSSIP = struct.Struct(">40sII46sHHHHH")
EXT_HEADER = struct.Struct(">IHH")
PUBLISH_LENS = struct.Struct(">II")
HEADER_LEN = HEADER.size  # 2256 (CLUSTERMSG_MIN_LEN)
IP_LEN = 46  # NET_IP_STR_LEN

PING, PONG, MEET, FAIL, PUBLISH, AUTH_REQUEST, AUTH_ACK, UPDATE, MFSTART, MODULE, PUBLISHSHARD = range(11)
TYPE_NAMES = ("ping", "pong", "meet", "fail", "publish", "auth-req", "auth-ack", "update", "mfstart",
              "module", "publishshard")
FLAG0_PAUSED, FLAG0_FORCEACK, FLAG0_EXT_DATA = 1, 2, 4
EXT_HOSTNAME = 0
NULL_NAME = b"\0" * 40


class WireError(Exception):
    pass


def type_name(t: int) -> str:
    return TYPE_NAMES[t] if 0 <= t < len(TYPE_NAMES) else "unknown"


def _cstr(b: bytes) -> str:
    return b.split(b"\0", 1)[0].decode("latin-1")


@dataclass
class Gossip:
    name: str
    ping_sent: int  # seconds
    pong_received: int
    ip: str
    port: int
    cport: int
    flags: int
    pport: int


@dataclass
class Message:
    type: int
    sender: str = ""
    port: int = 0
    pport: int = 0
    cport: int = 0
    flags: int = 0
    state: int = 0
    mflags0: int = 0
    current_epoch: int = 0
    config_epoch: int = 0
    offset: int = 0
    myslots: bytes = bytes(2048)
    slaveof: str | None = None
    myip: str = ""
    gossip: list[Gossip] = field(default_factory=list)
    hostname: str | None = None  # the hostname extension (None: not sent)
    about: str = ""  # FAIL's node; UPDATE's node
    update_epoch: int = 0
    update_slots: bytes = b""
    channel: bytes = b""  # PUBLISH's and PUBLISHSHARD's
    message: bytes = b""


def encode(m: Message) -> bytes:
    """A complete message (header, then the type's data)."""
    body = bytearray()
    extensions = 0
    mflags0 = m.mflags0
    if m.type in (PING, PONG, MEET):
        for g in m.gossip:
            body += GOSSIP.pack(g.name.encode(), g.ping_sent & 0xFFFFFFFF, g.pong_received & 0xFFFFFFFF,
                                g.ip.encode()[:IP_LEN - 1], g.port, g.cport, g.flags, g.pport, 0)
        if m.hostname:
            data = m.hostname.encode() + b"\0"
            length = (EXT_HEADER.size + len(data) + 7) // 8 * 8
            body += EXT_HEADER.pack(length, EXT_HOSTNAME, 0) + data.ljust(length - EXT_HEADER.size, b"\0")
            extensions = 1
            mflags0 |= FLAG0_EXT_DATA
    elif m.type == FAIL:
        body += m.about.encode()
    elif m.type == UPDATE:
        body += struct.pack(">Q40s2048s", m.update_epoch, m.about.encode(), m.update_slots)
    elif m.type in (PUBLISH, PUBLISHSHARD):
        body += PUBLISH_LENS.pack(len(m.channel), len(m.message)) + m.channel + m.message
    count = len(m.gossip) if m.type in (PING, PONG, MEET) else 0
    slaveof = m.slaveof.encode() if m.slaveof else NULL_NAME
    header = HEADER.pack(SIG, HEADER_LEN + len(body), VERSION, m.port, m.type, count,
                         m.current_epoch, m.config_epoch, m.offset, m.sender.encode(), m.myslots, slaveof,
                         m.myip.encode()[:IP_LEN - 1], extensions, b"", m.pport, m.cport, m.flags, m.state,
                         bytes((mflags0, 0, 0)))
    return header + bytes(body)


def expected_length(data: bytes) -> int:
    """The length clusterProcessPacket expects for this message (its header read)."""
    t, count = struct.unpack_from(">HH", data, 12)
    n = HEADER_LEN
    if t in (PING, PONG, MEET):
        n += GOSSIP.size * count
        if data[2253] & FLAG0_EXT_DATA:
            extensions = struct.unpack_from(">H", data, 2214)[0]
            total = len(data)
            for _ in range(extensions):
                if n + EXT_HEADER.size > total:
                    raise WireError(f"Received invalid {type_name(t)} packet with extension data that "
                                    f"exceeds total packet length ({total})")
                extlen = EXT_HEADER.unpack_from(data, n)[0]
                if extlen % 8 != 0 or extlen < EXT_HEADER.size:
                    raise WireError(f"Received a {type_name(t)} packet without proper padding ({extlen} bytes)")
                if total - n < extlen:
                    raise WireError(f"Received invalid {type_name(t)} packet with extension data that "
                                    f"exceeds total packet length ({total})")
                n += extlen
    elif t == FAIL:
        n += 40
    elif t in (PUBLISH, PUBLISHSHARD):
        if len(data) < HEADER_LEN + 8:
            return HEADER_LEN + 8
        channel_len, message_len = struct.unpack_from(">II", data, HEADER_LEN)
        n += 8 + channel_len + message_len
    elif t == UPDATE:
        n += 8 + 40 + 2048
    elif t == MODULE:
        if len(data) < HEADER_LEN + 16:
            return HEADER_LEN + 16
        n += 13 + struct.unpack_from(">I", data, HEADER_LEN + 8)[0]
    return n


def decode(data: bytes) -> Message:
    """A message whose signature and version were checked; WireError if its length is wrong."""
    (_sig, totlen, _ver, port, t, count, current, config, offset, sender, myslots, slaveof, myip,
     extensions, _unused, pport, cport, flags, state, mflags) = HEADER.unpack_from(data)
    want = expected_length(data)
    if totlen != want or len(data) != totlen:
        raise WireError(f"Received invalid {type_name(t)} packet of length {totlen} but expected length {want}")
    m = Message(type=t, sender=_cstr(sender), port=port, pport=pport, cport=cport, flags=flags, state=state,
                mflags0=mflags[0], current_epoch=current, config_epoch=config, offset=offset,
                myslots=bytes(myslots), slaveof=None if slaveof == NULL_NAME else _cstr(slaveof),
                myip=_cstr(myip))
    pos = HEADER_LEN
    if t in (PING, PONG, MEET):
        for _ in range(count):
            name, ps, pr, ip, gport, gcport, gflags, gpport, _n = GOSSIP.unpack_from(data, pos)
            m.gossip.append(Gossip(_cstr(name), ps, pr, _cstr(ip), gport, gcport, gflags, gpport))
            pos += GOSSIP.size
        if mflags[0] & FLAG0_EXT_DATA:
            for _ in range(extensions):
                length, etype, _u = EXT_HEADER.unpack_from(data, pos)
                if etype == EXT_HOSTNAME:
                    m.hostname = _cstr(data[pos + EXT_HEADER.size:pos + length])
                pos += length
    elif t == FAIL:
        m.about = _cstr(data[pos:pos + 40])
    elif t == UPDATE:
        m.update_epoch, about, m.update_slots = struct.unpack_from(">Q40s2048s", data, pos)
        m.about = _cstr(about)
    elif t in (PUBLISH, PUBLISHSHARD):
        channel_len, message_len = PUBLISH_LENS.unpack_from(data, pos)
        pos += PUBLISH_LENS.size
        m.channel = data[pos:pos + channel_len]
        m.message = data[pos + channel_len:pos + channel_len + message_len]
    return m
