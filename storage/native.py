"""The C build of the bulk paths' listpack loops (storage/_native.c), when there is one.

``encode_node``, ``append_entry``, ``xadd_run`` and ``id_keys`` are None when the
extension was not built (no compiler at install time) or when XSTREAMD_PURE_PYTHON is set in
the environment (1, yes, true): the callers then run the Python loops beside them, which give
the same bytes. The tests compare the two."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.native import c_wanted

encode_node: Callable[..., Any] | None = None
append_entry: Callable[..., int] | None = None
xadd_run: Callable[..., tuple[int, int, int, bytes | None, bytes]] | None = None
id_keys: Callable[[list[bytes]], list[bytes] | None] | None = None

if c_wanted():
    try:
        from storage import _native
    except ImportError:
        pass
    else:
        encode_node = _native.encode_node
        append_entry = _native.append_entry
        xadd_run = _native.xadd_run
        id_keys = _native.id_keys


def available() -> bool:
    """The C loops are in use (the start-up log says when they are not)."""
    return encode_node is not None
