"""Replaying the append-only files at start (and for DEBUG LOADAOF).

Each command runs its real handler with a fake client that gets no replies, so the AOF
exercises exactly the code that live commands run; as in Redis (whose loader calls the
command's proc), without the refusal checks, statistics, slowlog or MONITOR feed of a client's
command. Parsing is strict RESP (arrays of bulk strings); lines starting with '#' are
annotations and skipped, as Redis does (aof_parse: runs of commands read by hiredis and proven
canonical, the strict Python rules for the rest).

- A command cut short by the end of the *last* file (a crash in the middle of a write) is
  dropped with a warning when aof-load-truncated is yes, and the file is truncated to its last
  complete command so that appending continues cleanly; a MULTI without its EXEC at the end is
  dropped the same way.
- Anything else (bad framing, an unknown command, a short read in an earlier file) stops the
  start with the file name and byte offset: never a silent partial load.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocol.encoder import ErrorReply
from server.client import Client
from server.dispatch import COMMANDS, CommandSpec, execute_loaded, lookup
from server.errors import CommandError
from server.persistence.aof_parse import (
    AofFormatError,
    AofTruncated,
    iter_batches,
    iter_commands,
    offsets,
)
from server.persistence.replay_fast import replay_xadd, replay_xadd_run

# (the strict reader and its errors, also where they were first defined)
__all__ = ["AofFormatError", "AofLoadError", "AofTruncated", "iter_commands", "replay_bytes",
           "replay_file"]

if TYPE_CHECKING:
    from server.app import Server
    from server.log import Logger


class AofLoadError(Exception):
    """Loading must stop; str() is the message for the log and stderr."""


@dataclass(slots=True)
class FileResult:
    commands: int = 0
    failed: int = 0  # commands that answered an error (logged, loading goes on as in Redis)
    truncated_at: int | None = None  # where a truncated tail was cut off


class ReplayClient(Client):
    """The fake client: authenticated, never written to."""

    __slots__ = ()

    def __init__(self, server: Server) -> None:
        super().__init__(0, server, None, "aof-loader", "")
        self.authenticated = True


def replay_bytes(server: Server, data: bytes | mmap.mmap, name: str, is_last: bool,
                 allow_truncated: bool, offset: int = 0) -> FileResult:
    """Run every command in data from offset on. Returns what happened; a truncated tail
    is reported in truncated_at (the caller cuts the file there) or raises AofLoadError."""
    client = ReplayClient(server)
    result = FileResult()
    before_multi = offset
    log = server.log
    # Specs by the name exactly as the file spells it, for commands without subcommands:
    # lookup()'s work once per name rather than once per command.
    specs: dict[bytes, CommandSpec] = {}
    xadd = COMMANDS.get(b"xadd")
    interval = server.config["loading-process-events-interval-bytes"]
    next_hooks = offset + interval
    try:
        for start, cmds, end in iter_batches(data, offset):
            if end >= next_hooks and server.loading_hooks:
                next_hooks = end + interval
                for hook in server.loading_hooks:
                    hook()
            starts: list[int] | None = None  # each command's offset, worked out when needed
            i = -1
            ncmds = len(cmds)
            while i + 1 < ncmds:
                i += 1
                argv = cmds[i]
                spec = specs.get(argv[0])
                if spec is None or not spec.arity_ok(len(argv)):
                    try:
                        spec = lookup(argv)
                    except CommandError as exc:
                        starts = starts or offsets(start, cmds)
                        raise AofLoadError(
                            f"Unknown command '{argv[0].decode(errors='replace')}' reading the "
                            f"append only file {name} at offset {starts[i]}: "
                            f"{exc.message}") from None
                    if not spec.subcommands and spec.parent is None:
                        specs[argv[0]] = spec
                if spec is xadd:
                    taken = replay_xadd_run(client, cmds, i)
                    if taken:
                        result.commands += taken
                        i += taken - 1
                        continue
                    if replay_xadd(client, argv):
                        result.commands += 1
                        continue
                if spec.name == "multi":
                    starts = starts or offsets(start, cmds)
                    before_multi = starts[i]
                reply = execute_loaded(client, spec, argv)
                result.commands += 1
                if isinstance(reply, ErrorReply):
                    result.failed += 1
                    if result.failed <= 10:
                        starts = starts or offsets(start, cmds)
                        log.warning(f"AOF {name}: command at offset {starts[i]} failed on "
                                    f"replay: {reply}")
    except AofFormatError as exc:
        raise AofLoadError(
            f"Bad file format reading the append only file {name} at offset {exc.offset}: "
            f"{exc.reason}. Make a backup of the file and fix or cut it at that offset.") from None
    except AofTruncated as exc:
        cut = before_multi if client.multi is not None else exc.offset
        return _truncated(result, name, cut, is_last, allow_truncated, log)
    if client.multi is not None:  # MULTI without its EXEC at the very end
        log.warning(f"Revert incomplete MULTI/EXEC transaction in AOF file {name}")
        return _truncated(result, name, before_multi, is_last, allow_truncated, log)
    return result


def _truncated(result: FileResult, name: str, cut: int, is_last: bool, allow: bool,
               log: Logger) -> FileResult:
    if not is_last:
        raise AofLoadError(
            f"Unexpected end of file reading the append only file {name} at offset {cut}: "
            f"only the last file of the AOF may be truncated.")
    if not allow:
        raise AofLoadError(
            f"Unexpected end of file reading the append only file {name} at offset {cut}. "
            f"You can set 'aof-load-truncated yes' to load it anyway, dropping the last "
            f"incomplete command.")
    log.warning(f"!!! Warning: short read while loading the AOF file {name}!!! "
                f"(the last complete command ends at offset {cut})")
    result.truncated_at = cut
    return result


def replay_file(server: Server, path: str, name: str, is_last: bool,
                allow_truncated: bool, offset: int = 0) -> FileResult:
    """Replay one file from offset on (after an RDB preamble); a tolerated truncated tail
    is cut off the file itself."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, after the mapping
    except OSError as exc:
        raise AofLoadError(f"Can't open the append-only file {name}: {exc.strerror}") from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return FileResult()
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            result = replay_bytes(server, data, name, is_last, allow_truncated, offset)
    if result.truncated_at is not None:
        try:
            os.truncate(path, result.truncated_at)
        except OSError as exc:
            raise AofLoadError(f"Error truncating the AOF file {name}: {exc.strerror}") from None
        server.log.warning(f"AOF {name} loaded anyway because aof-load-truncated is enabled")
    return result
