"""`xstreamd [config-file] [--option value ...]` and `python -m server` start the server."""

from __future__ import annotations

import contextlib
import os
import sys

import uvloop

from server import memory_report
from server.acl.registry import AclError
from server.app import Server
from server.config import ConfigError, load_config
from server.persistence.manager import attach
from server.persistence_errors import StartupError
from server.version import VERSION, XSTREAMD_VERSION

USAGE = """Usage: xstreamd [/path/to/xstreamd.conf] [--option value ...]
       xstreamd --help | --version

Options use redis.conf names, e.g. --port 7000 --bind 0.0.0.0 --requirepass secret
--appendonly yes --appendfsync always --dir /var/lib/xstreamd --loglevel notice
"""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["--help"], ["-h"]):
        print(USAGE)
        return 0
    if args[:1] in (["--version"], ["-v"]):
        print(f"xstreamd {XSTREAMD_VERSION} (Redis {VERSION} compatible)")
        return 0
    try:
        config = load_config(args)
    except ConfigError as exc:
        message = str(exc)
        if message.startswith("Reading the configuration file"):
            message = f"\n*** FATAL CONFIG FILE ERROR (xstreamd {XSTREAMD_VERSION}) ***\n{message}"
        print(message, file=sys.stderr)
        return 1
    try:
        os.makedirs(config["dir"], exist_ok=True)
        os.chdir(config["dir"])
    except OSError as exc:
        print(f"Can't chdir to '{config['dir']}': {exc.strerror}", file=sys.stderr)
        return 1
    try:
        server = Server(config)
    except OSError as exc:  # the log file cannot be opened
        print(f"Can't open the log file: {exc.strerror}", file=sys.stderr)
        return 1
    memory_report.note_startup()  # (before any data is loaded, as Redis's initial usage)
    try:
        server.acl.load_at_startup()
    except AclError as exc:
        for line in str(exc).split("\n"):
            server.log.warning(line)
        if server.config["logfile"]:  # (else the log lines went to stdout already)
            print(str(exc), file=sys.stderr)
        return 1
    try:
        attach(server)
    except ValueError as exc:  # e.g. an appendfilename that is a path
        print(f"*** FATAL CONFIG FILE ERROR ***\n{exc}", file=sys.stderr)
        return 1
    pidfile = _write_pidfile(config["pidfile"], server)
    try:
        uvloop.run(server.serve())
    except OSError as exc:  # listening failed (port in use, bad bind address)
        reason = exc.strerror or str(exc)
        server.log.warning(f"Warning: {reason}")
        server.log.warning(f"Failed listening on port {config['port']} (tcp), aborting.")
        print(f"{reason}\nFailed listening on port {config['port']} (tcp), aborting.",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except Exception as exc:  # a start-up failure (e.g. a corrupt AOF) gets a clear message
        if isinstance(exc, StartupError):
            server.log.warning(str(exc))
            print(str(exc), file=sys.stderr)
            return 1
        raise
    finally:
        if pidfile:
            with contextlib.suppress(OSError):
                os.unlink(pidfile)
    return 0


def _write_pidfile(path: str, server: object) -> str:
    """Write our pid to `pidfile` when one is configured; failing to is only a warning."""
    if not path:
        return ""
    try:
        with open(path, "w", encoding="ascii") as fh:
            fh.write(f"{os.getpid()}\n")
    except OSError as exc:
        server.log.warning(f"Failed to write PID file: {exc.strerror}")  # type: ignore[attr-defined]
        return ""
    return path


if __name__ == "__main__":
    sys.exit(main())
