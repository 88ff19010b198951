"""The server's side of ACL: its users, the check a restricted client's commands pass, the ACL
log and statistics of refusals, and the clients an ACL change disconnects."""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.acl.registry import (
    DENIAL_REASONS,
    AclError,
    Users,
    check_command,
    read_acl_file,
)
from server.acl.selector import ALLOWED, DENIED_CMD, DENIED_KEY, Selector
from server.acl.user import User
from server.acl_log import AclLog
from server.client_info import client_info_line
from server.config import split_config_line
from storage.keyspace import now_ms

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client
    from server.dispatch import CommandSpec

# Why EXEC no longer runs a queued command whose permission was taken away since (multi.c).
_EXEC_REASONS = {
    DENIED_CMD: "no permission to execute the command or subcommand",
    DENIED_KEY: "no permission to touch the specified keys",
}
_EXEC_CHANNEL_REASON = "no permission to access one of the channels used as arguments"

BOTH_SOURCES = ("Configuring Redis with users defined in redis.conf and at the same setting an "
                "ACL file path is invalid. This setup is very likely to lead to configuration "
                "errors and security holes, please define either an ACL file or declare users "
                "directly in your redis.conf, but not both.")


class AccessControl:
    def __init__(self, server: Server) -> None:
        self.server = server
        config = server.config
        self.users = Users()
        self.log = AclLog()
        self._set_pubsub_default(config["acl-pubsub-default"])
        config.on_change("acl-pubsub-default", self._set_pubsub_default)
        self.users.set_default_password(config["requirepass"])
        config.on_change("requirepass", self._set_requirepass)

    def _set_pubsub_default(self, value: str) -> None:
        self.users.all_channels_default = value == "allchannels"

    def _set_requirepass(self, password: str) -> None:
        self.users.set_default_password(password)
        self.users_changed()

    # -- start-up -------------------------------------------------------------------------------
    def load_at_startup(self) -> None:
        """ACLLoadUsersAtStartup: the config file's `user` lines, or the ACL file. AclError
        with the message Redis logs before it exits."""
        config = self.server.config
        lines = config.user_lines
        aclfile = config["aclfile"]
        if aclfile and lines:
            raise AclError(BOTH_SOURCES)
        if lines:
            try:
                self.users.load_configured([[w.encode() for w in split_config_line(text)]
                                            for _, text in lines])
            except AclError as exc:
                raise AclError(f"{exc}\nCritical error while loading ACLs. Exiting.") from None
            self.users_changed()
        if aclfile:
            try:
                self.install(self.users.load_lines(read_acl_file(aclfile)))
            except AclError as exc:
                raise AclError(f"Aborting Redis startup because of ACL errors: {exc}") from None

    def install(self, users: list[User], running: Client | None = None) -> None:
        """ACL LOAD's users replace the current ones (Redis 7.2+): the clients of a user
        no longer defined are disconnected, those of a user still defined keep it with its
        new rules, unless they are subscribers whose channels the new rules take away."""
        for user in users:
            current = self.users.get(user.name)
            if current is not None:
                self.disconnect_subscribers_if_needed(user, current, running)
        for user in self.users.replace_all(users):
            self.disconnect_clients_of(user, running)
        self.users_changed()

    # -- the check ------------------------------------------------------------------------------
    def refusal(self, client: Client, spec: CommandSpec, argv: list[bytes]) -> str | None:
        """processCommand's ACL check for a restricted client: None, or the NOPERM error
        (the refusal is logged and counted)."""
        result, pos = check_command(client.user, spec, argv)
        if result == ALLOWED:
            return None
        self.record_denial(client, spec, argv, result, pos,
                           "multi" if client.multi is not None else "toplevel")
        return "NOPERM " + denial_text(result, client.user, spec, argv[pos], verbose=False)

    def script_refusal(self, client: Client, spec: CommandSpec,
                       argv: list[bytes]) -> str | None:
        """scriptVerifyACL: a command a script runs, as the user that runs the script."""
        result, pos = check_command(client.user, spec, argv)
        if result == ALLOWED:
            return None
        self.record_denial(client, spec, argv, result, pos, "lua")
        return "ERR ACL failure in script: " + denial_text(result, client.user, spec, argv[pos],
                                                             verbose=True)

    def exec_refusal(self, client: Client, spec: CommandSpec, argv: list[bytes]) -> str | None:
        """EXEC's check of each queued command, in case the rules changed meanwhile."""
        if client.user.grants_everything():
            return None
        result, pos = check_command(client.user, spec, argv)
        if result == ALLOWED:
            return None
        self.record_denial(client, spec, argv, result, pos, "multi")
        reason = _EXEC_REASONS.get(result, _EXEC_CHANNEL_REASON)
        return ("NOPERM ACLs rules changed between the moment the transaction was accumulated "
                "and the EXEC call. This command is no longer allowed for the following "
                f"reason: {reason}")

    def record_denial(self, client: Client, spec: CommandSpec, argv: list[bytes], result: int,
                      pos: int, context: str) -> None:
        reason = DENIAL_REASONS[result]
        self.server.stats.acl_denied[reason] += 1
        target = spec.fullname.encode() if result == DENIED_CMD else argv[pos]
        self.log.add(reason, context, target, client.user.name, client_info_line(client),
                     now_ms(), self.server.config["acllog-max-len"])

    def record_auth_failure(self, client: Client, command: bytes, username: bytes) -> None:
        self.server.stats.auth_failures += 1
        self.log.add("auth", "multi" if client.in_exec else "toplevel", command, username,
                     client_info_line(client), now_ms(), self.server.config["acllog-max-len"])

    # -- after changes --------------------------------------------------------------------------
    def users_changed(self) -> None:
        """Rules changed: which clients need the check may have changed with them, and
        whether a client not logged in may run commands (authRequired: only while the
        default user needs a password or is off)."""
        default = self.users.default
        open_default = default.nopass and default.enabled
        for client in self.server.clients.values():
            client.authenticated = client.logged_in or open_default
            client.refresh_checked_path()

    def disconnect_clients_of(self, user: User, running: Client | None = None) -> None:
        """ACLFreeUserAndKillClients: the running client is closed after its reply."""
        for client in list(self.server.clients.values()):
            if client.user is user:
                client.user = self.users.default  # (as Redis: nothing runs as a dead user)
                client.logged_in = client.authenticated = False
                _disconnect(client, running)

    def disconnect_subscribers_if_needed(self, staged: User, current: User,
                                         running: Client) -> None:
        """ACLKillPubsubClientsIfNeeded: a change that takes channels away closes the
        user's subscribers whose subscriptions it no longer allows."""
        if any(selector.all_channels for selector in staged.selectors):
            return
        upcoming = [channel for selector in staged.selectors for channel in selector.channels]
        if not any(selector.all_channels for selector in current.selectors) and all(
                channel in upcoming
                for selector in current.selectors for channel in selector.channels):
            return  # nothing taken away
        allowed = Selector()
        allowed.channels = upcoming
        for client in list(self.server.clients.values()):
            if client.user is not current or not client.subscribed or client.subs is None:
                continue
            subs = client.subs
            revoked = (any(not allowed.may_use_channel(p, True) for p in subs.patterns)
                       or any(not allowed.may_use_channel(c, False)
                              for c in (*subs.channels, *subs.shard_channels)))
            if revoked:
                _disconnect(client, running)


def _disconnect(client: Client, running: Client | None) -> None:
    """Close a client: at once, or after its reply for the one running the command."""
    if client is running:
        client.close_after_reply = True
    elif client.sink is not None:
        client.sink.close_client()


def denial_text(result: int, user: User, spec: CommandSpec, arg: bytes, verbose: bool) -> str:
    """getAclErrorMessage (Redis 7.2+): the command error names the user; key and channel
    refusals name the key or channel only when verbose (ACL DRYRUN)."""
    name = user.name.decode(errors="replace")
    if result == DENIED_CMD:
        return f"User {name} has no permissions to run the '{spec.fullname}' command"
    what = "key" if result == DENIED_KEY else "channel"
    if verbose:
        return (f"User {name} has no permissions to access the "
                f"'{arg.decode(errors='replace')}' {what}")
    return f"No permissions to access a {what}"


__all__ = ["AccessControl", "AclError", "denial_text"]
