"""Pub/Sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB.

The (un)subscribe confirmations are pushes, as in Redis (CLIENT_PUSHING): written straight
to the client's output, so that CLIENT REPLY OFF does not silence them, and one per channel.
Inside EXEC they are the command's reply instead, so that they land in EXEC's array.
"""

from __future__ import annotations

from protocol.encoder import Push, Raw, encode
from server.client import Client
from server.commands.help import help_reply
from server.dispatch import NO_REPLY, command, container
from server.errors import CommandError, subcommand_syntax_error

_FLAGS = "pubsub noscript loading stale"
_SLOW = "@pubsub @slow"


def _confirm(client: Client, pushes: list[list[object]]) -> object:
    """Send the confirmations (kind, channel or None, count) of one (un)subscribe command."""
    data = b"".join(encode(Push(push), client.protocol) for push in pushes)
    if client.in_exec:
        return Raw(data)
    client.server.write_push(client, data)
    return NO_REPLY


def _subscribe(client: Client, argv: list[bytes], kind: bytes) -> object:
    """SUBSCRIBE / PSUBSCRIBE / SSUBSCRIBE: one confirmation per name, already held or not."""
    pubsub = client.server.pubsub
    shard = kind == b"ssubscribe"
    pushes: list[list[object]] = []
    for name in argv[1:]:
        if kind == b"psubscribe":
            pubsub.psubscribe(client, name)
        else:
            pubsub.subscribe(client, name, shard)
        pushes.append([kind, name, _count(client, shard)])
    return _confirm(client, pushes)


@command("subscribe", -2, f"{_FLAGS} sentinel", categories=_SLOW, since="2.0.0",
         group="pubsub", summary="Listens for messages published to channels.")
def subscribe(client: Client, argv: list[bytes]) -> object:
    return _subscribe(client, argv, b"subscribe")


@command("psubscribe", -2, f"{_FLAGS} sentinel", categories=_SLOW, since="2.0.0",
         group="pubsub", summary="Listens for messages published to channels that match one "
         "or more patterns.")
def psubscribe(client: Client, argv: list[bytes]) -> object:
    return _subscribe(client, argv, b"psubscribe")


@command("ssubscribe", -2, _FLAGS, keys=(1, -1, 1), categories=_SLOW, since="7.0.0",
         group="pubsub", summary="Listens for messages published to shard channels.")
