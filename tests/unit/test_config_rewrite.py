"""CONFIG REWRITE's text transformation (server/config_rewrite.py), checked against what Debian's
redis-server 7.0 writes for the same file and values, and its atomic file replacement."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import server.config as config_module
from server.config import OPTIONS, Config, load_config
from server.config_rewrite import (
    ENUM_OPTIONS,
    MEMORY_OPTIONS,
    SIGNATURE,
    format_memory,
    quote,
    rewrite_config_file,
    rewrite_config_text,
    write_file_atomically,
)

CWD = "/srv/xstreamd"


def rewrite(old: str, config: Config | None = None, **values: str) -> str:
    config = config or Config()
    for name, text in values.items():
        config.set_from_text(name.replace("_", "-"), text)
    return rewrite_config_text(old, config, CWD)


def tail(text: str) -> list[str]:
    """The lines appended after the signature."""
    lines = text.split("\n")
    return lines[lines.index(SIGNATURE) + 1:-1]


# Every run below also appends these: Redis always writes `dir` (the absolute working directory),
# the save rules and the latency percentiles, even at their defaults.
PERCENTILES = "latency-tracking-info-percentiles 50 99 99.9"
ALWAYS = [f'dir "{CWD}"', "save 3600 1", "save 300 100", "save 60 10000", PERCENTILES]


def test_comments_and_blank_lines_stay() -> None:
    old = "# top comment\n\n   # indented comment\nhz 10\n# trailing\n"
    assert rewrite(old) == (
        "# top comment\n\n# indented comment\nhz 10\n# trailing\n"  # lines are trimmed
        # The final newline leaves an empty last line, so a blank line precedes the signature.
        f"\n{SIGNATURE}\n" + "".join(line + "\n" for line in ALWAYS))


def test_runs_of_blank_lines_collapse() -> None:
    out = rewrite("\n\n\nhz 10\n\n\n\n# end", save="")
    assert out.startswith("\nhz 10\n\n# end\n" + SIGNATURE + "\n")


def test_lines_replaced_in_place_even_at_default() -> None:
    old = "timeout 30\nhz 25\nappendonly no\n"
    out = rewrite(old, hz="10", appendonly="yes", timeout="7")
    assert out.startswith("timeout 7\nhz 10\nappendonly yes\n\n" + SIGNATURE + "\n")
    assert "hz 10" not in tail(out)  # replaced where it was, never appended


def test_new_options_appended_under_one_signature() -> None:
    out = rewrite("port 6379\n", maxmemory="100mb", appendfsync="always", save="")
    assert out.split("\n").count(SIGNATURE) == 1
    # In the order of the option table (Redis's is its dict's order).
    assert tail(out) == [
        f'dir "{CWD}"', "maxmemory 100mb", "appendfsync always", 'save ""', PERCENTILES]


def test_existing_signature_is_reused() -> None:
    old = f"# mine\n{SIGNATURE}\nhz 20\n# after the signature\n"
    out = rewrite(old, hz="20", timeout="5", save="")
    assert out == (f"# mine\n{SIGNATURE}\nhz 20\n# after the signature\n\n"
                   f'dir "{CWD}"\ntimeout 5\nsave ""\n{PERCENTILES}\n')


def test_defaults_are_not_appended() -> None:
    out = rewrite("")
    assert tail(out) == ALWAYS
    assert out.startswith(SIGNATURE)  # an empty (or missing) file gets only the new lines


def test_save_rules_replace_old_lines_in_order() -> None:
    old = "save 900 1\n# keep\nsave 300 10\nsave 60 10000\nhz 10\n"
    out = rewrite(old, save="30 2")
    # Surplus save lines become blank; the blank runs collapse.
    assert out.startswith("save 30 2\n# keep\n\nhz 10\n\n" + SIGNATURE)
    out = rewrite("save 900 1\nhz 10\n", save="30 2 10 5 1 1")
    assert out.startswith("save 30 2\nhz 10\n\n" + SIGNATURE)
    assert tail(out)[1:] == ["save 10 5", "save 1 1", PERCENTILES]
    assert rewrite("save 900 1\n", save="").startswith('save ""\n')
    # Written even when equal to the defaults (a missing save line would mean the defaults,
    # but Redis writes them anyway).
    assert rewrite("save 3600 1\n").startswith("save 3600 1\n\n" + SIGNATURE)


def test_case_and_aliases_become_the_canonical_name(monkeypatch: pytest.MonkeyPatch) -> None:
    out = rewrite("MAXMEMORY 10MB\n  HZ 10\nMaxMemory-Policy NoEviction\n", maxmemory="10mb")
    assert out.startswith("maxmemory 10mb\nhz 10\nmaxmemory-policy noeviction\n")
    # OPTIONS has no aliases today; one registered the way OptionSpec.aliases registers them
    # is read as its option and rewritten under the canonical name.
    monkeypatch.setitem(config_module._BY_NAME, "old-max-memory", Config.spec("maxmemory"))
    assert rewrite("Old-Max-Memory 5mb\n", maxmemory="3mb").startswith("maxmemory 3mb\n")


def test_unknown_and_unparsable_lines_are_commented_out() -> None:
    # Redis 7.0 turns such lines into "# ??? " comments: they would stop the next start-up.
    old = 'nosuchoption 1 2\nsave "unbalanced\nhz 10\n'
    out = rewrite(old)
    assert out.startswith('# ??? nosuchoption 1 2\n# ??? save "unbalanced\nhz 10\n')


def test_quoting() -> None:
    assert quote("") == '""'
    assert quote("plain") == '"plain"'
    assert quote('my "pw" \\ x') == '"my \\"pw\\" \\\\ x"'
    assert quote("a\nb\tc\r\x07\x08\x01\x7f") == '"a\\nb\\tc\\r\\a\\b\\x01\\x7f"'
    assert quote("pässwörd") == '"pässwörd"'  # printable non-ASCII stays (see quote())
    assert quote("\u2028") == '"\\xe2\\x80\\xa8"'  # unprintable: its UTF-8 bytes, as Redis
    out = rewrite("dbfilename x\nlogfile x\nappendfilename x\n", dbfilename="my dump",
                  logfile="", appendfilename="appendonly.aof")
    # Strings are always quoted; enums never are.
    assert out.startswith('dbfilename "my dump"\nlogfile ""\nappendfilename "appendonly.aof"\n')
    assert "appendfsync always" in tail(rewrite("", appendfsync="always"))
    assert 'notify-keyspace-events "AKE"' in tail(rewrite("", notify_keyspace_events="AKE"))
    assert rewrite('notify-keyspace-events ""\n').startswith('notify-keyspace-events ""\n')


def test_requirepass_and_pidfile_empty_means_absent() -> None:
    # Redis's default for both is NULL: an empty value blanks their lines instead of writing "".
    out = rewrite("requirepass secret\npidfile /run/x.pid\nhz 10\n", requirepass="",
                  pidfile="")
    assert out.startswith("\nhz 10\n")
    assert 'requirepass "pass \\"word\\""' in tail(rewrite("", requirepass='pass "word"'))


def test_memory_units() -> None:
    assert format_memory(0) == "0"
    assert format_memory(1000) == "1000"
    assert format_memory(1024) == "1kb"
    assert format_memory(1536) == "1536"
    assert format_memory(3 * 1024**2) == "3mb"
    assert format_memory(1024**3) == "1gb"
    assert format_memory(1536 * 1024**2) == "1536mb"
    assert format_memory(2**64 - 1) == str(2**64 - 1)  # Redis would print -1 here
    out = rewrite("maxmemory 0\n", maxmemory="100mb", stream_node_max_bytes="1500",
                  auto_aof_rewrite_min_size="1g", stream_node_max_entries="1024")
    assert out.startswith("maxmemory 100mb\n")
    assert tail(out)[1:4] == ["stream-node-max-bytes 1500", "stream-node-max-entries 1024",
                             "auto-aof-rewrite-min-size 1000000000"]  # 1g = 10^9 bytes


def test_client_output_buffer_limit_one_line_per_class() -> None:
    config = Config()
    config.set_from_text("client-output-buffer-limit", "pubsub 1mb 1000 5")
    # Setting one class leaves the others (so the file's per-class lines add up on loading).
    assert config.render("client-output-buffer-limit") == (
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 1000 5")
    out = rewrite("", client_output_buffer_limit="pubsub 1mb 1000 5")
    assert tail(out)[1:2] == ["client-output-buffer-limit pubsub 1mb 1000 5"]  # only if changed
    # Lines in the file are reused in class order (normal, replica, pubsub) whatever class
    # they named, as Redis does; a changed class without a line left is appended.
    old = "client-output-buffer-limit pubsub 32mb 8mb 60\nclient-output-buffer-limit normal 0 0 0\n"
    out = rewrite(old, client_output_buffer_limit="pubsub 1mb 1000 5")
    assert out.startswith("client-output-buffer-limit normal 0 0 0\n"
                          "client-output-buffer-limit replica 256mb 64mb 60\n")
    assert tail(out)[1] == "client-output-buffer-limit pubsub 1mb 1000 5"


def test_bind() -> None:
    # At the default addresses Redis removes bind lines; otherwise it always writes them.
    assert rewrite("bind 127.0.0.1\nhz 10\n").startswith("\nhz 10\n")
    config = Config()
    config.set_from_text("bind", "127.0.0.1 ::1")
    assert "bind 127.0.0.1 ::1" in tail(rewrite("", config))
    config.set_from_text("bind", "")
    assert rewrite("bind 0.0.0.0\n", config).startswith('bind ""\n')


def test_immutable_options_are_rewritten() -> None:
    config = load_config(["--port", "7001", "--databases", "4", "--daemonize", "no"])
    out = rewrite("port 6379\n", config)
    assert out.startswith("port 7001\n")
    assert "databases 4" in tail(out)


def test_a_second_rewrite_is_stable() -> None:
    config = Config()
    config.set_from_text("hz", "20")
    once = rewrite("# c\nhz 10\n", config)
    twice = rewrite(once, config)
    assert twice == once + "\n"  # Redis's split leaves one trailing blank line, then stops
    assert rewrite(twice, config) == twice


def test_option_kinds_come_from_the_option_table() -> None:
    """The kinds the rewrite needs (memory, enum), as the option table's parsers give them."""
    memory = {"proto-max-bulk-len", "client-query-buffer-limit", "maxmemory",
              "stream-node-max-bytes", "auto-aof-rewrite-min-size", "repl-backlog-size",
              "stream-reply-cache-max-bytes", "stream-hot-memory",
              "loading-process-events-interval-bytes"}
    assert memory == MEMORY_OPTIONS
    assert {"loglevel", "maxmemory-policy", "appendfsync", "enable-debug-command",
            "acl-pubsub-default", "repl-diskless-load"} == ENUM_OPTIONS


