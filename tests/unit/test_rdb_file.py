"""RDB files without a server: what rdb_writer writes (versions, layout, streaming, the atomic
save) reads back exactly through rdb_reader; every opcode Redis and Valkey write is read;
every kind of bad input (short files, damaged bytes and checksums, unknown or unsupported
types, absurd lengths, trailing data) is refused with an error saying what and where."""

from __future__ import annotations

import io
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.persistence import dump_payload
from server.persistence.rdb_encoding import crc64, put_length, put_string
from server.persistence.rdb_reader import RdbLoadError, parse_rdb
from server.persistence.rdb_writer import choose_version, save_rdb, write_rdb
from storage.access import AccessClock
from storage.consumer_group import create_group, verify
from storage.keyspace import Database, StringValue
from storage.stream import Stream
from tests.unit.dataset_samples import NOW, busy_stream, db_state


def _write(dbs: list[Database], **kwargs: object) -> bytes:
    out = io.BytesIO()
    write_rdb(out, dbs, now_ms=NOW, **kwargs)  # type: ignore[arg-type]
    return out.getvalue()


def _parse(data: bytes, ndbs: int = 16, **kwargs: object):
    return parse_rdb(data, ndbs, now_ms=NOW, **kwargs)  # type: ignore[arg-type]


def _s(data: bytes) -> bytes:
    out = bytearray()
    put_string(out, data)
    return bytes(out)


def _n(value: int) -> bytes:
    out = bytearray()
    put_length(out, value)
    return bytes(out)


def _file(body: bytes, version: int = 11, checksum: bool = True) -> bytes:
    """An RDB file around body: header, body, EOF, CRC-64 (or 0: checksums off)."""
    data = b"REDIS%04d" % version + body + b"\xff"
    return data + (crc64(data) if checksum else 0).to_bytes(8, "little")


def _string_key(key: bytes, value: bytes) -> bytes:
    return b"\x00" + _s(key) + _s(value)


def _sample_dbs() -> list[Database]:
    rng = random.Random(7)
    dbs = [Database(i) for i in range(4)]
    for key, value in ((b"str", b"hello\r\nworld"), (b"int", b"12345"), (b"neg", b"-1"),
                       (b"zero-led", b"007"), (b"empty", b""), (b"big", bytes(range(256)) * 400),
                       (b"\x00\xffbinary key", b"\x00\x01")):
        dbs[0].data[key] = StringValue(value)
    dbs[0].data[b"ttl"] = StringValue(b"x")
    dbs[0].expires[b"ttl"] = NOW + 600_000
    dbs[0].data[b"s"] = busy_stream(rng, 200)
    dbs[0].expires[b"s"] = NOW + 1
    dbs[2].data[b"empty"] = Stream()
    empty_with_id = Stream()
    empty_with_id.set_id((5, 5), entries_added=9, max_deleted=(5, 5))
    dbs[2].data[b"empty-with-id"] = empty_with_id
    dbs[3].data[b"big"] = busy_stream(rng, 1000, with_groups=False)
    return dbs


# -- round trips ------------------------------------------------------------------------------
def test_every_value_kind_round_trips() -> None:
    dbs = _sample_dbs()
    data = _write(dbs)
    assert data[:9] == b"REDIS0011"  # busy_stream's consumers have active != seen times
    result = _parse(data, 4)
    assert db_state(result.dbs) == db_state(dbs)
    assert result.keys_loaded == 12 and result.keys_expired == 0 and result.version == 11
    assert result.end == len(data)
    for db in result.dbs:
        for value in db.data.values():
            if isinstance(value, Stream):
                verify(value)  # PEL, time index, consumer PELs, references agree


def test_the_file_ends_with_the_crc64_of_the_rest() -> None:
    data = _write(_sample_dbs())
    assert data[-9] == 0xFF  # EOF
    assert int.from_bytes(data[-8:], "little") == crc64(data[:-8])


