"""Redis's CRC-64 (crc64.c: the Jones polynomial, reflected, init 0), as RDB files and DUMP
payloads carry it: Redis's own check value, resuming, and agreement with a bit-at-a-time
reference on any input."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from server.persistence.rdb_encoding import crc64

_POLY_REFLECTED = int(f"{0xAD93D23594C935A9:064b}"[::-1], 2)


def _reference(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY_REFLECTED if crc & 1 else crc >> 1
    return crc


def test_redis_check_value() -> None:
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA  # crc64.c's test


@given(st.binary(max_size=300), st.binary(max_size=300))
def test_matches_the_reference_and_resumes(first: bytes, second: bytes) -> None:
    whole = first + second
    assert crc64(whole) == _reference(whole)
    assert crc64(second, crc64(first)) == crc64(whole)
    assert crc64(memoryview(bytearray(whole))) == crc64(whole)
