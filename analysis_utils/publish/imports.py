"""The package's import graph, read statically (``ast``, nothing is imported), and its layers.

Two users: ``python -m analysis_utils stale`` (:mod:`analysis_utils.publish.stale`) follows a notebook's
imports into the package to know which modules its outputs depend on, and the layering test
(``tests/test_imports.py``) checks that no module imports upward or round in a cycle.

Every ``import`` statement counts, at module level or inside a function (a lazy import still
runs when its function does), and importing ``a.b.c`` also runs ``a/__init__.py`` and
``a/b/__init__.py``. Only modules of the package are followed; the standard library and
third-party packages are left out.

Layers, lowest first (:data:`LAYERS`); a module may import its own layer and the ones below:

0. ``base``: ``paths``, ``heads``, ``papers``, ``profiles``, ``params`` (no package imports);
1. ``engine``: models, attention extraction and its store, token -> word maps, interventions;
2. ``data``: checksummed gold data and one reader per corpus;
3. ``training``: the seeded loop and fine-tuning;
4. ``analyses``: pure functions over attention arrays, one module per paper section;
5. ``plotting``: figures;
6. ``driver``: ``publish/`` (``notebook``, ``report``, ``compare``: what every notebook
   imports; the papermill driver ``pipeline``, the ledger stage ``ledger_stage``, ``stale``,
   ``imports``, ``links``, ``readme``, ``atlas``, ``book``: what runs, judges, checks and
   publishes the outputs); ``__main__``,
   the command line; and ``runplan/``, the run
   plan that executes fine-tunes (training) ahead of the notebooks, on Ray or in-process, and
   reads the notebooks' parameters as ``publish.pipeline`` does.

The claims ledger (``ledger/``) sits in the ``analyses`` layer: it judges their results.

>>> graph = import_graph()                                      # doctest: +SKIP
>>> sorted(graph["analysis_utils.analyses.syntax"])             # doctest: +SKIP
['analysis_utils.engine.wordmaps', 'analysis_utils.heads', 'analysis_utils.papers']
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

PACKAGE = "analysis_utils"

#: Layer names, lowest first; a module may import modules of its own layer or a lower one.
LAYERS: tuple[str, ...] = ("base", "engine", "data", "training", "analyses", "plotting",
                           "driver")
#: Top-level modules and subpackages by layer (a subpackage named after a layer is that layer:
#: ``analysis_utils.data.*`` is ``data``). One missing here is an error, so a new one must be
#: placed.
TOP_LEVEL: dict[str, str] = {
    "__init__": "base", "paths": "base", "heads": "base", "papers": "base",
    "profiles": "base", "params": "base",
    "__main__": "driver", "runplan": "driver", "publish": "driver",
    # subpackages outside the layer folders: the claims ledger judges analyses' results
    "ledger": "analyses", "claims": "analyses",
}
#: Old module -> the module it moved to, for thin re-exports kept at an old import path while
#: a notebook or another module still imports it: the only upward imports
#: :func:`upward_imports` allows. ``tests/test_imports.py`` fails once nothing imports the old
#: path (delete it then).
MOVED: dict[str, str] = {}


#: Top-level modules bound for ``publish/`` that wait for other work to land first, with the
#: reason; ``tests/test_imports.py`` counts the top level without them (at most nine modules
#: besides ``__init__`` and ``__main__``) and fails when one has moved but is still listed.
PENDING: dict[str, str] = {}
#: The most top-level modules (besides ``__init__``, ``__main__``, :data:`MOVED` re-exports and
#: :data:`PENDING` moves): what every layer uses, and what notebooks import until re-rendered.
MAX_TOP_LEVEL = 9


def top_level_modules(root: str | Path, package: str = PACKAGE) -> list[str]:
    """The dotted names of the ``.py`` modules directly in ``package`` (no subpackages), less
    ``__init__``, ``__main__``, :data:`MOVED` re-exports and :data:`PENDING` moves."""
    skip = {f"{package}.__main__"} | MOVED.keys() | PENDING.keys()
    return sorted(f"{package}.{p.stem}" for p in (Path(root) / package).glob("*.py")
                  if p.stem != "__init__" and f"{package}.{p.stem}" not in skip)


def package_modules(root: str | Path, package: str = PACKAGE) -> dict[str, Path]:
    """``{dotted module name: file}`` for every ``.py`` file of ``package`` under ``root`` (the
    repository); a package is named by its folder (``analysis_utils.data``) and maps to its
    ``__init__.py``."""
    root = Path(root)
    out: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _with_parents(name: str, modules: dict[str, Path]) -> set[str]:
    """``name`` and every package above it that is a module of the graph."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & modules.keys()


