"""Command families; importing this package registers every command in server.dispatch."""

from server.commands import (  # noqa: F401
    acl_cmds,
    client_cmds,
    conn,
    dump_cmds,
    group_cmds,
    keys,
    latency_cmds,
    memory_cmds,
    persistence_cmds,
    pubsub_cmds,
    server_admin,
    stream_cmds,
    string_counters,
    string_edit,
    string_float,
    string_multi,
    string_set,
    strings,
    tracking_cmds,
    transaction,
)
