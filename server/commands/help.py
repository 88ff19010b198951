"""The shape of every `<CONTAINER> HELP` reply (addReplyHelp)."""

from __future__ import annotations

from protocol.encoder import SimpleString


def help_reply(container: str, lines: list[str]) -> list[SimpleString]:
    head = f"{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    tail = ["HELP", "    Prints this help."]
    return [SimpleString(line) for line in [head, *lines, *tail]]
