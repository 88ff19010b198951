"""SHUTDOWN's flags as one int, and the shutdown-on-sigterm / shutdown-on-sigint options that
give a signal's shutdown its flags ("default": none)."""

from __future__ import annotations

SAVE, NOSAVE, NOW, FORCE = 1, 2, 4, 8
_NAMES = (("save", SAVE), ("nosave", NOSAVE), ("now", NOW), ("force", FORCE))
_CHOICES = "default, save, nosave, now, force"
BOTH_SAVE_FLAGS = "shutdown options SAVE and NOSAVE can't be used simultaneously"
FAILED = "ERR Errors trying to SHUTDOWN. Check logs."  # (SHUTDOWN's reply when it fails)


def parse_option(text: str) -> int:
    """'nosave force' -> NOSAVE | FORCE; 'default' adds nothing. ValueError with Redis's
    texts for an unknown word, no word, or both SAVE and NOSAVE."""
    by_name = dict(_NAMES)
    flags = 0
    words = text.lower().split()
    if not words:
        raise ValueError(f"argument(s) must be one of the following: {_CHOICES}")
    for word in words:
        if word != "default" and word not in by_name:
            raise ValueError(f"argument(s) must be one of the following: {_CHOICES}")
        flags |= by_name.get(word, 0)
    if flags & SAVE and flags & NOSAVE:
        raise ValueError(BOTH_SAVE_FLAGS)
    return flags


def render_option(flags: int) -> str:
    """The flags' names in Redis's order ('nosave force'), or 'default'."""
    return " ".join(name for name, bit in _NAMES if flags & bit) or "default"
