"""The cold tier: stream nodes on disk, so a backlog can be larger than memory.

How it works. With ``stream-hot-memory`` set, the server keeps at most that many bytes of
sealed stream nodes (nodes XADD no longer appends to) in memory. A sweep of the keyspace
registers sealed nodes as they appear (tier.py); when they add up to more than the limit,
the oldest go to disk: each node's listpack is appended to a segment file in the cold
directory (segments.py) and the node object stays in its stream's radix tree, under the
same key, with its bytes dropped and its class turned into ``ColdNode`` (node.py). Reading
the node's bytes, which is what every stream operation does, reads them back, checks them
and makes the node an ordinary hot one again, at the young end of the registry; the next
eviction moves the oldest out again. Consumer groups, PELs and the last node of every
stream stay in memory.

Cold files are a place to keep memory free, not a copy of record: the AOF and snapshots hold
every entry (a snapshot copies a cold node's bytes from its file, node_bytes, leaving it
cold), and the cold directory is emptied when the server starts.
"""

from storage.cold.node import ColdDataError, ColdNode, ColdRef, freeze, node_bytes, thaw
from storage.cold.segments import SegmentStore
from storage.cold.tier import ColdTier

__all__ = ["ColdDataError", "ColdNode", "ColdRef", "ColdTier", "SegmentStore", "freeze",
           "node_bytes", "thaw"]
