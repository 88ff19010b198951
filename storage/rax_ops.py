"""Rax helpers that need no path stack, as plain functions taking the tree: the ordered
lookups ``floor`` / ``ceiling``, the right-edge insert ``append_max`` and the bulk build
``fill_sorted``.  storage.rax.Rax binds them as methods of the same names.

The node type lives here too (storage.rax imports it, see the node model there), so this
module needs nothing from storage.rax at import time and the tree's class body can bind
these functions directly: no extra call on the read path.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import islice
from operator import ge
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.rax import Rax

__all__ = ["append_max", "ceiling", "fill_sorted", "floor"]

# Branching nodes with fewer children get exact-size children lists (copied on change);
# larger ones are edited in place, where copying hundreds of pointers would cost more
# than the list's small relative over-allocation.
_SMALL_BRANCH = 16


class _Node:
    __slots__ = ("label", "children", "is_key", "value")

    def __init__(
        self, label: bytes, children: list[_Node] | None, is_key: bool, value: object
    ) -> None:
        self.label = label
        self.children = children
        self.is_key = is_key
        self.value = value


def _leaf(value: object) -> _Node:
    return _Node(b"", None, True, value)


def floor(rax: Rax, key: bytes, strict: bool = False) -> tuple[bytes, object] | None:
    """The (key, value) with the largest key <= ``key`` (< with ``strict``), or None.

    One descent without an iterator (a stream looks up the node that may hold an
    ID on every read): the path towards ``key`` remembers the deepest place where
    a smaller key branches off, and the answer is found there if the path fails.
    The bytes matched on the way are ``key``'s own, so only a length is kept."""
    node = rax._root
    # (i, node, j): the answer is the last key of child j's subtree (its path
    # starts with key[:i]), or the node itself (key[:i]) when j is -1.
    cand: tuple[int, _Node, int] | None = None
    i = 0
    n = len(key)
    while i < n:
        if node.is_key:  # key[:i], a proper prefix of ``key``: smaller
            cand = (i, node, -1)
        ch = node.children
        if ch is None:
            break
        lab = node.label
        if len(ch) == 1:
            if key.startswith(lab, i):
                i += len(lab)
                node = ch[0]
                continue
            if key[i : i + len(lab)] > lab:  # the whole subtree sorts before key
                cand = (i, node, 0)
            break
        c = key[i]
        j = lab.find(c)
        if j < 0:
            j = bisect_left(lab, c)
            if j:
                cand = (i, node, j - 1)
            break
        if j:
            cand = (i, node, j - 1)
        i += 1
        node = ch[j]
    else:
        if node.is_key and not strict:
            return bytes(key), node.value
    if cand is None:
        return None
    i, node, j = cand
    if j < 0:
        return key[:i], node.value
    ch = node.children
    assert ch is not None
    parts = [key[:i], node.label if len(ch) == 1 else node.label[j : j + 1]]
    node = ch[j]
    ch = node.children
    while ch is not None:  # down the right edge
        parts.append(node.label if len(ch) == 1 else node.label[-1:])
        node = ch[-1]
        ch = node.children
    return b"".join(parts), node.value


def ceiling(rax: Rax, key: bytes, strict: bool = False) -> tuple[bytes, object] | None:
    """The (key, value) with the smallest key >= ``key`` (> with ``strict``), or None
    (floor's mirror: the deepest place where a larger key branches off)."""
    node = rax._root
    # (i, node, j): the first key of child j's subtree is the answer.
    cand: tuple[int, _Node, int] | None = None
    i = 0
    n = len(key)
    while i < n:
        ch = node.children
        if ch is None:  # a key that is a proper prefix of ``key``: smaller
            break
        lab = node.label
        if len(ch) == 1:
            if key.startswith(lab, i):
                i += len(lab)
                node = ch[0]
                continue
            if key[i : i + len(lab)] < lab:  # the whole subtree sorts after key
                cand = (i, node, 0)
            break
        c = key[i]
        j = lab.find(c)
        if j < 0:
            j = bisect_left(lab, c)
            if j < len(ch):
                cand = (i, node, j)
            break
        if j + 1 < len(ch):
            cand = (i, node, j + 1)
        i += 1
        node = ch[j]
    else:
        if node.is_key and not strict:
            return bytes(key), node.value
        if node.children is not None:  # every descendant is larger
            cand = (i, node, 0)
    if cand is None:
        return None
    i, node, j = cand
    ch = node.children
    assert ch is not None
    parts = [key[:i], node.label if len(ch) == 1 else node.label[j : j + 1]]
    node = ch[j]
    while not node.is_key:  # down the left edge to the first key
        ch = node.children
        assert ch is not None
        parts.append(node.label if len(ch) == 1 else node.label[:1])
        node = ch[0]
    return b"".join(parts), node.value


