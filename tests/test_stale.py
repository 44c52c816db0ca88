"""``python -m analysis_utils stale`` on a hand-made git repository: a two-module package, one
notebook that imports one module (which imports the other lazily), an unrelated module, the
data manifest and a provenance record naming the first commit."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from analysis_utils.publish import imports, stale

NOTEBOOK = """# %%
# A notebook.

# %% tags=["parameters"]
seed = 0
n = 10

# %%
from analysis_utils import used

used.go(n)
"""
USED = '''"""Used by the notebook."""


def go(n):
    from .helper import twice  # lazy: still an input

    return twice(n)
'''
HELPER = '''"""Imported by ``used`` inside a function."""


def twice(n):
    return 2 * n
'''
UNRELATED = "def other():\n    return 1\n"
PROFILES = {"default": {}, "small": {"01": {"n": 2}}}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


def _provenance(repo: Path, commit: str | None, profile: str = "default",
                parameters: dict | None = None, sub: str = "") -> None:
    folder = repo / "results" / sub
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "01_provenance.json").write_text(json.dumps({
        "notebook": "01", "profile": profile, "git_commit": commit,
        "parameters": parameters if parameters is not None else {"seed": 0, "n": 10}}))


@pytest.fixture
def repo(tmp_path):
    """A git repository rendered at its first commit; returns (path, that commit)."""
    root = tmp_path / "repo"
    pkg = root / "analysis_utils"
    (pkg / "data").mkdir(parents=True)
    (root / "notebooks").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "used.py").write_text(USED)
    (pkg / "helper.py").write_text(HELPER)
    (pkg / "unrelated.py").write_text(UNRELATED)
    (pkg / "data" / "__init__.py").write_text("")
    (pkg / "data" / "data_manifest.json").write_text('{"files": []}\n')
    (root / "notebooks" / "01_demo.py").write_text(NOTEBOOK)
    _git(root, "init", "-q")
    commit = _commit(root, "first")
    _provenance(root, commit)
    _commit(root, "rendered")
    return root, commit


def _only(root: Path) -> stale.Status:
    (status,) = stale.check(root, profiles=PROFILES)
    return status


def test_inputs_follow_imports_transitively_and_leave_out_the_rest(repo):
    root, _ = repo
    assert stale.notebook_inputs(root / "notebooks" / "01_demo.py", root) == [
        "analysis_utils/__init__.py", "analysis_utils/data/data_manifest.json",
        "analysis_utils/helper.py", "analysis_utils/used.py", "notebooks/01_demo.py"]


def test_clean_when_nothing_changed(repo):
    root, commit = repo
    status = _only(root)
    assert not status.stale, status.line()
    assert status.line() == f"notebooks/01_demo.ipynb (default, rendered at {commit[:7]}): current"


def test_a_module_imported_lazily_changing_makes_it_stale(repo):
    root, _ = repo
    (root / "analysis_utils" / "helper.py").write_text(HELPER.replace("2 * n", "3 * n"))
    status = _only(root)  # uncommitted: the working tree is what would render now
    assert status.changed == ["analysis_utils/helper.py"]
    _commit(root, "helper triples")
    assert _only(root).changed == ["analysis_utils/helper.py"]
    assert "stale: changed since: analysis_utils/helper.py" in _only(root).line()


def test_comments_and_docstrings_do_not_count_but_code_does(repo):
    root, _ = repo
    (root / "analysis_utils" / "used.py").write_text(
        USED.replace('"""Used by the notebook."""', '"""Reworded."""\n# a comment'))
    (root / "notebooks" / "01_demo.py").write_text(NOTEBOOK.replace("# A notebook.",
                                                                    "# Narrative, reworded."))
    assert not _only(root).stale
    (root / "notebooks" / "01_demo.py").write_text(NOTEBOOK.replace("used.go(n)",
                                                                    "used.go(n + 1)"))
    assert _only(root).changed == ["notebooks/01_demo.py"]


def test_unrelated_module_and_other_files_do_not_count(repo):
    root, _ = repo
    (root / "analysis_utils" / "unrelated.py").write_text("def other():\n    return 2\n")
    (root / "README.md").write_text("changed\n")
    assert not _only(root).stale


def test_manifest_and_new_imports(repo):
    root, _ = repo
    (root / "analysis_utils" / "data" / "data_manifest.json").write_text('{"files": [1]}\n')
    (root / "analysis_utils" / "extra.py").write_text("X = 1\n")
    (root / "analysis_utils" / "helper.py").write_text("from .extra import X\n" + HELPER)
    assert _only(root).changed == ["analysis_utils/data/data_manifest.json",
                                   "analysis_utils/extra.py (new)", "analysis_utils/helper.py"]


def test_profile_and_parameters(repo):
    root, commit = repo
    _provenance(root, commit, profile="small", parameters={"seed": 0, "n": 10})
    assert _only(root).parameters == ["n 10 -> 2"]
    _provenance(root, commit, profile="small", parameters={"seed": 0, "n": 2})
    assert not _only(root).stale
    _provenance(root, commit, profile="interactive")
    assert "not a profile" in _only(root).problem


def test_a_source_without_its_parameters_cell_is_reported(repo):
    root, _ = repo
    (root / "notebooks" / "01_demo.py").write_text(NOTEBOOK.replace(' tags=["parameters"]', ""))
    assert "expected exactly one cell tagged 'parameters'" in _only(root).problem


def test_commits_that_cannot_vouch(repo):
    root, commit = repo
    _provenance(root, commit + "-dirty")
    assert _only(root).problem == "rendered from uncommitted changes"
    _provenance(root, "0" * 40)
    assert "not in this clone" in _only(root).problem
    _provenance(root, None)
    assert _only(root).problem == "no commit recorded"


def test_subfolder_profiles_name_their_rendered_notebook(repo):
    root, commit = repo
    _provenance(root, commit, sub="base")
    names = [s.notebook for s in stale.check(root, profiles=PROFILES)]
    assert names == ["notebooks/01_demo.ipynb", "notebooks/base/01_demo.ipynb"]


def test_cli_exit_status_and_listing(repo, capsys):
    root, _ = repo
    assert stale.cli(["--repo", str(root)]) == 0
    assert "stale: none of 1 rendered notebooks" in capsys.readouterr().out
    (root / "analysis_utils" / "used.py").write_text(USED.replace("twice(n)", "twice(n) + 1"))
    assert stale.cli(["--repo", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("stale: changed since: analysis_utils/used.py")
    assert out[-1].startswith("stale: 1 of 1 rendered notebooks")


def test_cli_outside_a_git_clone_says_how_to_fix(tmp_path, capsys):
    (tmp_path / "analysis_utils").mkdir()
    _provenance(tmp_path, "abc")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_demo.py").write_text(NOTEBOOK)
    assert stale.cli(["--repo", str(tmp_path)]) == 2
    assert "run inside a git clone" in capsys.readouterr().err


def test_the_graph_resolves_relative_and_from_imports():
    modules = {n: Path(n) for n in ("p", "p.a", "p.a.b", "p.c")}
    found = imports.imports_of("from . import b\nfrom ..c import x\n", modules, "p.a.m")
    assert found == {"p", "p.a", "p.a.b", "p.c"}
    assert imports.imports_of("import p.a.b as q\n", modules) == {"p", "p.a", "p.a.b"}
    assert imports.imports_of("from .b import x\n", modules, "p.a", is_package=True) == {
        "p", "p.a.b"}


def test_the_claims_registry_is_an_input_of_notebooks_that_import_claims(repo):
    """The ledger reads its quote column from ``claims/registry.toml``: a notebook whose import
    closure holds ``analysis_utils.claims`` is stale when the registry's bytes change (a
    comment included: it is data, not code); one that does not import it is not."""
    root, _ = repo
    claims_dir = root / "analysis_utils" / "claims"
    claims_dir.mkdir()
    (claims_dir / "__init__.py").write_text("REGISTRY = 'registry.toml'\n")
    (claims_dir / "registry.toml").write_text('[[claim]]\nid = "a"\n')
    commit = _commit(root, "a registry nobody imports")
    _provenance(root, commit)
    _commit(root, "rendered")
    notebook = root / "notebooks" / "01_demo.py"
    assert "analysis_utils/claims/registry.toml" not in stale.notebook_inputs(notebook, root)
    (claims_dir / "registry.toml").write_text('[[claim]]\nid = "b"\n')
    assert not _only(root).stale
    # the helper, imported lazily by the notebook's module, now imports the registry's package
    (root / "analysis_utils" / "helper.py").write_text("from . import claims\n" + HELPER)
    commit = _commit(root, "helper reads the registry")
    _provenance(root, commit)
    _commit(root, "rendered again")
    assert "analysis_utils/claims/registry.toml" in stale.notebook_inputs(notebook, root)
    assert not _only(root).stale
    (claims_dir / "registry.toml").write_text('# a comment\n[[claim]]\nid = "b"\n')
    assert _only(root).changed == ["analysis_utils/claims/registry.toml"]


def test_a_notebook_that_reads_others_tables_is_stale_once_one_is_rendered_after_it(
        repo, monkeypatch):
    """08 sets every model's saved tables side by side: rendered before 05, it shows 05's older
    tables (2 Dec 2026: MRPC as Diagonal's highest task where 05's table now gives RTE)."""
    root, _ = repo
    monkeypatch.setitem(stale.READS_RESULTS_OF, "02", ("01",))
    (root / "notebooks" / "02_reader.py").write_text(NOTEBOOK)

    def render(nb: str, commit: str, sub: str = ""):
        folder = root / "results" / sub
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{nb}_provenance.json").write_text(json.dumps({
            "notebook": nb, "profile": "default", "git_commit": commit,
            "parameters": {"seed": 0, "n": 10}}))

    second = _commit(root, "a reader notebook")
    render("02", second)  # the reader after 01 (rendered at the first commit): current
    _commit(root, "02 rendered")
    status = {s.notebook: s for s in stale.check(root, profiles=PROFILES)}
    assert not status["notebooks/02_reader.ipynb"].stale
    (root / "notes.txt").write_text("a later commit")
    third = _commit(root, "later")
    render("01", third, sub="base")  # 01 rendered again, in another folder, after the reader
    _commit(root, "01 rendered again")
    reader = {s.notebook: s for s in stale.check(root, profiles=PROFILES)}[
        "notebooks/02_reader.ipynb"]
    assert reader.changed == [f"results/base/01_provenance.json (rendered after it, at "
                              f"{third[:7]}: its tables are newer)"]
    render("02", third)  # rendered again at that commit: current again
    _commit(root, "02 rendered again")
    reader = {s.notebook: s for s in stale.check(root, profiles=PROFILES)}[
        "notebooks/02_reader.ipynb"]
    assert not reader.stale, reader.line()
