"""Lua scripting as Redis 7+/8 runs it: EVAL, EVALSHA, their _RO forms and SCRIPT.

* lua_env.py: the Lua 5.1 interpreter (lupa) set up as Redis sets up its own: the allowed
  globals only, locked; the `redis` API; `bit` and `cjson`; Redis's math.random.
* lua_libs.py: the Python side of `bit`, `cjson` and the random generator.
* convert.py: Redis replies -> Lua values (as redis.call returns them), and Lua values -> the
  script's reply.
* engine.py: the script cache, running a script, and running commands for it.
"""
