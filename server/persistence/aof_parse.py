"""Reading the commands of an append-only file: strict RESP (arrays of bulk strings), lines
starting with '#' skipped as annotations (Redis's rules, see aof_load).

iter_commands reads one command at a time in Python and says exactly where a command is bad
or cut short. iter_batches gives the same commands in runs: hiredis reads a window of the
file, and a run is taken only when the commands it read, written back canonically, are the
very bytes of the file (so iter_commands would have read the same commands from them: hiredis
alone would pass things the strict rules refuse, such as a bulk string not followed by CRLF
or a '+' string in a command). Everything else (annotations, non-canonical lengths, bad
framing, a truncated end) is read by iter_commands, with its errors and offsets.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Iterator

import hiredis

from protocol import native
from protocol.encoder import ARRAY_LINES, BULK_LINES, CRLF, encode_command

_MAX_LEN_DIGITS = 20


class AofFormatError(Exception):
    """Bad framing at `offset`."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


class AofTruncated(Exception):
    """The data ends inside the command starting at `offset`."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"truncated command at offset {offset}")
        self.offset = offset


def _read_number(data: bytes | mmap.mmap, pos: int, start: int) -> tuple[int, int]:
    """The decimal after the type byte at pos, up to CRLF: (value, position after CRLF)."""
    eol = data.find(b"\r\n", pos + 1, pos + 3 + _MAX_LEN_DIGITS)
    if eol < 0:
        if len(data) - pos < _MAX_LEN_DIGITS + 3:
            raise AofTruncated(start)
        raise AofFormatError(start, "invalid length line")
    text = data[pos + 1:eol]
    if not text.isdigit():
        raise AofFormatError(start, "invalid length")
    return int(text), eol + 2


def iter_commands(data: bytes | mmap.mmap, pos: int = 0) -> Iterator[tuple[int, list[bytes], int]]:
    """(start offset, argv, end offset) of each command; raises AofTruncated/AofFormatError."""
    n = len(data)
    while pos < n:
        start = pos
        lead = data[pos]
        if lead == 0x23:  # '#' annotation line
            eol = data.find(b"\n", pos)
            if eol < 0:
                raise AofTruncated(start)
            pos = eol + 1
            continue
        if lead != 0x2A:  # '*'
            raise AofFormatError(start, "expected '*' at the start of a command")
        argc, pos = _read_number(data, pos, start)
        if argc < 1:
            raise AofFormatError(start, "invalid argument count")
        argv = []
        for _ in range(argc):
            if pos >= n:
                raise AofTruncated(start)
            if data[pos] != 0x24:  # '$'
                raise AofFormatError(start, "expected '$' before an argument")
            length, pos = _read_number(data, pos, start)
            end = pos + length
            if end + 2 > n:
                raise AofTruncated(start)
            if data[end:end + 2] != b"\r\n":
                raise AofFormatError(start, "argument not followed by CRLF")
            argv.append(data[pos:end])
            pos = end + 2
        yield start, argv, pos


# hiredis reads 64 KiB at a time: it moves its unread bytes to the front after each reply, so
# much larger feeds cost more than they save.
_WINDOW = 64 * 1024
# hiredis allocates an array when it reads its header: a header of a million elements or more
# (in a damaged file) is read by the strict rules, which want the bytes first.
_HUGE_ARRAY = re.compile(rb"\*[0-9]{7}")


def iter_batches(data: bytes | mmap.mmap,
                 pos: int = 0) -> Iterator[tuple[int, list[list[bytes]], int]]:
    """(start offset, commands, end offset) of consecutive runs of commands: what
    iter_commands reads from data[pos:], with the same exceptions at the same offsets."""
    n = len(data)
    reader = hiredis.Reader()
    fed = pos  # data[pos:fed] is in the reader: the start of a command not complete yet
    while pos < n:
        cmds: list[list[bytes]] = []
        broken = fed == n  # (all fed and still short of the end: the strict rules say why)
        if not broken:
            end = min(n, fed + _WINDOW)
            if _HUGE_ARRAY.search(data, fed, end) is not None:
                broken = True
            else:
                reader.feed(data, fed, end - fed)
                fed = end
                try:
                    while (cmd := reader.gets()) is not False:
                        cmds.append(cmd)
                except hiredis.ProtocolError:
                    broken = True
        if cmds:
            # (only non-empty lists can be commands; their elements are checked by the
            # comparison: anything but bytes is written back as text the file does not hold)
            stop = _frames_end(data, pos, cmds)
            if stop > pos:
                yield pos, cmds, stop
                pos = stop
            else:
                broken = True
        if broken:  # the strict rules, one command at a time, to the end of what was fed
            for start, argv, stop in iter_commands(data, pos):
                yield start, [argv], stop
                pos = stop
                if stop >= fed:
                    break
            else:  # (read to the end: what is left after the last command is annotations)
                pos = n
            reader = hiredis.Reader()
            fed = pos


def _frames_end(data: bytes | mmap.mmap, pos: int, cmds: list[list[bytes]]) -> int:
    """Where cmds end if data holds, from pos, exactly their encoding (encode_command's:
    anything else hiredis accepts is read by the strict rules); -1 if it does not. The C
    loop when it is built (protocol/native.py), else _canonical and a comparison."""
    if all(cmds):  # (only non-empty lists can be commands)
        if native.frames_end is not None:
            return native.frames_end(data, pos, cmds)
        # (the comparison checks the elements: anything but bytes is written back as text
        # the file does not hold)
        if set(map(type, cmds)) == {list}:
            run = _canonical(cmds)
            if data[pos:pos + len(run)] == run:
                return pos + len(run)
    return -1


def _canonical(cmds: list[list[bytes]]) -> bytes:
    """The commands written as RESP, as encode_command writes each: their lines joined by
    CRLF in one join for the whole run (a tenth of the cost of a join per command)."""
    lines = []
    append = lines.append
    try:
        for argv in cmds:
            append(ARRAY_LINES[len(argv)])
            for arg in argv:
                append(BULK_LINES[len(arg)])
                append(arg)
        append(b"")
        return CRLF.join(lines)
    except (IndexError, TypeError):  # a long argument or command, or something not bytes
        return b"".join(map(encode_command, cmds))


def offsets(start: int, cmds: list[list[bytes]]) -> list[int]:
    """Where each command of a run from iter_batches starts."""
    out = []
    for cmd in cmds:
        out.append(start)
        start += len(encode_command(cmd))
    return out
