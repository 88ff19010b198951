"""Tests for storage/listpack.py: Redis's listpack byte format."""

from __future__ import annotations

import re
import struct

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from storage import listpack as lpmod
from storage.listpack import (
    EOF_BYTE,
    HEADER_SIZE,
    Listpack,
    ListpackError,
    backlen_size,
    decode_backlen,
    decode_element,
    decode_many,
    element_as_bytes,
    encode_backlen,
    encode_element,
    encode_int_element,
    next_offset,
    prev_offset,
    string_to_int64,
)
from tests.helpers import ServerProcess

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def header(total: int, count: int) -> bytes:
    return struct.pack("<IH", total, count)


def canonical(value: bytes | int) -> bytes | int:
    """What a listpack gives back for value: an independent model of lpStringToInt64."""
    if isinstance(value, int):
        return value
    if len(value) <= 20 and re.fullmatch(rb"0|-?[1-9][0-9]*", value):
        iv = int(value)
        if INT64_MIN <= iv <= INT64_MAX:
            return iv
    return value


def check_consistent(lp: Listpack, expected: list[bytes | int]) -> None:
    lp.validate()
    assert list(lp) == expected
    assert list(lp.iter_reverse()) == expected[::-1]
    assert len(lp) == len(expected)
    assert lp.nbytes == len(lp.buf) == struct.unpack_from("<I", lp.buf)[0]
    assert lp.buf[-1] == EOF_BYTE


# --- byte-exact encodings ------------------------------------------------------
# Expected bytes worked out by hand from listpack.md / listpack.c:
# element = encoding+data, then backlen (length of encoding+data).

INT_CASES = [
    (0, "00 01"),  # 0xxxxxxx
    (1, "01 01"),
    (127, "7f 01"),
    (128, "c0 80 02"),  # 110xxxxx yyyyyyyy, 13-bit: 128 = 0x0080
    (-1, "df ff 02"),  # 8192 - 1 = 0x1fff
    (4095, "cf ff 02"),  # 0x0fff
    (-4096, "d0 00 02"),  # 8192 - 4096 = 0x1000
    (4096, "f1 00 10 03"),  # 16-bit LE
    (-4097, "f1 ff ef 03"),
    (32767, "f1 ff 7f 03"),
    (-32768, "f1 00 80 03"),
    (2**15, "f2 00 80 00 04"),  # 24-bit LE
    (2**23 - 1, "f2 ff ff 7f 04"),
    (-(2**23), "f2 00 00 80 04"),
    (2**23, "f3 00 00 80 00 05"),  # 32-bit LE
    (2**31 - 1, "f3 ff ff ff 7f 05"),
    (-(2**31), "f3 00 00 00 80 05"),
    (2**31, "f4 00 00 00 80 00 00 00 00 09"),  # 64-bit LE
    (INT64_MAX, "f4 ff ff ff ff ff ff ff 7f 09"),
    (INT64_MIN, "f4 00 00 00 00 00 00 00 80 09"),
    (-(2**31) - 1, "f4 ff ff ff 7f ff ff ff ff 09"),
]


@pytest.mark.parametrize(("value", "hexbytes"), INT_CASES)
def test_int_encoding_exact(value: int, hexbytes: str) -> None:
    expected = bytes.fromhex(hexbytes)
    assert encode_int_element(value) == expected
    assert encode_element(value) == expected
    # The canonical decimal string encodes identically.
    assert encode_element(str(value).encode()) == expected
    buf = bytearray(header(0, 0)) + expected + b"\xff"
    assert decode_element(buf, HEADER_SIZE) == (value, len(buf) - 1)
    assert next_offset(buf, HEADER_SIZE) == len(buf) - 1
    assert prev_offset(buf, len(buf) - 1) == HEADER_SIZE


def str_case(n: int) -> tuple[int, bytes]:
    data = bytes(i % 251 for i in range(n))
    if n < 64:
        head = bytes([0x80 | n])  # 10xxxxxx
    elif n < 4096:
        head = bytes([0xE0 | (n >> 8), n & 0xFF])  # 1110xxxx yyyyyyyy
    else:
        head = b"\xf0" + n.to_bytes(4, "little")  # 11110000 + uint32 LE
    return n, head + data