def ssubscribe(client: Client, argv: list[bytes]) -> object:
    if client.in_exec:  # (Redis lets SUBSCRIBE and PSUBSCRIBE run in a transaction, not this)
        raise CommandError("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
    return _subscribe(client, argv, b"ssubscribe")


def _unsubscribe(client: Client, argv: list[bytes], kind: bytes) -> object:
    """UNSUBSCRIBE / SUNSUBSCRIBE / PUNSUBSCRIBE: the channels (or patterns) named, or all
    of them; one confirmation each, or a single one with a null name when there was none."""
    pubsub = client.server.pubsub
    shard = kind == b"sunsubscribe"
    patterns = kind == b"punsubscribe"
    subs = client.subs
    if len(argv) > 1:
        names = argv[1:]
    elif subs is None:
        names = []
    else:
        names = list(subs.patterns if patterns else
                     subs.shard_channels if shard else subs.channels)
    pushes: list[list[object]] = []
    for name in names:
        if patterns:
            pubsub.punsubscribe(client, name)
        else:
            pubsub.unsubscribe(client, name, shard)
        pushes.append([kind, name, _count(client, shard)])
    if not pushes:
        pushes.append([kind, None, _count(client, shard)])
    return _confirm(client, pushes)


def _count(client: Client, shard: bool) -> int:
    subs = client.subs
    if subs is None:
        return 0
    return len(subs.shard_channels) if shard else subs.count()


@command("unsubscribe", -1, f"{_FLAGS} sentinel", categories=_SLOW, since="2.0.0",
         group="pubsub", summary="Stops listening to messages posted to channels.")
def unsubscribe(client: Client, argv: list[bytes]) -> object:
    return _unsubscribe(client, argv, b"unsubscribe")


@command("sunsubscribe", -1, _FLAGS, keys=(1, -1, 1), categories=_SLOW, since="7.0.0",
         group="pubsub", summary="Stops listening to messages posted to shard channels.")
def sunsubscribe(client: Client, argv: list[bytes]) -> object:
    return _unsubscribe(client, argv, b"sunsubscribe")


@command("punsubscribe", -1, f"{_FLAGS} sentinel", categories=_SLOW, since="2.0.0",
         group="pubsub", summary="Stops listening to messages published to channels that "
         "match one or more patterns.")
def punsubscribe(client: Client, argv: list[bytes]) -> object:
    return _unsubscribe(client, argv, b"punsubscribe")


@command("publish", 3, "pubsub loading stale fast may-replicate sentinel",
         categories="@pubsub @fast", since="2.0.0", group="pubsub",
         summary="Posts a message to a channel.")
def publish(client: Client, argv: list[bytes]) -> object:
    client.server.propagate_to_replicas(client.db, argv)
    return client.server.pubsub.publish(argv[1], argv[2])


@command("spublish", 3, "pubsub loading stale fast may-replicate", keys=(1, 1, 1),
         categories="@pubsub @fast", since="7.0.0", group="pubsub",
         summary="Post a message to a shard channel")
def spublish(client: Client, argv: list[bytes]) -> object:
    client.server.propagate_to_replicas(client.db, argv)
    return client.server.pubsub.spublish(argv[1], argv[2])


# -- PUBSUB (introspection) -------------------------------------------------------------------
container("pubsub", -2, summary="A container for Pub/Sub commands.", since="2.8.0",
          group="pubsub")

_INTROSPECTION = "pubsub loading stale"


@command("pubsub|channels", -2, _INTROSPECTION, categories=_SLOW, since="2.8.0",
         group="pubsub", summary="Returns the active channels.")
def pubsub_channels(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 3:
        raise subcommand_syntax_error(argv)
    return client.server.pubsub.channel_names(argv[2] if len(argv) == 3 else None)


@command("pubsub|shardchannels", -2, _INTROSPECTION, categories=_SLOW, since="7.0.0",
         group="pubsub", summary="Returns the active shard channels.")
def pubsub_shardchannels(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 3:
        raise subcommand_syntax_error(argv)
    return client.server.pubsub.channel_names(argv[2] if len(argv) == 3 else None, shard=True)


def _numsub(client: Client, argv: list[bytes], shard: bool) -> object:
    pubsub = client.server.pubsub
    reply: list[object] = []
    for channel in argv[2:]:
        reply += (channel, pubsub.subscriber_count(channel, shard))
    return reply


@command("pubsub|numsub", -2, _INTROSPECTION, categories=_SLOW, since="2.8.0",
         group="pubsub", summary="Returns a count of subscribers to channels.")
def pubsub_numsub(client: Client, argv: list[bytes]) -> object:
    return _numsub(client, argv, False)


@command("pubsub|shardnumsub", -2, _INTROSPECTION, categories=_SLOW, since="7.0.0",
         group="pubsub", summary="Returns the count of subscribers of shard channels.")
def pubsub_shardnumsub(client: Client, argv: list[bytes]) -> object:
    return _numsub(client, argv, True)


@command("pubsub|numpat", 2, _INTROSPECTION, categories=_SLOW, since="2.8.0",
         group="pubsub", summary="Returns a count of unique pattern subscriptions.")
def pubsub_numpat(client: Client, argv: list[bytes]) -> object:
    return len(client.server.pubsub.patterns)


@command("pubsub|help", 2, "loading stale", categories="@slow", since="6.2.0",
         group="pubsub", summary="Returns helpful text about the different subcommands.")
def pubsub_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("PUBSUB", [
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: "
        "'*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
    ])
