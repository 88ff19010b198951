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

Cold files are part of the durable state. A snapshot a restart loads (dump.rdb, the AOF's
RDB base) refers to a cold node by its place in a segment, and loading it makes the node a
cold node again without reading it (``ColdTier.adopt``): a restart costs the hot data and the
index, not the backlog. Segments are append-only, and one is deleted only when no node in
memory and no such snapshot refers to it (pins.py keeps, per kind of file, the segments the
newest one refers to). A copy for elsewhere (a replica's full sync, DUMP) carries the bytes,
read from the file without thawing the node (node_bytes).
"""

from storage.cold.node import ColdDataError, ColdNode, ColdRef, freeze, node_bytes, thaw
from storage.cold.pins import PinFile
from storage.cold.segments import SegmentStore
from storage.cold.tier import ColdTier

__all__ = ["ColdDataError", "ColdNode", "ColdRef", "ColdTier", "PinFile", "SegmentStore",
           "freeze", "node_bytes", "thaw"]
