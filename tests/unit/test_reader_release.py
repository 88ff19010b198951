"""The request readers free what they hold without the cyclic collector: release() drops a
partly received bulk at once, and a protocol error leaves no reference cycle behind."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from protocol.reader import HiredisRequestReader, ProtocolError, PythonRequestReader, RequestReader

IMPLS = [PythonRequestReader, HiredisRequestReader]


@pytest.fixture(params=IMPLS, ids=["python", "hiredis"])
def impl(request: pytest.FixtureRequest) -> type[RequestReader]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic collector off: what only it could free stays visible."""
    was_on = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if was_on:
        gc.enable()


def live(kind: type) -> int:
    return sum(1 for obj in gc.get_objects() if type(obj) is kind)


def test_release_drops_a_partial_bulk(impl: type[RequestReader]) -> None:
    r = impl()
    r.feed(b"*3\r\n$4\r\nECHO\r\n$1000000\r\n" + b"x" * 500_000)
    assert r.get_commands() == []
    assert r.pending_bytes() == 500_000
    r.release()
    assert r.pending_bytes() == 0
    # The reader starts over: a whole command reads as usual.
    r.feed(b"*1\r\n$4\r\nPING\r\n")
    assert r.get_commands() == [[b"PING"]]


@pytest.mark.usefixtures("no_collector")
@pytest.mark.parametrize("data", [
    b"*1\r\n$4\r\nPING\r\n*x\r\n",  # commands first: the error is kept, raised next call
    b"*1\r\n$4\r\nPING\r\n" + b"y" * 70_000,  # an inline request too big: 70 KB buffered
    b"*x\r\n",  # raised at once
    b'ECHO "x\r\n',  # inline: unbalanced quotes
], ids=["kept", "too-big-inline", "at-once", "inline"])
def test_a_protocol_error_leaves_no_cycle(impl: type[RequestReader], data: bytes) -> None:
    before = live(impl)
    r = impl()
    errors = 0
    for _ in range(3):  # the first call, then the kept error raised again
        try:
            r.parse(data) if errors == 0 else r.get_commands()
        except ProtocolError as exc:
            errors += 1
            assert exc is not r.error and str(exc) == str(r.error)
    assert errors >= 2 and r.error is not None and r.error.__traceback__ is None
    del r
    assert live(impl) == before
