"""Inline command splitting, with the semantics of Redis's sdssplitargs().

Blanks between arguments are C isspace() (space, \\t, \\n, \\v, \\f, \\r) but an unquoted
argument only ends at space, \\t, \\n or \\r, so "a\\vb" is one argument. Quotes may start in
the middle of an argument ('foo"bar baz"' is 'foobar baz'); a closing quote must be followed by
a blank or the end of the line. "double quotes" know \\xHH, \\n \\r \\t \\b \\a and take any
other escaped character literally; 'single quotes' only know \\'.
"""

from __future__ import annotations

import re

from protocol.errors import UNBALANCED_QUOTES, ProtocolError

__all__ = ["split_args"]

_ISSPACE = frozenset(b" \t\n\v\f\r")
_ENDS_UNQUOTED = frozenset(b" \t\n\r")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}
_DQUOTE = 34
_SQUOTE = 39
_BACKSLASH = 92
# An argument starts at a non-blank and runs until space, \t, \n or \r.
_TOKEN = re.compile(rb"[^ \t\n\v\f\r][^ \t\n\r]*")


def split_args(line: bytes) -> list[bytes]:
    """Split one inline request line (no trailing newline) into arguments.

    Raises ProtocolError('ERR Protocol error: unbalanced quotes in request').
    """
    if b'"' not in line and b"'" not in line:
        return _TOKEN.findall(line)
    return _split_quoted(line)


def _split_quoted(line: bytes) -> list[bytes]:
    n = len(line)
    out: list[bytes] = []
    i = 0
    while True:
        while i < n and line[i] in _ISSPACE:
            i += 1
        if i >= n:
            return out
        cur = bytearray()
        in_dq = in_sq = done = False
        while not done:
            # 0 stands for the C string's terminating NUL (the line never holds a NUL).
            c = line[i] if i < n else 0
            nxt = line[i + 1] if i + 1 < n else 0
            if in_dq:
                if (
                    c == _BACKSLASH
                    and nxt == 120  # 'x'
                    and i + 3 < n
                    and line[i + 2] in _HEX
                    and line[i + 3] in _HEX
                ):
                    cur.append(int(line[i + 2 : i + 4], 16))
                    i += 3
                elif c == _BACKSLASH and nxt:
                    i += 1
                    cur.append(_ESCAPES.get(nxt, nxt))
                elif c == _DQUOTE:
                    if nxt and nxt not in _ISSPACE:
                        raise ProtocolError(UNBALANCED_QUOTES)
                    done = True
                elif not c:
                    raise ProtocolError(UNBALANCED_QUOTES)
                else:
                    cur.append(c)
            elif in_sq:
                if c == _BACKSLASH and nxt == _SQUOTE:
                    i += 1
                    cur.append(_SQUOTE)
                elif c == _SQUOTE:
                    if nxt and nxt not in _ISSPACE:
                        raise ProtocolError(UNBALANCED_QUOTES)
                    done = True
                elif not c:
                    raise ProtocolError(UNBALANCED_QUOTES)
                else:
                    cur.append(c)
            elif not c or c in _ENDS_UNQUOTED:
                done = True
            elif c == _DQUOTE:
                in_dq = True
            elif c == _SQUOTE:
                in_sq = True
            else:
                cur.append(c)
            if i < n:
                i += 1
        out.append(bytes(cur))
