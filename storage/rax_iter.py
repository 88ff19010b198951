"""RaxIterator: a seekable cursor over a storage.rax.Rax (raxSeek/raxNext/raxPrev)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.rax import Rax, _Node

__all__ = ["RaxIterator"]

_SEEK_OPS = frozenset(("^", "$", "=", ">=", ">", "<=", "<"))

_PENDING = 0  # positioned on the seek target; the next next()/prev() returns it
_ON = 1  # positioned on the element last returned
_EOF = 2  # no current element


class RaxIterator:
    """Cursor over a Rax, with Redis raxSeek/raxNext/raxPrev-like semantics.

    ``seek(op, key)`` picks a target element: "^" the smallest key, "$" the largest,
    "=" exactly ``key``, ">=" / ">" the smallest key >= / > ``key``, "<=" / "<" the
    largest key <= / < ``key``.  The following call to next() *or* prev() returns that
    target (False if there is none); after that next() moves to the next larger key and
    prev() to the next smaller one.  When either runs off the end it returns False and
    the iterator stays at EOF (both directions) until the next seek.

    ``key`` and ``value`` describe the element returned by the last successful
    next()/prev().  Any insert or remove on the tree invalidates the iterator: seek
    again before using it (seeking to the last seen key resumes a walk).
    """

    __slots__ = ("_rax", "_nodes", "_idxs", "_pieces", "_state", "key", "value")

    def __init__(self, rax: Rax) -> None:
        self._rax = rax
        # Path from the root to the current node: _idxs[d] is the child index taken at
        # _nodes[d], and _pieces[d] the bytes of that edge.
        self._nodes: list[_Node] = []
        self._idxs: list[int] = []
        self._pieces: list[bytes] = []
        self._state = _EOF
        self.key = b""
        self.value: object = None

    def eof(self) -> bool:
        """True when there is no current or pending element (before any seek too)."""
        return self._state == _EOF

    def seek(self, op: str, key: bytes = b"") -> bool:
        """Position the iterator (see class docstring). Raises ValueError on a bad op;
        returns True otherwise, even when no element matches (then next()/prev()
        return False)."""
        if op not in _SEEK_OPS:
            raise ValueError(f"invalid rax seek operator {op!r}")
        rax = self._rax
        self._nodes = [rax._root]
        self._idxs = []
        self._pieces = []
        if not rax._count:
            found = False
        elif op == "^":
            self._descend_first()
            found = True
        elif op == "$":
            self._descend_last()
            found = True
        else:
            found = self._seek_key(op, key)
        self._state = _PENDING if found else _EOF
        return True

    def next(self) -> bool:
        """Move to the next larger key (or to the seek target); False at the end."""
        state = self._state
        if state == _EOF:
            return False
        if state == _ON and not self._successor():
            self._state = _EOF
            return False
        self._state = _ON
        self._load()
        return True

    def prev(self) -> bool:
        """Move to the next smaller key (or to the seek target); False at the start."""
        state = self._state
        if state == _EOF:
            return False
        if state == _ON and not self._before_subtree():
            self._state = _EOF
            return False
        self._state = _ON
        self._load()
        return True

    def __iter__(self) -> Iterator[tuple[bytes, object]]:
        """Yield (key, value) going forward with next() from the current position."""
        while self.next():
            yield self.key, self.value

    # -- internals ------------------------------------------------------------------

    def _load(self) -> None:
        self.key = b"".join(self._pieces)
        self.value = self._nodes[-1].value

    def _push(self, node: _Node, j: int) -> _Node:
        """Step from ``node`` (the current bottom) to its child ``j``."""
        ch = node.children
        assert ch is not None
        lab = node.label
        self._idxs.append(j)
        self._pieces.append(lab if len(ch) == 1 else lab[j : j + 1])
        child = ch[j]
        self._nodes.append(child)
        return child

    def _descend_first(self) -> None:
        """From the bottom node, go down to the smallest key of its subtree."""
        node = self._nodes[-1]
        while not node.is_key:
            node = self._push(node, 0)

    def _descend_last(self) -> None:
        """From the bottom node, go down to the largest key of its subtree."""
        node = self._nodes[-1]
        ch = node.children
        while ch is not None:
            node = self._push(node, len(ch) - 1)
            ch = node.children

    def _successor(self) -> bool:
        """Smallest key greater than the bottom node's own path."""
        node = self._nodes[-1]
        if node.children is not None:
            self._push(node, 0)
            self._descend_first()
            return True
        return self._after_subtree()

    def _after_subtree(self) -> bool:
        """Smallest key greater than every key of the bottom node's subtree."""
        nodes, idxs, pieces = self._nodes, self._idxs, self._pieces
        while idxs:
            nodes.pop()
            pieces.pop()
            j = idxs.pop() + 1
            parent = nodes[-1]
            if j < len(parent.children):  # type: ignore[arg-type]
                self._push(parent, j)
                self._descend_first()
                return True
        return False

    def _before_subtree(self) -> bool:
        """Largest key smaller than every key of the bottom node's subtree (for a key
        node that is its predecessor: descendants are all larger)."""
        nodes, idxs, pieces = self._nodes, self._idxs, self._pieces
        while idxs:
            nodes.pop()
            pieces.pop()
            j = idxs.pop() - 1
            parent = nodes[-1]
            if j >= 0:
                self._push(parent, j)
                self._descend_last()
                return True
            if parent.is_key:
                return True
        return False

    def _seek_key(self, op: str, key: bytes) -> bool:
        """Walk down towards ``key`` and settle on the target of a comparison seek."""
        node = self._nodes[0]
        forward = op[0] == ">"  # ">=", ">" look for keys after, "<=", "<" before
        inclusive = op != ">" and op != "<"
        i = 0
        n = len(key)
        while i < n:
            ch = node.children
            if ch is None:
                # A key leaf spelling a proper prefix of ``key``: it sorts before key.
                if op == "=":
                    return False
                if forward:
                    return self._after_subtree()
                return node.is_key or self._before_subtree()
            lab = node.label
            if len(ch) == 1:
                if key.startswith(lab, i):
                    i += len(lab)
                    node = self._push(node, 0)
                    continue
                if op == "=":
                    return False
                m = min(len(lab), n - i)
                p = 0
                while p < m and lab[p] == key[i + p]:
                    p += 1
                self._push(node, 0)
                if i + p == n or key[i + p] < lab[p]:
                    # key sorts before the whole subtree below the edge.
                    if forward:
                        self._descend_first()
                        return True
                    return self._before_subtree()
                # key sorts after the whole subtree below the edge.
                if forward:
                    return self._after_subtree()
                self._descend_last()
                return True
            b = key[i]
            j = lab.find(b)
            if j >= 0:
                i += 1
                node = self._push(node, j)
                continue
            if op == "=":
                return False
            j = bisect_left(lab, b)  # children[:j] sort before key, children[j:] after
            if forward:
                if j < len(ch):
                    self._push(node, j)
                    self._descend_first()
                    return True
                return self._after_subtree()
            if j > 0:
                self._push(node, j - 1)
                self._descend_last()
                return True
            return node.is_key or self._before_subtree()
        # The path spells ``key`` exactly.
        if op == "=":
            return node.is_key
        if inclusive and node.is_key:
            return True
        if forward:
            return self._successor()
        return self._before_subtree()
