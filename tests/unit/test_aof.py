"""AOF writing and parsing without a server: RESP encoding, SELECT insertion, MULTI/EXEC
wrapping, group commit (one fsync per flush), short writes and errors, the strict parser,
the manifest."""

from __future__ import annotations

import errno
import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoder import encode_command
from server.persistence import aof as aof_mod
from server.persistence.aof import AofWriter
from server.persistence.aof_load import AofFormatError, AofTruncated, iter_commands
from server.persistence.manifest import Manifest, ManifestError


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _commands(data: bytes) -> list[list[bytes]]:
    return [argv for _, argv, _ in iter_commands(data)]


class FsyncCounter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, fd: int) -> None:
        self.calls += 1
        os.fsync(fd)


def test_select_is_inserted_when_the_database_changes(tmp_path) -> None:
    w = AofWriter("no")
    w.open(str(tmp_path / "a.aof"))
    w.feed(0, [b"SET", b"a", b"1"])
    w.feed(0, [b"SET", b"b", b"2"])
    w.feed(3, [b"SET", b"c", b"3"])
    w.feed(0, [b"DEL", b"a"])
    assert w.flush()
    assert _commands(_read(w.path)) == [
        [b"SELECT", b"0"], [b"SET", b"a", b"1"], [b"SET", b"b", b"2"],
        [b"SELECT", b"3"], [b"SET", b"c", b"3"], [b"SELECT", b"0"], [b"DEL", b"a"],
    ]
    w.retire()


def test_a_run_is_written_as_its_commands_one_by_one(tmp_path) -> None:
    w = AofWriter("no")
    w.open(str(tmp_path / "a.aof"))
    w.feed(0, [b"SET", b"a", b"1"])
    w.feed_run(2, [[b"XADD", b"s", b"1-1", b"f", b"v"], [b"XADD", b"s", b"1-2", b"f", b""]])
    w.feed_run(2, [[b"XADD", b"s", b"1-3", b"g", b"w" * 300]])
    w.feed(0, [b"DEL", b"a"])
    assert w.flush()
    assert _commands(_read(w.path)) == [
        [b"SELECT", b"0"], [b"SET", b"a", b"1"], [b"SELECT", b"2"],
        [b"XADD", b"s", b"1-1", b"f", b"v"], [b"XADD", b"s", b"1-2", b"f", b""],
        [b"XADD", b"s", b"1-3", b"g", b"w" * 300], [b"SELECT", b"0"], [b"DEL", b"a"],
    ]
    w.retire()


def test_new_file_starts_with_select_again(tmp_path) -> None:
    w = AofWriter("no")
    w.open(str(tmp_path / "1.aof"))
    w.feed(2, [b"SET", b"a", b"1"])
    w.flush()
    w.open(str(tmp_path / "2.aof"))
    w.feed(2, [b"SET", b"b", b"1"])
    w.flush()
    assert _commands(_read(str(tmp_path / "2.aof")))[0] == [b"SELECT", b"2"]
    w.retire()


def test_always_is_one_fsync_per_flush_whatever_the_batch(tmp_path) -> None:
    counter = FsyncCounter()
    w = AofWriter("always", fsync=counter)
    w.open(str(tmp_path / "a.aof"))
    for i in range(500):
        w.feed(0, [b"XADD", b"s", b"%d-1" % (i + 1), b"f", b"v"])
    assert counter.calls == 0  # nothing is written or synced while commands execute
    assert w.flush()
    assert counter.calls == 1
    assert w.flush()  # nothing new: no fsync
    assert counter.calls == 1
    w.feed(0, [b"DEL", b"s"])
    w.flush()
    assert counter.calls == 2
    w.retire()