def test_aux_fields_and_function_libraries() -> None:
    db = Database(0)
    db.set(b"k", StringValue(b"v"))
    codes = [b"#!lua name=a\nredis.register_function('f', function() end)", b"#!lua name=b\n"]
    result = _parse(_write([db], libraries=codes))
    assert result.libraries == codes
    assert result.aux[b"ctime"] == b"%d" % (NOW // 1000)
    assert result.aux[b"aof-base"] == b"0" and result.aux[b"redis-bits"] == b"64"
    assert b"xstreamd-ver" in result.aux
    assert _parse(_write([db], aof_base=True)).aux[b"aof-base"] == b"1"


def _stream_with_consumer(active_equals_seen: bool) -> Stream:
    s = Stream()
    s.append([b"f", b"v"], (1, 0), True)
    group = create_group(s, b"g", (0, 0), 0)
    consumer = group.create_consumer(b"c", 1000)
    consumer.active_time = 1000 if active_equals_seen else 900
    return s


def _stream_with_idmp() -> Stream:
    s = Stream()
    s.append([b"f", b"v"], (1000, 0), True)
    s.append([b"f", b"w"], (1001, 0), True)
    s.idmp.configure(600, 50)
    s.idmp.record(b"producer-b", b"iid-2", (1001, 0))
    s.idmp.record(b"producer-a", b"iid-1", (1000, 0))
    s.idmp.iids_duplicates = 3
    return s


def _stream_with_nack_zone() -> Stream:
    """Group "g": five entries delivered to "c", then 4-0, 1-0 and 3-0 released (in that
    order, not the IDs' order), and 5-0 created in the zone by FORCE in group "h"."""
    s = Stream()
    for ms in range(1, 7):
        s.append([b"f", b"%d" % ms], (ms, 0), True)
    g = create_group(s, b"g", (5, 0), 5)
    consumer = g.create_consumer(b"c", 1000)
    for ms in range(1, 6):
        g.deliver(s, (ms, 0), consumer, 2000 + ms)
    g.nack(s, [(4, 0)], "fatal")
    g.nack(s, [(1, 0), (3, 0)], "fail", retry_count=7)
    h = create_group(s, b"h", (6, 0), 6)
    h.nack(s, [(5, 0)], "silent", force=True)
    return s


@pytest.mark.parametrize(("values", "libraries", "version"), [
    ([], [], 9),
    ([StringValue(b"v")], [], 9),  # strings only: Redis 5 to 6.2 read it
    ([StringValue(b"v")], [b"#!lua name=x\n"], 10),  # FUNCTION2: Redis 7.0
    ([Stream()], [], 10),
    ([_stream_with_consumer(True)], [], 10),  # type 19 keeps it: readers take active = seen
    ([_stream_with_consumer(False)], [], 11),  # the active time needs type 21
    ([_stream_with_idmp()], [], 13),  # IDMP records and limits need type 26
    ([_stream_with_consumer(False), _stream_with_nack_zone()], [], 14),  # a NACK zone: 27
])
def test_the_lowest_version_that_holds_the_data(values: list, libraries: list,
                                                version: int) -> None:
    db = Database(0)
    for i, value in enumerate(values):
        db.data[b"k%d" % i] = value
    assert choose_version([db], libraries) == version
    data = _write([db], libraries=libraries)
    assert data[:9] == b"REDIS%04d" % version
    assert db_state(_parse(data, 1).dbs) == db_state([db])


@pytest.mark.parametrize(("version", "kind"), [(10, 19), (11, 21), (12, 21), (13, 26), (14, 27)])
def test_streams_are_written_as_the_type_of_the_version(version: int, kind: int) -> None:
    db = Database(0)
    db.data[b"s"] = _stream_with_consumer(False)
    data = _write([db], version=version)
    at = data.index(b"\x01s") - 1  # the type byte before the key
    assert data[at] == kind
    consumer = next(next(iter(_parse(data, 1).dbs[0].data[b"s"].cgroups.values()))
                    .iter_consumers())
    assert consumer.seen_time == 1000
    assert consumer.active_time == (1000 if kind == 19 else 900)  # type 19: active = seen


def test_the_stream_value_is_the_dump_payloads_value() -> None:
    """One codec: a stream's bytes in a version 11 file are DUMP's body (both type 21)."""
    db = Database(0)
    db.data[b"s"] = busy_stream(random.Random(3), 80)
    payload = dump_payload.dump(db.data[b"s"])
    assert bytes([payload[0]]) + _s(b"s") + payload[1:-10] in _write([db])


def test_lru_idle_and_lfu_counters_are_kept() -> None:
    clock = AccessClock(now_ms=NOW)
    db = Database(0, access=clock)
    db.set(b"old", StringValue(b"v"))
    db.data[b"old"].lru = clock.lru_clock - 500  # used 500 s ago
    plain = _write([db])
    clock.lru_policy = True
    with_idle = _write([db])
    assert len(with_idle) == len(plain) + 3  # IDLE, 500 as a 14-bit length
    loaded = _parse(with_idle, 1, access=clock).dbs[0].data
    assert clock.idle_ms(loaded[b"old"].lru) == 500_000
    clock.lru_policy = False
    clock.lfu = True
    db.data[b"old"].lru = (clock.minutes << 8) | 77
    loaded = _parse(_write([db]), 1, access=clock).dbs[0].data
    assert clock.decayed_counter(loaded[b"old"].lru) == 77


def test_expired_keys_are_skipped_except_in_an_aof_base() -> None:
    db = Database(0)
    for key, when in ((b"old", NOW - 1), (b"now", NOW), (b"new", NOW + 1)):
        db.data[key] = StringValue(b"1")
        db.expires[key] = when
    data = _write([db])
    result = _parse(data, 1)
    assert sorted(result.dbs[0].data) == [b"new", b"now"]  # (as Redis: expired is < now)
    assert result.keys_expired == 1 and result.keys_loaded == 2
    base = _parse(data, 1, aof_base=True)  # the incr files assume the keyspace as it was
    assert len(base.dbs[0].data) == 3 and base.keys_expired == 0


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.binary(max_size=20), st.tuples(st.binary(max_size=300),
                                                        st.none() | st.integers(NOW, 2**62)),
                       max_size=20),
       st.integers(0, 2**32), st.integers(0, 60))