@pytest.mark.parametrize(
    ("n", "tail"),
    [
        (0, "01"),
        (1, "02"),
        (63, "40"),  # 1 + 63 = 64
        (64, "42"),  # 2 + 64 = 66
        (125, "7f"),  # 2 + 125 = 127: last one-byte backlen
        (126, "01 80"),  # 128 = 1<<7 | 0
        (4095, "20 81"),  # 4097 = 32<<7 | 1
        (4096, "20 85"),  # 4101 = 32<<7 | 5
        (16377, "7f fe"),  # 16382 = 127<<7 | 126
        (16378, "00 ff ff"),  # 16383: Redis's `l < 16383` makes this 3 bytes
        (70000, "04 a2 f5"),  # 70005 = 4<<14 | 34<<7 | 117
    ],
)
def test_string_encoding_exact(n: int, tail: str) -> None:
    _, body = str_case(n)
    expected = body + bytes.fromhex(tail)
    data = body[len(body) - n :] if n else b""
    assert encode_element(data) == expected
    buf = bytearray(header(0, 0)) + expected + b"\xff"
    value, nxt = decode_element(buf, HEADER_SIZE)
    assert value == data
    assert nxt == len(buf) - 1
    assert next_offset(buf, HEADER_SIZE) == nxt
    assert prev_offset(buf, nxt) == HEADER_SIZE


def test_small_string_bytes() -> None:
    assert encode_element(b"") == bytes.fromhex("80 01")
    assert encode_element(b"a") == bytes.fromhex("81 61 02")
    assert encode_element(b"hello") == bytes.fromhex("85") + b"hello" + b"\x06"


def test_empty_listpack_bytes() -> None:
    lp = Listpack()
    assert bytes(lp.buf) == bytes.fromhex("07 00 00 00 00 00 ff")
    assert len(lp) == 0 and lp.nbytes == 7 and not lp
    assert lp.first() == -1 and lp.last() == -1 and lp.seek(0) == -1 and lp.seek(-1) == -1
    assert list(lp) == [] and list(lp.iter_reverse()) == []
    lp.validate()


def test_small_listpack_bytes() -> None:
    lp = Listpack.from_values([b"a", b"1", b"-1", b"hello"])
    expected = (
        header(22, 4)  # 6 + 3 + 2 + 3 + 7 + 1
        + bytes.fromhex("81 61 02")  # "a"
        + bytes.fromhex("01 01")  # 1
        + bytes.fromhex("df ff 02")  # -1
        + bytes.fromhex("85 68 65 6c 6c 6f 06")  # "hello"
        + b"\xff"
    )
    assert bytes(lp.buf) == expected


# --- backlen ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "hexbytes"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "01 80"),
        (16382, "7f fe"),
        (16383, "00 ff ff"),
        (16384, "01 80 80"),
        (2097150, "7f ff fe"),
        (2097151, "00 ff ff ff"),
        (268435454, "7f ff ff fe"),
        (268435455, "00 ff ff ff ff"),
        (2**32 - 1, "0f ff ff ff ff"),
    ],
)
def test_backlen_exact(length: int, hexbytes: str) -> None:
    expected = bytes.fromhex(hexbytes)
    assert encode_backlen(length) == expected
    assert backlen_size(length) == len(expected)
    # Decoding reads from the last byte leftwards.
    buf = b"\x00" * 3 + expected
    assert decode_backlen(buf, len(buf) - 1) == (length, len(expected))


def test_backlen_too_long() -> None:
    with pytest.raises(ListpackError):
        decode_backlen(b"\x00" + b"\xff" * 5, 5)
    with pytest.raises(ListpackError):
        decode_backlen(b"\x80\x80", 1)  # runs off the start


@pytest.mark.parametrize("n", [125, 126, 4095, 4096, 16377, 16378, 16379, 70000])
def test_backward_walk_across_backlen_sizes(n: int) -> None:
    vals: list[bytes | int] = [1, b"x" * n, 2, b"y" * n, b"z"]
    lp = Listpack.from_values(vals)
    check_consistent(lp, vals)
    assert lp.get(lp.seek(-2)) == b"y" * n
    assert lp.get(lp.seek(1)) == b"x" * n