def test_write_and_always_fsync_report_their_latency(tmp_path) -> None:
    """The latency monitor's AOF events: each write, and each fsync under appendfsync always
    (not a forced one under another policy), in milliseconds."""
    def slow_fsync(fd: int) -> None:
        time.sleep(0.03)

    seen: list[tuple[str, int]] = []
    w = AofWriter("always", fsync=slow_fsync)
    w.on_latency = lambda what, ms: seen.append((what, ms))
    w.open(str(tmp_path / "a.aof"))
    w.feed(0, [b"XADD", b"s", b"1-1", b"f", b"v"])
    assert w.flush()
    assert [what for what, _ in seen] == ["write", "fsync"]
    assert seen[1][1] >= 30
    seen.clear()
    w.feed(0, [b"DEL", b"s"])
    w.flush(force_fsync=True)
    w.policy = "everysec"
    w.feed(0, [b"DEL", b"s"])
    w.flush(force_fsync=True)
    assert [what for what, _ in seen] == ["write", "fsync", "write"]
    w.retire()


def test_everysec_fsyncs_in_the_background_at_most_once_a_second(tmp_path) -> None:
    counter = FsyncCounter()
    w = AofWriter("everysec", fsync=counter)
    w.open(str(tmp_path / "a.aof"))
    w.feed(0, [b"SET", b"a", b"1"])
    w.flush()
    assert counter.calls == 0
    w.background_fsync()  # less than a second since the last fsync
    w.worker.drain()
    assert counter.calls == 0
    w.last_fsync = time.monotonic() - 1.5
    w.background_fsync()
    w.worker.drain()
    assert counter.calls == 1
    w.last_fsync = time.monotonic() - 1.5
    w.background_fsync()  # nothing written since: no fsync
    w.worker.drain()
    assert counter.calls == 1
    w.retire()


def test_no_policy_never_fsyncs_on_its_own(tmp_path) -> None:
    counter = FsyncCounter()
    w = AofWriter("no", fsync=counter)
    w.open(str(tmp_path / "a.aof"))
    w.feed(0, [b"SET", b"a", b"1"])
    w.flush()
    w.last_fsync = 0
    w.background_fsync()
    w.worker.drain()
    assert counter.calls == 0
    w.shutdown()  # shutting down does sync
    assert counter.calls == 1


def test_write_passes_are_numbered_and_synced_ones_known(tmp_path) -> None:
    """write_seq counts the passes that wrote something; synced_seq is the last one on disk,
    whichever way it got there (WAITAOF compares them)."""
    counter = FsyncCounter()
    w = AofWriter("everysec", fsync=counter)
    notified: list[int] = []
    w.worker.on_synced = lambda: notified.append(w.worker.synced_seq)
    w.open(str(tmp_path / "a.aof"))
    assert (w.write_seq, w.synced_seq) == (0, 0)
    w.feed(0, [b"SET", b"a", b"1"])
    w.flush()
    w.flush()  # nothing to write: not a pass
    assert (w.write_seq, w.synced_seq) == (1, 0)
    w.last_fsync = time.monotonic() - 1.5
    w.background_fsync()
    w.worker.drain()
    assert w.synced_seq == 1 and notified == [1]
    w.feed(0, [b"SET", b"a", b"2"])
    w.flush()
    w.policy = "always"
    w.feed(0, [b"SET", b"a", b"3"])
    w.flush()
    assert (w.write_seq, w.synced_seq) == (3, 3)
    w.policy = "no"
    w.feed(0, [b"SET", b"a", b"4"])
    w.flush()
    assert (w.write_seq, w.synced_seq) == (4, 3)
    w.inject_errno = 5  # a failed write is not a pass
    w.feed(0, [b"SET", b"a", b"5"])
    assert not w.flush()
    assert w.write_seq == 4
    w.inject_errno = 0
    w.retire()  # the file is fsynced when it is retired
    assert w.synced_seq == 4


