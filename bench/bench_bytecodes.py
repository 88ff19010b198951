"""Bytecodes CPython runs per command, by function (not a test).

Deterministic where CPU time on this machine is not: sys.settrace's opcode events count
what the interpreter executes for a command sent through the real Server and Connection
(bench_inprocess.py's fake transport), C calls counting as the one opcode that makes them.

    python bench/bench_bytecodes.py "XADD s * f v" [--per-read 16] [--lines FUNCTION]
"""

from __future__ import annotations

import argparse
import collections
import linecache
import os
import sys
from types import FrameType
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_inprocess import encode, make_server  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", help='the command, split on spaces, e.g. "XADD s * f v"')
    parser.add_argument("--per-read", type=int, default=1, help="commands per socket read")
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--lines", default="", help="also show this function's lines")
    args = parser.parse_args()
    server, conns = make_server(4)
    chunk = encode([a.encode() for a in args.command.split()]) * args.per_read
    for i in range(300):  # warm up: streams exist, caches are filled
        conns[i % 4].data_received(chunk)
        server.before_sleep()
    by_function: collections.Counter[tuple[str, str]] = collections.Counter()
    by_line: collections.Counter[tuple[str, int]] = collections.Counter()

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        code = frame.f_code
        where = (os.path.basename(code.co_filename), code.co_name)

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                by_function[where] += 1
                if code.co_name == args.lines:
                    by_line[(code.co_filename, frame.f_lineno or 0)] += 1
            return local

        return local

    sys.settrace(tracer)
    for i in range(args.reads):
        conns[i % 4].data_received(chunk)
        if i % 4 == 3:
            server.before_sleep()
    sys.settrace(None)
    commands = args.reads * args.per_read
    print(f"{sum(by_function.values()) / commands:.0f} bytecodes per command")
    for (filename, name), count in by_function.most_common(20):
        print(f"{count / commands:8.1f}  {filename}:{name}")
    for (filename, lineno), count in sorted(by_line.items()):
        text = linecache.getline(filename, lineno).rstrip()
        print(f"{count / commands:8.1f}  {lineno:5d} {text}")


if __name__ == "__main__":
    main()