def test_random_datasets_round_trip(strings: dict, seed: int, n: int) -> None:
    db = Database(0)
    for key, (value, when) in strings.items():
        db.data[key] = StringValue(value)
        if when is not None:
            db.expires[key] = when
    db.data[b"\xffstream"] = busy_stream(random.Random(seed), n)
    assert db_state(_parse(_write([db]), 1).dbs) == db_state([db])


# -- writing to files ---------------------------------------------------------------------------
class _Recorder(io.BytesIO):
    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def write(self, data) -> int:  # type: ignore[override]
        self.sizes.append(len(data))
        return super().write(data)


def test_the_file_is_written_in_bounded_chunks() -> None:
    """Memory stays flat: a big stream goes out in writes of about 64 KiB, never whole."""
    db = Database(0)
    db.data[b"s"] = busy_stream(random.Random(5), 20_000, with_groups=False)
    out = _Recorder()
    write_rdb(out, [db])
    assert len(out.getvalue()) > 600_000
    assert len(out.sizes) > 8
    assert max(out.sizes) < (1 << 16) + 8192  # a buffer's worth plus one node at most


def test_save_is_atomic_and_leaves_no_temp_file(tmp_path) -> None:
    dbs = _sample_dbs()
    path = str(tmp_path / "dump.rdb")
    assert save_rdb(path, dbs) == 12
    assert sorted(os.listdir(tmp_path)) == ["dump.rdb"]
    assert db_state(parse_rdb((tmp_path / "dump.rdb").read_bytes(), 4).dbs) != []
    os.unlink(path)
    os.mkdir(path)  # a directory in the way: the rename fails, the temp file goes
    with pytest.raises(OSError):
        save_rdb(path, dbs)
    assert sorted(os.listdir(tmp_path)) == ["dump.rdb"] and os.path.isdir(path)


