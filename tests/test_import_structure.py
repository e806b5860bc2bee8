"""The package's import structure: no import cycles among runetensor's modules at module level, every
import deferred into a function says why, and a missing family module is an error."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "runetensor"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _is_module(name: str) -> bool:
    """A runetensor module or package of this checkout, Python source or compiled."""
    if name in MODULES:
        return True
    path = PKG.parent.joinpath(*name.split("."))
    return any(path.parent.glob(path.name + ".*.so")) or any(path.parent.glob(path.name + ".*.pyd"))


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The runetensor modules an import statement of ``module`` runs: ``from pkg import name`` loads
    ``pkg.name`` when that is a module, else ``pkg``; importing ``a.b.c`` runs the packages ``a.b`` on
    the way, counted unless they contain ``module`` (a package is being imported when its modules are)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".")
            if MODULES[module].name != "__init__.py":
                base.pop()
            base = base[:len(base) - (node.level - 1)]
            src = ".".join(base + ([node.module] if node.module else []))
        else:
            src = node.module or ""
        names = [f"{src}.{a.name}" if _is_module(f"{src}.{a.name}") else src for a in node.names]
    out = []
    for name in names:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            sub = ".".join(parts[:i])
            if sub in MODULES and sub != module and not (module + ".").startswith(sub + "."):
                out.append(sub)
    return [n for n in out if n.split(".")[0] == "runetensor"]


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _module_level_imports(module: str) -> set[str]:
    """What ``module`` imports while it is being imported: statements outside function bodies
    (class bodies and ``try``/``if`` blocks included), ``if TYPE_CHECKING:`` blocks excluded."""
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update(_targets(module, node))
            elif isinstance(node, ast.If) and _is_type_checking(node):
                visit(node.orelse)
                continue
            for field in ("body", "orelse", "finalbody", "handlers"):
                visit(getattr(node, field, []))

    visit(ast.parse(MODULES[module].read_text()).body)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the runetensor modules it imports at module level.  ``runetensor._families`` imports
    the family modules by name (``importlib``): those edges are added from its ``FAMILIES``."""
    graph = {m: _module_level_imports(m) for m in MODULES}
    families = importlib.import_module("runetensor._families").FAMILIES
    graph["runetensor._families"] |= {f"runetensor.{f}" for f in families if f"runetensor.{f}" in MODULES}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def dfs(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph.get(v, ())):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                c = dfs(w)
                if c:
                    return c
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            c = dfs(v)
            if c:
                return c
    return None


def test_the_cycle_finder_finds_a_cycle_and_accepts_a_chain():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_resolves_relative_imports_and_skips_type_checking_blocks():
    graph = import_graph()
    assert "runetensor._dtypes" in graph["runetensor._tensor"]  # from . import _dtypes as D
    assert "runetensor._backend.contract" in graph["runetensor._backend"]  # from .contract import Backend
    assert "runetensor._elementwise" in graph["runetensor._families"]
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._tensor import Tensor\n")
    assert not any(_targets("runetensor._dtypes", n) for n in tree.body[1].orelse)


def test_module_level_imports_have_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle at module level: " + " -> ".join(cycle or [])


def _function_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append(child)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return out


def _has_reason(lines: list[str], node: ast.stmt) -> bool:
    """A comment on the import's line(s) or on the line above it."""
    own = lines[node.lineno - 1:node.end_lineno]
    above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
    return any("#" in line for line in own) or above.startswith("#")


#: folders left out of the reason check (none)
_NOT_CHECKED: tuple[str, ...] = ()


def test_every_import_inside_a_function_says_why():
    missing = []
    for path in MODULES.values():
        if path.relative_to(PKG).parts[0] in _NOT_CHECKED:
            continue
        text = path.read_text()
        lines = text.splitlines()
        for node in _function_imports(ast.parse(text)):
            if not _has_reason(lines, node):
                missing.append(f"{path.relative_to(PKG.parent)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not missing, "imports inside functions without a reason comment:\n" + "\n".join(missing)


def test_the_reason_check_needs_a_comment():
    src = "def f():\n    import os\n\n\ndef g():\n    # deferred: optional\n    import os\n    import re  # why\n"
    lines = src.splitlines()
    got = [_has_reason(lines, n) for n in _function_imports(ast.parse(src))]
    assert got == [False, True, True]


def test_a_missing_family_module_is_an_import_error_naming_it(monkeypatch):
    from runetensor import _families

    monkeypatch.setattr(_families, "FAMILIES", _families.FAMILIES + ("_no_such_family",))
    with pytest.raises(ImportError, match="_no_such_family"):
        _families.load_families({})