# --- canonical integer strings ----------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"0", 0),
        (b"7", 7),
        (b"-7", -7),
        (b"123456", 123456),
        (b"9223372036854775807", INT64_MAX),
        (b"-9223372036854775808", INT64_MIN),
        (b"007", None),
        (b"00", None),
        (b"-0", None),
        (b"-01", None),
        (b"+1", None),
        (b" 1", None),
        (b"1 ", None),
        (b"1_000", None),
        (b"-", None),
        (b"", None),
        (b"1.5", None),
        (b"1e3", None),
        (b"0x10", None),
        (b"9223372036854775808", None),
        (b"-9223372036854775809", None),
        (b"99999999999999999999", None),
        (b"123456789012345678901", None),  # 21 bytes
        ("١٢".encode(), None),  # non-ASCII digits
    ],
)
def test_string_to_int64(raw: bytes, expected: int | None) -> None:
    assert string_to_int64(raw) == expected
    lp = Listpack.from_values([raw])
    assert list(lp) == [raw if expected is None else expected]
    assert lp.get_bytes(lp.first()) == raw


def test_element_as_bytes() -> None:
    assert element_as_bytes(-12) == b"-12"
    assert element_as_bytes(b"abc") == b"abc"


def test_int_out_of_range() -> None:
    with pytest.raises(ListpackError):
        encode_int_element(INT64_MAX + 1)
    with pytest.raises(ListpackError):
        encode_element(INT64_MIN - 1)
    lp = Listpack()
    with pytest.raises(ListpackError):
        lp.append(2**64)
    check_consistent(lp, [])


# --- navigation and mutation ------------------------------------------------------


def sample_values() -> list[bytes | int]:
    return [0, 127, 128, -1, 4095, -4096, 4096, 2**15, 2**23, 2**31, INT64_MAX, INT64_MIN]


def test_forward_backward_navigation() -> None:
    vals = sample_values() + [b"", b"s" * 63, b"s" * 64, b"s" * 4095, b"s" * 4096, b"s" * 70000]
    lp = Listpack.from_values(vals)
    check_consistent(lp, vals)
    offsets = []
    off = lp.first()
    while off != -1:
        offsets.append(off)
        off = lp.next(off)
    assert [lp.get(o) for o in offsets] == vals
    back = []
    off = lp.last()
    while off != -1:
        back.append(off)
        off = lp.prev(off)
    assert back == offsets[::-1]
    for i, o in enumerate(offsets):
        assert lp.seek(i) == o
        assert lp.seek(i - len(vals)) == o
    assert lp.seek(len(vals)) == -1
    assert lp.seek(-len(vals) - 1) == -1
    assert decode_many(lp.buf, offsets[2], 3) == (vals[2:5], offsets[5])


def test_insert_replace_delete() -> None:
    lp = Listpack.from_values([b"a", b"c"])
    off_c = lp.seek(1)
    new = lp.insert(off_c, b"b")
    assert new == off_c
    check_consistent(lp, [b"a", b"b", b"c"])
    pos = lp.insert(lp.seek(-1), 99, after=True)
    assert lp.get(pos) == 99
    check_consistent(lp, [b"a", b"b", b"c", 99])
    lp.insert(lp.first(), b"12")
    check_consistent(lp, [12, b"a", b"b", b"c", 99])
    lp.insert(len(lp.buf) - 1, b"end")  # before the end byte == append
    check_consistent(lp, [12, b"a", b"b", b"c", 99, b"end"])
    lp.replace(lp.seek(1), b"x" * 300)
    check_consistent(lp, [12, b"x" * 300, b"b", b"c", 99, b"end"])
    lp.replace(lp.seek(1), 5)
    check_consistent(lp, [12, 5, b"b", b"c", 99, b"end"])
    nxt = lp.delete(lp.seek(1))
    assert lp.get(nxt) == b"b"
    check_consistent(lp, [12, b"b", b"c", 99, b"end"])
    assert lp.delete(lp.last()) == -1
    check_consistent(lp, [12, b"b", b"c", 99])
    lp.delete_range(lp.seek(1), 2)
    check_consistent(lp, [12, 99])
    lp.delete_range(lp.first(), 10)  # clamps at the end
    check_consistent(lp, [])
    assert bytes(lp.buf) == bytes(Listpack().buf)


