"""http_roaring.py - a small, independent reader of the bytes the DV endpoint serves.

Written from the RoaringFormatSpec (portable serialization, 32- and 64-bit),
the Iceberg v3 `deletion-vector-v1` blob layout and the Delta Lake deletion
vector file layout; it shares no code with strike, so that the tests check
strike's bytes against the formats, not against strike itself.
"""
import struct
import zlib

SERIAL_COOKIE_NO_RUN = 12346
SERIAL_COOKIE = 12347
NO_OFFSET_THRESHOLD = 4
DV_MAGIC = bytes([0xD1, 0xD3, 0x39, 0x64])


class FormatError(ValueError):
    pass


def _need(buf, off, n):
    if off + n > len(buf):
        raise FormatError(f"truncated at byte {off} (need {n} more of {len(buf)})")


def read_roaring32(buf, off=0):
    """Decode a 32-bit portable Roaring bitmap at buf[off:]; return (sorted values, end offset)."""
    _need(buf, off, 4)
    cookie = struct.unpack_from("<I", buf, off)[0]
    off += 4
    run_flags = None
    if cookie & 0xFFFF == SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        nbytes = (size + 7) // 8
        _need(buf, off, nbytes)
        run_flags = buf[off:off + nbytes]
        off += nbytes
    elif cookie == SERIAL_COOKIE_NO_RUN:
        _need(buf, off, 4)
        size = struct.unpack_from("<I", buf, off)[0]
        off += 4
    else:
        raise FormatError(f"bad cookie {cookie:#x}")
    _need(buf, off, 4 * size)
    keys, cards = [], []
    for i in range(size):
        k, c = struct.unpack_from("<HH", buf, off + 4 * i)
        keys.append(k)
        cards.append(c + 1)
    off += 4 * size
    if run_flags is None or size >= NO_OFFSET_THRESHOLD:
        _need(buf, off, 4 * size)
        off += 4 * size  # offsets: redundant for a sequential read
    out = []
    for i in range(size):
        hi = keys[i] << 16
        is_run = run_flags is not None and (run_flags[i // 8] >> (i % 8)) & 1
        if is_run:
            _need(buf, off, 2)
            nruns = struct.unpack_from("<H", buf, off)[0]
            off += 2
            _need(buf, off, 4 * nruns)
            for r in range(nruns):
                start, length = struct.unpack_from("<HH", buf, off + 4 * r)
                out.extend(hi | v for v in range(start, start + length + 1))
            off += 4 * nruns
        elif cards[i] <= 4096:
            _need(buf, off, 2 * cards[i])
            vals = struct.unpack_from(f"<{cards[i]}H", buf, off)
            out.extend(hi | v for v in vals)
            off += 2 * cards[i]
        else:
            _need(buf, off, 8192)
            words = struct.unpack_from("<1024Q", buf, off)
            for w, word in enumerate(words):
                while word:
                    low = word & -word
                    out.append(hi | (w * 64 + low.bit_length() - 1))
                    word ^= low
            off += 8192
    return out, off


def read_roaring64(buf, off=0):
    """Decode a 64-bit portable Roaring bitmap (u64 bucket count, then u32 high key +
    32-bit bitmap per bucket); return (sorted values, end offset)."""
    _need(buf, off, 8)
    nbuckets = struct.unpack_from("<Q", buf, off)[0]
    off += 8
    out = []
    prev = -1
    for _ in range(nbuckets):
        _need(buf, off, 4)
        high = struct.unpack_from("<I", buf, off)[0]
        off += 4
        if high <= prev:
            raise FormatError("bucket keys not ascending")
        prev = high
        vals, off = read_roaring32(buf, off)
        out.extend((high << 32) | v for v in vals)
    return out, off


def decode_roaring64(buf):
    vals, end = read_roaring64(buf)
    if end != len(buf):
        raise FormatError(f"{len(buf) - end} trailing bytes")
    return vals


def decode_iceberg_dv(blob):
    """Iceberg v3 deletion-vector-v1: u32 BE length of magic+bitmap, magic, roaring64, u32 BE CRC."""
    if len(blob) < 12:
        raise FormatError("blob too short")
    n = struct.unpack_from(">I", blob, 0)[0]
    if n != len(blob) - 8:
        raise FormatError(f"length field {n} != {len(blob) - 8}")
    if blob[4:8] != DV_MAGIC:
        raise FormatError("bad magic")
    crc = struct.unpack_from(">I", blob, len(blob) - 4)[0]
    if zlib.crc32(blob[4:-4]) != crc:
        raise FormatError("bad CRC")
    return decode_roaring64(blob[8:-4])


def decode_delta_dv(data):
    """A Delta Lake deletion vector file holding one vector: version byte 1, then
    u32 BE size of (magic + bitmap), the magic 1681511377 (u32 LE), a 64-bit
    portable bitmap, and a u32 BE CRC-32 of magic + bitmap."""
    if len(data) < 1 + 4 + 4 + 8 + 4 or data[0] != 1:
        raise FormatError("not a version 1 Delta DV file")
    size = struct.unpack_from(">I", data, 1)[0]
    if 5 + size + 4 != len(data):
        raise FormatError(f"size field {size} does not match the file ({len(data)} bytes)")
    body = data[5:5 + size]
    if struct.unpack_from("<I", body, 0)[0] != 1681511377:
        raise FormatError("bad Delta bitmap magic")
    crc = struct.unpack_from(">I", data, 5 + size)[0]
    if zlib.crc32(body) != crc:
        raise FormatError("bad CRC")
    return decode_roaring64(body[4:])
