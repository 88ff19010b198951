"""The examples in README.md and docs/*.md, run against a real server so that the documents
cannot drift from the software.

Conventions (docs/README.md repeats them for writers):

- A fenced block whose info string is `redis-session` is a redis-cli session: lines that start
  with `> ` are commands, typed as at redis-cli's prompt (redis-cli's quoting rules), and the
  lines after a command are its reply exactly as redis-cli prints it. The whole block is fed
  to one real `redis-cli --no-raw` process (one connection); `redis-session resp3` runs it
  with `-3`. Blank lines, and the `(0.95s)` lines redis-cli adds after a command that
  blocked for a while, are ignored.
- In an expected reply, `<id>` stands for a stream entry ID (`1732230000000-0`), `<int>` for
  an integer and `<any>` for any text on the rest of the line; nothing else varies.
- A fenced block whose info string is `python run` is a Python program run to completion
  against the same server, with every `6379` in it replaced by that server's port; it checks
  its own results with `assert`.
- Each page gets a fresh server with the default options; its blocks run in order, so a block
  may use the keys an earlier block of the same page left.

Shell blocks (```sh) are not run: they start servers, containers and Spark jobs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, ServerProcess

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
PLACEHOLDERS = {"<id>": r"[0-9]+-[0-9]+", "<int>": r"-?[0-9]+", "<any>": r".*"}
_PLACEHOLDER = re.compile("|".join(map(re.escape, PLACEHOLDERS)))
# redis-cli's own line after a command that blocked for a while, e.g. "(0.95s)": not a reply.
_ELAPSED = re.compile(r"\([0-9]+\.[0-9]+s\)")


@dataclass
class Block:
    page: Path
    line: int  # the line of the opening fence, 1-based
    info: str  # the fence's info string: "redis-session", "python run", ...
    body: list[str]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}:{self.line}"


def fenced_blocks(page: Path) -> Iterator[Block]:
    """Every ``` fenced block of a Markdown page, with its info string."""
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^(\s*)(`{3,})(.*)$", lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence, info = opening.groups()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        yield Block(page, start + 1, info.strip(), body)
        i += 1


def blocks_of(page: Path, info: str) -> list[Block]:
    return [block for block in fenced_blocks(page) if block.info == info
            or block.info.startswith(info + " ")]


def split_session(block: Block) -> list[tuple[str, list[str]]]:
    """(command, expected reply lines) for each `> ` line of a redis-session block."""
    steps: list[tuple[str, list[str]]] = []
    for text in block.body:
        if not text.strip():
            continue
        if text.startswith("> "):
            steps.append((text[2:], []))
        elif not steps:
            raise AssertionError(f"{block.where}: a reply before the first '> ' command")
        else:
            steps[-1][1].append(text.rstrip())
    if not steps:
        raise AssertionError(f"{block.where}: a redis-session block without a command")
    return steps


def line_pattern(expected: str) -> re.Pattern[str]:
    parts = []
    last = 0
    for match in _PLACEHOLDER.finditer(expected):
        parts.append(re.escape(expected[last:match.start()]))
        parts.append(PLACEHOLDERS[match.group()])
        last = match.end()
    parts.append(re.escape(expected[last:]))
    return re.compile("".join(parts))


def run_session(server: ServerProcess, block: Block) -> None:
    steps = split_session(block)
    args = ["redis-cli", "-p", str(server.port), "--no-raw"]
    if "resp3" in block.info.split()[1:]:
        args.append("-3")
    commands = "".join(command + "\n" for command, _ in steps)
    done = subprocess.run(args, input=commands, capture_output=True, text=True, timeout=60)
    actual = [text.rstrip() for text in done.stdout.splitlines()
              if text.strip() and not _ELAPSED.fullmatch(text.strip())]
    expected = [text for _, reply in steps for text in reply]
    ok = len(actual) == len(expected) and all(
        line_pattern(want).fullmatch(got) for want, got in zip(expected, actual, strict=True))
    if not ok:
        shown = "\n".join(f"> {command}\n" + "\n".join(reply) for command, reply in steps)
        raise AssertionError(
            f"{block.where}: redis-cli's output differs from the page.\n"
            f"--- the page:\n{shown}\n--- redis-cli printed:\n" + "\n".join(actual)
            + (f"\n--- stderr:\n{done.stderr}" if done.stderr else ""))


def run_python(server: ServerProcess, block: Block, tmp_path: Path) -> None:
    source = "\n".join(block.body) + "\n"
    assert "assert" in source, f"{block.where}: a 'python run' block checks its results"
    script = tmp_path / f"block_{block.line}.py"
    script.write_text(source.replace("6379", str(server.port)), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0, (
        f"{block.where}: the example failed (exit {done.returncode}).\n"
        f"--- stdout:\n{done.stdout}\n--- stderr:\n{done.stderr}")


def checked_blocks(page: Path) -> list[Block]:
    return [block for block in fenced_blocks(page)
            if block.info.split()[:1] == ["redis-session"] or block.info == "python run"]


PAGES_WITH_EXAMPLES = [page for page in PAGES if checked_blocks(page)]


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="redis-cli is not installed")
@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=lambda page: page.name)
def test_page_examples(page: Path, tmp_path: Path) -> None:
    """Every redis-session and `python run` block of the page, in order, on a fresh server."""
    with ServerProcess("xstreamd") as server:
        for block in checked_blocks(page):
            if block.info == "python run":
                run_python(server, block, tmp_path)
            else:
                run_session(server, block)


def test_the_pages_that_show_commands_have_checked_examples() -> None:
    names = {page.relative_to(REPO_ROOT).as_posix() for page in PAGES_WITH_EXAMPLES}
    for required in ("README.md", "docs/streams.md", "docs/configuration.md",
                     "docs/security.md", "docs/scripting.md", "docs/pubsub.md",
                     "docs/operations.md", "docs/persistence.md"):
        assert required in names, f"{required} has no redis-session or 'python run' block"


def test_session_parsing_and_placeholders() -> None:
    block = Block(REPO_ROOT / "README.md", 1, "redis-session",
                  ["> XADD s * f v", "<id>", "", "> XLEN s", "(integer) <int>"])
    assert split_session(block) == [("XADD s * f v", ["<id>"]), ("XLEN s", ["(integer) <int>"])]
    assert line_pattern('"<id>"').fullmatch('"1732230000000-0"')
    assert not line_pattern('"<id>"').fullmatch('"abc"')
    assert line_pattern("(integer) <int>").fullmatch("(integer) -12")
    assert line_pattern("a.b <any>").fullmatch("a.b anything at all")
    assert not line_pattern("a.b").fullmatch("axb")


def test_readme_test_command_is_what_ci_runs() -> None:
    """.ci/run ends with the README's test command, word for word."""
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    command = ci[-1].strip()
    shell_lines = [text.strip() for block in fenced_blocks(REPO_ROOT / "README.md")
                   if block.info == "sh" for text in block.body]
    assert command in shell_lines


def test_every_config_option_is_documented() -> None:
    from server.config import OPTIONS

    page = (REPO_ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [spec.name for spec in OPTIONS if f"`{spec.name}`" not in page]
    assert not missing, f"docs/configuration.md does not describe {missing}"


_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_relative_links_point_at_files(page: Path) -> None:
    broken = []
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{page.name} links to missing files: {broken}"