def test_bad_offsets() -> None:
    lp = Listpack.from_values([1, b"two"])
    end = len(lp.buf) - 1
    for call in (
        lambda: lp.delete(end),
        lambda: lp.delete(2),
        lambda: lp.replace(end, 1),
        lambda: lp.insert(end, 1, after=True),
        lambda: lp.insert(end + 1, 1),
        lambda: lp.replace_int_inplace(end, 1),
        lambda: lp.delete_range(end, 1),
        lambda: lp.get(end),
        lambda: lp.get(end + 5),
        lambda: lp.next(end),
    ):
        with pytest.raises(ListpackError):
            call()
    check_consistent(lp, [1, b"two"])


def test_replace_int_inplace() -> None:
    lp = Listpack.from_values([5, 200, b"s", 70000, INT64_MAX])
    before = len(lp.buf)
    assert lp.replace_int_inplace(lp.seek(0), 127)
    assert not lp.replace_int_inplace(lp.seek(0), 128)  # would need 13 bits
    assert lp.replace_int_inplace(lp.seek(1), -4096)
    assert not lp.replace_int_inplace(lp.seek(1), 5)  # smaller: refuse, caller replaces
    assert lp.replace_int_inplace(lp.seek(3), 8388607)
    assert lp.replace_int_inplace(lp.seek(4), INT64_MIN)
    assert len(lp.buf) == before
    check_consistent(lp, [127, -4096, b"s", 8388607, INT64_MIN])
    assert not lp.replace_int_inplace(lp.seek(3), 2**40)
    check_consistent(lp, [127, -4096, b"s", 8388607, INT64_MIN])


def test_append_encoded() -> None:
    vals: list[bytes | int] = [1, b"f", b"v", 1000, b"77"]
    lp = Listpack.from_values([b"head"])
    lp.append_encoded(b"".join(encode_element(v) for v in vals), len(vals))
    check_consistent(lp, [b"head", 1, b"f", b"v", 1000, 77])
    assert bytes(lp.buf) == bytes(Listpack.from_values([b"head", *vals]).buf)


def test_clear_and_repr() -> None:
    lp = Listpack.from_values([1, 2])
    assert "2 elements" in repr(lp)
    lp.clear()
    check_consistent(lp, [])


# --- the 16-bit count ---------------------------------------------------------------


def test_count_becomes_unknown_at_65535() -> None:
    lp = Listpack()
    lp.append_encoded(b"\x00\x01" * 65533, 65533)
    assert lp.header_count() == 65533
    lp.append(1)
    assert lp.header_count() == 65534
    lp.append(2)  # 65535 elements: the header can only say "unknown"
    assert lp.header_count() == 65535
    assert len(lp) == 65535
    lp.append(3)
    assert lp.header_count() == 65535
    assert len(lp) == 65536
    lp.validate()
    assert lp.seek(-1) == lp.last() and lp.get(lp.seek(-1)) == 3
    assert lp.get(lp.seek(65533)) == 1
    assert lp.seek(65536) == -1
    assert lp.seek(-65537) == -1
    assert lp.get(lp.seek(-65536)) == 0
    lp.delete(lp.last())
    lp.delete(lp.last())
    assert lp.header_count() == 65535  # deletions leave it unknown, as Redis
    lp.validate()
    assert len(lp) == 65534  # ...until counted, which caches it back (lpLength)
    assert lp.header_count() == 65534
    lp.validate()


def test_append_encoded_clamps_count() -> None:
    lp = Listpack()
    lp.append_encoded(b"\x05\x01" * 70000, 70000)
    assert lp.header_count() == 65535
    assert len(lp) == 70000
    lp.delete_range(lp.first(), 69000)
    assert lp.header_count() == 65535
    assert len(lp) == 1000 and lp.header_count() == 1000
    lp.validate()


def test_total_bytes_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    lp = Listpack.from_values([b"abc"])
    monkeypatch.setattr(lpmod, "MAX_TOTAL_BYTES", len(lp.buf) + 10)
    lp.append(b"x" * 5)  # 7 bytes: fits
    before = bytes(lp.buf)
    for grow in (
        lambda: lp.append(b"y" * 20),
        lambda: lp.append_encoded(encode_element(b"y" * 20), 1),
        lambda: lp.insert(lp.first(), b"y" * 20),
        lambda: lp.replace(lp.first(), b"y" * 20),
    ):
        with pytest.raises(ListpackError):
            grow()
        assert bytes(lp.buf) == before


