"""The package's layering (``analysis_utils/publish/imports.py``: base < engine < data < training <
analyses < plotting < driver): no module imports a higher layer, and no import goes round."""

from __future__ import annotations

import pytest

from analysis_utils.publish import imports


def test_no_upward_import():
    upward = imports.upward_imports(imports.import_graph())
    assert not upward, (
        "modules importing a higher layer (move what both need down, see the architecture "
        "page of the book, book/methods/architecture.md): " + "; ".join(f"{a} -> {b}" for a, b in upward))


def test_no_import_cycle():
    found = imports.cycles(imports.import_graph())
    assert not found, "import cycles (lazy imports count): " + "; ".join(
        " <-> ".join(c) for c in found)


def test_every_top_level_module_has_a_layer():
    for name in imports.import_graph():
        imports.layer_of(name)  # KeyError naming the module and where to place it


def test_the_checks_find_what_they_look_for():
    graph = {"analysis_utils.data.labels": {"analysis_utils.analyses.maptypes"},
             "analysis_utils.analyses.maptypes": {"analysis_utils.data.labels",
                                                  "analysis_utils.analyses"},
             "analysis_utils.publish.report": {"analysis_utils.publish.compare"},
             "analysis_utils.publish.compare": {"analysis_utils.publish.report", "analysis_utils.paths"}}
    assert imports.upward_imports(graph) == [("analysis_utils.data.labels",
                                              "analysis_utils.analyses.maptypes")]
    assert imports.cycles(graph) == [
        ["analysis_utils.analyses.maptypes", "analysis_utils.data.labels"],
        ["analysis_utils.publish.compare", "analysis_utils.publish.report"]]


def test_moved_modules_are_thin_re_exports_that_notebooks_still_need():
    """A re-export kept at an old path (``imports.MOVED``) imports only the module it moved to,
    and lives only while some notebook source or package module still imports the old path."""
    from analysis_utils import paths

    graph = imports.import_graph()
    modules = imports.package_modules(paths.REPO_ROOT)
    notebooks = {p.name: imports.imports_of(p.read_text(), modules)
                 for p in sorted(paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.py"))}
    for old, new in imports.MOVED.items():
        assert old in graph and new in graph, (old, new)
        parents = {n for n in graph if new.startswith(n + ".")}
        assert graph[old] <= {new} | parents, (
            f"{old} re-exports {new} and should import nothing else: {sorted(graph[old])}")
        users = [name for name, found in notebooks.items() if old in found] + [
            name for name, found in graph.items() if old in found and name != old]
        assert users, (f"nothing imports {old} any more: delete the re-export "
                       f"{modules[old]} and its entry in MOVED ({imports.__file__})")


def test_the_top_level_holds_at_most_nine_modules():
    """The package's top level keeps what every layer uses (and, until the next full
    re-render, what every notebook imports); the publishing code lives in ``publish/``."""
    from analysis_utils import paths

    found = imports.top_level_modules(paths.REPO_ROOT)
    assert len(found) <= imports.MAX_TOP_LEVEL, (
        f"{len(found)} top-level modules, at most {imports.MAX_TOP_LEVEL}: {found}; put new "
        "code in the subpackage of its layer (publish/ for what runs or publishes outputs)")
    for name in imports.PENDING:
        assert (paths.REPO_ROOT / (name.replace(".", "/") + ".py")).is_file(), (
            f"{name} has moved: delete its entry in PENDING ({imports.__file__})")


def _reaches(graph: dict[str, set[str]], start: str, target: str) -> bool:
    """Whether ``start`` imports a module of ``target`` (the package or below), directly or
    through other modules."""
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt == target or nxt.startswith(target + "."):
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


@pytest.mark.parametrize("low, high", [
    ("analysis_utils.claims", "analysis_utils.ledger"),            # the registry below its judge
    ("analysis_utils.analyses.crossmodel", "analysis_utils.ledger"),
    ("analysis_utils.publish.compare", "analysis_utils.runplan"),
])
def test_no_import_runs_back_up(low, high):
    """Issue 41: the three imports that ran back up no longer do, not even through another
    module (the registry's report moved to ``python -m analysis_utils claims``)."""
    graph = imports.import_graph()
    starts = [m for m in graph if m == low or m.startswith(low + ".")]
    assert starts
    assert [m for m in starts if _reaches(graph, m, high)] == []