# -- what Redis and Valkey write ----------------------------------------------------------------
def _module_id(name: str, encver: int = 3) -> int:
    chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    value = 0
    for c in name:
        value = value << 6 | chars.index(c)
    return value << 10 | encver


@pytest.mark.parametrize("version", [9, 10, 11, 12, 13, 14])
def test_versions_9_to_14_are_read(version: int) -> None:
    result = _parse(_file(b"\xfe\x00" + _string_key(b"k", b"v"), version), 1)
    assert result.dbs[0].data[b"k"].data == b"v" and result.version == version


@pytest.mark.parametrize("version", [1, 8, 15, 80])
def test_other_versions_are_refused(version: int) -> None:
    with pytest.raises(RdbLoadError, match=f"version {version} "):
        _parse(_file(_string_key(b"k", b"v"), version), 1)


def test_every_opcode_redis_and_valkey_write() -> None:
    lzf = b"\xc3" + _n(4) + _n(3) + b"\x02abc"  # LZF: one literal run of 3 bytes
    body = b"".join([
        b"\xfa" + _s(b"redis-ver") + _s(b"7.4.0"),  # AUX
        b"\xfa" + _s(b"valkey-ver") + _s(b"8.1.8"),
        b"\xfa" + _s(b"used-mem") + b"\xc2" + (1 << 20).to_bytes(4, "little"),  # int-encoded
        b"\xf5" + _s(b"#!lua name=lib\n"),  # FUNCTION2
        _string_key(b"before-select", b"goes to db 0"),
        b"\xfe" + _n(2),  # SELECTDB
        b"\xfb" + _n(3) + _n(1),  # RESIZEDB
        b"\xf4" + _n(1234) + _n(3) + _n(1),  # SLOT_INFO (Redis 7.4 cluster)
        b"\xfd" + (2**31 - 1).to_bytes(4, "little") + _string_key(b"secs", b"1"),  # EXPIRETIME
        b"\xfc" + (NOW + 5).to_bytes(8, "little") + _string_key(b"ms", b"2"),  # EXPIRETIME_MS
        b"\xf8" + _n(10) + _string_key(b"idle", b"3"),  # IDLE
        b"\xf9\x05" + _string_key(b"freq", b"4"),  # FREQ
        b"\x00" + _s(b"lzf") + lzf,
        b"\x00" + _s(b"i8") + b"\xc0\x85",  # -123 as an 8-bit integer
    ])
    for checksum in (True, False):  # a stored 0: written with rdbchecksum no
        result = _parse(_file(body, 12, checksum))
        db0, db2 = result.dbs[0], result.dbs[2]
        assert db0.data[b"before-select"].data == b"goes to db 0"
        assert {k: v.data for k, v in db2.data.items()} == {
            b"secs": b"1", b"ms": b"2", b"idle": b"3", b"freq": b"4", b"lzf": b"abc",
            b"i8": b"-123"}
        assert db2.expires == {b"secs": (2**31 - 1) * 1000, b"ms": NOW + 5}
        assert result.libraries == [b"#!lua name=lib\n"]
        assert result.aux[b"valkey-ver"] == b"8.1.8" and result.aux[b"used-mem"] == b"1048576"


def test_redis_5_streams_of_type_15_load() -> None:
    s = Stream()
    for i in range(1, 4):
        s.append([b"f", b"%d" % i], (i, 0), True)
    node_key, lp = next(iter(s.rax.items()))
    body = b"\xfe\x00\x0f" + _s(b"s") + _n(1) + _s(node_key) + _s(bytes(lp.buf))
    body += _n(3) + _n(3) + _n(0)  # length, last ID
    body += _n(1) + _s(b"g") + _n(3) + _n(0) + _n(0) + _n(0)  # group g at 3-0, no PEL/consumers
    loaded = _parse(_file(body, 9), 1).dbs[0].data[b"s"]
    assert loaded.length == 3 and loaded.entries_added == 3
    assert next(iter(loaded.cgroups.values())).entries_read == 3  # (Redis's estimate)