# --- validation and corrupt buffers -----------------------------------------------------


def valid_buffer() -> bytes:
    return bytes(Listpack.from_values([1, b"abc", -300, b"q" * 130, 70000, b"", INT64_MIN]).buf)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x07\x00\x00\x00\x00\x00",  # too short
        header(7, 0) + b"\x00",  # no end byte
        header(8, 0) + b"\xff",  # total bytes wrong
        header(7, 1) + b"\xff",  # count wrong
        header(9, 1) + b"\xf5\x01\xff",  # invalid encoding byte
        header(9, 1) + b"\x01\x02\xff",  # backlen says 2, element is 1
        header(9, 0) + b"\x01\x01\xff",  # header count 0, one element
        header(9, 1) + b"\x81\x61\xff",  # element (and its backlen) runs into the end byte
        header(9, 1) + b"\xff\x01\xff",  # end byte in the middle
        header(12, 1) + b"\xf0\xff\xff\xff\xff\xff",  # 32-bit length far past the end
        header(10, 1) + b"\xe0\x05\xff\xff",  # 12-bit length past the end
        header(8, 1) + b"\xe0\xff",  # 12-bit header itself truncated
        header(10, 1) + b"\xf4\x00\x00\xff",  # 64-bit int truncated
        header(11, 1) + b"\x81\x61\x82\x80\xff",  # backlen with a flag byte: not canonical
    ],
)
def test_corrupt_buffers(data: bytes) -> None:
    with pytest.raises(ListpackError):
        Listpack.from_bytes(data)


def test_shallow_validation_checks_header_only() -> None:
    bad_body = header(9, 1) + b"\xf5\x01\xff"
    Listpack.from_bytes(bad_body, validate=False).validate(deep=False)
    with pytest.raises(ListpackError):
        Listpack(bytearray(bad_body)).validate(deep=True)
    with pytest.raises(ListpackError):
        Listpack(bytearray(header(8, 0) + b"\xff")).validate(deep=False)


def test_unknown_count_header_accepted() -> None:
    lp = Listpack.from_bytes(header(9, 65535) + b"\x01\x01\xff")
    assert len(lp) == 1
    assert lp.header_count() == 1


def test_decode_errors() -> None:
    buf = bytearray(header(9, 1) + b"\xf5\x01\xff")
    with pytest.raises(ListpackError):
        decode_element(buf, HEADER_SIZE)
    with pytest.raises(ListpackError):
        next_offset(buf, HEADER_SIZE)
    with pytest.raises(ListpackError):
        decode_element(buf, 8)  # the end byte
    with pytest.raises(ListpackError):
        decode_element(buf, 100)
    with pytest.raises(ListpackError):
        next_offset(bytearray(header(8, 1) + b"\xf0\xff"), HEADER_SIZE)
    with pytest.raises(ListpackError):
        prev_offset(bytearray(header(9, 1) + b"\x01\x7f\xff"), 8)  # backlen points before data
    assert prev_offset(buf, HEADER_SIZE) == -1


def check_garbage(data: bytes) -> None:
    """Either the buffer validates and every reader agrees, or ListpackError."""
    try:
        lp = Listpack.from_bytes(data)
    except ListpackError:
        return
    forward = list(lp)
    assert list(lp.iter_reverse()) == forward[::-1]
    assert len(lp) == len(forward)
    for i, v in enumerate(forward):
        assert lp.get(lp.seek(i)) == v
        assert lp.get(lp.seek(i - len(forward))) == v


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes(data: bytes) -> None:
    check_garbage(data)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 3), st.booleans())
