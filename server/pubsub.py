"""Pub/Sub: who listens to which channel, pattern or shard channel, and the fan-out of a
message (pubsub.c). Keyspace notifications (server/notify.py) are published through here.

A message is encoded into each receiver's output like a reply, once per protocol: RESP2
clients get an array, RESP3 clients a push.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from protocol.encoder import Push, encode
from storage.glob import compile_glob

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client

# An insertion-ordered set of clients (a dict's keys): delivery follows subscription order.
Subscribers = dict["Client", None]


class Subscriptions:
    """One client's channels, patterns and shard channels (client.subs, None until the
    first subscription)."""

    __slots__ = ("channels", "patterns", "shard_channels")

    def __init__(self) -> None:
        self.channels: dict[bytes, None] = {}
        self.patterns: dict[bytes, None] = {}
        self.shard_channels: dict[bytes, None] = {}

    def count(self) -> int:
        """clientSubscriptionsCount: what (P)SUBSCRIBE and (P)UNSUBSCRIBE replies count."""
        return len(self.channels) + len(self.patterns)

    def total(self) -> int:
        """Every subscription: the client is in Pub/Sub mode while this is not 0."""
        return len(self.channels) + len(self.patterns) + len(self.shard_channels)


class PubSub:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.channels: dict[bytes, Subscribers] = {}
        self.shard_channels: dict[bytes, Subscribers] = {}
        # pattern -> (its matcher, its subscribers)
        self.patterns: dict[bytes, tuple[Callable[[bytes], bool], Subscribers]] = {}
        self.clients = 0  # clients with at least one subscription (INFO pubsub_clients)

    # -- subscribing ---------------------------------------------------------------------------
    def subscribe(self, client: Client, channel: bytes, shard: bool = False) -> bool:
        """False when the client already listens to the channel."""
        subs = self._subs_of(client)
        mine = subs.shard_channels if shard else subs.channels
        if channel in mine:
            return False
        mine[channel] = None
        table = self.shard_channels if shard else self.channels
        table.setdefault(channel, {})[client] = None
        return True

    def unsubscribe(self, client: Client, channel: bytes, shard: bool = False) -> bool:
        subs = client.subs
        mine = None if subs is None else (subs.shard_channels if shard else subs.channels)
        if mine is None or channel not in mine:
            return False
        del mine[channel]
        table = self.shard_channels if shard else self.channels
        listeners = table[channel]
        del listeners[client]
        if not listeners:
            del table[channel]
        self._left(client)
        return True

    def psubscribe(self, client: Client, pattern: bytes) -> bool:
        subs = self._subs_of(client)
        if pattern in subs.patterns:
            return False
        subs.patterns[pattern] = None
        entry = self.patterns.get(pattern)
        if entry is None:
            entry = self.patterns[pattern] = (compile_glob(pattern), {})
        entry[1][client] = None
        return True

    def punsubscribe(self, client: Client, pattern: bytes) -> bool:
        subs = client.subs
        if subs is None or pattern not in subs.patterns:
            return False
        del subs.patterns[pattern]
        listeners = self.patterns[pattern][1]
        del listeners[client]
        if not listeners:
            del self.patterns[pattern]
        self._left(client)
        return True

    def forget(self, client: Client) -> None:
        """The client is gone (or RESET): drop every subscription it holds."""
        subs = client.subs
        if subs is None:
            return
        for channel in list(subs.channels):
            self.unsubscribe(client, channel)
        for channel in list(subs.shard_channels):
            self.unsubscribe(client, channel, shard=True)
        for pattern in list(subs.patterns):
            self.punsubscribe(client, pattern)

    def _subs_of(self, client: Client) -> Subscriptions:
        subs = client.subs
        if subs is None:
            subs = client.subs = Subscriptions()
        if not subs.total():
            self.clients += 1
            client.subscribed = True
            client.refresh_checked_path()
        return subs

    def _left(self, client: Client) -> None:
        """After an unsubscription: the client leaves Pub/Sub mode with its last one."""
        if not client.subs.total():  # type: ignore[union-attr]
            self.clients -= 1
            client.subscribed = False
            client.refresh_checked_path()

    # -- publishing ----------------------------------------------------------------------------
    def publish(self, channel: bytes, message: bytes) -> int:
        """PUBLISH: the message to the channel's subscribers, then to those of every pattern
        that matches it. Returns the number of deliveries."""
        receivers = 0
        listeners = self.channels.get(channel)
        if listeners:
            receivers += self._deliver(listeners, [b"message", channel, message])
        if self.patterns:
            for pattern, (matches, listeners) in list(self.patterns.items()):
                if matches(channel):
                    receivers += self._deliver(listeners,
                                               [b"pmessage", pattern, channel, message])
        return receivers

    def spublish(self, channel: bytes, message: bytes) -> int:
        listeners = self.shard_channels.get(channel)
        if not listeners:
            return 0
        return self._deliver(listeners, [b"smessage", channel, message])

    def _deliver(self, listeners: Subscribers, message: list[bytes]) -> int:
        """Append the message to each listener's output (encoded once per protocol)."""
        encoded: dict[int, bytes] = {}
        server = self.server
        for client in list(listeners):
            protocol = client.protocol
            data = encoded.get(protocol)
            if data is None:
                data = encoded[protocol] = encode(Push(message), protocol)
            server.write_push(client, data)
        return len(listeners)

    # -- introspection -------------------------------------------------------------------------
    def channel_names(self, pattern: bytes | None, shard: bool = False) -> list[bytes]:
        """PUBSUB CHANNELS / SHARDCHANNELS: the active channels, matching pattern if given."""
        names = list(self.shard_channels if shard else self.channels)
        if pattern is None:
            return names
        matches = compile_glob(pattern)
        return [name for name in names if matches(name)]

    def subscriber_count(self, channel: bytes, shard: bool = False) -> int:
        return len((self.shard_channels if shard else self.channels).get(channel, ()))