def test_rewritten_file_loads_back_to_the_same_values(tmp_path: Path) -> None:
    """Every option set away from its default survives rewrite + load (dir: the cwd)."""
    values = {
        "port": "7001", "bind": "127.0.0.1 ::1", "databases": "4",
        "requirepass": 'pa ss "wörd" \\', "protected-mode": "no", "loglevel": "warning",
        "logfile": "my log.txt", "dir": str(tmp_path), "maxclients": "500", "timeout": "30",
        "tcp-keepalive": "60", "hz": "20", "daemonize": "yes", "pidfile": "/tmp/x y.pid",
        "proto-max-bulk-len": "1gb", "client-query-buffer-limit": "3mb",
        "client-output-buffer-limit": "normal 1mb 2000 3 replica 1 2 3 pubsub 0 0 0",
        "maxmemory": "18446744073709551615", "maxmemory-policy": "allkeys-lfu",
        "stream-node-max-bytes": "1500", "stream-node-max-entries": "7",
        "stream-reply-cache-max-bytes": "1mb", "stream-hot-memory": "32mb",
        "loading-process-events-interval-bytes": "4mb", "appendonly": "no",
        "stream-idmp-duration": "300", "stream-idmp-maxsize": "50",
        "appendfilename": "a.aof", "appendfsync": "always",
        "auto-aof-rewrite-percentage": "50", "auto-aof-rewrite-min-size": "1234",
        "aof-load-truncated": "no", "appenddirname": "aofs", "aof-use-rdb-preamble": "no",
        "rdb-key-save-delay": "-5", "save": "30 2 10 5", "dbfilename": "",
        "stop-writes-on-bgsave-error": "no", "slowlog-log-slower-than": "-1",
        "slowlog-max-len": "5", "acllog-max-len": "7", "latency-monitor-threshold": "9",
        "notify-keyspace-events": "KEA", "enable-debug-command": "yes",
        "latency-tracking": "no", "latency-tracking-info-percentiles": "",
        "maxmemory-samples": "7", "maxmemory-eviction-tenacity": "20",
        "lfu-log-factor": "3", "lfu-decay-time": "0", "tracking-table-max-keys": "0",
        "aclfile": "/tmp/users file.acl", "acl-pubsub-default": "allchannels",
        "busy-reply-threshold": "1234", "tcp-backlog": "77",
        "unixsocket": "/tmp/my sock.sock", "unixsocketperm": "750",
        "shutdown-on-sigint": "nosave force", "shutdown-on-sigterm": "save",
        "replicaof": "127.0.0.1 6380", "masterauth": "pass word", "masteruser": "repl",
        "repl-backlog-size": "2mb", "repl-backlog-ttl": "60", "repl-diskless-sync": "no",
        "repl-diskless-sync-delay": "1", "repl-diskless-sync-max-replicas": "2",
        "repl-diskless-load": "swapdb", "repl-ping-replica-period": "5", "repl-timeout": "30",
        "repl-disable-tcp-nodelay": "yes", "min-replicas-to-write": "1",
        "min-replicas-max-lag": "3", "replica-read-only": "no",
        "replica-serve-stale-data": "no", "replica-priority": "50", "replica-announced": "no",
        "replica-announce-ip": "10.1.2.3", "replica-announce-port": "7000",
        "replica-lazy-flush": "yes", "replica-ignore-maxmemory": "no",
    }
    # (io-threads has one possible value here, so it cannot be set away from its default)
    assert set(values) | {"io-threads"} == {spec.name for spec in OPTIONS}, "cover every option"
    config = Config()
    for name, text in values.items():
        config.set_from_text(name, text)
    path = tmp_path / "x.conf"
    path.write_text(rewrite_config_text("# mine\n", config, str(tmp_path)), encoding="utf-8")
    loaded = load_config([str(path)])
    for spec in OPTIONS:
        assert loaded[spec.name] == config[spec.name], spec.name


