"""An ACL user: on/off, password hashes, and its selectors (acl.c's user and ACLSetUser)."""

from __future__ import annotations

import hashlib
import hmac

from server.acl.selector import AclRuleError, Selector

BAD_HASH = ("The password hash must be exactly 64 characters and contain only lowercase "
            "hexadecimal characters")
NO_SUCH_PASSWORD = "The password you are trying to remove from the user does not exist"
_HEX = frozenset(b"0123456789abcdef")


def hash_password(password: bytes) -> bytes:
    """ACLHashPassword: SHA-256, as 64 lowercase hex digits."""
    return hashlib.sha256(password).hexdigest().encode()


def _checked_hash(text: bytes) -> bytes:
    if len(text) != 64 or not _HEX.issuperset(text):
        raise AclRuleError(BAD_HASH)
    return text


class User:
    __slots__ = ("name", "enabled", "nopass", "skip_sanitize", "passwords", "selectors")

    def __init__(self, name: bytes, all_channels: bool = False) -> None:
        self.name = name
        self.enabled = False  # a new user is off
        self.nopass = False
        # RESTORE payload sanitization: Redis 7.2+ flags every new user sanitize-payload.
        self.skip_sanitize = False
        self.passwords: list[bytes] = []  # SHA-256 hex digests, in the order added
        self.selectors = [Selector(root=True, all_channels=all_channels)]

    @property
    def root(self) -> Selector:
        return self.selectors[0]

    def copy(self) -> User:
        other = User(self.name)
        other.enabled = self.enabled
        other.nopass = self.nopass
        other.skip_sanitize = self.skip_sanitize
        other.passwords = list(self.passwords)
        other.selectors = [selector.copy() for selector in self.selectors]
        return other

    def assign(self, other: User) -> None:
        """ACLCopyUser: take other's rules (the user object stays, as clients refer to it)."""
        self.enabled = other.enabled
        self.nopass = other.nopass
        self.skip_sanitize = other.skip_sanitize
        self.passwords = list(other.passwords)
        self.selectors = [selector.copy() for selector in other.selectors]

    # -- rules ----------------------------------------------------------------------------------
    def apply(self, op: bytes, all_channels_default: bool = False) -> None:
        """ACLSetUser: one rule; AclRuleError when it cannot apply. all_channels_default is
        acl-pubsub-default (a reset user and a new selector start with it)."""
        if not op:
            return
        lowered = op.lower()
        if lowered == b"on":
            self.enabled = True
        elif lowered == b"off":
            self.enabled = False
        elif lowered == b"skip-sanitize-payload":
            self.skip_sanitize = True
        elif lowered == b"sanitize-payload":
            self.skip_sanitize = False
        elif lowered == b"nopass":
            self.nopass = True
            self.passwords.clear()
        elif lowered == b"resetpass":
            self.nopass = False
            self.passwords.clear()
        elif op[:1] in (b">", b"#"):
            digest = hash_password(op[1:]) if op[:1] == b">" else _checked_hash(op[1:])
            if digest not in self.passwords:
                self.passwords.append(digest)
            self.nopass = False
        elif op[:1] in (b"<", b"!"):
            digest = hash_password(op[1:]) if op[:1] == b"<" else _checked_hash(op[1:])
            if digest not in self.passwords:
                raise AclRuleError(NO_SUCH_PASSWORD)
            self.passwords.remove(digest)
        elif op[:1] == b"(" and op[-1:] == b")":
            selector = Selector(all_channels=all_channels_default)
            for rule in op[1:-1].split():
                selector.apply(rule)
            self.selectors.append(selector)
        elif lowered == b"clearselectors":
            del self.selectors[1:]
        elif lowered == b"reset":
            self.apply(b"resetpass")
            self.apply(b"resetkeys")
            self.apply(b"resetchannels")
            if all_channels_default:
                self.apply(b"allchannels")
            self.apply(b"off")
            self.apply(b"sanitize-payload")
            self.apply(b"clearselectors")
            self.apply(b"-@all")
        else:
            self.root.apply(op)

    # -- authentication -------------------------------------------------------------------------
    def password_matches(self, password: bytes) -> bool:
        if self.nopass:
            return True
        digest = hash_password(password)
        # (every hash compared, in constant time, as Redis's time_independent_strcmp)
        return any([hmac.compare_digest(digest, stored) for stored in self.passwords])

    # -- description ----------------------------------------------------------------------------
    def flags(self) -> list[bytes]:
        """The user's flags in ACLUserFlags order."""
        flags = [b"on" if self.enabled else b"off"]
        if self.nopass:
            flags.append(b"nopass")
        flags.append(b"skip-sanitize-payload" if self.skip_sanitize else b"sanitize-payload")
        return flags

    def describe(self) -> bytes:
        """ACLDescribeUser: the rules that rebuild the user (ACL LIST, the ACL file)."""
        parts = [*self.flags(), *(b"#" + digest for digest in self.passwords),
                 self.root.describe()]
        text = b" ".join(parts)
        for selector in self.selectors[1:]:
            text += b" (" + selector.describe() + b")"
        return text

    def grants_everything(self) -> bool:
        return any(selector.grants_everything() for selector in self.selectors)
