"""server.config: value parsers, redis.conf files, command-line flags, CONFIG GET globs."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.config import (
    Config,
    ConfigError,
    load_config,
    parse_bool,
    parse_command_line,
    parse_config_file,
    parse_memory,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("42", 42), ("1k", 1000), ("1kb", 1024), ("2mb", 2 * 1024**2), ("2m", 2 * 10**6),
     ("1gb", 1024**3), ("1g", 10**9), ("1GB", 1024**3), ("5b", 5), ("5B", 5),
     # memtoull reads no digits as 0, saturates at 2^64 - 1 and wraps past it when scaled.
     ("", 0), ("mb", 0), ("18446744073709551616", 2**64 - 1),
     ("18446744073709551615kb", (2**64 - 1) * 1024 % 2**64)],
)
def test_parse_memory_units(text: str, value: int) -> None:
    assert parse_memory(text) == value


@pytest.mark.parametrize("text", ["x", "1tb", "-1", "+1", " 1", "1 ", "1.5mb", "1 mb", "\u0661"])
def test_parse_memory_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match="argument must be a memory value"):
        parse_memory(text)


def test_parse_bool() -> None:
    assert parse_bool("yes") is True and parse_bool("YES") is True
    assert parse_bool("no") is False
    with pytest.raises(ConfigError, match="argument must be 'yes' or 'no'"):
        parse_bool("true")


def test_defaults_render_in_redis_text_form() -> None:
    config = Config()
    assert config["port"] == 6379
    assert config.render("port") == "6379"
    assert config.render("protected-mode") == "yes"
    assert config.render("save") == "3600 1 300 100 60 10000"
    # Redis still calls the replica class "slave" in CONFIG GET.
    assert config.render("client-output-buffer-limit") == (
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")
    assert config.render("maxmemory-policy") == "noeviction"


def test_int_range_texts() -> None:
    config = Config()
    with pytest.raises(ConfigError, match="^argument must be between 0 and 65535 inclusive$"):
        config.set_from_text("port", "70000")
    with pytest.raises(ConfigError, match="^argument couldn't be parsed into an integer$"):
        config.set_from_text("timeout", "abc")
    with pytest.raises(ConfigError, match="between 1 and 4294967295 inclusive"):
        config.set_from_text("maxclients", "0")


def test_hz_is_clamped_like_redis() -> None:
    config = Config()
    config.set_from_text("hz", "1000")
    assert config["hz"] == 500
    config.set_from_text("hz", "0")
    assert config["hz"] == 1
    config.set_from_text("hz", "42")
    assert config["hz"] == 42


def test_enum_lists_choices_in_redis_order() -> None:
    config = Config()
    with pytest.raises(ConfigError) as info:
        config.set_from_text("maxmemory-policy", "lru")
    assert str(info.value) == (
        "argument(s) must be one of the following: volatile-lru, volatile-lfu, "
        "volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction")
    config.set_from_text("appendfsync", "ALWAYS")
    assert config["appendfsync"] == "always"


def test_client_output_buffer_limit_parsing() -> None:
    config = Config()
    config.set_from_text("client-output-buffer-limit", "normal 1mb 512kb 10 slave 0 0 0")
    limits = config["client-output-buffer-limit"]
    assert limits["normal"] == (1024**2, 512 * 1024, 10)
    assert limits["replica"] == (0, 0, 0)
    with pytest.raises(ConfigError, match="Wrong number of arguments in buffer limit"):
        config.set_from_text("client-output-buffer-limit", "normal 0 0")
    with pytest.raises(ConfigError, match="Invalid client class"):
        config.set_from_text("client-output-buffer-limit", "foo 0 0 0")
    with pytest.raises(ConfigError, match="Error in hard, soft or soft_seconds"):
        config.set_from_text("client-output-buffer-limit", "normal x 0 0")


def test_save_rules() -> None:
    config = Config()
    config.set_from_text("save", "")
    assert config["save"] == []
    config.set_from_text("save", "900 1 300 10")
    assert config["save"] == [(900, 1), (300, 10)]
    assert config.render("save") == "900 1 300 10"
    for bad in ("1 2 3", "x 1", "0 1"):
        with pytest.raises(ConfigError, match="Invalid save parameters"):
            config.set_from_text("save", bad)


def test_immutable_options_refused_at_runtime_only() -> None:
    config = Config()
    with pytest.raises(ConfigError, match="can't set immutable config"):
        config.set_from_text("databases", "4", at_runtime=True)
    config.set_from_text("databases", "4")
    assert config["databases"] == 4


def test_unknown_option() -> None:
    with pytest.raises(ConfigError, match="Unknown option or number of arguments for CONFIG SET"):
        Config().set_from_text("no-such-option", "1")


def test_listeners_run_after_a_set() -> None:
    config = Config()
    seen: list[object] = []
    config.on_change("loglevel", seen.append)
    config.set_from_text("LOGLEVEL", "warning")
    assert seen == ["warning"]
    with pytest.raises(ConfigError):
        config.set_from_text("loglevel", "loud")
    assert seen == ["warning"]


def test_matching_uses_redis_globs_case_insensitively() -> None:
    config = Config()
    assert set(config.matching("maxmemory*")) == {
        "maxmemory", "maxmemory-policy", "maxmemory-samples", "maxmemory-eviction-tenacity"}
    assert list(config.matching("PORT")) == ["port"]
    assert set(config.matching("stream-node-max-[be]*")) == {
        "stream-node-max-bytes", "stream-node-max-entries"}
    assert list(config.matching("h?")) == ["hz"]
    assert list(config.matching("nothing*here")) == []


def test_parse_config_file_quoting_and_comments() -> None:
    text = '# a comment\n\n  port 7000  \nrequirepass "pass word"\nsave ""\nlogfile \'\'\n'
    lines = parse_config_file(text)
    assert [(line.lineno, line.name, line.value) for line in lines] == [
        (3, "port", "7000"), (4, "requirepass", "pass word"), (5, "save", ""), (6, "logfile", "")]


def test_parse_command_line_multi_word_values() -> None:
    assert parse_command_line(["--port", "7000", "--save", "60", "1", "--appendonly", "no"]) == (
        None, [("port", "7000"), ("save", "60 1"), ("appendonly", "no")])
    assert parse_command_line(["my.conf", "--port", "1"]) == ("my.conf", [("port", "1")])
    with pytest.raises(ConfigError, match="Invalid option 'port'"):
        parse_command_line(["a.conf", "port", "7"])


def test_load_config_file_then_flags(tmp_path: Path) -> None:
    conf = tmp_path / "x.conf"
    conf.write_text("port 7001\nhz 20\nsave 900 1\nsave 60 5\n")
    config = load_config([str(conf), "--hz", "30", "--requirepass", "secret"])
    assert config["port"] == 7001
    assert config["hz"] == 30  # flags come after the file and win
    assert config["requirepass"] == "secret"
    assert config["save"] == [(900, 1), (60, 5)]  # save directives add up
    assert config.config_file == str(conf)


def test_load_config_empty_save_clears_earlier_rules(tmp_path: Path) -> None:
    """`save ""` after save lines (e.g. a file's, then --save "") turns snapshots off, as in
    redis-server; a later save line starts over from no rules."""
    conf = tmp_path / "x.conf"
    conf.write_text("save 900 1\nsave 60 5\n")
    assert load_config([str(conf), "--save", ""])["save"] == []
    conf.write_text('save 900 1\nsave ""\nsave 60 5\n')
    assert load_config([str(conf)])["save"] == [(60, 5)]


def test_load_config_errors_name_the_line(tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text("# comment\nport 7001\nbogus-directive 1\n")
    with pytest.raises(ConfigError) as info:
        load_config([str(conf)])
    assert str(info.value) == (
        "Reading the configuration file, at line 3\n>>> 'bogus-directive 1'\n"
        "Bad directive or wrong number of arguments")
    with pytest.raises(ConfigError) as info:
        load_config(["--port", "99999"])
    assert str(info.value) == (
        "Reading the configuration file, at line 1\n>>> 'port 99999'\n"
        "argument must be between 0 and 65535 inclusive")
    conf.write_text("port 7001\n")
    with pytest.raises(ConfigError) as info:
        load_config([str(conf), "--hz", "x"])  # flags are numbered after the file's lines
    assert str(info.value).startswith("Reading the configuration file, at line 2\n>>> 'hz x'")


def test_load_config_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.conf"
    with pytest.raises(ConfigError) as info:
        load_config([str(missing)])
    assert str(info.value) == (
        f"Fatal error, can't open config file '{missing}': No such file or directory")
