"""The x87 80-bit extended precision `long double` (x86-64 Linux) in exact integer arithmetic,
for INCRBYFLOAT: text -> long double as Redis's string2ld (glibc strtold), the sum of two
long doubles as the FPU rounds it, and long double -> text as ld2string's LD_STR_HUMAN mode
(glibc printf "%.17Lf", trailing zeros dropped).

A long double has a 64-bit significand (integer bit explicit) and a 15-bit exponent:
normal values are m * 2**e with 2**63 <= m < 2**64 and -16445 <= e <= 16320; below that come
the subnormals, m < 2**63 with e = -16445. Here a finite long double is the exact
`Fraction` it stands for and an infinite one is a float (±inf). The sign of a zero is not
kept: the only text it could change is "-0", which LD_STR_HUMAN turns into "0" anyway.

Imports nothing of the server (unit-tested on its own).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

LongDouble = Fraction | float  # finite: the exact value; infinite: float ±inf
ZERO = Fraction(0)

MANT_BITS = 64
MIN_EXP = -16445  # the exponent of the smallest subnormal, 2**-16445
MAX_EXP = 16320  # the largest value is (2**64 - 1) * 2**16320
MAX_CHARS = 5 * 1024  # util.h's MAX_LONG_DOUBLE_CHARS: string2ld refuses texts this long
HUMAN_DIGITS = 17  # "%.17Lf"

# glibc's strtold grammar in the C locale (no leading space: string2ld refuses it).
_DECIMAL = re.compile(rb"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")
_HEX = re.compile(rb"([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?")
_INFINITY = re.compile(rb"([+-]?)(?:inf|infinity)", re.IGNORECASE)

# Python refuses int <-> decimal text conversions past 4300 digits (CVE-2020-10735); values
# here reach about 5100 digits, so longer ones go through in chunks of this size.
_CHUNK = 4000


# -- integers and decimal text, whatever their length --------------------------------------------
def digits_to_int(digits: bytes) -> int:
    """int(digits) for a string of ASCII digits of any length (b"" is 0)."""
    value = 0
    for start in range(0, len(digits), _CHUNK):
        chunk = digits[start:start + _CHUNK]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


def int_to_digits(value: int) -> str:
    """str(value) for a non-negative int of any size."""
    if value < 10 ** _CHUNK:
        return str(value)
    high, low = divmod(value, 10 ** _CHUNK)
    return int_to_digits(high) + str(low).zfill(_CHUNK)


# -- rounding to the nearest long double ---------------------------------------------------------
def _div_half_even(num: int, den: int) -> int:
    """num / den rounded to the nearest integer, ties to even (num, den > 0)."""
    quotient, rest = divmod(num, den)
    if 2 * rest > den or (2 * rest == den and quotient & 1):
        quotient += 1
    return quotient


def _floor_log2(num: int, den: int) -> int:
    """floor(log2(num / den)) for num, den > 0."""
    guess = num.bit_length() - den.bit_length()  # the answer is guess or guess - 1
    if guess >= 0:
        return guess if num >= den << guess else guess - 1
    return guess if num << -guess >= den else guess - 1


def _scaled(num: int, den: int, exp: int) -> tuple[int, int]:
    """(num, den) of num / den / 2**exp, all integers."""
    return (num, den << exp) if exp >= 0 else (num << -exp, den)


def nearest(value: Fraction) -> LongDouble:
    """The long double nearest value (ties to even, as strtold and the FPU's default rounding
    mode); ±inf past the largest finite one."""
    if value == 0:
        return ZERO
    num, den = abs(value.numerator), value.denominator
    exp = max(_floor_log2(num, den) - (MANT_BITS - 1), MIN_EXP)
    mant = _div_half_even(*_scaled(num, den, exp))
    if mant == 1 << MANT_BITS:  # rounded up to the next binade
        mant, exp = mant >> 1, exp + 1
    if exp > MAX_EXP:
        return -math.inf if value < 0 else math.inf
    result = Fraction(mant << exp) if exp >= 0 else Fraction(mant, 1 << -exp)
    return -result if value < 0 else result


def _in_range(exact: Fraction) -> LongDouble | None:
    """The long double nearest a nonzero exact value, or None where strtold reports ERANGE
    with an infinite or zero result (string2ld refuses both)."""
    value = nearest(exact)
    return None if isinstance(value, float) or value == 0 else value


def _decimal(digits: bytes, exp: int) -> LongDouble | None:
    """digits * 10**exp (digits without leading zeros)."""
    if not digits:
        return ZERO  # even "0e999999999999" (glibc's "joker" case)
    # Far out of range, decided before computing 10**exp (which could be 10**(10**12)):
    # 10**4933 is past the largest long double, 10**-4952 under half the smallest subnormal.
    magnitude = len(digits) - 1 + exp  # the exponent of the leading digit
    if not -4953 < magnitude < 4933:
        return None
    return _in_range(digits_to_int(digits) * Fraction(10) ** exp)


def _hexadecimal(mant: int, exp: int) -> LongDouble | None:
    """mant * 2**exp."""
    if mant == 0:
        return ZERO
    # 2**16384 is past the largest long double, 2**-16446 half the smallest subnormal
    magnitude = mant.bit_length() - 1 + exp
    if not -16447 < magnitude < 16384:
        return None
    return _in_range(mant * Fraction(2) ** exp)


def _exponent(text: bytes | None) -> int:
    """An exponent's digits as an int; absurdly long ones are clamped (the range checks then
    refuse them), so that no huge decimal text is converted."""
    if not text:
        return 0
    sign = -1 if text[:1] == b"-" else 1
    digits = text.lstrip(b"+-").lstrip(b"0")
    return sign * (10**12 if len(digits) > 12 else int(digits or b"0"))


def _negated(value: LongDouble | None, sign: bytes) -> LongDouble | None:
    return -value if value is not None and sign == b"-" else value


# -- text <-> long double ------------------------------------------------------------------------
def parse(text: bytes) -> LongDouble | None:
    """string2ld: the long double strtold makes of the whole text, or None when Redis refuses
    it ("value is not a valid float"): empty, MAX_CHARS long or more, leading space or any
    unparsed character, NaN, or a number that overflows or underflows to zero (strtold's
    ERANGE). A subnormal result is accepted, and so are "inf" and "infinity" (any case) and
    hexadecimal floats ("0x1.8p3")."""
    if not text or len(text) >= MAX_CHARS:
        return None
    match = _HEX.fullmatch(text)
    if match is not None:
        sign, whole, frac, exp = match.groups()
        frac = frac or b""
        if not whole and not frac:
            return None  # "0x" alone: strtold reads the "0" and stops at the "x"
        value = _hexadecimal(int(whole + frac, 16), _exponent(exp) - 4 * len(frac))
        return _negated(value, sign)
    match = _DECIMAL.fullmatch(text)
    if match is not None:
        sign, whole, frac, exp = match.groups()
        frac = frac or b""
        if not whole and not frac:
            return None  # ".", "e5", "+": no digits
        value = _decimal((whole + frac).lstrip(b"0"), _exponent(exp) - len(frac))
        return _negated(value, sign)
    match = _INFINITY.fullmatch(text)
    if match is not None:
        return -math.inf if match.group(1) == b"-" else math.inf
    return None


def add(a: LongDouble, b: LongDouble) -> LongDouble:
    """a + b as the x87 FPU computes it (extended precision, round to nearest even): the exact
    sum rounded once. NaN (inf - inf) or ±inf when the sum is not finite."""
    infinite = [x for x in (a, b) if isinstance(x, float)]
    if infinite:
        return sum(infinite)  # a finite addend changes nothing; inf + -inf is NaN
    return nearest(a + b)


def is_finite(value: LongDouble) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def format_fixed(value: Fraction, places: int) -> str:
    """printf("%.<places>Lf", value) as glibc prints it: the exact value rounded to `places`
    decimals, ties to even, with a "-" for any negative value (even one printed as zero)."""
    scaled = _div_half_even(abs(value.numerator) * 10**places, value.denominator)
    digits = int_to_digits(scaled).rjust(places + 1, "0")
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[:-places]}.{digits[-places:]}" if places else sign + digits


def format_human(value: LongDouble) -> bytes:
    """ld2string(LD_STR_HUMAN): "%.17Lf" without its trailing zeros (nor a trailing "."), and
    "-0" written "0". (Redis's 5120-byte buffer is never too short: the largest long double
    prints in under 5000 characters.)"""
    if isinstance(value, float):
        return b"inf" if value > 0 else b"-inf"
    text = format_fixed(value, HUMAN_DIGITS).rstrip("0").removesuffix(".")
    return b"0" if text == "-0" else text.encode()
