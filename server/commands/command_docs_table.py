"""The documentation table behind COMMAND DOCS and the key specs of COMMAND INFO.

One entry per command or subcommand the server registers (full names, "xgroup|create"),
written in the syntax of server/commands/command_docs.py. Arguments, names, complexities and
key specs follow Redis 8.4's command table (redis.io command pages); stream commands follow
Redis 8.10 (XADD/XTRIM KEEPREF|DELREF|ACKED, XDELEX, XACKDEL, XREADGROUP CLAIM, XADD IDMP,
XCFGSET, XIDMPRECORD, XNACK, XREAD/XREADGROUP MAXCOUNT and MAXSIZE). SET is
described as this server implements it (without 8.4's IFEQ/IFNE/IFDEQ/IFDNE).
"""

from __future__ import annotations

from server.commands.command_docs import Doc

_O1 = "O(1)"
_SUBCOMMANDS = "Depends on subcommand."
_NONDET = "nondeterministic_output"
_MULTI_SUM = "request_policy:multi_shard response_policy:agg_sum"
_ALL_NODES_OK = "request_policy:all_nodes response_policy:all_succeeded"
_ALLOCATOR_COST = "Depends on how much memory is allocated, could be slow"
_ALL_SHARDS_OK = "request_policy:all_shards response_policy:all_succeeded"
_ORDER = "nondeterministic_output_order"
_LATENCY_TIPS = f"{_NONDET} request_policy:all_nodes response_policy:special"
_EXPIRE_HISTORY = (("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),)
_EXPIRE_CONDITION = "[condition{NX | XX | GT | LT}@7.0.0]"
_FLUSH_HISTORY = (("4.0.0", "Added the `ASYNC` flushing mode modifier."),
                  ("6.2.0", "Added the `SYNC` flushing mode modifier."))
_SCRIPT_COST = "Depends on the script that is executed."
_EVAL_NOTES = "We cannot tell how the keys will be used so we assume the worst, "
_EVAL_KEYS = (f"RW access update; index 2; keynum 0 1 1; {_EVAL_NOTES}RW and UPDATE",)
_EVALSHA_KEYS = ("RW access update; index 2; keynum 0 1 1",)
_EVAL_RO_KEYS = (f"RO access; index 2; keynum 0 1 1; {_EVAL_NOTES}RO and ACCESS",)
_EVALSHA_RO_KEYS = ("RO access; index 2; keynum 0 1 1",)
_SUBSTRING_COST = (
    "O(N) where N is the length of the returned string. The complexity is ultimately "
    "determined by the returned length, but because creating a substring from an existing "
    "string is very cheap, it can be considered O(1) for small strings.")
_TTL_HISTORY = (("2.8.0", "Added the -2 reply."),)
_REFS = "condition{KEEPREF | DELREF | ACKED}"
_TRIM = ("strategy{MAXLEN | MINID@6.2.0} [operator{equal== | approximately=~}] threshold "
         "[LIMIT count:integer@6.2.0]")

# Key specs
_RO = "RO; index 1; range 0 1 0"
_RO_ACCESS = "RO access; index 1; range 0 1 0"
_RW_UPDATE = "RW update; index 1; range 0 1 0"
_RW_DELETE = "RW delete; index 1; range 0 1 0"
_RW_ACCESS_UPDATE = "RW access update; index 1; range 0 1 0"
_OW_UPDATE = "OW update; index 1; range 0 1 0"
_GROUP_KEY = "; index 2; range 0 1 0"  # XGROUP/XINFO/OBJECT subcommands: the key is argv[2]
# SSUBSCRIBE/SUNSUBSCRIBE: the shard channels are not keys, but are routed (hashed to a slot)
# as keys; their arguments stay strings, as in Redis.
_SHARD_CHANNELS = "not_key; index 1; range -1 1 0"


def _keys(*specs: str) -> tuple[str, ...]:
    return specs


DOCS: dict[str, Doc] = {
    # connection
    "auth": Doc(
        "O(N) where N is the number of passwords defined for the user",
        "[username@6.0.0] password",
        history=(("6.0.0", "Added ACL style (username and password)."),)),
    "client": Doc(_SUBCOMMANDS),
    "client|caching": Doc(_O1, "mode{YES | NO}"),
    "client|getname": Doc(_O1),
    "client|getredir": Doc(_O1),
    "client|help": Doc(_O1),
    "client|id": Doc(_O1),
    "client|info": Doc(_O1, tips=_NONDET),
    "client|kill": Doc(
        "O(N) where N is the number of client connections",
        "filter{old-format/ip:port!2.8.12 | new-format{[ID client-id:integer@2.8.12] | "
        "[TYPE client-type{NORMAL | MASTER@3.2.0 | SLAVE | REPLICA@5.0.0 | PUBSUB}@2.8.12] | "
        "[USER username] | [ADDR addr/ip:port] | [LADDR laddr/ip:port@6.2.0] | "
        "[SKIPME skipme{YES | NO}] | [MAXAGE maxage:integer@8.0.0]}...}",
        history=(("2.8.12", "Added new filter format."), ("2.8.12", "`ID` option."),
                 ("3.2.0", "Added `master` type in for `TYPE` option."),
                 ("5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported "
                           "for backward compatibility."),
                 ("6.2.0", "`LADDR` option."), ("8.0.0", "`MAXAGE` option."))),
    "client|list": Doc(
        "O(N) where N is the number of client connections",
        "[TYPE client-type{NORMAL | MASTER | REPLICA | PUBSUB}@5.0.0] "
        "[ID client-id:integer...@6.2.0]",
        history=(("2.8.12", "Added unique client `id` field."),
                 ("5.0.0", "Added optional `TYPE` filter."), ("6.0.0", "Added `user` field."),
                 ("6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the "
                           "optional `ID` filter."),
                 ("7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."),
                 ("7.0.3", "Added `ssub` field.")),
        tips=_NONDET),
    "client|no-evict": Doc(_O1, "enabled{ON | OFF}"),
    "client|no-touch": Doc(_O1, "enabled{ON | OFF}"),
    "client|pause": Doc(
        _O1, "timeout:integer [mode{WRITE | ALL}@6.2.0]",
        history=(("6.2.0", "`CLIENT PAUSE WRITE` mode added along with the `mode` option."),)),
    "client|reply": Doc(_O1, "action{ON | OFF | SKIP}"),
    "client|setinfo": Doc(_O1, "attr{LIB-NAME libname | LIB-VER libver}", tips=_ALL_NODES_OK),
    "client|setname": Doc(_O1, "connection-name", tips=_ALL_NODES_OK),
    "client|tracking": Doc(
        "O(1). Some options may introduce additional complexity.",
        "status{ON | OFF} [REDIRECT client-id:integer] [PREFIX prefix]... [BCAST] [OPTIN] "
        "[OPTOUT] [NOLOOP]"),
    "client|trackinginfo": Doc(_O1),
    "client|unblock": Doc(
        "O(log N) where N is the number of client connections",
        "client-id:integer [unblock-type{TIMEOUT | ERROR}]"),
    "client|unpause": Doc("O(N) Where N is the number of paused clients"),
    "echo": Doc(_O1, "message"),
    "hello": Doc(
        _O1, "[arguments(protover:integer [AUTH auth(username password)] "
             "[SETNAME clientname])]",
        history=(("6.2.0", "`protover` made optional; when called without arguments the "
                           "command reports the current connection's context."),)),
    "ping": Doc(_O1, "[message]", tips=_ALL_SHARDS_OK),
    "quit": Doc(_O1, doc_flags="deprecated", deprecated_since="7.2.0",
                replaced_by="just closing the connection"),
    "reset": Doc(_O1),
    "select": Doc(_O1, "index:integer"),
    # generic (keyspace)
    "del": Doc(
        "O(N) where N is the number of keys that will be removed. When a key to remove holds "
        "a value other than a string, the individual complexity for this key is O(M) where M "
        "is the number of elements in the list, set, sorted set or hash. Removing a single key "
        "that holds a string value is O(1).",
        "key#0...", keys=_keys("RM delete; index 1; range -1 1 0"), tips=_MULTI_SUM),
    "copy": Doc(
        "O(N) worst case for collections, where N is the number of nested items. O(1) for "
        "string values.", "source#0 destination#1 [DB destination-db:integer] [REPLACE]",
        keys=_keys("RO access; index 1; range 0 1 0", "OW update; index 2; range 0 1 0")),
    "dump": Doc(
        "O(1) to access the key and additional O(N*M) to serialize it, where N is the number "
        "of Redis objects composing the value and M their average size. For small string "
        "values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
        "key#0", keys=_keys(_RO_ACCESS), tips=_NONDET),
    "exists": Doc(
        "O(N) where N is the number of keys to check.", "key#0...",
        history=(("3.0.3", "Accepts multiple `key` arguments."),),
        keys=_keys("RO; index 1; range -1 1 0"), tips=_MULTI_SUM),
    "expire": Doc(_O1, f"key#0 seconds:integer {_EXPIRE_CONDITION}",
                  history=_EXPIRE_HISTORY, keys=_keys(_RW_UPDATE)),
    "expireat": Doc(_O1, f"key#0 unix-time-seconds:unix-time {_EXPIRE_CONDITION}",
                    history=_EXPIRE_HISTORY, keys=_keys(_RW_UPDATE)),
    "expiretime": Doc(_O1, "key#0", keys=_keys(_RO_ACCESS)),
    "keys": Doc(
        "O(N) with N being the number of keys in the database, under the assumption that the "
        "key names in the database and the given pattern have limited length.",
        "pattern:pattern", tips=f"request_policy:all_shards {_ORDER}"),
    "move": Doc(_O1, "key#0 db:integer", keys=_keys("RW access update; index 1; range 0 1 0")),
    "object": Doc(_SUBCOMMANDS),
    "object|encoding": Doc(_O1, "key#0", keys=_keys("RO" + _GROUP_KEY), tips=_NONDET),
    "object|freq": Doc(_O1, "key#0", keys=_keys("RO" + _GROUP_KEY), tips=_NONDET),
    "object|help": Doc(_O1),
    "object|idletime": Doc(_O1, "key#0", keys=_keys("RO" + _GROUP_KEY), tips=_NONDET),
    "object|refcount": Doc(_O1, "key#0", keys=_keys("RO" + _GROUP_KEY), tips=_NONDET),
    "persist": Doc(_O1, "key#0", keys=_keys(_RW_UPDATE)),
    "pexpire": Doc(_O1, f"key#0 milliseconds:integer {_EXPIRE_CONDITION}",
                   history=_EXPIRE_HISTORY, keys=_keys(_RW_UPDATE)),
    "pexpireat": Doc(_O1, f"key#0 unix-time-milliseconds:unix-time {_EXPIRE_CONDITION}",
                     history=_EXPIRE_HISTORY, keys=_keys(_RW_UPDATE)),
    "pexpiretime": Doc(_O1, "key#0", keys=_keys(_RO_ACCESS)),
    "pttl": Doc(_O1, "key#0", history=_TTL_HISTORY, keys=_keys(_RO_ACCESS), tips=_NONDET),
    "randomkey": Doc(
        _O1, tips=f"request_policy:all_shards response_policy:special {_NONDET}"),
    "rename": Doc(_O1, "key#0 newkey#1", keys=_keys(
        "RW access delete; index 1; range 0 1 0", "OW update; index 2; range 0 1 0")),
    "renamenx": Doc(
        _O1, "key#0 newkey#1",
        history=(("3.2.0", "The command no longer returns an error when source and "
                           "destination names are the same."),),
        keys=_keys("RW access delete; index 1; range 0 1 0",
                   "OW insert; index 2; range 0 1 0")),
    "restore": Doc(
        "O(1) to create the new key and additional O(N*M) to reconstruct the serialized "
        "value, where N is the number of Redis objects composing the value and M their "
        "average size. For small string values the time complexity is thus O(1)+O(1*M) where "
        "M is small, so simply O(1). However for sorted set values the complexity is "
        "O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        "key#0 ttl:integer serialized-value:string [REPLACE@3.0.0] [ABSTTL@5.0.0] "
        "[IDLETIME seconds:integer@5.0.0] [FREQ frequency:integer@5.0.0]",
        history=(("3.0.0", "Added the `REPLACE` modifier."),
                 ("5.0.0", "Added the `ABSTTL` modifier."),
                 ("5.0.0", "Added the `IDLETIME` and `FREQ` options.")),
        keys=_keys("OW update; index 1; range 0 1 0")),
    "scan": Doc(
        "O(1) for every call. O(N) for a complete iteration, including enough command calls "
        "for the cursor to return back to 0. N is the number of elements inside the "
        "collection.",
        "cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [TYPE type@6.0.0]",
        history=(("6.0.0", "Added the `TYPE` subcommand."),),
        tips=f"{_NONDET} request_policy:special response_policy:special"),
    "touch": Doc("O(N) where N is the number of keys that will be touched.", "key#0...",
                 keys=_keys("RO; index 1; range -1 1 0"), tips=_MULTI_SUM),
    "ttl": Doc(_O1, "key#0", history=_TTL_HISTORY, keys=_keys(_RO_ACCESS), tips=_NONDET),
    "type": Doc(_O1, "key#0", keys=_keys(_RO)),
    "unlink": Doc(
        "O(1) for each key removed regardless of its size. Then the command does O(N) work in "
        "a different thread in order to reclaim memory, where N is the number of allocations "
        "the deleted objects where composed of.",
        "key#0...", keys=_keys("RM delete; index 1; range -1 1 0"), tips=_MULTI_SUM),
    # pubsub
    "psubscribe": Doc("O(N) where N is the number of patterns to subscribe to.",
                      "pattern:pattern..."),
    "publish": Doc(
        "O(N+M) where N is the number of clients subscribed to the receiving channel and M is "
        "the total number of subscribed patterns (by any client).", "channel message"),
    "pubsub": Doc(_SUBCOMMANDS),
    "pubsub|channels": Doc(
        "O(N) where N is the number of active channels, and assuming constant time pattern "
        "matching (relatively short channels and patterns)", "[pattern:pattern]"),
    "pubsub|help": Doc(_O1),
    "pubsub|numpat": Doc(_O1),
    "pubsub|numsub": Doc(
        "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
        "[channel...]"),
    "pubsub|shardchannels": Doc(
        "O(N) where N is the number of active shard channels, and assuming constant time "
        "pattern matching (relatively short shard channels).", "[pattern:pattern]"),
    "pubsub|shardnumsub": Doc(
        "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard "
        "channels", "[shardchannel...]"),
    "punsubscribe": Doc("O(N) where N is the number of patterns to unsubscribe.",
                        "[pattern:pattern...]"),
    "spublish": Doc(
        "O(N) where N is the number of clients subscribed to the receiving shard channel.",
        "shardchannel message", keys=_keys("not_key; index 1; range 0 1 0")),
    "ssubscribe": Doc("O(N) where N is the number of shard channels to subscribe to.",
                      "shardchannel...", keys=_keys(_SHARD_CHANNELS)),
    "subscribe": Doc("O(N) where N is the number of channels to subscribe to.", "channel..."),
    "sunsubscribe": Doc("O(N) where N is the number of shard channels to unsubscribe.",
                        "[shardchannel...]", keys=_keys(_SHARD_CHANNELS)),
    "unsubscribe": Doc("O(N) where N is the number of channels to unsubscribe.", "[channel...]"),
    # server
    "acl": Doc(_SUBCOMMANDS),
    "acl|cat": Doc("O(1) since the categories and commands are a fixed set.", "[category]"),
    "acl|getuser": Doc(
        "O(N). Where N is the number of password, command and pattern rules that the user has.",
        "username",
        history=(("6.2.0", "Added Pub/Sub channel patterns."),
                 ("7.0.0", "Added selectors and changed the format of key and channel patterns "
                           "from a list to their rule representation."))),
    "acl|help": Doc(_O1),
    "module": Doc(_SUBCOMMANDS),
    "module|help": Doc(_O1),
    "module|list": Doc("O(N) where N is the number of loaded modules.", tips=_ORDER),
    "acl|list": Doc("O(N). Where N is the number of configured users."),
    "acl|log": Doc("O(N) with N being the number of entries shown.",
                   "[operation{count:integer | RESET}]",
                   history=(("7.2.0", "Added entry ID, timestamp created, and timestamp last "
                                      "updated."),)),
    "eval": Doc(_SCRIPT_COST, "script numkeys:integer [key#0...] [arg...]", keys=_EVAL_KEYS),
    "evalsha": Doc(_SCRIPT_COST, "sha1 numkeys:integer [key#0...] [arg...]",
                   keys=_EVALSHA_KEYS),
    "eval_ro": Doc(_SCRIPT_COST, "script numkeys:integer [key#0...] [arg...]",
                   keys=_EVAL_RO_KEYS),
    "evalsha_ro": Doc(_SCRIPT_COST, "sha1 numkeys:integer [key#0...] [arg...]",
                      keys=_EVALSHA_RO_KEYS),
    "fcall": Doc("Depends on the function that is executed.",
                 "function numkeys:integer [key#0...] [arg...]", keys=_EVAL_KEYS),
    "fcall_ro": Doc("Depends on the function that is executed.",
                    "function numkeys:integer [key#0...] [arg...]", keys=_EVAL_RO_KEYS),
    "function": Doc(_SUBCOMMANDS),
    "function|load": Doc("O(1) (considering compilation time is redundant)",
                         "[REPLACE] function-code"),
    "function|delete": Doc(_O1, "library-name"),
    "function|flush": Doc("O(N) where N is the number of functions deleted",
                          "[flush-type{ASYNC | SYNC}]"),
    "function|list": Doc("O(N) where N is the number of functions",
                         "[LIBRARYNAME library-name-pattern] [WITHCODE]"),
    "function|stats": Doc(_O1),
    "function|kill": Doc(_O1),
    "function|dump": Doc("O(N) where N is the number of functions"),
    "function|restore": Doc("O(N) where N is the number of functions on the payload",
                            "serialized-value [policy{FLUSH | APPEND | REPLACE}]"),
    "function|help": Doc(_O1),
    "script": Doc(_SUBCOMMANDS),
    "script|load": Doc("O(N) with N being the length in bytes of the script body.", "script"),
    "script|exists": Doc("O(N) with N being the number of scripts to check (so checking a "
                         "single script is an O(1) operation).", "sha1..."),
    "script|flush": Doc("O(N) with N being the number of scripts in cache",
                        "[flush-type{ASYNC | SYNC}@6.2.0]",
                        history=(("6.2.0", "Added the `ASYNC` and `SYNC` flushing mode "
                                           "modifiers."),)),
    "script|kill": Doc(_O1),
    "script|help": Doc(_O1),
    "acl|users": Doc("O(N). Where N is the number of configured users."),
    "acl|setuser": Doc(
        "O(N). Where N is the number of rules provided.", "username [rule...]",
        history=(("6.2.0", "Added Pub/Sub channel patterns."),
                 ("7.0.0", "Added selectors and key based permissions."))),
    "acl|deluser": Doc("O(1) amortized time considering the typical user.", "username..."),
    "acl|genpass": Doc(_O1, "[bits:integer]"),
    "acl|dryrun": Doc("O(1).", "username command [arg...]"),
    "acl|load": Doc("O(N). Where N is the number of configured users."),
    "acl|save": Doc("O(N). Where N is the number of configured users."),
    "acl|whoami": Doc(_O1),
    "bgrewriteaof": Doc(_O1),
    "bgsave": Doc(_O1, "[SCHEDULE@3.2.2]",
                  history=(("3.2.2", "Added the `SCHEDULE` option."),)),
    "command": Doc("O(N) where N is the total number of Redis commands", tips=_ORDER),
    "command|count": Doc(_O1),
    "command|docs": Doc("O(N) where N is the number of commands to look up",
                        "[command-name...]", tips=_ORDER),
    "command|getkeys": Doc("O(N) where N is the number of arguments to the command",
                           "command [arg...]"),
    "command|getkeysandflags": Doc("O(N) where N is the number of arguments to the command",
                                   "command [arg...]"),
    "command|help": Doc(_O1),
    "command|info": Doc(
        "O(N) where N is the number of commands to look up", "[command-name...]",
        history=(("7.0.0", "Allowed to be called with no argument to get info on all "
                           "commands."),),
        tips=_ORDER),
    "command|list": Doc(
        "O(N) where N is the total number of Redis commands",
        "[FILTERBY filterby{MODULE module-name | ACLCAT category | PATTERN pattern:pattern}]",
        tips=_ORDER),
    "config": Doc(_SUBCOMMANDS),
    "config|get": Doc(
        "O(N) when N is the number of configuration parameters provided", "parameter...",
        history=(("7.0.0", "Added the ability to pass multiple pattern parameters in one "
                           "call"),)),
    "config|help": Doc(_O1),
    "config|resetstat": Doc(_O1, tips=_ALL_NODES_OK),
    "config|rewrite": Doc(_O1, tips=_ALL_NODES_OK),
    "config|set": Doc(
        "O(N) when N is the number of configuration parameters provided",
        "data(parameter value)...",
        history=(("7.0.0", "Added the ability to set multiple parameters in one call."),),
        tips=_ALL_NODES_OK),
    "dbsize": Doc(_O1, tips="request_policy:all_shards response_policy:agg_sum"),
    "debug": Doc(_SUBCOMMANDS, doc_flags="syscmd"),
    "flushall": Doc("O(N) where N is the total number of keys in all databases",
                    "[flush-type{ASYNC@4.0.0 | SYNC@6.2.0}]", history=_FLUSH_HISTORY,
                    tips=_ALL_SHARDS_OK),
    "flushdb": Doc("O(N) where N is the number of keys in the selected database",
                   "[flush-type{ASYNC@4.0.0 | SYNC@6.2.0}]", history=_FLUSH_HISTORY,
                   tips=_ALL_SHARDS_OK),
    "info": Doc(_O1, "[section...]",
                history=(("7.0.0", "Added support for taking multiple section arguments."),),
                tips=f"{_NONDET} request_policy:all_shards response_policy:special"),
    "lastsave": Doc(_O1, tips=_NONDET),
    "latency": Doc(_SUBCOMMANDS),
    "latency|doctor": Doc(_O1, tips=_LATENCY_TIPS),
    "latency|graph": Doc(_O1, "event", tips=_LATENCY_TIPS),
    "latency|help": Doc(_O1),
    "latency|histogram": Doc(
        "O(N) where N is the number of commands with latency information being retrieved.",
        "[command...]", tips=_LATENCY_TIPS),
    "latency|history": Doc(_O1, "event", tips=_LATENCY_TIPS),
    "latency|latest": Doc(_O1, tips=_LATENCY_TIPS),
    "latency|reset": Doc(_O1, "[event...]", tips=_ALL_NODES_OK),
    "memory": Doc(_SUBCOMMANDS),
    "memory|doctor": Doc(_O1, tips=f"{_NONDET} request_policy:all_shards response_policy:special"),
    "memory|help": Doc(_O1),
    "memory|malloc-stats": Doc(_ALLOCATOR_COST),
    "memory|purge": Doc(_ALLOCATOR_COST),
    "memory|stats": Doc(_O1, tips=f"{_NONDET} request_policy:all_shards response_policy:special"),
    "memory|usage": Doc("O(N) where N is the number of samples.", "key#0 [SAMPLES count:integer]",
                        keys=_keys("RO" + _GROUP_KEY)),
    "monitor": Doc(),
    "save": Doc("O(N) where N is the total number of keys in all databases"),
    "shutdown": Doc(
        "O(N) when saving, where N is the total number of keys in all databases when saving "
        "data, otherwise O(1)",
        "[save-selector{NOSAVE | SAVE}] [NOW@7.0.0] [FORCE@7.0.0] [ABORT@7.0.0]",
        history=(("7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers."),)),
    "slowlog": Doc(_SUBCOMMANDS),
    "slowlog|get": Doc(
        "O(N) where N is the number of entries returned", "[count:integer]",
        history=(("4.0.0", "Added client IP address, port and name to the reply."),),
        tips=f"request_policy:all_nodes {_NONDET}"),
    "slowlog|help": Doc(_O1),
    "slowlog|len": Doc(
        _O1, tips=f"request_policy:all_nodes response_policy:agg_sum {_NONDET}"),
    "slowlog|reset": Doc("O(N) where N is the number of entries in the slowlog",
                         tips=_ALL_NODES_OK),
    "swapdb": Doc(
        "O(N) where N is the count of clients watching or blocking on keys from both "
        "databases.", "index1:integer index2:integer"),
    "role": Doc(_O1),
    "replicaof": Doc(_O1, "args{host-port(host port:integer) | no-one(no=NO one=ONE)}"),
    "slaveof": Doc(_O1, "args{host-port(host port:integer) | no-one(no=NO one=ONE)}",
                   doc_flags="deprecated", deprecated_since="5.0.0",
                   replaced_by="`REPLICAOF`"),
    "psync": Doc("", "replicationid offset:integer"),
    "sync": Doc(),
    "replconf": Doc(_O1, doc_flags="syscmd"),
    "waitaof": Doc(_O1, "numlocal:integer numreplicas:integer timeout:integer",
                   tips="request_policy:all_shards response_policy:agg_min"),
    "wait": Doc(_O1, "numreplicas:integer timeout:integer",
                tips="request_policy:all_shards response_policy:agg_min"),
    "time": Doc(_O1, tips=_NONDET),
    # string
    "get": Doc(_O1, "key#0", keys=_keys(_RO_ACCESS)),
    "strlen": Doc(_O1, "key#0", keys=_keys(_RO)),
    "set": Doc(
        _O1,
        "key#0 value [condition{NX | XX}@2.6.12] [GET@6.2.0] "
        "[expiration{EX seconds:integer@2.6.12 | PX milliseconds:integer@2.6.12 | "
        "EXAT unix-time-seconds:unix-time@6.2.0 | PXAT unix-time-milliseconds:unix-time@6.2.0 "
        "| KEEPTTL@6.0.0}]",
        history=(("2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."),
                 ("6.0.0", "Added the `KEEPTTL` option."),
                 ("6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."),
                 ("7.0.0", "Allowed the `NX` and `GET` options to be used together.")),
        keys=_keys("RW access update variable_flags; index 1; range 0 1 0; "
                   "RW and ACCESS due to the optional `GET` argument")),
    "setnx": Doc(_O1, "key#0 value", keys=_keys("OW insert; index 1; range 0 1 0"),
                 doc_flags="deprecated", deprecated_since="2.6.12",
                 replaced_by="`SET` with the `NX` argument"),
    "setex": Doc(_O1, "key#0 seconds:integer value", keys=_keys(_OW_UPDATE),
                 doc_flags="deprecated", deprecated_since="2.6.12",
                 replaced_by="`SET` with the `EX` argument"),
    "psetex": Doc(_O1, "key#0 milliseconds:integer value", keys=_keys(_OW_UPDATE),
                  doc_flags="deprecated", deprecated_since="2.6.12",
                  replaced_by="`SET` with the `PX` argument"),
    "getset": Doc(_O1, "key#0 value", keys=_keys(_RW_ACCESS_UPDATE), doc_flags="deprecated",
                  deprecated_since="6.2.0", replaced_by="`SET` with the `!GET` argument"),
    "getdel": Doc(_O1, "key#0", keys=_keys("RW access delete; index 1; range 0 1 0")),
    "getex": Doc(
        _O1,
        "key#0 [expiration{EX seconds:integer | PX milliseconds:integer | "
        "EXAT unix-time-seconds:unix-time | PXAT unix-time-milliseconds:unix-time | PERSIST}]",
        keys=_keys(f"{_RW_ACCESS_UPDATE}; RW and UPDATE because it changes the TTL")),
    "mget": Doc("O(N) where N is the number of keys to retrieve.", "key#0...",
                keys=_keys("RO access; index 1; range -1 1 0")),
    "mset": Doc("O(N) where N is the number of keys to set.", "data(key#0 value)...",
                keys=_keys("OW update; index 1; range -1 2 0")),
    "msetnx": Doc("O(N) where N is the number of keys to set.", "data(key#0 value)...",
                  keys=_keys("OW insert; index 1; range -1 2 0")),
    "incr": Doc(_O1, "key#0", keys=_keys(_RW_ACCESS_UPDATE)),
    "decr": Doc(_O1, "key#0", keys=_keys(_RW_ACCESS_UPDATE)),
    "incrby": Doc(_O1, "key#0 increment:integer", keys=_keys(_RW_ACCESS_UPDATE)),
    "decrby": Doc(_O1, "key#0 decrement:integer", keys=_keys(_RW_ACCESS_UPDATE)),
    "incrbyfloat": Doc(_O1, "key#0 increment:double", keys=_keys(_RW_ACCESS_UPDATE)),
    "append": Doc(
        "O(1). The amortized time complexity is O(1) assuming the appended value is small and "
        "the already present value is of any size, since the dynamic string library used by "
        "Redis will double the free space available on every reallocation.",
        "key#0 value", keys=_keys("RW insert; index 1; range 0 1 0")),
    "getrange": Doc(_SUBSTRING_COST, "key#0 start:integer end:integer", keys=_keys(_RO_ACCESS)),
    "substr": Doc(_SUBSTRING_COST, "key#0 start:integer end:integer", keys=_keys(_RO_ACCESS),
                  doc_flags="deprecated", deprecated_since="2.0.0", replaced_by="`GETRANGE`"),
    "setrange": Doc(
        "O(1), not counting the time taken to copy the new string in place. Usually, this "
        "string is very small so the amortized complexity is O(1). Otherwise, complexity is "
        "O(M) with M being the length of the value argument.",
        "key#0 offset:integer value", keys=_keys(_RW_UPDATE)),
    # transactions
    "discard": Doc("O(N), when N is the number of queued commands"),
    "exec": Doc("Depends on commands in the transaction"),
    "multi": Doc(_O1),
    "unwatch": Doc(_O1),
    "watch": Doc("O(1) for every key.", "key#0...", keys=_keys("RO; index 1; range -1 1 0")),
    # stream
    "xack": Doc("O(1) for each message ID processed.", "key#0 group id...",
                keys=_keys(_RW_UPDATE)),
    "xackdel": Doc("O(1) for each entry ID processed.",
                   f"key#0 group [{_REFS}] IDS ids(numids:integer id...)",
                   keys=_keys("RW update delete; index 1; range 0 1 0")),
    "xadd": Doc(
        "O(1) when adding a new entry, O(N) when trimming where N being the number of "
        "entries evicted.",
        f"key#0 [NOMKSTREAM@6.2.0] [{_REFS}] "
        "[idempotency{IDMPAUTO pid | IDMP idmp(pid iid)}@8.6.0] "
        f"[trim({_TRIM})] id-selector{{auto-id=* | id}} data(field value)...",
        history=(("6.2.0", "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the "
                           "`LIMIT` option."),
                 ("7.0.0", "Added support for the `<ms>-*` explicit ID form."),
                 ("8.6.0", "Added the `IDMPAUTO` and `IDMP` options.")),
        keys=_keys(f"{_RW_UPDATE}; UPDATE instead of INSERT because of the optional "
                   "trimming feature"),
        tips=_NONDET),
    "xautoclaim": Doc(
        "O(1) if COUNT is small.",
        "key#0 group consumer min-idle-time start [COUNT count:integer] [JUSTID]",
        history=(("7.0.0", "Added an element to the reply array, containing deleted entries "
                           "the command cleared from the PEL"),),
        keys=_keys(_RW_DELETE), tips=_NONDET),
    "xcfgset": Doc(
        _O1, "key#0 [idmp-duration-block(idmp-duration-token=IDMP-DURATION duration:integer)] "
             "[idmp-maxsize-block(idmp-maxsize-token=IDMP-MAXSIZE maxsize:integer)]",
        keys=_keys(_RW_UPDATE)),
    "xclaim": Doc(
        "O(log N) with N being the number of messages in the PEL of the consumer group.",
        "key#0 group consumer min-idle-time id... [IDLE ms:integer] "
        "[TIME unix-time-milliseconds:unix-time] [RETRYCOUNT count:integer] [FORCE] [JUSTID] "
        "[LASTID lastid]",
        keys=_keys(_RW_UPDATE), tips=_NONDET),
    "xdel": Doc("O(1) for each single item to delete in the stream, regardless of the stream "
                "size.", "key#0 id...", keys=_keys(_RW_DELETE)),
    "xdelex": Doc("O(1) for each single item to delete in the stream, regardless of the stream "
                  "size.", f"key#0 [{_REFS}] IDS ids(numids:integer id...)",
                  keys=_keys(_RW_DELETE)),
    "xgroup": Doc(_SUBCOMMANDS),
    "xgroup|create": Doc(
        _O1, "key#0 group id-selector{id | new-id=$} [MKSTREAM] "
             "[ENTRIESREAD entries-read:integer]",
        history=(("7.0.0", "Added the `entries_read` named argument."),),
        keys=_keys("RW insert" + _GROUP_KEY)),
    "xgroup|createconsumer": Doc(_O1, "key#0 group consumer",
                                 keys=_keys("RW insert" + _GROUP_KEY)),
    "xgroup|delconsumer": Doc(_O1, "key#0 group consumer",
                              keys=_keys("RW delete" + _GROUP_KEY)),
    "xgroup|destroy": Doc(
        "O(N) where N is the number of entries in the group's pending entries list (PEL).",
        "key#0 group", keys=_keys("RW delete" + _GROUP_KEY)),
    "xgroup|help": Doc(_O1),
    "xgroup|setid": Doc(
        _O1, "key#0 group id-selector{id | new-id=$} "
             "[ENTRIESREAD entriesread:integer/entries-read]",
        history=(("7.0.0", "Added the optional `entries_read` argument."),),
        keys=_keys("RW update" + _GROUP_KEY)),
    "xidmprecord": Doc(_O1, "key#0 pid iid stream-id", keys=_keys(_RW_UPDATE)),
    "xinfo": Doc(_SUBCOMMANDS),
    "xinfo|consumers": Doc(_O1, "key#0 group",
                           history=(("7.2.0", "Added the `inactive` field."),),
                           keys=_keys("RO access" + _GROUP_KEY), tips=_NONDET),
    "xinfo|groups": Doc(_O1, "key#0",
                        history=(("7.0.0", "Added the `entries-read` and `lag` fields"),),
                        keys=_keys("RO access" + _GROUP_KEY)),
    "xinfo|help": Doc(_O1),
    "xinfo|stream": Doc(
        _O1, "key#0 [full-block(FULL [COUNT count:integer])]",
        history=(("6.0.0", "Added the `FULL` modifier."),
                 ("7.0.0", "Added the `max-deleted-entry-id`, `entries-added`, "
                           "`recorded-first-entry-id`, `entries-read` and `lag` fields"),
                 ("7.2.0", "Added the `active-time` field, and changed the meaning of "
                           "`seen-time`."),
                 ("8.6.0", "Added the `idmp-duration`, `idmp-maxsize`, `pids-tracked`, "
                           "`iids-tracked`, `iids-added` and `iids-duplicates` fields."),
                 ("8.8.0", "Added the `nacked-count` field.")),
        keys=_keys("RO access" + _GROUP_KEY)),
    "xlen": Doc(_O1, "key#0", keys=_keys(_RO)),
    "xnack": Doc(
        "O(1) for each message ID processed.",
        "key#0 group mode{SILENT | FAIL | FATAL} IDS ids(numids:integer id...) "
        "[RETRYCOUNT count:integer] [FORCE]",
        keys=_keys(_RW_UPDATE)),
    "xpending": Doc(
        "O(N) with N being the number of elements returned, so asking for a small fixed "
        "number of entries per call is O(1). O(M), where M is the total number of entries "
        "scanned when used with the IDLE filter. When the command returns just the summary "
        "and the list of consumers is small, it runs in O(1) time; otherwise, an additional "
        "O(N) time for iterating every consumer.",
        "key#0 group [filters([IDLE min-idle-time:integer@6.2.0] start end count:integer "
        "[consumer])]",
        history=(("6.2.0", "Added the `IDLE` option and exclusive range intervals."),),
        keys=_keys(_RO_ACCESS), tips=_NONDET),
    "xrange": Doc(
        "O(N) with N being the number of elements being returned. If N is constant (e.g. "
        "always asking for the first 10 elements with COUNT), you can consider it O(1).",
        "key#0 start end [COUNT count:integer]",
        history=(("6.2.0", "Added exclusive ranges."),), keys=_keys(_RO_ACCESS)),
    "xread": Doc(
        "For each stream mentioned: O(N) with N being the number of elements being returned, "
        "it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option "
        "is used, XADD will pay O(M) time in order to serve the M clients blocked on the "
        "stream getting new data.",
        "[COUNT count:integer] [MAXCOUNT maxcount:integer@8.10.0] "
        "[MAXSIZE maxsize:integer@8.10.0] [BLOCK milliseconds:integer] "
        "STREAMS streams(key#0... id...)",
        history=(("8.10.0", "Added the `MAXCOUNT` and `MAXSIZE` options."),),
        keys=_keys("RO access; keyword STREAMS 1; range -1 1 2")),
    "xreadgroup": Doc(
        "For each stream mentioned: O(M) with M being the number of elements returned. If M "
        "is constant (e.g. always asking for the first 10 elements with COUNT), you can "
        "consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) "
        "time in order to serve the N clients blocked on the stream getting new data.",
        "GROUP group-block(group consumer) [COUNT count:integer] "
        "[MAXCOUNT maxcount:integer@8.10.0] [MAXSIZE maxsize:integer@8.10.0] "
        "[BLOCK milliseconds:integer] [CLAIM min-idle-time:integer] [NOACK] "
        "STREAMS streams(key#0... id...)",
        history=(("8.10.0", "Added the `MAXCOUNT` and `MAXSIZE` options."),),
        keys=_keys("RO access; keyword STREAMS 4; range -1 1 2")),
    "xrevrange": Doc(
        "O(N) with N being the number of elements returned. If N is constant (e.g. always "
        "asking for the first 10 elements with COUNT), you can consider it O(1).",
        "key#0 end start [COUNT count:integer]",
        history=(("6.2.0", "Added exclusive ranges."),), keys=_keys(_RO_ACCESS)),
    "xsetid": Doc(
        _O1, "key#0 last-id [ENTRIESADDED entries-added:integer@7.0.0] "
             "[MAXDELETEDID max-deleted-id@7.0.0]",
        history=(("7.0.0", "Added the `entries_added` and `max_deleted_entry_id` "
                           "arguments."),),
        keys=_keys(_RW_UPDATE)),
    "xtrim": Doc(
        "O(N), with N being the number of evicted entries. Constant times are very small "
        "however, since entries are organized in macro nodes containing multiple entries that "
        "can be released with a single deallocation.",
        f"key#0 trim({_TRIM} [{_REFS}])",
        history=(("6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option."),),
        keys=_keys(_RW_DELETE), tips=_NONDET),
}