@pytest.mark.parametrize(("kind", "name"), [
    (1, "list"), (2, "set"), (3, "zset"), (4, "hash"), (5, "zset"), (10, "list"),
    (11, "set"), (12, "zset"), (13, "hash"), (14, "list"), (16, "hash"), (17, "zset"),
    (18, "list"), (20, "set"), (24, "hash"), (25, "hash"),
])
def test_a_type_not_implemented_is_named_with_its_key(kind: int, name: str) -> None:
    body = b"\xfe\x03" + _string_key(b"fine", b"v") + bytes([kind]) + _s(b"my:key") + b"\x01"
    with pytest.raises(RdbLoadError) as info:
        _parse(_file(body), 16)
    text = str(info.value)
    assert "'my:key' (db 3" in text and f"a {name}" in text and f"RDB type {kind})" in text
    assert "does not implement" in text


def test_module_values_and_module_aux_are_named() -> None:
    value = b"\x07" + _s(b"doc") + _n(_module_id("ReJSON-RL"))
    with pytest.raises(RdbLoadError, match="'doc' .*module type 'ReJSON-RL'"):
        _parse(_file(value + b"\x00" * 8))
    aux = b"\xf7" + _n(_module_id("scripts-x")) + _n(2) + _n(1)
    with pytest.raises(RdbLoadError, match="module type 'scripts-x'.*MODULE_AUX"):
        _parse(_file(aux))


def test_pre_release_functions_and_unknown_opcodes_are_refused() -> None:
    with pytest.raises(RdbLoadError, match="pre-release function format"):
        _parse(_file(b"\xf6" + _s(b"f") + _s(b"LUA") + _n(0) + _s(b"return 1")))
    with pytest.raises(RdbLoadError, match="unknown RDB type or opcode 199 at offset 9"):
        _parse(_file(b"\xc7"))
    # (200: this server's own stream with references to cold nodes, only for its restarts)
    with pytest.raises(RdbLoadError, match="can only be loaded by the server that wrote it"):
        _parse(_file(b"\xc8" + _s(b"k") + b"\x15"))
    with pytest.raises(RdbLoadError, match="bad stream type 4 of a stream with cold nodes"):
        _parse(_file(b"\xc8" + _s(b"k") + b"\x04"))
    with pytest.raises(RdbLoadError, match="unknown RDB type or opcode 8 at offset 9"):
        _parse(_file(b"\x08" + _s(b"k")))


# -- bad input ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample() -> bytes:
    db = Database(0)
    db.data[b"s"] = busy_stream(random.Random(11), 60)
    db.data[b"k"] = StringValue(b"v")
    db.expires[b"k"] = NOW + 1000
    return _write([db], libraries=[b"#!lua name=x\n"])


def test_every_truncation_is_an_error(sample: bytes) -> None:
    for cut in range(len(sample)):
        with pytest.raises(RdbLoadError):
            _parse(sample[:cut])


def test_a_truncated_file_says_so() -> None:
    data = _file(b"\xfe\x00" + _string_key(b"key", b"a value of some length"))
    with pytest.raises(RdbLoadError, match="runs past the end .*'key'.*checksum does not"):
        _parse(data[:-14])
    with pytest.raises(RdbLoadError, match="end of file in the checksum"):
        _parse(data[:-3])


@pytest.mark.parametrize("pos", range(1, 9))
def test_a_flipped_checksum_byte_is_caught(sample: bytes, pos: int) -> None:
    damaged = bytearray(sample)
    damaged[-pos] ^= 0x10
    with pytest.raises(RdbLoadError, match="wrong RDB checksum"):
        _parse(bytes(damaged))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_flipped_byte_is_an_error(sample: bytes, data) -> None:
    pos = data.draw(st.integers(0, len(sample) - 1))
    flip = data.draw(st.integers(1, 255))
    damaged = bytearray(sample)
    damaged[pos] ^= flip
    with pytest.raises(RdbLoadError):
        _parse(bytes(damaged))


