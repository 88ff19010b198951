"""The import structure of server/persistence: no import inside a function body, and no cycle
among its modules (imports under `if TYPE_CHECKING:`, for type hints only, do not count), as
the project's import-linter contracts require."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "server.persistence"
ROOT = Path(__file__).resolve().parents[2] / "server" / "persistence"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if base == PACKAGE:  # from server.persistence import x
        return [f"{PACKAGE}.{alias.name}" for alias in node.names]
    return [base]


def _scan(tree: ast.Module) -> tuple[set[str], list[int]]:
    """(modules imported at run time, lines of imports inside functions)."""
    imports: set[str] = set()
    nested: list[int] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue  # type hints only
            if isinstance(child, ast.Import | ast.ImportFrom):
                if in_function:
                    nested.append(child.lineno)
                imports.update(_imported(child))
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef
                                              | ast.Lambda)
            visit(child, inner)

    visit(tree, False)
    return imports, nested


def _modules() -> dict[str, tuple[set[str], list[int]]]:
    out = {}
    for path in sorted(ROOT.glob("*.py")):
        name = f"{PACKAGE}.{path.stem}" if path.stem != "__init__" else PACKAGE
        out[name] = _scan(ast.parse(path.read_text(), str(path)))
    return out


def test_no_imports_inside_functions() -> None:
    nested = {name: lines for name, (_, lines) in _modules().items() if lines}
    assert nested == {}


def test_the_module_graph_is_acyclic() -> None:
    modules = _modules()
    graph = {name: sorted(i for i in imports if i in modules and i != name)
             for name, (imports, _) in modules.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(name: str) -> None:
        state[name] = 1
        path.append(name)
        for dep in graph[name]:
            if state.get(dep) == 1:
                cycle = path[path.index(dep):] + [dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                walk(dep)
        path.pop()
        state[name] = 2

    for name in graph:
        if name not in state:
            walk(name)
    assert graph[f"{PACKAGE}.manager"]  # (the scan sees the imports at all)
