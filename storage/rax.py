"""A compressed radix tree (an ordered map over bytes keys), shaped like Redis's rax.c.

Node model
----------
Every node has ``label``, ``children``, ``is_key`` and ``value``:

* ``children is None``: a leaf; ``label`` is ``b""``.
* ``len(children) == 1``: a *compressed* node; ``label`` is the whole edge (one or more
  bytes) leading to the single child.  A one-byte edge is the same thing as a one-way
  branch, so there is no separate "compressed" flag.
* ``len(children) >= 2``: a *branching* node; ``label`` holds one byte per child, sorted,
  and ``children[j]`` is reached by the byte ``label[j]``.

``is_key`` says that the bytes spelled on the way from the root to this node form a key;
its value (possibly None) is ``value``.

Canonical shape (kept after every insert and remove, so a tree never depends on its
history; this is what rax.c's re-compression on delete achieves):

1. the only non-key leaf is the root of an empty tree;
2. the child of a compressed node is a key or a branching node, i.e. a chain of non-key
   single-child nodes is always one compressed node.

Non-key compressed nodes may hang below branching nodes (or be the root), as in rax.

The cursor (RaxIterator, seek/next/prev) lives in storage/rax_iter.py and is re-exported
here.  The node class, the ordered lookups (floor, ceiling) and the ascending-key fast
paths (append_max, fill_sorted) live in storage/rax_ops.py and are bound as methods.

Walks do one loop iteration per node on the path (``bytes.startswith`` with an offset
matches a whole edge at once), never one per byte of a compressed edge.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Iterator

from storage import rax_ops as _ops
from storage.rax_iter import RaxIterator
from storage.rax_ops import _SMALL_BRANCH, _leaf, _Node

__all__ = ["Rax", "RaxIterator"]


class Rax:
    """Ordered map from bytes keys to arbitrary values (None is a valid value)."""

    # A tree filled by fill_sorted keeps its (keys, values) in _lazy and leaves _root and
    # _numnodes unset until something reads them: __getattr__ (called only for an unset
    # attribute, so the normal path pays nothing) builds the nodes then. A consumer group
    # that keeps up fills its pending trees with each read and clears them with the
    # acknowledgement: most such trees are never walked, so never built.
    __slots__ = ("_root", "_count", "_numnodes", "_lazy")

    def __init__(self) -> None:
        self._root = _Node(b"", None, False, None)
        self._count = 0
        self._numnodes = 1
        self._lazy: tuple[list[bytes], list[object]] | None = None

    def __getattr__(self, name: str) -> object:
        if (name == "_root" or name == "_numnodes") and self._lazy is not None:
            keys, values = self._lazy
            self._lazy = None
            counter = [0]
            self._root = _ops.build_sorted(keys, values, counter)
            self._numnodes = counter[0]
            return object.__getattribute__(self, name)
        raise AttributeError(name)

    # -- queries --------------------------------------------------------------------

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: bytes) -> bool:
        node = self._lookup(key)
        return node is not None and node.is_key

    def __iter__(self) -> Iterator[bytes]:
        return self.keys()

    def __repr__(self) -> str:
        return f"<Rax keys={self._count} nodes={self._numnodes}>"

    def lazy_items(self) -> tuple[list[bytes], list[object]] | None:
        """(keys, values) of a tree filled by fill_sorted and not walked since (its nodes not
        built yet), else None. Read-only: the tree keeps the lists."""
        return self._lazy

    def find(self, key: bytes, default: object = None) -> object:
        """Value stored under ``key``, or ``default`` when the key is absent."""
        node = self._lookup(key)
        if node is not None and node.is_key:
            return node.value
        return default

    def _lookup(self, key: bytes) -> _Node | None:
        """The node whose path spells ``key`` exactly (key or not), or None."""
        node = self._root
        i = 0
        n = len(key)
        while i < n:
            ch = node.children
            if ch is None:
                return None
            lab = node.label
            if len(ch) == 1:
                if not key.startswith(lab, i):
                    return None
                i += len(lab)
                node = ch[0]
            else:
                j = lab.find(key[i])
                if j < 0:
                    return None
                i += 1
                node = ch[j]
        return node

    def first(self) -> tuple[bytes, object] | None:
        """Smallest (key, value), or None if empty."""
        if not self._count:
            return None
        if self._lazy is not None:
            return self._lazy[0][0], self._lazy[1][0]
        node = self._root
        parts: list[bytes] = []
        while not node.is_key:
            ch = node.children
            assert ch is not None
            parts.append(node.label if len(ch) == 1 else node.label[:1])
            node = ch[0]
        return b"".join(parts), node.value

    def last(self) -> tuple[bytes, object] | None:
        """Largest (key, value), or None if empty."""
        if not self._count:
            return None
        if self._lazy is not None:
            return self._lazy[0][-1], self._lazy[1][-1]
        node = self._root
        parts: list[bytes] = []
        ch = node.children
        while ch is not None:
            parts.append(node.label if len(ch) == 1 else node.label[-1:])
            node = ch[-1]
            ch = node.children
        return b"".join(parts), node.value

    # Ordered lookups, in storage/rax_ops.py: bound as methods (not wrapped) so a
    # stream's read path pays no extra call.
    floor = _ops.floor
    ceiling = _ops.ceiling

    def iterator(self) -> RaxIterator:
        return RaxIterator(self)

    def items(self, reverse: bool = False) -> Iterator[tuple[bytes, object]]:
        """All (key, value) pairs, ascending (descending with ``reverse``).

        Do not modify the tree while consuming this generator.
        """
        if self._lazy is not None:  # not built yet: the sorted lists are the answer
            keys, values = self._lazy
            if reverse:
                yield from zip(reversed(keys), reversed(values), strict=True)
            else:
                yield from zip(keys, values, strict=True)
            return
        if reverse:
            yield from self._items_desc()
            return
        stack: list[tuple[_Node, bytes]] = [(self._root, b"")]
        pop = stack.pop
        push = stack.append
        while stack:
            node, prefix = pop()
            if node.is_key:
                yield prefix, node.value
            ch = node.children
            if ch is not None:
                lab = node.label
                if len(ch) == 1:
                    push((ch[0], prefix + lab))
                else:
                    for j in range(len(ch) - 1, -1, -1):
                        push((ch[j], prefix + lab[j : j + 1]))

    def _items_desc(self) -> Iterator[tuple[bytes, object]]:
        # A node's own key sorts before its descendants, so it is emitted after them:
        # its entry is pushed (flagged) below its children.
        stack: list[tuple[_Node, bytes, bool]] = [(self._root, b"", False)]
        pop = stack.pop
        push = stack.append
        while stack:
            node, prefix, emit = pop()
            if emit:
                yield prefix, node.value
                continue
            if node.is_key:
                push((node, prefix, True))
            ch = node.children
            if ch is not None:
                lab = node.label
                if len(ch) == 1:
                    push((ch[0], prefix + lab, False))
                else:
                    for j in range(len(ch)):
                        push((ch[j], prefix + lab[j : j + 1], False))

    def keys(self) -> Iterator[bytes]:
        for k, _ in self.items():
            yield k

    def values(self) -> Iterator[object]:
        for _, v in self.items():
            yield v

    def node_count(self) -> int:
        """Number of nodes, including the root (an empty tree has 1, as in rax)."""
        return self._numnodes

    def memory_usage(self) -> int:
        """Estimate (sys.getsizeof based) of the bytes used by the tree's own nodes:
        node objects, children lists and labels; stored values are not counted."""
        total = sys.getsizeof(self)
        stack = [self._root]
        while stack:
            node = stack.pop()
            total += sys.getsizeof(node)
            if len(node.label) > 1:  # CPython shares the empty and one-byte bytes objects
                total += sys.getsizeof(node.label)
            ch = node.children
            if ch is not None:
                total += sys.getsizeof(ch)
                stack.extend(ch)
        return total

    # -- insertion ------------------------------------------------------------------

    def insert(self, key: bytes, value: object = None) -> bool:
        """Insert or overwrite; True if the key was new."""
        return self._insert(key, value, True)

    def try_insert(self, key: bytes, value: object = None) -> bool:
        """Insert only if absent; True if inserted (an existing value is kept)."""
        return self._insert(key, value, False)

    # Fast paths for ascending keys (consumer group deliveries), in storage/rax_ops.py.
    append_max = _ops.append_max
    fill_sorted = _ops.fill_sorted

    def _insert(self, key: bytes, value: object, overwrite: bool) -> bool:
        if type(key) is not bytes:
            key = bytes(key)  # labels are slices of the key: they must be immutable
        node = self._root
        i = 0
        n = len(key)
        while i < n:
            ch = node.children
            if ch is None:
                # Leaf (a key, or the empty root): hang the rest of the key below it.
                node.label = key[i:]
                node.children = [_leaf(value)]
                self._numnodes += 1
                self._count += 1
                return True
            lab = node.label
            if len(ch) == 1:
                if key.startswith(lab, i):
                    i += len(lab)
                    node = ch[0]
                    continue
                self._split(node, key, i, value)
                self._count += 1
                return True
            b = key[i]
            j = lab.find(b)
            if j >= 0:
                i += 1
                node = ch[j]
                continue
            j = bisect_left(lab, b)
            node.label = lab[:j] + key[i : i + 1] + lab[j:]
            if len(ch) < _SMALL_BRANCH:
                # Rebuilt for an exact-size list: no over-allocation in small nodes.
                node.children = ch[:j] + [self._new_tail(key, i + 1, value)] + ch[j:]
            else:
                ch.insert(j, self._new_tail(key, i + 1, value))  # no refcount churn
            self._count += 1
            return True
        if node.is_key:
            if overwrite:
                node.value = value
            return False
        node.is_key = True
        node.value = value
        self._count += 1
        return True

    def _new_tail(self, key: bytes, start: int, value: object) -> _Node:
        """A new subtree spelling key[start:] and ending in a key leaf."""
        leaf = _leaf(value)
        if start == len(key):
            self._numnodes += 1
            return leaf
        self._numnodes += 2
        return _Node(key[start:], [leaf], False, None)

    def _split(self, node: _Node, key: bytes, i: int, value: object) -> None:
        """Insert key (which diverges from, or ends inside, node's compressed edge at
        offset i) by splitting the edge."""
        lab = node.label
        assert node.children is not None
        child = node.children[0]
        edge_len = len(lab)
        m = min(edge_len, len(key) - i)
        p = 0
        while p < m and lab[p] == key[i + p]:
            p += 1
        if i + p == len(key):
            # The key ends inside the edge (p > 0 since i < len(key)): a new key node
            # cuts the edge in two.
            node.label = lab[:p]
            node.children = [_Node(lab[p:], [child], True, value)]
            self._numnodes += 1
            return
        # The key diverges at edge offset p: a branching node takes the two bytes.
        if p + 1 == edge_len:
            old_sub = child
        else:
            old_sub = _Node(lab[p + 1 :], [child], False, None)
            self._numnodes += 1
        new_sub = self._new_tail(key, i + p + 1, value)
        if lab[p] < key[i + p]:
            blabel = lab[p : p + 1] + key[i + p : i + p + 1]
            kids = [old_sub, new_sub]
        else:
            blabel = key[i + p : i + p + 1] + lab[p : p + 1]
            kids = [new_sub, old_sub]
        if p == 0:
            node.label = blabel
            node.children = kids
        else:
            node.label = lab[:p]
            node.children = [_Node(blabel, kids, False, None)]
            self._numnodes += 1

    # -- removal --------------------------------------------------------------------

    def remove(self, key: bytes) -> tuple[bool, object]:
        """Delete ``key``; returns (True, old value) or (False, None) if it was absent."""
        node = self._root
        path: list[_Node] = []
        pidx: list[int] = []
        i = 0
        n = len(key)
        while i < n:
            ch = node.children
            if ch is None:
                return False, None
            lab = node.label
            if len(ch) == 1:
                if not key.startswith(lab, i):
                    return False, None
                i += len(lab)
                j = 0
            else:
                j = lab.find(key[i])
                if j < 0:
                    return False, None
                i += 1
            path.append(node)
            pidx.append(j)
            node = ch[j]
        if not node.is_key:
            return False, None
        old = node.value
        node.is_key = False
        node.value = None
        self._count -= 1
        self._recompress(node, path, pidx)
        return True, old

    def _recompress(self, node: _Node, path: list[_Node], pidx: list[int]) -> None:
        """Restore the canonical shape after ``node`` stopped being a key."""
        ch = node.children
        if ch is not None:
            if len(ch) == 1 and path and len(path[-1].children) == 1:  # type: ignore[arg-type]
                # Now a non-key compressed node below a compressed node: merge the edges.
                parent = path[-1]
                parent.label += node.label
                parent.children = ch
                self._numnodes -= 1
            return
        # A non-key leaf: unlink it, and its parents while they become non-key leaves.
        while path and not node.is_key and node.children is None:
            parent = path.pop()
            j = pidx.pop()
            self._numnodes -= 1
            pch = parent.children
            assert pch is not None
            if len(pch) == 1:
                parent.children = None
                parent.label = b""
                node = parent
                continue
            if len(pch) <= _SMALL_BRANCH:
                pch = pch[:j] + pch[j + 1 :]
                parent.children = pch
            else:
                del pch[j]
            lab = parent.label
            parent.label = lab[:j] + lab[j + 1 :]
            if len(pch) == 1:
                self._fix_single(parent, path)
            return

    def _fix_single(self, node: _Node, path: list[_Node]) -> None:
        """``node`` went from branching to a single child: merge it with its child and/or
        its parent where chains of non-key single-child nodes appeared."""
        assert node.children is not None
        child = node.children[0]
        cch = child.children
        if not child.is_key and cch is not None and len(cch) == 1:
            node.label += child.label
            node.children = cch
            self._numnodes -= 1
        if not node.is_key and path and len(path[-1].children) == 1:  # type: ignore[arg-type]
            parent = path[-1]
            parent.label += node.label
            parent.children = node.children
            self._numnodes -= 1

    def clear(self) -> None:
        self._root = _Node(b"", None, False, None)
        self._count = 0
        self._numnodes = 1
        self._lazy = None

    # -- debugging ------------------------------------------------------------------

    def verify(self) -> None:
        """Check the structural invariants and counters; raise AssertionError if broken."""
        keys = 0
        nodes = 0
        stack: list[tuple[_Node, bool]] = [(self._root, False)]  # (node, parent compressed)
        while stack:
            node, under_compressed = stack.pop()
            nodes += 1
            keys += node.is_key
            ch = node.children
            if not node.is_key and node.value is not None:
                raise AssertionError("non-key node holds a value")
            if ch is None:
                if node.label:
                    raise AssertionError("leaf with a label")
                if not node.is_key and node is not self._root:
                    raise AssertionError("non-key leaf below the root")
            else:
                lab = node.label
                if not ch or not lab:
                    raise AssertionError("empty children list or label")
                if len(ch) >= 2 and (len(lab) != len(ch) or list(lab) != sorted(set(lab))):
                    raise AssertionError("branch label not sorted/unique/matching children")
            if under_compressed and not node.is_key and (ch is None or len(ch) == 1):
                raise AssertionError("uncompressed chain of non-key single-child nodes")
            if ch is not None:
                stack.extend((c, len(ch) == 1) for c in ch)
        if keys != self._count or nodes != self._numnodes:
            raise AssertionError(
                f"counters off: keys {keys}/{self._count} nodes {nodes}/{self._numnodes}"
            )