def test_write_file_atomically_keeps_mode_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "x.conf"
    path.write_text("old\n")
    os.chmod(path, 0o600)
    write_file_atomically(str(path), "new\n")
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == ["x.conf"]
    fresh = tmp_path / "fresh.conf"  # a new file: 0644 less the umask, as Redis
    write_file_atomically(str(fresh), "x\n")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644 & ~mask


def test_write_file_atomically_failures_leave_the_original(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):  # the directory is gone: no temp file possible
        write_file_atomically(str(tmp_path / "gone" / "x.conf"), "new\n")
    target = tmp_path / "target"
    target.mkdir()
    (target / "inside").write_text("kept")
    with pytest.raises(IsADirectoryError):  # the rename fails after the temp file was written
        write_file_atomically(str(target), "new\n")
    assert sorted(os.listdir(tmp_path)) == ["target"]  # the temp file was removed
    assert (target / "inside").read_text() == "kept"


def test_user_lines_replace_the_files_and_come_after_every_option() -> None:
    users = ["user alice on ~a:* resetchannels -@all +get",
             "user default on nopass sanitize-payload ~* &* +@all"]
    old = "user old on\nport 6379\nuser older off\n"
    text = rewrite_config_text(old, Config(), CWD, users)
    lines = text.split("\n")
    # The file's two user lines are reused in place; nothing else is appended for users.
    assert lines[:3] == [users[0], "port 6379", users[1]]
    assert text.count("user ") == 2
    new = rewrite_config_text("port 6379\n", Config(), CWD, users)
    assert new.split("\n")[-3:] == [*users, ""]


def test_user_lines_are_dropped_when_users_live_in_an_aclfile() -> None:
    text = rewrite_config_text("user old on\nport 6379\n", Config(), CWD, None)
    assert "user" not in text and "port 6379" in text


def test_replicaof_is_written_for_a_replica_and_dropped_for_a_primary(tmp_path: Path) -> None:
    """As Sentinel's failover needs: REPLICAOF host port then CONFIG REWRITE names the primary
    (unquoted, as Redis writes it); REPLICAOF NO ONE then CONFIG REWRITE removes the line,
    which redis-server would refuse empty."""
    conf = tmp_path / "x.conf"
    conf.write_text("replicaof 127.0.0.1 6380\n")
    config = Config()
    config.config_file = str(conf)
    config.set_internal("replicaof", ("10.0.0.1", 7000))
    rewrite_config_file(config, str(tmp_path))
    assert "replicaof 10.0.0.1 7000\n" in conf.read_text()
    config.set_internal("replicaof", None)
    rewrite_config_file(config, str(tmp_path))
    assert not any(line.startswith("replicaof") for line in conf.read_text().splitlines())
