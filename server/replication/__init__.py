"""Replication as Redis does it (replication.c), so that Redis, Valkey and Sentinel accept
xstreamd as a primary and as a replica.

How it works:

* The replication stream is the RESP text of every write's effect, as the one propagation
  path hands it over (Server.propagate -> Replication.feed), with a SELECT before a command
  for another database than the last one. Its bytes are counted from the start of the
  replication ID (`master_repl_offset`); the last `repl-backlog-size` of them stay in the
  backlog (backlog.py).
* A replica asks with `PSYNC replid offset`. If the ID is ours (or the one we had before a
  promotion, up to where it ended) and the offset is still in the backlog, it gets
  `+CONTINUE` and the missing bytes (a partial resync). Otherwise `+FULLRESYNC replid offset`,
  then an RDB of the dataset made by a forked child at that offset (to a file and then sent,
  or written straight to the replica's socket: `repl-diskless-sync`), then everything the
  stream carried meanwhile (primary.py, full_sync.py).
* A replica (replica.py) connects to its primary, authenticates, says its port and
  capabilities, asks PSYNC with the replication ID and offset it has, loads the RDB it gets or
  continues, then applies the stream as commands run by a master client, acknowledging its
  offset every second (`REPLCONF ACK`). It passes the bytes it applied on, unchanged, to its
  own backlog and replicas, so that the replicas of a replica keep the same ID and offsets.
* A promotion (REPLICAOF NO ONE) keeps the old ID as `master_replid2` up to the offset where
  it ended, so that the other replicas of the old primary resync partially with the new one.

state.py holds the role, the IDs, offsets and the backlog; the command family is
server/commands/replication_cmds.py.
"""
