"""aof_parse.iter_batches reads exactly what the strict reader iter_commands reads: the same
commands at the same offsets, and the same error (kind and offset) for bad framing, a
truncated end, annotations and every form hiredis would accept but the strict rules refuse;
with the check that a run of commands is the file's bytes in C (protocol/native.py) and in
Python."""

from __future__ import annotations

import random

import pytest

from protocol import native
from protocol.encoder import encode_command
from server.persistence.aof_parse import (
    AofFormatError,
    AofTruncated,
    iter_batches,
    iter_commands,
    offsets,
)


@pytest.fixture(autouse=True, params=["c", "python"])
def _check_loop(request, monkeypatch) -> None:
    if request.param == "python":
        monkeypatch.setattr(native, "frames_end", None)
    elif native.frames_end is None:
        pytest.skip("protocol._native was not built")


def _strict(data: bytes) -> tuple[list, tuple | None]:
    out = []
    try:
        for start, argv, end in iter_commands(data):
            out.append((start, argv, end))
    except (AofFormatError, AofTruncated) as exc:
        return out, (type(exc), exc.offset)
    return out, None


def _batched(data: bytes) -> tuple[list, tuple | None]:
    out = []
    try:
        for start, cmds, end in iter_batches(data):
            starts = offsets(start, cmds)
            ends = [*starts[1:], end]
            out += list(zip(starts, cmds, ends, strict=True))
    except (AofFormatError, AofTruncated) as exc:
        return out, (type(exc), exc.offset)
    return out, None


def _commands(rng: random.Random, n: int) -> bytes:
    parts = [encode_command([b"SELECT", b"0"])]
    for i in range(n):
        kind = rng.randrange(4)
        if kind == 0:
            argv = [b"XADD", b"s%d" % rng.randrange(3), b"%d-%d" % (1000 + i, 0),
                    b"f", b"x" * rng.randrange(0, 300)]
        elif kind == 1:
            argv = [b"MULTI"]
        elif kind == 2:
            argv = [b"EXEC"]
        else:  # payloads holding what framing is made of
            argv = [b"SET", b"k", bytes(rng.choice(b"*$+#\r\n-:0123") for _ in range(40))]
        parts.append(encode_command(argv))
    return b"".join(parts)


@pytest.fixture(scope="module")
def big() -> bytes:
    return _commands(random.Random(3), 3000)  # (several of iter_batches' windows)


def test_a_canonical_file_reads_the_same(big: bytes) -> None:
    assert len(big) > 3 * 64 * 1024
    assert _batched(big) == _strict(big)
    assert _strict(big)[1] is None


@pytest.mark.parametrize("odd", [
    b"#TS:1700000000\r\n",  # an annotation (aof-timestamp-enabled)
    b"*2\r\n$04\r\nPING\r\n$1\r\nx\r\n",  # a length with a leading zero: strict rules accept it
    b"*1\r\n+PING\r\n",  # a simple string where a bulk string must be
    b"*2\r\n$3\r\nGET\r\n:1\r\n",  # an integer
    b"*1\r\n$4\r\nPINGXY",  # a bulk string not followed by CRLF (hiredis does not check)
    b"*0\r\n",  # no arguments
    b"*-1\r\n",
    b"*1\r\n$-1\r\n",
    b"$4\r\nPING\r\n",  # not an array
    b"*2\r\n*1\r\n$1\r\na\r\n$1\r\nb\r\n",  # a nested array
    b"~1\r\n$4\r\nPING\r\n",  # a RESP3 set
    b"*12345678\r\n$1\r\na\r\n",  # a huge array header
    b"PING\r\n",  # an inline command
])
@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_every_odd_form_gives_the_strict_result(big: bytes, odd: bytes, where: str) -> None:
    cut = len(big) if where == "end" else 0
    if where == "middle":
        batches = list(iter_batches(big))
        cut = batches[len(batches) // 2][0]  # (a command boundary deep in the file)
    data = big[:cut] + odd + big[cut:]
    assert _batched(data) == _strict(data)


def test_every_truncation_gives_the_strict_result() -> None:
    data = _commands(random.Random(5), 40)
    for cut in range(len(data) + 1):
        assert _batched(data[:cut]) == _strict(data[:cut]), cut


def test_a_long_argument_across_windows(big: bytes) -> None:
    data = big + encode_command([b"SET", b"k", b"v" * 300_000]) + big
    assert _batched(data) == _strict(data)
    assert _batched(data[:-5]) == _strict(data[:-5])


def test_reading_from_an_offset(big: bytes) -> None:
    start = offsets(0, [list(c) for c in [[b"SELECT", b"0"]]])[0] + len(
        encode_command([b"SELECT", b"0"]))
    out = []
    for first, cmds, end in iter_batches(big, start):
        out += list(zip(offsets(first, cmds), cmds, [*offsets(first, cmds)[1:], end],
                        strict=True))
    assert out == list(iter_commands(big, start))


def test_a_command_of_many_arguments(big: bytes) -> None:
    """More arguments than the encoder's precomputed array headers: the run is still
    checked against the file's bytes."""
    many = encode_command([b"DEL", *(b"k%d" % i for i in range(1500))])
    data = big + many + big
    assert _batched(data) == _strict(data)
    assert any(len(cmd) == 1501 for _, cmd, _ in _batched(data)[0])
