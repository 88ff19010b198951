"""The server as it runs: the core (server/core.py) composed with the subsystems and every
command family. This is the one module that knows them all; the entry point
(server/__main__.py) and tests build a Server from here.

Each subsystem is constructed here and plugs into the core's registries: what a closing
client is taken out of (close_hooks), the options it follows (config.on_change), the
before-sleep and cron work it does. Persistence attaches itself later
(server.persistence.manager.attach), once the ACL users are loaded.
"""

from __future__ import annotations

import server.commands  # noqa: F401 - registers every command family in server.dispatch
from server import cold_tier
from server.acl.access import AccessControl
from server.blocking import Blocking
from server.commands import xidmp
from server.config import Config
from server.core import ServerCore
from server.eviction import Evictor
from server.log import Logger
from server.pubsub import PubSub
from server.replication import service as replication
from server.tracking import Tracking
from server.version import VERSION
from storage import stream_resp
from storage.stream_idmp import set_defaults

__all__ = ["VERSION", "Server"]


class Server(ServerCore):
    def __init__(self, config: Config, logger: Logger | None = None) -> None:
        super().__init__(config, logger)
        self.blocking = Blocking(self)
        self.pubsub = PubSub(self)
        self.tracking = Tracking(self)
        self.acl = AccessControl(self)  # users, the permission check, the ACL log
        self.acl_log = self.acl.log
        self.evictor = Evictor(self)
        self.replication = replication.attach(self)
        self.cold_tier = cold_tier.attach(self)
        config.on_change("maxmemory-policy", self.evictor.set_policy)
        # A new stream's IDMP limits follow the config; its expired IDMP records go on the cron.
        set_defaults(config["stream-idmp-duration"], config["stream-idmp-maxsize"])
        config.on_change("stream-idmp-duration", lambda value: set_defaults(duration=value))
        config.on_change("stream-idmp-maxsize", lambda value: set_defaults(maxsize=value))
        self.cron_hooks.append(lambda: xidmp.expire_tracked(self))
        stream_resp.set_max_bytes(config["stream-reply-cache-max-bytes"])
        config.on_change("stream-reply-cache-max-bytes", stream_resp.set_max_bytes)
        # A closing client leaves every wait list, watch, subscription and tracking table.
        self.close_hooks += [self.blocking.remove_client, self.pause.forget, self.unwatch_all,
                             self.pubsub.forget, self.tracking.disable, self.forget_monitor]
