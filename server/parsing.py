"""Argument parsing helpers shared by command handlers (Redis's getLongLongFromObject & co)."""

from __future__ import annotations

import math

from server.errors import NOT_FLOAT, NOT_INTEGER, CommandError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
ERR_TIMEOUT_NOT_INT = "ERR timeout is not an integer or out of range"
ERR_TIMEOUT_NEGATIVE = "ERR timeout is negative"
ERR_TIMEOUT_RANGE = "ERR timeout is out of range"


def is_canonical_int(arg: bytes) -> bool:
    """string2ll rules: optional '-', no leading zeros, no '+', no spaces, fits int64."""
    n = len(arg)
    if 0 < n < 19 and arg.isdigit():  # the usual case: a non-negative number that fits
        return arg[0] != 48 or n == 1  # (48 == '0': "0" itself, but no leading zero)
    if n == 0 or n > 20:
        return False
    body = arg[1:] if arg[0] == 45 else arg  # 45 == '-'
    if not body or not body.isdigit() or body[0] == 48:  # 48 == '0'
        return False
    value = int(arg)
    return INT64_MIN <= value <= INT64_MAX


def parse_int(arg: bytes, error: str = NOT_INTEGER) -> int:
    if not is_canonical_int(arg):
        raise CommandError(error)
    return int(arg)


INT_OUT_OF_RANGE = "ERR value is out of range, value must between -2147483648 and 2147483647"


def parse_c_int(arg: bytes, error: str | None = None) -> int:
    """getIntFromObjectOrReply: an int64 that fits a C int. Without `error`, Redis's two
    texts (not an integer / out of range); with it, that text for both."""
    value = parse_int(arg, error or NOT_INTEGER)
    if not -(2**31) <= value < 2**31:
        raise CommandError(error or INT_OUT_OF_RANGE)
    return value


_C_SPACE = b" \t\n\v\f\r"


def string2ull(arg: bytes) -> int | None:
    """Redis's string2ull (SCAN cursors): string2ll's strict form if it parses (negative:
    refused), else strtoull's: leading spaces, a sign ('-' wraps modulo 2^64), digits to the
    end of the C string (a NUL ends it), at most 2^64 - 1. None when refused."""
    arg = arg.split(b"\0", 1)[0]
    if is_canonical_int(arg):
        value = int(arg)
        return value if value >= 0 else None
    body = arg.lstrip(_C_SPACE)
    negative = body[:1] == b"-"
    if body[:1] in (b"-", b"+"):
        body = body[1:]
    if not body.isdigit() or not body.isascii():
        return None
    value = int(body)
    if value > 2**64 - 1:
        return None  # ERANGE
    return (-value) % 2**64 if negative else value


def parse_nonneg_int(arg: bytes, error: str) -> int:
    value = parse_int(arg)
    if value < 0:
        raise CommandError(error)
    return value


def parse_float(arg: bytes, error: str = NOT_FLOAT) -> float:
    """strtold-style: accepts what Redis accepts, rejects spaces and nan."""
    text = arg.decode("ascii", errors="replace")
    if not text or text != text.strip():
        raise CommandError(error)
    try:
        value = float(text)
    except ValueError as exc:
        raise CommandError(error) from exc
    if math.isnan(value):
        raise CommandError(error)
    return value


def eq(arg: bytes, word: bytes) -> bool:
    """Case-insensitive option match; word must be lowercase."""
    return len(arg) == len(word) and arg.lower() == word


def parse_block_timeout(arg: bytes, now_ms: int) -> int:
    """A blocking command's timeout in milliseconds (XREAD's BLOCK, WAIT, CLIENT PAUSE:
    getTimeoutFromObjectOrReply): 0 = forever."""
    value = parse_int(arg, ERR_TIMEOUT_NOT_INT)
    if value < 0:
        raise CommandError(ERR_TIMEOUT_NEGATIVE)
    if value > 0 and value > INT64_MAX - now_ms:
        raise CommandError(ERR_TIMEOUT_RANGE)
    return value
