"""Starting the server: options on the command line and in a config file, clear failures (exit
code 1) on a bad option or a port in use, `python -m server`, the `xstreamd` console script,
signals, and the container entry point's arguments."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import redis

from server.docker_entry import container_args
from tests.helpers import REPO_ROOT, ServerProcess, free_port


def run_server(args: list[str], cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run `python -m server args` to completion (for the start-ups that must fail)."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run([sys.executable, "-m", "server", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


class CustomServer(ServerProcess):
    """A server process started with exactly the given command line."""

    def __init__(self, argv: list[str], port: int, workdir: Path) -> None:
        super().__init__(port=port, workdir=str(workdir))
        self.argv = argv

    def command(self) -> list[str]:
        return self.argv


def config_of(proc: ServerProcess, *names: str) -> dict[str, str]:
    with redis.Redis(host=proc.host, port=proc.port, decode_responses=True) as r:
        return {name: r.config_get(name)[name] for name in names}


def test_command_line_options(tmp_path: Path) -> None:
    proc = ServerProcess(extra_args=["--appendonly", "no", "--hz", "25", "--maxmemory", "2mb",
                                     "--save", "900", "1", "--databases", "4",
                                     "--loglevel", "warning"], workdir=str(tmp_path))
    with proc:
        assert config_of(proc, "hz", "maxmemory", "save", "databases", "loglevel", "port") == {
            "hz": "25", "maxmemory": "2097152", "save": "900 1", "databases": "4",
            "loglevel": "warning", "port": str(proc.port)}
        with redis.Redis(host=proc.host, port=proc.port) as r:
            with pytest.raises(redis.ResponseError, match="DB index is out of range"):
                r.execute_command("SELECT", "4")
            assert r.info("server")["tcp_port"] == proc.port


def test_config_file_then_flags(tmp_path: Path) -> None:
    conf = tmp_path / "xstreamd.conf"
    conf.write_text("# test configuration\n"
                    "hz 15\n"
                    "appendonly no\n"
                    'requirepass "pass word"\n'
                    "timeout 300\n")
    port = free_port()
    # The config file comes first on the command line; flags after it win.
    proc = CustomServer([sys.executable, "-m", "server", str(conf), "--port", str(port),
                         "--dir", str(tmp_path), "--timeout", "60"], port, tmp_path)
    with proc:
        with redis.Redis(host=proc.host, port=port, password="pass word",
                         decode_responses=True) as r:
            assert r.config_get("hz") == {"hz": "15"}
            assert r.config_get("timeout") == {"timeout": "60"}
            assert r.config_get("appendonly") == {"appendonly": "no"}
            assert r.info("server")["config_file"] == str(conf)
        with (redis.Redis(host=proc.host, port=port) as anonymous,
              pytest.raises(redis.AuthenticationError)):
            anonymous.ping()


def test_unknown_option_fails_clearly(tmp_path: Path) -> None:
    done = run_server(["--port", str(free_port()), "--no-such-option", "1"], tmp_path)
    assert done.returncode == 1
    assert "*** FATAL CONFIG FILE ERROR" in done.stderr
    assert "Reading the configuration file, at line 2" in done.stderr
    assert ">>> 'no-such-option 1'" in done.stderr
    assert "Bad directive or wrong number of arguments" in done.stderr


def test_bad_value_fails_clearly(tmp_path: Path) -> None:
    done = run_server(["--port", "99999"], tmp_path)
    assert done.returncode == 1
    assert ">>> 'port 99999'\nargument must be between 0 and 65535 inclusive" in done.stderr
    conf = tmp_path / "bad.conf"
    conf.write_text("port 7000\nappendfsync sometimes\n")
    done = run_server([str(conf)], tmp_path)
    assert done.returncode == 1
    assert "at line 2\n>>> 'appendfsync sometimes'\nargument(s) must be one of" in done.stderr


def test_missing_config_file(tmp_path: Path) -> None:
    done = run_server([str(tmp_path / "absent.conf")], tmp_path)
    assert done.returncode == 1
    assert "Fatal error, can't open config file" in done.stderr
    assert "No such file or directory" in done.stderr


def test_stray_argument(tmp_path: Path) -> None:
    done = run_server(["a.conf", "oops"], tmp_path)
    assert done.returncode == 1
    assert "Invalid option 'oops'" in done.stderr


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = run_server(["--port", str(port), "--appendonly", "no"], tmp_path)
    assert done.returncode == 1
    assert f"Could not create server TCP listening socket 127.0.0.1:{port}" in done.stderr
    assert f"Failed listening on port {port} (tcp), aborting." in done.stderr


def test_help_and_version(tmp_path: Path) -> None:
    done = run_server(["--version"], tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("xstreamd ")
    done = run_server(["--help"], tmp_path)
    assert done.returncode == 0 and "Usage: xstreamd" in done.stdout


def test_sigterm_shuts_down_cleanly(tmp_path: Path) -> None:
    proc = ServerProcess(extra_args=["--appendonly", "no"], workdir=str(tmp_path)).start()
    assert proc.proc is not None
    proc.proc.send_signal(signal.SIGTERM)
    assert proc.proc.wait(timeout=15) == 0
    assert "Ready to accept connections" in proc.read_log()
    proc.stop()


def test_console_script_entry_point(tmp_path: Path) -> None:
    """pyproject's `xstreamd` script points at server.__main__:main; run that target the way
    the generated script does, and the installed script itself when it is on PATH."""
    with open(REPO_ROOT / "pyproject.toml", "rb") as fh:
        scripts = tomllib.load(fh)["project"]["scripts"]
    assert scripts["xstreamd"] == "server.__main__:main"
    port = free_port()
    launcher = ("import sys; from server.__main__ import main; sys.argv[0] = 'xstreamd'; "
                "sys.exit(main())")
    proc = CustomServer([sys.executable, "-c", launcher, "--port", str(port),
                         "--appendonly", "no", "--dir", str(tmp_path)], port, tmp_path)
    with proc, redis.Redis(host=proc.host, port=port) as r:
        assert r.ping() is True
    installed = shutil.which("xstreamd")
    if installed is None:
        pytest.skip("xstreamd is not installed (pip install -e . puts it on PATH)")
    port = free_port()
    proc = CustomServer([installed, "--port", str(port), "--appendonly", "no",
                         "--dir", str(tmp_path)], port, tmp_path)
    with proc, redis.Redis(host=proc.host, port=port) as r:
        assert r.ping() is True


def test_container_arguments() -> None:
    assert container_args({}, []) == [
        "--bind", "0.0.0.0", "--dir", "/data", "--protected-mode", "no"]
    args = container_args({"XSTREAMD_REQUIREPASS": "pw", "XSTREAMD_DIR": "/srv"},
                          ["--appendfsync", "always"])
    assert args == ["--bind", "0.0.0.0", "--dir", "/srv", "--requirepass", "pw",
                    "--appendfsync", "always"]


def test_pidfile_and_logfile(tmp_path: Path) -> None:
    pidfile, logfile = tmp_path / "xs.pid", tmp_path / "xs.log"
    proc = ServerProcess(extra_args=["--appendonly", "no", "--pidfile", str(pidfile),
                                     "--logfile", str(logfile)], workdir=str(tmp_path)).start()
    assert proc.proc is not None
    assert pidfile.read_text() == f"{proc.proc.pid}\n"
    assert "Ready to accept connections" in logfile.read_text()
    assert proc.stop(cleanup=False) == 0
    assert not pidfile.exists()  # removed on a clean exit


def test_unwritable_logfile(tmp_path: Path) -> None:
    done = run_server(["--port", str(free_port()), "--logfile", str(tmp_path / "no" / "x.log")],
                      tmp_path)
    assert done.returncode == 1
    assert "Can't open the log file: No such file or directory" in done.stderr
