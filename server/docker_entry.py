"""The container's entry point: listen on every interface, keep data in /data, and take the
password from XSTREAMD_REQUIREPASS (so it stays out of `docker inspect`'s command line)."""

from __future__ import annotations

import os
import sys

from server.__main__ import main


def container_args(env: dict[str, str], extra: list[str]) -> list[str]:
    args = ["--bind", "0.0.0.0", "--dir", env.get("XSTREAMD_DIR", "/data")]
    password = env.get("XSTREAMD_REQUIREPASS", "")
    if password:
        args += ["--requirepass", password]
    else:
        # Inside a container the published port is the access control; Redis's official
        # image does the same. Set XSTREAMD_REQUIREPASS to require AUTH.
        args += ["--protected-mode", "no"]
    return args + extra


if __name__ == "__main__":
    sys.exit(main(container_args(dict(os.environ), sys.argv[1:])))
