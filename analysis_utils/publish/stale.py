"""Which rendered notebooks are stale: ``python -m analysis_utils stale``.

Each rendered notebook has a provenance record, ``results/NN_provenance.json`` (a profile
with its own subfolder: ``results/<sub>/NN_provenance.json``), naming the git commit it was
rendered at and the profile and parameters it ran with. A notebook is *stale* when what
would render it now differs from what rendered it then:

- its source ``notebooks/NN_*.py`` or any module of the package it imports, transitively
  (:mod:`analysis_utils.imports`; lazy imports inside functions included), or the data
  manifest ``analysis_utils/data/data_manifest.json``, or a data file a module it imports reads
  (:data:`MODULE_DATA`: the claims registry ``analysis_utils/claims/registry.toml``, read
  through the ledger's ``quote`` column), differs between that commit and the working tree. Python files are compared as code: comments, docstrings and layout do not
  count (a notebook's Markdown cells are comments of its percent-format source, and
  jupytext re-syncs them without running anything); other files byte for byte;
- the parameters it ran with are not those its profile gives now (the notebook's parameters
  cell with :mod:`analysis_utils.profiles`' overrides): a changed profile or default;
- or its commit cannot vouch for it: none recorded, not in this clone, or ``-dirty`` (rendered
  from uncommitted changes);
- or, for a notebook that reads other notebooks' saved tables (:data:`READS_RESULTS_OF`: 08,
  which sets every model's results side by side), one of those was rendered after it: its
  provenance's commit is neither its own nor an ancestor of it (in any results folder), so the
  tables it shows were made from older ones (found on 2 Dec 2026: 08's map-type table named
  MRPC as Diagonal's highest task, while 05, rendered after it, gives RTE).

The ledger stage (``python -m analysis_utils ledger``, :mod:`.ledger_stage`) is judged the
same way from ``results/ledger_provenance.json``: its code (the stage module and everything
it imports, the claims registry among them) against the commit it records, and, since it reads
the notebooks' outputs, the digest of every ``NN_provenance.json`` it read against the files
now: a notebook re-rendered after it makes the stage stale. No notebook imports the ledger,
so a change to a verdict rule makes only the stage stale.

``profiles.py`` itself is judged by the parameters, not as a file, so a change to one
profile does not mark the other profiles' notebooks stale.

The command prints one line per stale notebook with what changed, then a summary line, and
exits 1 if any notebook is stale (``make test`` prints the listing without failing on it).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import imports

MANIFEST = "analysis_utils/data/data_manifest.json"
#: Data files a package module reads, relative to the package folder: an input of every
#: notebook whose import closure holds the module (module relative to the package too).
MODULE_DATA: dict[str, tuple[str, ...]] = {"claims": ("claims/registry.toml",)}
#: Judged through the recorded parameters instead (see the module docstring).
NOT_AS_FILES = ("analysis_utils/profiles.py",)
#: Notebooks that read other notebooks' saved tables, and which ones: a render of one of those
#: after theirs leaves their tables out of date.
READS_RESULTS_OF: dict[str, tuple[str, ...]] = {
    "08": ("01", "02", "03", "04", "05", "06", "07")}


@dataclass
class Status:
    """One rendered notebook: where its provenance is, the commit and profile it records, the
    input files that changed since (repository-relative), parameter differences and any reason
    its commit cannot be trusted."""

    provenance: str
    notebook: str
    commit: str | None
    profile: str
    changed: list[str] = field(default_factory=list)
    parameters: list[str] = field(default_factory=list)
    problem: str | None = None

    @property
    def stale(self) -> bool:
        return bool(self.changed or self.parameters or self.problem)

    def line(self) -> str:
        """``notebooks/02_syntax_heads.ipynb (default, rendered at f24c0d6): stale: a.py, b.py``"""
        short = (self.commit or "no commit")[:7] + ("-dirty" if str(self.commit).endswith(
            "-dirty") else "")
        head = f"{self.notebook} ({self.profile}, rendered at {short})"
        if not self.stale:
            return f"{head}: current"
        why = ([self.problem] if self.problem else []) + \
            ([f"changed since: {', '.join(self.changed)}"] if self.changed else []) + \
            ([f"parameters differ from the profile: {'; '.join(self.parameters)}"]
             if self.parameters else [])
        return f"{head}: stale: {'; '.join(why)}"


def _git(repo: Path, *args: str, text: bool = True, input=None):
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=text, input=input).stdout


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(
                    getattr(body[0], "value", None), ast.Constant) and isinstance(
                    body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _normalised(path: str, content: bytes | None):
    """What counts as a change of ``path``: its code for Python (comments, docstrings and
    layout dropped), its bytes otherwise; ``None`` when the file does not exist."""
    if content is None or not path.endswith(".py"):
        return content
    try:
        tree = ast.parse(content.decode("utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return content
    return ast.dump(_strip_docstrings(tree))


class _Revision:
    """File contents at one commit, read with one ``git cat-file --batch`` per commit."""

    def __init__(self, repo: Path, commit: str):
        self.repo, self.commit = repo, commit
        self._cache: dict[str, bytes | None] = {}

    def read(self, paths: list[str]) -> dict[str, bytes | None]:
        todo = [p for p in paths if p not in self._cache]
        if todo:
            out = _git(self.repo, "cat-file", "--batch", text=False,
                       input="".join(f"{self.commit}:{p}\n" for p in todo).encode())
            pos = 0
            for p in todo:
                end = out.index(b"\n", pos)
                header = out[pos:end].split()
                pos = end + 1
                if header[-1] == b"missing":
                    self._cache[p] = None
                    continue
                size = int(header[2])
                self._cache[p] = out[pos:pos + size]
                pos += size + 1
        return {p: self._cache[p] for p in paths}


def notebook_inputs(source: Path, repo: Path, graph: dict[str, set[str]] | None = None,
                    package: str = imports.PACKAGE) -> list[str]:
    """Repository-relative paths of what rendering ``source`` (a ``notebooks/NN_*.py``) reads
    as code or settings: the source itself, every package module it imports transitively, the
    data manifest, and the data files of :data:`MODULE_DATA` whose module it imports, less
    :data:`NOT_AS_FILES`; sorted."""
    modules = imports.package_modules(repo, package)
    graph = graph if graph is not None else imports.import_graph(repo, package)
    direct = imports.imports_of(source.read_text(), modules, filename=str(source))
    closure = imports.closure(direct, graph)
    files = {modules[m].relative_to(repo).as_posix() for m in closure}
    files |= {source.relative_to(repo).as_posix(), MANIFEST}
    files |= {f"{package}/{data}" for module, data_files in MODULE_DATA.items()
              if f"{package}.{module}" in closure for data in data_files}
    return sorted(files - set(NOT_AS_FILES))


def _expected_parameters(source: Path, profile: str, profiles: dict | None) -> dict:
    from .. import params
    from .. import profiles as profiles_module

    spec = profiles_module.PROFILES if profiles is None else profiles
    if profile not in spec:
        raise KeyError(profile)
    defaults = params.read_parameters(source)
    prefix = source.name[:2]
    overrides = {**spec[profile].get("*", {}), **spec[profile].get(prefix, {})}
    return {k: overrides.get(k, v) for k, v in defaults.items()}


def _parameter_differences(recorded: dict, expected: dict) -> list[str]:
    out = []
    for name, value in expected.items():
        if name not in recorded:
            out.append(f"{name} not recorded (now {value!r})")
        elif recorded[name] != value and not (
                name == "model" and str(recorded[name]).startswith("folder:")):
            out.append(f"{name} {recorded[name]!r} -> {value!r}")
    out += [f"{name} no longer a parameter" for name in recorded if name not in expected]
    return out


#: The ledger stage: its module and the provenance it writes.
STAGE_MODULE = "analysis_utils.publish.ledger_stage"
STAGE_PROVENANCE = "results/ledger_provenance.json"
STAGE_LABEL = "ledger stage (results/08_claims.csv, results/**/NN_verdicts.csv)"


def stage_inputs(repo: Path, graph: dict[str, set[str]], package: str = imports.PACKAGE
                 ) -> list[str]:
    """Repository-relative paths of the ledger stage's code: its module's import closure and
    the data files of :data:`MODULE_DATA` in it; sorted."""
    modules = imports.package_modules(repo, package)
    if STAGE_MODULE not in modules:
        return []
    closure = imports.closure({STAGE_MODULE}, graph)
    files = {modules[m].relative_to(repo).as_posix() for m in closure if m in modules}
    files |= {f"{package}/{data}" for module, data_files in MODULE_DATA.items()
              if f"{package}.{module}" in closure for data in data_files}
    return sorted(files - set(NOT_AS_FILES))


def _digest(path: Path) -> str | None:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def stage_status(repo: Path, graph: dict[str, set[str]], revisions: dict,
                 package: str = imports.PACKAGE) -> Status | None:
    """The ledger stage's :class:`Status` (``None`` when it has never run here)."""
    prov_path = repo / STAGE_PROVENANCE
    if not prov_path.is_file():
        return None
    try:
        prov = json.loads(prov_path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        st = Status(STAGE_PROVENANCE, STAGE_LABEL, None, "ledger")
        st.problem = f"unreadable provenance ({err})"
        return st
    commit = prov.get("git_commit")
    st = Status(STAGE_PROVENANCE, STAGE_LABEL, commit, "ledger")
    read = prov.get("inputs") or {}
    for rel, digest in sorted(read.items()):
        now = _digest(repo / rel)
        if now != digest:
            st.changed.append(f"{rel} ({'deleted' if now is None else 're-rendered since'})")
    for f in prov.get("folders") or []:
        for p in sorted((repo / f).glob("[0-9][0-9]_provenance.json")):
            rel = p.relative_to(repo).as_posix()
            if rel not in read and p.name[:2] != "08":  # the ledger reads no 08 table
                st.changed.append(f"{rel} (new)")
    _compare_code(st, repo, stage_inputs(repo, graph, package), revisions,
                  "run from uncommitted changes", "re-run the stage")
    return st


def _compare_code(status: Status, repo: Path, inputs: list[str], revisions: dict,
                  dirty: str, redo: str) -> None:
    """Fill ``status`` from its commit: a problem when the commit is missing, dirty or not in
    this clone; else every path of ``inputs`` whose code differs between it and now."""
    commit = status.commit
    if not commit:
        status.problem = "no commit recorded"
        return
    if commit.endswith("-dirty"):
        status.problem = dirty
    base = commit.removesuffix("-dirty")
    try:
        _git(repo, "cat-file", "-e", f"{base}^{{commit}}")
    except subprocess.CalledProcessError:
        status.problem = f"commit {base[:7]} is not in this clone (fetch it, or {redo})"
        return
    then = revisions.setdefault(base, _Revision(repo, base)).read(inputs)
    for path in inputs:
        now_file = repo / path
        now = now_file.read_bytes() if now_file.is_file() else None
        if _normalised(path, then[path]) != _normalised(path, now):
            status.changed.append(path + (" (new)" if then[path] is None else
                                          " (deleted)" if now is None else ""))


def _is_ancestor(repo: Path, older: str, newer: str) -> bool | None:
    """Whether commit ``older`` is ``newer`` or an ancestor of it (None: either is not in this
    clone)."""
    r = subprocess.run(["git", "merge-base", "--is-ancestor", older, newer], cwd=repo,
                       capture_output=True)
    return {0: True, 1: False}.get(r.returncode)


def _upstream_rendered_after(status: Status, repo: Path, prefix: str) -> None:
    """Add to ``status`` every notebook of :data:`READS_RESULTS_OF` it reads whose provenance,
    in any results folder, records a commit that is not its own commit or an ancestor of it."""
    own = (status.commit or "").removesuffix("-dirty")
    if not own or prefix not in READS_RESULTS_OF:
        return
    for prov_path in provenance_files(repo):
        if prov_path.name[:2] not in READS_RESULTS_OF[prefix]:
            continue
        try:
            theirs = str(json.loads(prov_path.read_text()).get("git_commit") or "")
        except (OSError, json.JSONDecodeError):
            continue  # its own status names the problem
        theirs = theirs.removesuffix("-dirty")
        if theirs and theirs != own and _is_ancestor(repo, theirs, own) is False:
            status.changed.append(f"{prov_path.relative_to(repo).as_posix()} (rendered after "
                                  f"it, at {theirs[:7]}: its tables are newer)")


def provenance_files(repo: Path, results: str = "results") -> list[Path]:
    """``results/NN_provenance.json`` and ``results/<sub>/NN_provenance.json`` under ``repo``."""
    folder = repo / results
    return sorted(folder.glob("[0-9][0-9]_provenance.json")) + sorted(
        folder.glob("*/[0-9][0-9]_provenance.json"))


def check(repo: str | Path | None = None, profiles: dict | None = None,
          package: str = imports.PACKAGE) -> list[Status]:
    """The :class:`Status` of every rendered notebook of the git checkout ``repo`` (default:
    this repository), in provenance order. ``profiles``: the profile table to judge
    parameters by (default :data:`analysis_utils.profiles.PROFILES`)."""
    from .. import paths

    repo = Path(repo) if repo is not None else paths.REPO_ROOT
    _git(repo, "rev-parse", "--git-dir")  # CalledProcessError outside a git clone
    graph = imports.import_graph(repo, package)
    revisions: dict[str, _Revision] = {}
    out = []
    for prov_path in provenance_files(repo):
        prov = json.loads(prov_path.read_text())
        prefix = str(prov.get("notebook") or prov_path.name[:2])
        sub = prov_path.parent.name if prov_path.parent.name != "results" else ""
        sources = sorted((repo / "notebooks").glob(f"{prefix}_*.py"))
        rendered = (f"notebooks/{sub + '/' if sub else ''}"
                    f"{sources[0].stem if sources else prefix}.ipynb")
        commit, profile = prov.get("git_commit"), str(prov.get("profile", "n/a"))
        status = Status(prov_path.relative_to(repo).as_posix(), rendered, commit, profile)
        out.append(status)
        if not sources:
            status.problem = f"no notebooks/{prefix}_*.py source"
            continue
        source = sources[0]
        try:
            expected = _expected_parameters(source, profile, profiles)
        except KeyError:
            status.problem = f"profile {profile!r} is not a profile of profiles.py"
        except ValueError as err:  # params.ParameterError: no single parameters cell
            status.problem = str(err)
        else:
            status.parameters = _parameter_differences(prov.get("parameters") or {}, expected)
        _compare_code(status, repo, notebook_inputs(source, repo, graph, package), revisions,
                      "rendered from uncommitted changes", "re-render")
        _upstream_rendered_after(status, repo, prefix)
    stage = stage_status(repo, graph, revisions, package)
    if stage is not None:
        out.append(stage)
    return out


def _counted(statuses: list[Status]) -> str:
    """``"14 rendered outputs (13 notebooks and the ledger stage)"``: what ``check`` judged."""
    n = sum(s.provenance != STAGE_PROVENANCE for s in statuses)
    if not any(s.provenance == STAGE_PROVENANCE for s in statuses):
        return f"{n} rendered notebooks"
    return f"{n + 1} rendered outputs ({n} notebooks and the ledger stage)"


def cli(argv: list[str] | None = None) -> int:
    """``python -m analysis_utils stale``; returns the exit status (1 if any is stale)."""
    import argparse

    from .. import paths

    ap = argparse.ArgumentParser(
        prog="python -m analysis_utils stale",
        description="List the rendered notebooks whose code, data manifest or profile changed "
                    "since the commit their provenance records. Exit 1 if any.")
    ap.add_argument("--all", action="store_true", help="also list the current notebooks")
    ap.add_argument("--repo", default=None, metavar="DIR",
                    help="the git checkout (default: this one)")
    args = ap.parse_args(argv)
    repo = Path(args.repo) if args.repo else paths.REPO_ROOT
    try:
        statuses = check(repo)
    except (OSError, subprocess.CalledProcessError) as err:
        detail = getattr(err, "stderr", "") or err
        print(f"error: cannot read the git history of {repo}: {str(detail).strip()}; run "
              "inside a git clone of the compendium (or pass --repo DIR)", file=sys.stderr)
        return 2
    stale = [s for s in statuses if s.stale]
    for s in statuses:
        if s.stale or args.all:
            print(s.line())
    if stale:
        by_profile: dict[str, list[str]] = {}
        for s in stale:
            if s.provenance != STAGE_PROVENANCE:
                by_profile.setdefault(s.profile, []).append(Path(s.provenance).name[:2])
        commands = [f"python -m analysis_utils run --profile {p} --only {','.join(n)}"
                    for p, n in by_profile.items()]
        commands += ["python -m analysis_utils ledger"] * any(
            s.provenance == STAGE_PROVENANCE for s in stale)
        print(f"stale: {len(stale)} of {_counted(statuses)}; re-run them "
              f"({'; then '.join(commands)}) and commit")
        return 1
    print(f"stale: none of {_counted(statuses)}")
    return 0
