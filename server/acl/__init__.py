"""ACL users as Redis 8 keeps them (acl.c): selectors of command, key and channel rules,
passwords, the users' registry, the ACL file, and the permission check every command of a
restricted user passes.

* selector.py: one set of command, key pattern and channel rules (a user's root selector and
  its `(...)` selectors), how rules change it, how it describes itself, what it allows.
* user.py: a user: flags, password hashes and selectors; the SETUSER rules on them.
* registry.py: the users by name, the default user, authentication, the permission check
  over all of a user's selectors, ACL LOAD / SAVE and the config file's `user` lines.
"""
