"""Errors that stop the server at start-up with a clear message (exit code 1)."""


class StartupError(Exception):
    pass
