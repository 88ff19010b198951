"""server/long_double.py: string2ld's parsing, the x87 FPU's rounding and glibc's "%.17Lf".

The expected values are what glibc's strtold and printf give for an 80-bit long double on
x86-64 (the "%La" forms in the comments are theirs); tests/integration/test_incrbyfloat.py
compares whole INCRBYFLOAT replies with a real redis-server.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from server import long_double as ld

MAX = Fraction((2**64 - 1) * 2**16320)  # 0xf.fffffffffffffffp+16380
TINY = Fraction(1, 2**16445)  # the smallest subnormal, 0x0.000000000000001p-16385


# -- parsing (string2ld) ------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "value"), [
    (b"10.5", Fraction(21, 2)),
    (b"0.1", Fraction(0xcccccccccccccccd, 2**67)),  # 0xc.ccccccccccccccdp-7
    (b"1.1", Fraction(0x8ccccccccccccccd, 2**63)),  # 0x8.ccccccccccccccdp-3
    (b"3.0e3", Fraction(3000)), (b"2.0E+2", Fraction(200)), (b"5e-0", Fraction(5)),
    (b".5", Fraction(1, 2)), (b"5.", Fraction(5)), (b"+3", Fraction(3)), (b"-3", Fraction(-3)),
    (b"-0", Fraction(0)), (b"0e999999999999999999999", Fraction(0)), (b"000012", Fraction(12)),
    (b"12345678901234567890.123456789", Fraction(0xab54a98ceb1f0ad2)),  # 0xa.b54a98ceb1f0ad2p+60
    (b"0x10", Fraction(16)), (b"0X1.8p1", Fraction(3)), (b"-0x.8", Fraction(-1, 2)),
    (b"0xAp-2", Fraction(5, 2)), (b"0x1p-16445", TINY),
    (b"0x1.fffffffffffffffep16383", MAX),
    (b"1.18973149535723176502e4932", MAX),
    (b"3.6451995318824746025e-4951", TINY),
    (b"1.8225997659412373013e-4951", TINY),  # just above half the smallest subnormal
    (b"0x1.8p-16446", TINY),
    (b"1" + b"0" * 4500 + b"e-4500", Fraction(1)),  # past Python's 4300-digit int limit
    (b"0" * 5118 + b"1", Fraction(1)),  # 5119 characters: the longest accepted
])
def test_parse_gives_the_long_double_strtold_gives(text: bytes, value: Fraction) -> None:
    assert ld.parse(text) == value


@pytest.mark.parametrize("text", [
    b"", b" 1", b"1 ", b"\t1", b"1\n", b"1\x00", b"abc", b"1e", b"1e+", b"1p3", b".", b"+", b"-",
    b"+-1", b"1_000", b"1,5", b"0x", b"0x.", b"0xp1", b"0x1p", b"0x1.8q", b"\xa01", b"1\xb2",
    b"nan", b"-nan", b"NaN(1)", b"infinit", b"in", b"info",
    b"1e4933", b"1.18973149535723176509e4932", b"0x1.ffffffffffffffffp16383",  # overflow
    b"1e-4951", b"1.8225997659412373012e-4951", b"0x1p-16446",  # underflow to zero
    b"1e99999999999999999999", b"-1e-99999999999999999999", b"1" * 5119,
    b"0" * 5119 + b"1",  # 5120 characters: MAX_LONG_DOUBLE_CHARS
])
def test_parse_refuses_what_string2ld_refuses(text: bytes) -> None:
    assert ld.parse(text) is None


@pytest.mark.parametrize(("text", "positive"), [
    (b"inf", True), (b"+INF", True), (b"Infinity", True), (b"-inf", False), (b"-iNfInItY", False),
])
def test_parse_accepts_infinity(text: bytes, positive: bool) -> None:
    assert ld.parse(text) == (math.inf if positive else -math.inf)


# -- rounding -----------------------------------------------------------------------------------
def test_nearest_rounds_ties_to_even() -> None:
    assert ld.nearest(Fraction(2**64 + 1)) == 2**64  # the halfway point, to the even 2**63
    assert ld.nearest(Fraction(2**64 + 3)) == 2**64 + 4
    assert ld.nearest(Fraction(2**64 + 2)) == 2**64 + 2  # representable
    assert ld.nearest(Fraction(-(2**65) - 2)) == -(2**65)
    assert ld.nearest(Fraction(3, 2**16447)) == TINY  # 1.5 units of 2**-16446: up to 1 unit
    assert ld.nearest(Fraction(1, 2**16446)) == 0  # half the smallest subnormal: to even 0


def test_nearest_overflows_at_the_halfway_point_past_the_largest() -> None:
    halfway = Fraction((2**65 - 1) * 2**16319)  # between MAX and 2**16384
    assert ld.nearest(halfway) == math.inf
    assert ld.nearest(-halfway) == -math.inf
    assert ld.nearest(halfway - 1) == MAX


def test_nearest_is_the_closest_long_double() -> None:
    rng = random.Random(1234)
    for _ in range(2000):
        num = rng.getrandbits(rng.randint(1, 300)) + 1
        den = rng.getrandbits(rng.randint(1, 300)) + 1
        value = Fraction(num, den) * Fraction(2) ** rng.randint(-16600, 16400)
        got = ld.nearest(value)
        if got == math.inf:
            assert value >= Fraction((2**65 - 1) * 2**16319)
            continue
        assert isinstance(got, Fraction)
        # the spacing of long doubles around value: 2**(e - 63), never under 2**-16445
        exp = value.numerator.bit_length() - value.denominator.bit_length()
        if Fraction(2) ** exp > value:
            exp -= 1  # now 2**exp <= value < 2**(exp + 1)
        ulp = Fraction(2) ** max(exp - 63, -16445)
        assert (got / ulp).denominator == 1 and got / ulp <= 2**64  # (2**64: rounded up)
        assert abs(got - value) <= ulp / 2


def test_add_rounds_the_exact_sum_once() -> None:
    a, b = ld.parse(b"0.1"), ld.parse(b"0.2")
    assert a is not None and b is not None
    assert ld.add(a, b) == ld.nearest(a + b)
    assert ld.add(Fraction(2**64), Fraction(1)) == 2**64
    assert ld.add(MAX, -MAX) == 0
    assert ld.add(TINY, TINY) == 2 * TINY  # subnormal sums are exact


def test_add_of_infinities_and_overflow() -> None:
    assert ld.add(math.inf, Fraction(1)) == math.inf
    assert math.isnan(ld.add(math.inf, -math.inf))
    assert ld.add(-math.inf, -MAX) == -math.inf  # (no float conversion of a huge Fraction)
    assert ld.add(MAX, MAX) == math.inf
    assert ld.add(MAX, Fraction(2**16319)) == math.inf  # half a unit: ties to even, up
    assert ld.add(MAX, Fraction(2**16318)) == MAX
    assert not ld.is_finite(math.inf) and not ld.is_finite(math.nan)
    assert ld.is_finite(MAX)


# -- printing -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "text"), [
    (Fraction(1, 2**18), "0.00000381469726562"),  # ...625: a tie, to the even 2
    (Fraction(3, 2**18), "0.00001144409179688"),  # ...875: a tie, to the even 8
    (Fraction(-1, 2**60), "-0.00000000000000000"),  # printf keeps the sign
    (Fraction(3200), "3200.00000000000000000"),
    (Fraction(0xab54a98ceb1f0ad2), "12345678901234567890.00000000000000000"),
    (TINY, "0.00000000000000000"),
])
def test_format_fixed_is_printf_17lf(value: Fraction, text: str) -> None:
    assert ld.format_fixed(value, 17) == text


def test_format_fixed_rounds_ties_to_even_at_any_precision() -> None:
    assert [ld.format_fixed(Fraction(n, 2), 0) for n in (1, 3, 5, -5)] == ["0", "2", "2", "-2"]
    assert ld.format_fixed(Fraction(1, 4), 1) == "0.2"
    assert ld.format_fixed(Fraction(3, 4), 1) == "0.8"


@pytest.mark.parametrize(("value", "text"), [
    (Fraction(21, 2), b"10.5"), (Fraction(100), b"100"), (Fraction(0), b"0"),
    (Fraction(-1, 2**60), b"0"),  # "-0.00000000000000000" -> "-0" -> "0"
    (Fraction(-5, 2), b"-2.5"), (Fraction(1, 2**18), b"0.00000381469726562"),
    (Fraction(10**17 + 1, 10**17), b"1.00000000000000001"),
    (math.inf, b"inf"), (-math.inf, b"-inf"),
])
def test_format_human_is_ld2string_human(value: ld.LongDouble, text: bytes) -> None:
    assert ld.format_human(value) == text


def test_format_human_of_the_sums_redis_is_known_for() -> None:
    def incr(a: bytes, b: bytes) -> bytes:
        x, y = ld.parse(a), ld.parse(b)
        assert x is not None and y is not None
        return ld.format_human(ld.add(x, y))

    assert incr(b"10.5", b"0.1") == b"10.6"
    assert incr(b"0.1", b"0.2") == b"0.3"  # (0.30000000000000000001 in long double)
    assert incr(b"1.1", b"2.2") == b"3.3"
    assert incr(b"3.0e3", b"2.0e2") == b"3200"
    assert incr(b"5.0e3", b"-5.0e3") == b"0"
    assert incr(b"1e-4000", b"1") == b"1"
    assert incr(b"1e4000", b"0").startswith(b"99999999999999999999654638730996")  # under 1e4000


def test_format_human_of_the_largest_long_double() -> None:
    text = ld.format_human(MAX)  # 4933 digits: far inside Redis's 5120-byte buffer
    assert len(text) == 4933 and text.startswith(b"1189731495357231765021263853030970205169")
    assert ld.parse(text) == MAX


def test_int_and_digits_of_any_length() -> None:
    big = 7**12000  # 10142 digits: str() and int() refuse more than 4300
    digits = ld.int_to_digits(big)
    assert len(digits) == int(12000 * math.log10(7)) + 1 and digits[-1] == "1"  # 7**4k ends 1
    assert ld.digits_to_int(digits.encode()) == big
    assert ld.int_to_digits(10**4000) == "1" + "0" * 4000  # a chunk boundary
    assert ld.digits_to_int(b"") == 0
