"""The XINFO STREAM fields Redis added after 7.0 that the reference server (Debian's 7.0) does
not send: Redis 8.6's idempotent-production fields and 8.8's per-group nacked-count. The
compatibility tests take them out of our replies before comparing; whether they are right is
tested against the redis.io pages in tests/integration (test_stream_idmp.py, test_xnack.py)."""

from __future__ import annotations

from typing import Any

STREAM_FIELDS = (b"idmp-duration", b"idmp-maxsize", b"pids-tracked", b"iids-tracked",
                 b"iids-added", b"iids-duplicates")
GROUP_FIELDS = (b"nacked-count",)


def strip_dict(info: dict[Any, Any]) -> dict[Any, Any]:
    """redis-py's parsed XINFO STREAM [FULL] (str or bytes keys), without the newer fields."""
    names = {*STREAM_FIELDS, *(f.decode() for f in STREAM_FIELDS)}
    out = {k: v for k, v in info.items() if k not in names}
    groups = out.get("groups")
    if isinstance(groups, list):
        group_names = {*GROUP_FIELDS, *(f.decode() for f in GROUP_FIELDS)}
        out["groups"] = [{k: v for k, v in g.items() if k not in group_names}
                         if isinstance(g, dict) else g for g in groups]
    return out


def strip_raw(reply: bytes) -> bytes:
    """A raw RESP2 / RESP3 XINFO STREAM [FULL] reply without the newer fields (an error or
    anything that is no field list comes back unchanged)."""
    if reply[:1] not in (b"*", b"%"):
        return reply
    value, end = _parse(reply, 0)
    if end != len(reply):
        return reply
    return _encode(_strip(value, STREAM_FIELDS))


def _strip(value: tuple[str, Any], names: tuple[bytes, ...]) -> tuple[str, Any]:
    kind, items = value
    pairs = list(zip(items[::2], items[1::2], strict=True))
    kept = []
    for key, val in pairs:
        name = key[1] if key[0] in ("$", "+") else None
        if name in names:
            continue
        if name == b"groups" and val[0] == "*":
            val = ("*", [_strip(g, GROUP_FIELDS) if g[0] in ("*", "%") else g
                         for g in val[1]])
        kept += [key, val]
    return kind, kept


def _parse(buf: bytes, pos: int) -> tuple[tuple[str, Any], int]:
    kind = chr(buf[pos])
    eol = buf.index(b"\r\n", pos)
    head = buf[pos + 1:eol]
    pos = eol + 2
    if kind in "$=!":
        size = int(head)
        if size < 0:
            return (kind, None), pos
        return (kind, buf[pos:pos + size]), pos + size + 2
    if kind in "*~>%|":
        count = int(head) * (2 if kind in "%|" else 1)
        if count < 0:
            return (kind, None), pos
        items = []
        for _ in range(count):
            item, pos = _parse(buf, pos)
            items.append(item)
        return (kind, items), pos
    return (kind, head), pos  # + - : _ , # (


def _encode(value: tuple[str, Any]) -> bytes:
    kind, body = value
    if kind in "$=!":
        if body is None:
            return b"$-1\r\n"
        return kind.encode() + b"%d\r\n" % len(body) + body + b"\r\n"
    if kind in "*~>%|":
        if body is None:
            return b"*-1\r\n"
        count = len(body) // 2 if kind in "%|" else len(body)
        return kind.encode() + b"%d\r\n" % count + b"".join(_encode(v) for v in body)
    return kind.encode() + body + b"\r\n"