@pytest.mark.parametrize(("body", "what"), [
    (b"\x00" + _s(b"k") + b"\x81" + (2**62).to_bytes(8, "big"),
     f"string length {2**62} runs past the end"),
    (b"\x00" + _s(b"k") + b"\xc3" + _n(2**40) + _n(5), "compressed string of .* runs past"),
    (b"\x00" + _s(b"k") + b"\xc3" + _n(2) + _n(2**31) + b"\x00a",
     f"absurd size {2**31} of a compressed string"),
    (b"\x15" + _s(b"s") + b"\x81" + (2**60).to_bytes(8, "big"),
     f"stream node count {2**60} runs past the end"),
    (b"\x15" + _s(b"s") + _n(0) + _n(0) * 8 + b"\x80" + (2**31).to_bytes(4, "big"),
     "consumer group count 2147483648 runs past"),
    (b"\x15" + _s(b"s") + _n(0) * 9 + _n(1) + _s(b"g") + _n(0) * 3 + _n(2**20),
     "pending entry count 1048576 runs past"),
    (b"\x00" + b"\xc4", "unknown string encoding"),
    (b"\xfe" + b"\xc0", "unexpected length encoding"),
])
def test_absurd_lengths_are_refused_up_front(body: bytes, what: str) -> None:
    with pytest.raises(RdbLoadError, match=what):
        _parse(_file(body))


def test_a_corrupt_stream_names_its_key() -> None:
    db = Database(0)
    s = Stream()
    s.append([b"field", b"value"], (1, 1))
    db.data[b"the-stream"] = s
    data = bytearray(_write([db]))
    lp = bytes(next(iter(s.nodes()))[1].buf)
    data[data.index(lp) + 7] ^= 0x40  # inside the master entry
    body = bytes(data[:-8])
    # (checksum 0: not computed, so every node is checked byte by byte; a file whose
    # checksum verifies has only each listpack's header and end checked, as Redis does)
    with pytest.raises(RdbLoadError, match="corrupt stream.*'the-stream' \\(db 0\\)"):
        _parse(body + bytes(8))


def test_duplicate_keys_and_databases_out_of_range() -> None:
    with pytest.raises(RdbLoadError, match="duplicated key 'k' in db 0"):
        _parse(_file(_string_key(b"k", b"1") + _string_key(b"k", b"2")))
    with pytest.raises(RdbLoadError, match="database 16 out of range"):
        _parse(_file(b"\xfe" + _n(16) + _string_key(b"k", b"1")))


def test_data_after_the_end_only_in_an_aof_base(sample: bytes) -> None:
    with pytest.raises(RdbLoadError, match=f"after the end of the RDB at offset {len(sample)}"):
        _parse(sample + b"*1\r\n$4\r\nPING\r\n")
    result = _parse(sample + b"*1\r\n$4\r\nPING\r\n", aof_base=True)
    assert result.end == len(sample)  # the commands start there


def test_not_an_rdb_file() -> None:
    for data in (b"", b"REDI", b"XSNAP003", b"REDISabcd\xff" + bytes(8)):
        with pytest.raises(RdbLoadError, match="not an RDB file"):
            _parse(data)


def test_the_nack_zone_keeps_its_order_and_idmp_its_records() -> None:
    db = Database(0)
    db.data[b"n"] = _stream_with_nack_zone()
    db.data[b"i"] = _stream_with_idmp()
    loaded = _parse(_write([db]), 1).dbs[0]
    assert db_state([loaded]) == db_state([db])
    zone = next(iter(loaded.data[b"n"].cgroups.values()))
    assert [eid for eid, _ in zone.iter_nacked()] == [(4, 0), (1, 0), (3, 0)]
    verify(loaded.data[b"n"])
    idmp = loaded.data[b"i"].idmp
    assert idmp.lookup(b"producer-a", b"iid-1") == (1000, 0)
    assert (idmp.duration, idmp.maxsize, idmp.iids_added, idmp.iids_duplicates) == (600, 50, 2, 3)
