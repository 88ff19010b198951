"""Tables built at import in a quicker way than the obvious one hold what the obvious one
would: the reader's canonical frame sizes."""

from __future__ import annotations

from protocol.encoder import encode_command
from protocol.reader import _ITEM_SIZE


def test_item_sizes_are_canonical_argument_sizes() -> None:
    assert len(_ITEM_SIZE) == 8192
    for n, size in enumerate(_ITEM_SIZE):
        # an argument of n bytes in a one-argument command, without the "*1\r\n" header
        assert size == len(encode_command([b"x" * n])) - 4, n
