"""Command families, one module per family; importing this package registers every command in
the dispatcher's table (server.dispatch). A family may import the subsystems and the core,
never a connection (a command sees its Client) and never another family: shared helpers
(stream_args, group_common, strings, keys, help) are what families have in common."""

from server.commands import (  # noqa: F401
    acl_cmds,
    client_cmds,
    conn,
    dump_cmds,
    function_cmds,
    group_cmds,
    keys,
    latency_cmds,
    memory_cmds,
    persistence_cmds,
    pubsub_cmds,
    replication_cmds,
    script_cmds,
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