def append_max(rax: Rax, key: bytes, value: object = None) -> bool:
    """Insert ``key`` if it sorts after every key of the tree; True if inserted.
    False (the tree unchanged) when some key is >= ``key``: callers fall back to
    ``insert``.  Only the right edge is walked (no byte search in branching nodes):
    the fast path for keys that grow, like the IDs a consumer group delivers."""
    if type(key) is not bytes:
        key = bytes(key)
    node = rax._root
    i = 0
    n = len(key)
    while i < n:
        ch = node.children
        if ch is None:  # a key that is a prefix of ``key`` (smaller), or the empty root
            node.label = key[i:]
            node.children = [_Node(b"", None, True, value)]
            rax._numnodes += 1
            rax._count += 1
            return True
        lab = node.label
        if len(ch) == 1:
            if key.startswith(lab, i):
                i += len(lab)
                node = ch[0]
                continue
            # Diverges inside the edge (or ends in it, which sorts before the subtree).
            if key[i : i + len(lab)] < lab:
                return False
            rax._split(node, key, i, value)
            rax._count += 1
            return True
        b = key[i]
        top = lab[-1]
        if b == top:
            i += 1
            node = ch[-1]
            continue
        if b < top:
            return False
        node.label = lab + key[i : i + 1]
        tail = rax._new_tail(key, i + 1, value)
        if len(ch) < _SMALL_BRANCH:
            node.children = [*ch, tail]
        else:
            ch.append(tail)
        rax._count += 1
        return True
    # ``key`` is spelled by an existing node: a key (equal) or a prefix of larger keys,
    # except in an empty tree asked for the empty key.
    if node.is_key or node.children is not None:
        return False
    node.is_key = True
    node.value = value
    rax._count += 1
    return True


def fill_sorted(rax: Rax, keys: list[bytes], values: list[object] | None = None,
                checked: bool = True) -> None:
    """Fill an empty tree with ``keys`` (strictly ascending ``bytes``; ``values`` of
    the same length, or all None), built directly in its canonical shape: no walk
    per key.  Raises ValueError (the tree unchanged) if the tree is not empty or the
    keys are not strictly ascending.

    With ``checked`` False the caller vouches for the keys' order and hands the lists
    over: they are neither checked nor copied, so it must not change them afterwards (a
    consumer group filling its four trees with one read's keys shares them this way)."""
    if rax._count:
        raise ValueError("fill_sorted needs an empty tree")
    if not keys:
        return
    if values is None:
        values = [None] * len(keys)
    if checked:
        if len(values) != len(keys) or any(map(ge, keys, islice(keys, 1, None))):
            raise ValueError("fill_sorted needs strictly ascending keys and one value each")
        # The nodes are built when first needed (Rax.__getattr__): copies, so the caller
        # may reuse its lists.
        keys = list(keys)
        values = list(values)
    rax._lazy = (keys, values)
    del rax._root, rax._numnodes
    rax._count = len(keys)


def build_sorted(keys: list[bytes], values: list[object], counter: list[int]) -> _Node:
    """The root of the canonical tree holding ``keys`` (strictly ascending, at least one)
    with ``values``; ``counter[0]`` counts the nodes made."""
    return _build(keys, values, 0, len(keys), 0, counter)


def _build(
    keys: list[bytes], values: list[object], lo: int, hi: int, d: int, counter: list[int]
) -> _Node:
    """The canonical node spelling ``keys[lo][:d]`` for ``keys[lo:hi]`` (ascending, all
    sharing those d bytes); ``counter[0]`` counts the nodes made (Rax.fill_sorted)."""
    counter[0] += 1
    first = keys[lo]
    if len(first) == d:  # the shortest key is the prefix itself: this node is a key
        node = _Node(b"", None, True, values[lo])
        lo += 1
        if lo == hi:
            return node
        first = keys[lo]
    else:
        node = _Node(b"", None, False, None)
    last = keys[hi - 1]
    # The keys' common prefix beyond d is the common prefix of the first and the last.
    m = min(len(first), len(last))
    x = int.from_bytes(first[d:m], "big") ^ int.from_bytes(last[d:m], "big")
    p = m - (x.bit_length() + 7) // 8
    if p > d:  # one edge down to where a key ends or the keys branch
        node.label = first[d:p]
        node.children = [_build(keys, values, lo, hi, p, counter)]
        return node
    label = bytearray()
    children = []
    j = lo
    while j < hi:
        b = keys[j][d]
        k = j + 1
        while k < hi and keys[k][d] == b:
            k += 1
        label.append(b)
        if k == j + 1:  # one key: a leaf, under an edge for the rest of it (no recursion)
            key = keys[j]
            leaf = _Node(b"", None, True, values[j])
            if len(key) == d + 1:
                children.append(leaf)
                counter[0] += 1
            else:
                children.append(_Node(key[d + 1 :], [leaf], False, None))
                counter[0] += 2
        else:
            children.append(_build(keys, values, j, k, d + 1, counter))
        j = k
    node.label = bytes(label)
    node.children = children
    return node