def _resolve_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module a ``from X import ...`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(source: str, modules: dict[str, Path], module: str = "",
               is_package: bool = False, filename: str = "<source>") -> set[str]:
    """The package modules that running ``source`` imports directly (any import statement,
    at any depth), each with the packages above it.

    source: Python text; modules: :func:`package_modules`; module: the dotted name of the
    module ``source`` is (for relative imports; ``""`` for a notebook); is_package: whether it
    is an ``__init__.py``.
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found |= _with_parents(alias.name, modules)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve_from(node, module, is_package)
            found |= _with_parents(target, modules)
            for alias in node.names:  # ``from pkg import submodule``
                if f"{target}.{alias.name}" in modules:
                    found |= _with_parents(f"{target}.{alias.name}", modules)
    found.discard(module)
    return found


def import_graph(root: str | Path | None = None, package: str = PACKAGE) -> dict[str, set[str]]:
    """``{module: the package modules it imports directly}`` for every module of ``package``
    under ``root`` (default: this repository)."""
    if root is None:
        from .. import paths

        root = paths.REPO_ROOT
    modules = package_modules(root, package)
    return {name: imports_of(path.read_text(), modules, name, path.name == "__init__.py",
                             str(path))
            for name, path in modules.items()}


def closure(start: Iterable[str], graph: dict[str, set[str]]) -> set[str]:
    """Every module reachable from ``start`` in ``graph`` (``start`` included)."""
    seen, todo = set(), list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return seen


def layer_of(module: str, package: str = PACKAGE) -> str:
    """The layer of a dotted module name (:data:`LAYERS`); a top-level module that
    :data:`TOP_LEVEL` does not place raises ``KeyError`` saying where to add it."""
    parts = module.split(".")
    if parts[0] != package:
        raise ValueError(f"{module} is not a module of {package}")
    if len(parts) == 1:
        return TOP_LEVEL["__init__"]
    if parts[1] in LAYERS:
        return parts[1]
    if parts[1] not in TOP_LEVEL:
        raise KeyError(f"{package}.{parts[1]} has no layer: add it to TOP_LEVEL in "
                       f"{package}/imports.py (one of {', '.join(LAYERS)})")
    return TOP_LEVEL[parts[1]]


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """``(importer, imported)`` pairs where the imported module sits in a higher layer. A
    package ``__init__`` imported only as the parent of a submodule is not an edge here, nor is
    a re-export at an old path of the module it moved to (:data:`MOVED`)."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    out = []
    for src, targets in sorted(graph.items()):
        for dst in sorted(targets):
            if dst == PACKAGE or dst + "." in src + ".":  # parents run first, by import rules
                continue
            if (MOVED.get(src, "") + ".").startswith(dst + "."):  # moved module, its parents
                continue
            if rank[layer_of(dst)] > rank[layer_of(src)]:
                out.append((src, dst))
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: each strongly connected set of two or more modules (or
    one importing itself), sorted. Parent packages are left out as in :func:`upward_imports`."""
    edges = {s: {d for d in ds if d != PACKAGE and d + "." not in s + "."}
             for s, ds in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; the graph has ~100 nodes
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)
