"""Shared helpers of the stream and consumer-group command tests (no tests here): the marker
of checks that Redis 7.0 (the reference server) predates, common error texts, and the text of
the error a command gets."""

from __future__ import annotations

import pytest
import redis

from tests.helpers import TARGET

REDIS7 = TARGET == "redis"
redis8 = pytest.mark.skipif(REDIS7, reason="Redis 8 behaviour; the reference server is 7.0")

U64 = 2**64 - 1
BAD_ID = "Invalid stream ID specified as stream command argument"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def err(r: redis.Redis, *args: object) -> str:
    """The text of the error that the command gets (it must get one)."""
    with pytest.raises(redis.ResponseError) as exc:
        r.execute_command(*args)
    return str(exc.value)
