"""The C build of the RESP frame checks and command encoder (protocol/_native.c), when
there is one.

``frames_end``, ``encode_command``, ``encode_commands`` and ``has_big_count`` are None when
the extension was not built (no compiler at install time) or when XSTREAMD_PURE_PYTHON is
set in the environment (1, yes, true): the callers then run their Python code, which gives
the same answers. The tests compare the two."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

frames_end: Callable[[Any, int, list[list[bytes]]], int] | None = None
encode_command: Callable[[list[Any]], bytes | None] | None = None
encode_commands: Callable[[list[list[Any]]], bytes | None] | None = None
has_big_count: Callable[[Any], bool] | None = None


def c_wanted() -> bool:
    """The C modules may be used: XSTREAMD_PURE_PYTHON (1, yes, true) turns them all off
    (protocol's and storage's)."""
    return os.environ.get("XSTREAMD_PURE_PYTHON", "").lower() not in ("1", "yes", "true")


if c_wanted():
    try:
        from protocol import _native
    except ImportError:
        pass
    else:
        frames_end = _native.frames_end
        encode_command = _native.encode_command
        encode_commands = _native.encode_commands
        has_big_count = _native.has_big_count