def test_short_write_is_cut_back_and_retried(tmp_path, monkeypatch) -> None:
    w = AofWriter("everysec")
    path = str(tmp_path / "a.aof")
    w.open(path)
    w.feed(0, [b"SET", b"a", b"1"])
    assert w.flush()
    good = _read(path)
    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[:7])  # a short write...
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # ...then the disk is full

    monkeypatch.setattr(aof_mod.os, "write", failing_write)
    w.feed(0, [b"SET", b"b", b"2"])
    w.feed(0, [b"SET", b"c", b"3"])
    assert not w.flush()
    assert w.error is not None and w.error.errno == errno.ENOSPC
    assert _read(path) == good  # no half command left in the file
    assert w.buf  # everything kept for the retry
    monkeypatch.setattr(aof_mod.os, "write", real_write)
    assert w.flush()
    assert w.error is None
    assert _commands(_read(path))[1:] == [
        [b"SET", b"a", b"1"], [b"SET", b"b", b"2"], [b"SET", b"c", b"3"]]
    w.retire()


def test_failed_always_fsync_is_an_error_until_it_succeeds(tmp_path) -> None:
    state = {"fail": True}

    def fsync(fd: int) -> None:
        if state["fail"]:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

    w = AofWriter("always", fsync=fsync)
    w.open(str(tmp_path / "a.aof"))
    w.feed(0, [b"SET", b"a", b"1"])
    assert not w.flush()
    assert w.error is not None and w.error.errno == errno.EIO
    state["fail"] = False
    assert w.flush()
    assert w.error is None
    w.retire()


# -- parsing ----------------------------------------------------------------------------------
_ARG = st.binary(max_size=12)
_CMD = st.lists(_ARG, min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(st.lists(_CMD, min_size=1, max_size=6))
def test_parser_reads_back_what_was_encoded_and_spots_every_truncation(cmds) -> None:
    data = b"".join(encode_command(c) for c in cmds)
    assert _commands(data) == cmds
    starts = []
    pos = 0
    for c in cmds:
        starts.append(pos)
        pos += len(encode_command(c))
    for cut in range(len(data)):
        if cut in starts:  # a clean boundary: the commands before it, no error
            assert _commands(data[:cut]) == cmds[:starts.index(cut)]
            continue
        got = []
        with pytest.raises(AofTruncated) as info:
            for _, argv, _ in iter_commands(data[:cut]):
                got.append(argv)
        assert got == cmds[:len(got)]
        assert info.value.offset == starts[len(got)] == max(s for s in starts if s <= cut)


def test_parser_format_errors_carry_the_command_offset() -> None:
    good = encode_command([b"SET", b"a", b"1"])
    for bad in (b"+OK\r\n", b"*0\r\n", b"*x\r\n", b"*1\r\n:5\r\n", b"*1\r\n$1\r\nab\r\n",
                b"*1\r\n$-1\r\n"):
        with pytest.raises(AofFormatError) as info:
            list(iter_commands(good + bad + good))
        assert info.value.offset == len(good)


def test_parser_skips_annotation_lines() -> None:
    data = b"#TS:1700000000\r\n" + encode_command([b"PING"])
    assert _commands(data) == [[b"PING"]]


# -- manifest ---------------------------------------------------------------------------------
def test_manifest_round_trip_and_naming() -> None:
    man = Manifest()
    man.base = man.new_base("appendonly.aof")
    man.incrs.append(man.new_incr("appendonly.aof"))
    man.incrs.append(man.new_incr("appendonly.aof"))
    text = man.dump()
    assert text == ("file appendonly.aof.1.base.aof seq 1 type b\n"
                    "file appendonly.aof.1.incr.aof seq 1 type i\n"
                    "file appendonly.aof.2.incr.aof seq 2 type i\n")
    again = Manifest.parse(text)
    assert again == man
    assert [f.name for f in again.files_to_load()] == [
        "appendonly.aof.1.base.aof", "appendonly.aof.1.incr.aof", "appendonly.aof.2.incr.aof"]
    assert again.new_incr("appendonly.aof").seq == 3


@pytest.mark.parametrize("text", [
    "", "file a seq 1\n", "file a seq x type i\n", "file ../a seq 1 type i\n",
    "file a seq 1 type b\nfile b seq 2 type b\n", "file a seq 2 type i\nfile b seq 1 type i\n",
    "file a seq 1 type z\n",
])
def test_manifest_errors(text: str) -> None:
    with pytest.raises(ManifestError):
        Manifest.parse(text)
