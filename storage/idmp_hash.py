"""The idempotent ID that XADD ... IDMPAUTO derives from an entry's field-value pairs, as
Redis's createIdempotencyHash computes it: XXH3-128 of each pair (field, the field's length
as a native 8-byte integer, value), the pair hashes combined by sum and by xor so that the
order of the pairs does not matter, and the 16-byte result (low 64 bits first, little-endian)
used as the iid. Equal hashes make AOF files of Redis and of this server agree on iids.

XXH3 comes from the system's libxxhash (Debian's libxxhash0, which apt itself depends on)
through ctypes. Without it ``auto_iid`` raises IdmpHashUnavailable, and XADD answers as Redis
does when hashing fails."""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
from collections.abc import Iterator

__all__ = ["IdmpHashUnavailable", "auto_iid", "available"]

_M64 = (1 << 64) - 1
_LEN = struct.Struct("=q")  # C's long on the 64-bit platforms Redis runs on
_IID = struct.Struct("<QQ")


class IdmpHashUnavailable(RuntimeError):
    """No XXH3 implementation could be loaded."""


class _Hash128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]


def _candidates() -> Iterator[str]:
    # Debian's soname first: a dlopen, where find_library runs `ldconfig -p` (~1 ms at start)
    yield "libxxhash.so.0"
    name = ctypes.util.find_library("xxhash")
    if name:
        yield name


def _load() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    for candidate in _candidates():
        try:
            lib = ctypes.CDLL(candidate)
            fn = lib.XXH3_128bits
        except (OSError, AttributeError):
            continue
        fn.restype = _Hash128
        fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        return fn
    return None


_xxh3_128 = _load()


def available() -> bool:
    return _xxh3_128 is not None


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def auto_iid(fields: list[bytes]) -> bytes:
    """The 16-byte iid of ``fields`` (a flat field/value list)."""
    fn = _xxh3_128
    if fn is None:
        raise IdmpHashUnavailable("XXH3 is not available")
    sum_lo = sum_hi = xor_lo = xor_hi = 0
    for i in range(0, len(fields) - 1, 2):
        field = fields[i]
        data = field + _LEN.pack(len(field)) + fields[i + 1]
        h = fn(data, len(data))
        sum_lo = (sum_lo + h.low64) & _M64
        sum_hi = (sum_hi + h.high64) & _M64
        xor_lo ^= h.low64
        xor_hi ^= h.high64
    return _IID.pack(sum_lo ^ _rotl64(xor_hi, 1), sum_hi ^ _rotl64(xor_lo, 1))
