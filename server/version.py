"""The versions the server reports: its own, and the Redis version whose behaviour it follows
(clients gate features on the latter: INFO's redis_version, HELLO, Lua's redis.REDIS_VERSION)."""

XSTREAMD_VERSION = "0.1.0"
VERSION = "8.10.0"
