"""The persistence hooks that run for every write are registered exactly while they have work:
the AOF feed while commands go to the AOF, the MISCONF check while a refusal is possible."""

from __future__ import annotations

from pathlib import Path

from server.app import Server
from server.config import load_config
from server.persistence.manager import OFF, ON, Persistence, attach


def make(tmp_path: Path) -> tuple[Server, Persistence]:
    config = load_config(["--appendonly", "no", "--save", "", "--dir", str(tmp_path)])
    server = Server(config)
    attach(server)
    assert isinstance(server.persistence, Persistence)
    return server, server.persistence


def test_nothing_registered_without_aof_or_failed_save(tmp_path: Path) -> None:
    server, p = make(tmp_path)
    assert server.propagate_hooks == []
    assert server.refusal_checks == []


def test_feeding_registers_the_feed_and_the_check(tmp_path: Path) -> None:
    server, p = make(tmp_path)
    p.feeding = True
    assert len(server.propagate_hooks) == 1
    assert server.refusal_checks == [p.refuse]
    p.feeding = True  # idempotent
    assert len(server.propagate_hooks) == 1
    p.feeding = False
    assert server.propagate_hooks == []
    assert server.refusal_checks == []


def test_aof_state_or_failed_bgsave_arm_the_check(tmp_path: Path) -> None:
    server, p = make(tmp_path)
    p.aof_state = ON
    assert server.refusal_checks == [p.refuse]
    p.aof_state = OFF
    assert server.refusal_checks == []
    p.last_bgsave_ok = False
    assert server.refusal_checks == [p.refuse]
    p.last_bgsave_ok = True
    assert server.refusal_checks == []
