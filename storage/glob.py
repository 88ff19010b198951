"""Redis's glob-style matching (stringmatchlen), binary-safe, for KEYS, SCAN MATCH and
CONFIG GET.

Syntax: `*` any run, `?` one byte, `[abc]` / `[^abc]` / `[a-z]` classes (a reversed range
`[z-a]` is the same range; a class left open at the end of the pattern ends there), and `\\x`
for a literal x (a lone trailing backslash is a literal backslash). Every token but `*`
consumes exactly one byte, so the classic greedy match with one backtrack point for the last
`*` is exact and takes O(len(pattern) * len(key)) at worst; no exponential blow-up whatever
the pattern.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["compile_glob", "glob_match"]

_STAR = -1
# A token: _STAR, None for '?', an int for a literal byte, or a (negated, frozenset) class.
Token = int | None | tuple[bool, frozenset[int]]


def _parse_class(pattern: bytes, i: int) -> tuple[Token, int]:
    """Parse a class whose '[' is at i - 1; returns the token and the index after it."""
    n = len(pattern)
    negated = i < n and pattern[i] == 94  # '^'
    if negated:
        i += 1
    members: set[int] = set()
    while i < n:
        c = pattern[i]
        if c == 92 and n - i >= 2:  # '\\' escapes the next byte
            members.add(pattern[i + 1])
            i += 2
        elif c == 93:  # ']'
            i += 1
            break
        elif n - i >= 3 and pattern[i + 1] == 45:  # 'a-z' (Redis swaps a reversed range)
            lo, hi = sorted((c, pattern[i + 2]))
            members.update(range(lo, hi + 1))
            i += 3
        else:
            members.add(c)
            i += 1
    return (negated, frozenset(members)), i


def _tokens(pattern: bytes) -> list[Token]:
    out: list[Token] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == 42:  # '*' (runs collapse into one)
            if not out or out[-1] != _STAR:
                out.append(_STAR)
            i += 1
        elif c == 63:  # '?'
            out.append(None)
            i += 1
        elif c == 91:  # '['
            token, i = _parse_class(pattern, i + 1)
            out.append(token)
        elif c == 92 and i + 1 < n:
            out.append(pattern[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return out


def _one(token: Token, byte: int) -> bool:
    if token is None:
        return True
    if type(token) is int:
        return token == byte
    negated, members = token  # type: ignore[misc]
    return (byte in members) != negated


def _general(tokens: list[Token]) -> Callable[[bytes], bool]:
    def match(key: bytes) -> bool:
        t = k = 0
        star_t = star_k = -1
        nt, nk = len(tokens), len(key)
        while k < nk:
            if t < nt:
                token = tokens[t]
                if token == _STAR:
                    star_t, star_k = t, k
                    t += 1
                    continue
                if _one(token, key[k]):
                    t += 1
                    k += 1
                    continue
            if star_t < 0:
                return False
            # Let the last '*' swallow one more byte and retry from there.
            star_k += 1
            t, k = star_t + 1, star_k
        while t < nt and tokens[t] == _STAR:
            t += 1
        return t == nt

    return match


def compile_glob(pattern: bytes) -> Callable[[bytes], bool]:
    """A matcher for pattern, with fast paths for the usual literal/prefix/suffix forms."""
    if pattern:
        # stringmatchlen never matches an empty string against a non-empty pattern, "*"
        # included (KEYS * and SCAN MATCH * list every key by a shortcut of their own).
        inner = _compile(pattern)
        return lambda key: bool(key) and inner(key)
    return _compile(pattern)


def _compile(pattern: bytes) -> Callable[[bytes], bool]:
    tokens = _tokens(pattern)
    if all(type(t) is int for t in tokens):
        stars = [i for i, t in enumerate(tokens) if t == _STAR]
        literal = bytes(t for t in tokens if t != _STAR)  # type: ignore[misc]
        if not stars:
            return literal.__eq__  # type: ignore[return-value]
        if stars == [len(tokens) - 1]:
            return lambda key: key.startswith(literal)
        if stars == [0]:
            return lambda key: key.endswith(literal)
        if stars == [0, len(tokens) - 1] and len(tokens) > 1:
            return lambda key: literal in key
    return _general(tokens)


_CACHE: dict[bytes, Callable[[bytes], bool]] = {}


def glob_match(pattern: bytes, key: bytes) -> bool:
    """True when key matches the Redis glob pattern."""
    matcher = _CACHE.get(pattern)
    if matcher is None:
        if len(_CACHE) >= 256:
            _CACHE.clear()
        matcher = _CACHE[pattern] = compile_glob(pattern)
    return matcher(key)