def test_random_bodies_with_valid_header(body: bytes, extra: int, unknown: bool) -> None:
    # A correct header and end byte, so the deep checks get exercised.
    data = body + b"\xff"
    count = 65535 if unknown else extra
    check_garbage(header(len(data) + HEADER_SIZE, count) + data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_single_byte_mutations(data: st.DataObject) -> None:
    buf = bytearray(valid_buffer())
    pos = data.draw(st.integers(0, len(buf) - 1))
    buf[pos] = data.draw(st.integers(0, 255))
    check_garbage(bytes(buf))


def test_every_single_byte_mutation_of_a_small_buffer() -> None:
    base = bytes(Listpack.from_values([1, b"ab", -5000, 300, b"c" * 70]).buf)
    for pos in range(len(base)):
        for byte in range(256):
            buf = bytearray(base)
            buf[pos] = byte
            check_garbage(bytes(buf))


# --- property test against a list model ------------------------------------------------

INT_EDGES = [0, 1, 127, 128, -1, 4095, 4096, -4096, -4097, 32767, 32768, -32768, -32769]
INT_EDGES += [2**23 - 1, 2**23, -(2**23), 2**31 - 1, 2**31, -(2**31), INT64_MAX, INT64_MIN]

ints = st.one_of(st.sampled_from(INT_EDGES), st.integers(INT64_MIN, INT64_MAX))
strings = st.one_of(
    st.binary(max_size=20),
    st.binary(min_size=60, max_size=70),
    st.binary(min_size=120, max_size=130),
    st.sampled_from([b"x" * 4095, b"x" * 4096, b"y" * 16378]),
    ints.map(lambda i: str(i).encode()),
    st.sampled_from([b"007", b"-0", b"+1", b"9223372036854775808", b"-9223372036854775809"]),
)
values = st.one_of(ints, strings)


class ListpackModel(RuleBasedStateMachine):
    @initialize(initial=st.lists(values, max_size=8))
    def setup(self, initial: list[bytes | int]) -> None:
        self.lp = Listpack.from_values(initial)
        self.model = [canonical(v) for v in initial]

    def index(self, data: st.DataObject) -> int:
        return data.draw(st.integers(0, len(self.model) - 1))

    @rule(v=values)
    def append(self, v: bytes | int) -> None:
        self.lp.append(v)
        self.model.append(canonical(v))

    @rule(vs=st.lists(values, max_size=5))
    def append_encoded(self, vs: list[bytes | int]) -> None:
        self.lp.append_encoded(b"".join(encode_element(v) for v in vs), len(vs))
        self.model.extend(canonical(v) for v in vs)

    @precondition(lambda self: self.model)
    @rule(data=st.data(), v=values, after=st.booleans())
    def insert(self, data: st.DataObject, v: bytes | int, after: bool) -> None:
        i = self.index(data)
        off = self.lp.insert(self.lp.seek(i), v, after=after)
        j = i + 1 if after else i
        self.model.insert(j, canonical(v))
        assert self.lp.seek(j) == off

    @precondition(lambda self: self.model)
    @rule(data=st.data(), v=values)
    def replace(self, data: st.DataObject, v: bytes | int) -> None:
        i = self.index(data)
        self.lp.replace(self.lp.seek(i), v)
        self.model[i] = canonical(v)

    @precondition(lambda self: self.model)
    @rule(data=st.data(), v=ints)
    def replace_int_inplace(self, data: st.DataObject, v: int) -> None:
        i = self.index(data)
        off = self.lp.seek(i)
        same_size = len(encode_int_element(v)) == next_offset(self.lp.buf, off) - off
        assert self.lp.replace_int_inplace(off, v) == same_size
        if same_size:
            self.model[i] = v

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        i = self.index(data)
        nxt = self.lp.delete(self.lp.seek(i))
        del self.model[i]
        assert nxt == (self.lp.seek(i) if i < len(self.model) else -1)

    @precondition(lambda self: self.model)
    @rule(data=st.data(), count=st.integers(0, 6))
    def delete_range(self, data: st.DataObject, count: int) -> None:
        i = self.index(data)
        self.lp.delete_range(self.lp.seek(i), count)
        del self.model[i : i + count]

    @rule(data=st.data())
    def seek(self, data: st.DataObject) -> None:
        n = len(self.model)
        i = data.draw(st.integers(-n - 2, n + 1))
        off = self.lp.seek(i)
        if -n <= i < n:
            assert self.lp.get(off) == self.model[i]
        else:
            assert off == -1

    @invariant()
    def consistent(self) -> None:
        check_consistent(self.lp, self.model)
        # The bytes only depend on the values: rebuilding gives the same buffer.
        assert bytes(self.lp.buf) == bytes(Listpack.from_values(self.model).buf)


ListpackModel.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestListpackModel = ListpackModel.TestCase


@settings(max_examples=200, deadline=None)
@given(st.lists(values, max_size=30))
def test_roundtrip_values(vals: list[bytes | int]) -> None:
    lp = Listpack.from_values(vals)
    expected = [canonical(v) for v in vals]
    check_consistent(lp, expected)
    assert [element_as_bytes(v) for v in lp] == [element_as_bytes(v) for v in vals]
    assert list(Listpack.from_bytes(bytes(lp.buf))) == expected


# --- byte-exact against a real redis-server --------------------------------------------


def _rdb_string(payload: bytes, pos: int) -> tuple[bytes, int]:
    """A raw (uncompressed) RDB string at pos: length prefix, then the bytes."""
    first = payload[pos]
    kind = first >> 6
    if kind == 0:
        n, pos = first & 0x3F, pos + 1
    elif kind == 1:
        n, pos = ((first & 0x3F) << 8) | payload[pos + 1], pos + 2
    elif first == 0x80:
        n, pos = int.from_bytes(payload[pos + 1 : pos + 5], "big"), pos + 5
    else:
        raise AssertionError(f"unexpected RDB length byte {first:#x}")
    return payload[pos : pos + n], pos + n


@pytest.mark.compat
def test_bytes_match_redis_hash_listpack(redis_ref: ServerProcess) -> None:
    client = redis.Redis(host=redis_ref.host, port=redis_ref.port)
    try:
        client.config_set("rdbcompression", "no")
        client.config_set("hash-max-listpack-value", "100000")
        client.config_set("hash-max-listpack-entries", "100000")
        vals = INT_EDGES + [b"", b"a", b"007", b"-0", b"+1", b"9223372036854775808"]
        vals += [b"s" * 63, b"s" * 64, b"s" * 125, b"s" * 126, b"s" * 4095, b"s" * 4096]
        vals += [b"s" * 16378, b"s" * 70000, b"-9223372036854775809", b"12 ", b"hello"]
        fields = [b"f%d" % i for i in range(len(vals))]
        raw = [element_as_bytes(v) for v in vals]
        mapping = dict(zip(fields, raw, strict=True))
        client.delete("lp")
        client.hset("lp", mapping=mapping)
        assert client.object("encoding", "lp") == b"listpack"
        dump = client.dump("lp")
        assert dump[0] == 16  # RDB_TYPE_HASH_LISTPACK
        blob, _ = _rdb_string(dump, 1)
        ours = Listpack.from_values([x for pair in mapping.items() for x in pair])
        assert bytes(ours.buf) == blob
        Listpack.from_bytes(blob)
    finally:
        client.delete("lp")
        client.close()


def _uncached_encoding(value: bytes) -> bytes:
    iv = string_to_int64(value)
    return encode_int_element(iv) if iv is not None else lpmod.encode_str_element(value)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=80) | st.from_regex(rb"\A-?[0-9]{1,20}\Z"), max_size=20))
def test_encode_element_cache_is_transparent(values: list[bytes]) -> None:
    # Twice each (the second from the cache when short), and as bytearray / memoryview.
    for v in values + values:
        expected = _uncached_encoding(v)
        assert encode_element(v) == expected
        assert encode_element(bytearray(v)) == expected
        assert encode_element(memoryview(v)) == expected
        assert lpmod.cached_element(v) in (None, expected)


def test_encode_element_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lpmod, "_ENC_CACHE_MAX", 8)
    lpmod._ENC_CACHE.clear()
    for i in range(50):
        assert encode_element(b"k%d" % i) == lpmod.encode_str_element(b"k%d" % i)
        assert len(lpmod._ENC_CACHE) <= 8
    long = b"x" * (lpmod._ENC_CACHE_MAX_LEN + 1)
    assert encode_element(long) == lpmod.encode_str_element(long)
    assert lpmod.cached_element(long) is None  # long strings are never cached
    assert encode_element(b"42") == encode_int_element(42) == lpmod.cached_element(b"42")
