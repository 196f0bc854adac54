"""The import architecture of gearag, read from the source with :mod:`ast` (nothing is imported).

Three rules: no import cycle among gearag's modules (imports inside functions and those only for type
checkers count: a cycle they hide is still a cycle of the design), packages import only from their own layer
or below (docs/architecture.md), and ``gearag.store`` is storage only: it imports none of the packages that
build on it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "gearag"

#: What gearag.store must never import: the packages built on top of storage.
ABOVE_STORE = ("graph", "derive", "retrieve", "indexing", "embed", "expand", "agent", "baselines", "sirerag", "llm",
               "cli", "server", "bench")


def module_files() -> dict[str, Path]:
    """Every module of gearag by dotted name (a package is its ``__init__``)."""
    out = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, under_type_checking: bool = False) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement in ``tree`` (at any depth), and whether it runs only for type checkers."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, under_type_checking
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), True)
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), under_type_checking)
        else:
            yield from _imports(node, under_type_checking)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The gearag modules an import statement of ``module`` loads (``from a import b``: ``a.b`` if a module)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: resolve against the importing module's package
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(package + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = set()
    for name in names:
        while name and name not in known:  # `import gearag.x.y` where y is a name: its module
            name = name.rpartition(".")[0]
        if name == ROOT or name.startswith(f"{ROOT}."):
            out.add(name)
    return out


def import_graph(*, with_type_checking: bool) -> dict[str, set[str]]:
    """Module → the gearag modules it imports (``with_type_checking``: also those under TYPE_CHECKING)."""
    files = module_files()
    known = set(files)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node, typing_only in _imports(tree):
            if typing_only and not with_type_checking:
                continue
            edges |= _targets(node, module, path.name == "__init__.py", known)
        edges.discard(module)
        graph[module] = edges
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, None when it has none (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path = [start]
        stack = [iter(sorted(graph.get(start, ())))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_find_cycle_on_a_synthetic_graph() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}) is None  # a diamond is no cycle
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]
    assert find_cycle({"x": {"x"}}) == ["x", "x"]


def test_targets_resolve_modules_and_names() -> None:
    known = {"gearag", "gearag.store", "gearag.store.index", "gearag.graph"}
    tree = ast.parse("from gearag.store import index\nfrom gearag.store.index import Index\nimport gearag.graph\n"
                     "from . import index as i\nfrom gearag.errors import X\n")
    found = [_targets(n, "gearag.store.graph", False, known) for n, _ in _imports(tree)]
    assert found == [{"gearag.store.index"}, {"gearag.store.index"}, {"gearag.graph"}, {"gearag.store.index"},
                     {"gearag"}]


def test_type_checking_imports_are_told_apart() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
                     "def f():\n    import c\n")
    assert [(n.names[0].name, t) for n, t in _imports(tree) if isinstance(n, ast.Import)] == [
        ("a", True), ("b", False), ("c", False)]


def test_no_import_cycle() -> None:
    cycle = find_cycle(import_graph(with_type_checking=True))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_store_imports_nothing_built_on_it() -> None:
    above = tuple(f"{ROOT}.{p}" for p in ABOVE_STORE)
    bad = sorted(f"{module} imports {target}"
                 for module, targets in import_graph(with_type_checking=True).items()
                 if module == f"{ROOT}.store" or module.startswith(f"{ROOT}.store.")
                 for target in targets if any(target == a or target.startswith(f"{a}.") for a in above))
    assert not bad, "gearag.store is storage only:\n" + "\n".join(bad)


#: gearag's packages from the bottom up (docs/architecture.md, "Layers"): a package imports only from its own
#: layer or below.
LAYERS = (("data",), ("store",), ("embed", "extract", "llm"), ("graph",), ("derive",), ("retrieve", "expand"),
          ("agent", "baselines", "sirerag"), ("indexing",), ("cli", "server", "bench", "distributed"))
#: The imports that may climb a layer, each with why (none today; docs/architecture.md would say so too).
CLIMBS: dict[tuple[str, str], str] = {}


def test_packages_import_downward_only() -> None:
    layer = {package: n for n, packages in enumerate(LAYERS) for package in packages}

    def package(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 2 or (SRC / ROOT / parts[-1]).is_dir() else None

    up = sorted(f"{module} -> {target}" for module, targets in import_graph(with_type_checking=True).items()
                for target in targets
                if (a := package(module)) in layer and (b := package(target)) in layer and layer[b] > layer[a]
                and (module, target) not in CLIMBS)
    assert not up, "an import climbs a layer:\n" + "\n".join(up)
    graph = import_graph(with_type_checking=False)
    assert all(t in graph.get(m, ()) for m, t in CLIMBS), "an allowed climb is gone: take it out of CLIMBS"
