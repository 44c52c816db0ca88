"""Compare a rerun's tables with the committed ones, within tolerances declared where each
table is written.

``python -m analysis_utils compare [--against REV] [--results DIR]`` reads every
``results/*.csv`` of the rerun (``DIR``, default: where ``run`` writes) and its version at git
revision ``REV`` (default ``HEAD``; ``git show REV:results/NAME.csv``), and prints one line per
value outside tolerance, per missing or extra row or column, per table present on one side
only, then a summary line. Exit status 1 if anything was printed above the summary, else 0.

Tolerance spec
--------------
Declared per table with ``run.table(df, name, tolerance=..., key=...)`` and recorded in
``results/NN_provenance.json`` under ``"tables"``. ``tolerance`` is one of:

- ``None`` (nothing declared): the default below;
- a number: absolute tolerance for every float column, e.g. ``tolerance=0.5`` (UAS points);
- a dict from column name (or an ``fnmatch`` pattern such as ``"uas *"``; ``"*"`` is the
  catch-all for float columns) to a number (absolute tolerance) or a rule dict:

  - ``within(abs=..., rel=...)``: ``|new - committed| <= max(abs, rel * |committed|)``;
  - ``from_sd("acc_sd", k=2)``: ``<= max(abs, k * sd)``, the sd read from column ``acc_sd``
    of the same row of the committed table (for trained results with a stated sd);
  - ``EXACT`` (tolerance 0) or ``IGNORE`` (the column is not compared).

  An exact column name wins over a pattern; patterns are tried in the order given.

Default (``DEFAULT_FLOAT_ABS``, stated only here): text and integer cells must be identical;
float cells may differ by at most ``1e-4`` in absolute value (CSVs are rounded to 6 decimals,
so this absorbs last-digit noise from another CPU, BLAS or torch build, and nothing a reader
would see). A named column's rule applies to every numeric cell of that column; the ``"*"`` rule
and the default apply to float cells only, so counts stay exact. Empty cells and ``nan`` equal
each other (NaN equals NaN) and nothing else.

Rows are matched by ``key`` columns: the declared ones; else the shortest run of leading
non-float columns that identifies every row on both sides (or all non-float columns
together); else row position.

Devices: each side's device is read from its ``NN_provenance.json`` (``device``, e.g.
``cpu (2 cores)`` / ``NVIDIA H100 80GB HBM3``, and ``device_kind``, ``cpu`` / ``cuda``, where the
provenance records it; else the kind is read off ``device``: ``cpu ...`` / ``mps ...``, any
other name a CUDA GPU's) and printed per notebook. When the device kinds differ (a GPU rerun
against the committed CPU run), the trained tables of :data:`CROSS_DEVICE_TABLES` are compared
per task and init under the cross-device tolerance derived from the committed run's own seed
spread (:func:`analysis_utils.publish.tolerances.propose`: ``max(3 x sqrt(2) x sd, 2 dev
examples)``) instead of the declared one, for the metric columns it covers.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import math
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_FLOAT_ABS = 1e-4
#: Tables of per-seed trained metrics compared under the cross-device tolerance when the two
#: sides ran on different device kinds (module docstring).
CROSS_DEVICE_TABLES = ("06_finetune_runs.csv",)
EXACT = {"abs": 0.0}
IGNORE = {"ignore": True}
_RULE_KEYS = {"abs", "rel", "sd", "k", "ignore"}
_INT = re.compile(r"[+-]?\d+")
_NAN = {"", "nan", "NaN", "NAN", "<NA>", "None"}


def within(abs: float | None = None, rel: float | None = None) -> dict:
    """Tolerance rule ``|new - committed| <= max(abs, rel * |committed|)``."""
    rule = {}
    if abs is not None:
        rule["abs"] = float(abs)
    if rel is not None:
        rule["rel"] = float(rel)
    if not rule:
        raise ValueError("within() needs abs= or rel=")
    return rule


#: Per-head scores from an argmax choice (the word or mention a head attends to most): a
#: near-tie broken differently on another CPU moves one item, up to about 1% of the value for
#: the smallest groups. For a table with a ``correct`` count and an ``accuracy`` column.
ARGMAX_SCORES = {"correct": within(abs=2, rel=0.01), "accuracy": within(abs=5e-4, rel=0.01)}


def from_sd(column: str, k: float = 2.0, abs: float = 0.0) -> dict:
    """Tolerance rule ``|new - committed| <= max(abs, k * sd)``, the sd taken from ``column``
    of the committed row (e.g. the sd over seeds stated beside a trained result)."""
    return {"sd": column, "k": float(k), "abs": float(abs)}


def normalise_tolerance(spec, columns=None, table: str = "table") -> dict | None:
    """The canonical JSON form of a tolerance spec: ``None`` or ``{column_or_pattern: rule}``
    with every rule a dict of ``abs``/``rel``/``sd``/``k``/``ignore``.

    columns: the table's column names; when given, a name that is not a column, a pattern that
    matches none, or an sd column that does not exist raises ``ValueError``.
    """
    if spec is None:
        return None
    if isinstance(spec, bool) or not isinstance(spec, (int, float, dict)):
        raise ValueError(f"{table}: tolerance must be a number or a dict of column -> rule, "
                         f"got {spec!r}")
    if not isinstance(spec, dict):
        spec = {"*": spec}
    out = {}
    for col, rule in spec.items():
        if isinstance(rule, bool) or not isinstance(rule, (int, float, dict)):
            raise ValueError(f"{table}: tolerance for {col!r} must be a number, within(...), "
                             f"from_sd(...), EXACT or IGNORE, got {rule!r}")
        rule = {"abs": float(rule)} if not isinstance(rule, dict) else dict(rule)
        unknown = set(rule) - _RULE_KEYS
        if unknown or not rule:
            raise ValueError(f"{table}: tolerance rule for {col!r} has unknown keys "
                             f"{sorted(unknown)}; use {sorted(_RULE_KEYS)}")
        if "k" in rule and "sd" not in rule:
            raise ValueError(f"{table}: tolerance rule for {col!r} gives k without sd")
        if any(float(rule.get(x, 0)) < 0 for x in ("abs", "rel", "k")):
            raise ValueError(f"{table}: tolerance for {col!r} must not be negative")
        if "sd" in rule:
            rule.setdefault("k", 1.0)
        if columns is not None:
            cols = [str(c) for c in columns]
            if col != "*" and col not in cols and not fnmatch.filter(cols, col):
                raise ValueError(f"{table}: tolerance names column {col!r}, which the table "
                                 f"does not have (columns: {cols})")
            if "sd" in rule and rule["sd"] not in cols:
                raise ValueError(f"{table}: tolerance for {col!r} reads sd column "
                                 f"{rule['sd']!r}, which the table does not have")
        out[str(col)] = rule
    return out


# --- one table ---------------------------------------------------------------------------


@dataclass
class Table:
    """A CSV as text cells: ``columns`` (duplicates renamed ``x.1``, as pandas does) and rows."""

    columns: list[str]
    rows: list[list[str]]

    @classmethod
    def parse(cls, text: str) -> Table:
        records = list(csv.reader(io.StringIO(text)))
        if not records:
            return cls([], [])
        seen: dict[str, int] = {}
        columns = []
        for c in records[0]:
            n = seen.get(c, 0)
            seen[c] = n + 1
            columns.append(c if n == 0 else f"{c}.{n}")
        width = len(columns)
        rows = [(r + [""] * width)[:width] for r in records[1:]]
        return cls(columns, rows)

    def column(self, name: str) -> list[str]:
        i = self.columns.index(name)
        return [r[i] for r in self.rows]


def _number(cell: str) -> float | None:
    if cell.strip() in _NAN:
        return math.nan
    try:
        return float(cell)
    except ValueError:
        return None


def _kind(cells: list[str]) -> str:
    """``"int"``, ``"float"`` or ``"text"`` from a column's non-empty cells."""
    vals = [c.strip() for c in cells if c.strip() not in _NAN]
    if all(_INT.fullmatch(c) for c in vals):
        return "int"
    if all(_number(c) is not None for c in vals):
        return "float"
    return "text"


def _infer_key(old: Table, new: Table) -> list[str] | None:
    common = [c for c in old.columns if c in new.columns]
    non_float = [c for c in common if _kind(old.column(c)) != "float"
                 and _kind(new.column(c)) != "float"]
    leading = []
    for c in common:
        if c not in non_float:
            break
        leading.append(c)
    for n in range(1, len(leading) + 1):
        if _unique(old, leading[:n]) and _unique(new, leading[:n]):
            return leading[:n]
    if non_float and _unique(old, non_float) and _unique(new, non_float):
        return non_float
    return None


def _unique(t: Table, key: list[str]) -> bool:
    idx = [t.columns.index(c) for c in key]
    keys = [tuple(r[i] for i in idx) for r in t.rows]
    return len(set(keys)) == len(keys)


def _rule_for(col: str, tolerance: dict | None) -> dict | None:
    """The rule declared for ``col`` by name or pattern (``"*"`` excluded), else None."""
    if not tolerance:
        return None
    if col in tolerance:
        return tolerance[col]
    for pat, rule in tolerance.items():
        if pat != "*" and fnmatch.fnmatchcase(col, pat):
            return rule
    return None


def _fmt(x: float) -> str:
    return f"{x:.6g}"


@dataclass
class Issue:
    """One reported difference."""

    table: str
    kind: str  # value | text | row | column | shape | table | key
    message: str
    row: str = ""
    column: str = ""
    committed: str = ""
    new: str = ""
    tolerance: str = ""

    def line(self) -> str:
        where = f"{self.table}"
        if self.row:
            where += f" [{self.row}]"
        if self.kind in ("value", "text"):
            why = (self.message if self.kind == "text"
                   else f"{self.message}, must be exact" if self.tolerance == "exact"
                   else f"{self.message} > tol {self.tolerance}"
                   if self.message.startswith("|diff|")
                   else f"{self.message}; tol {self.tolerance}")
            return (f"{where} {self.column}: committed {self.committed or '(empty)'}, "
                    f"new {self.new or '(empty)'} ({why})")
        return f"{where}: {self.message}"


def compare_tables(old_text: str, new_text: str, name: str = "table",
                   tolerance: dict | float | None = None, key: list[str] | None = None,
                   cross_device: dict | None = None) -> list[Issue]:
    """Differences between two CSV texts of table ``name`` (committed first), as issues.
    ``cross_device``: ``{"key": [columns], "tolerances": {(*key values, column): abs}}``,
    an absolute tolerance per row group and column that replaces the declared rule there
    (:func:`cross_device_tolerances`)."""
    tolerance = normalise_tolerance(tolerance, table=name)
    old, new = Table.parse(old_text), Table.parse(new_text)
    issues: list[Issue] = []
    if (len(old.rows), len(old.columns)) != (len(new.rows), len(new.columns)):
        issues.append(Issue(name, "shape", f"shape changed: committed {len(old.rows)} rows x "
                            f"{len(old.columns)} columns, new {len(new.rows)} x "
                            f"{len(new.columns)}"))
    for c in old.columns:
        if c not in new.columns:
            issues.append(Issue(name, "column", f"column {c!r} missing in the new table"))
    for c in new.columns:
        if c not in old.columns:
            issues.append(Issue(name, "column", f"column {c!r} is new (not in the committed)"))

    if key:
        bad = [c for c in key if c not in old.columns or c not in new.columns]
        if bad:
            issues.append(Issue(name, "key", f"key column(s) {bad} missing; rows matched by "
                                "position"))
            key = None
        elif not (_unique(old, key) and _unique(new, key)):
            issues.append(Issue(name, "key", f"key {key} does not identify rows uniquely; "
                                "rows matched by position"))
            key = None
    else:
        key = _infer_key(old, new)
    pairs = _match_rows(name, old, new, key, issues)

    kinds = {c: _kind(old.column(c)) for c in old.columns if c in new.columns}
    for label, o, n in pairs:
        for c, kind in kinds.items():
            if key and c in key:
                continue
            a, b = o[old.columns.index(c)], n[new.columns.index(c)]
            override = None
            if cross_device and all(k in old.columns for k in cross_device["key"]):
                group = tuple(o[old.columns.index(k)] for k in cross_device["key"])
                tol = cross_device["tolerances"].get((*group, c))
                override = None if tol is None else {"abs": float(tol), "cross": True}
            found = _compare_cell(a, b, kind, c, tolerance, old, o, override)
            if found:
                what, msg, tol = found
                issues.append(Issue(name, what, msg, row=label, column=c, committed=a, new=b,
                                    tolerance=tol))
    return issues


def _match_rows(name, old: Table, new: Table, key, issues) -> list[tuple[str, list, list]]:
    if key is None:
        common = zip(old.rows, new.rows, strict=False)  # unequal lengths reported below
        pairs = [(f"row {i + 1}", o, n) for i, (o, n) in enumerate(common)]
        for i in range(len(new.rows), len(old.rows)):
            issues.append(Issue(name, "row", "row missing in the new table", row=f"row {i + 1}"))
        for i in range(len(old.rows), len(new.rows)):
            issues.append(Issue(name, "row", "extra row in the new table", row=f"row {i + 1}"))
        return pairs

    def index(t: Table):
        idx = [t.columns.index(c) for c in key]
        return {tuple(r[i] for i in idx): r for r in t.rows}

    o_rows, n_rows = index(old), index(new)

    def label(k):
        return ", ".join(f"{c}={v}" for c, v in zip(key, k, strict=True))

    pairs = []
    for k, o in o_rows.items():
        if k in n_rows:
            pairs.append((label(k), o, n_rows[k]))
        else:
            issues.append(Issue(name, "row", "row missing in the new table", row=label(k)))
    for k in n_rows:
        if k not in o_rows:
            issues.append(Issue(name, "row", "extra row in the new table", row=label(k)))
    return pairs


def _compare_cell(a: str, b: str, kind: str, column: str, tolerance: dict | None,
                  old: Table, old_row: list[str], override: dict | None = None,
                  ) -> tuple[str, str, str] | None:
    """None when the cells agree within tolerance, else ``(issue kind, what, tolerance)``.
    ``override``: a rule that replaces the declared one (the cross-device tolerance)."""
    rule = override if override is not None else _rule_for(column, tolerance)
    if a == b or (rule is not None and rule.get("ignore")):
        return None
    x, y = _number(a), _number(b)
    if x is None or y is None:
        return ("text", "text differs", "exact")
    if math.isnan(x) and math.isnan(y):
        return None
    integral = kind == "int" or bool(_INT.fullmatch(a.strip()) and _INT.fullmatch(b.strip()))
    if rule is None and not integral:  # a float cell: the "*" rule, else the default
        rule = (tolerance or {}).get("*", {"abs": DEFAULT_FLOAT_ABS})
        if rule.get("ignore"):
            return None
    tol, text = _tolerance(rule or EXACT, x, old, old_row)
    if math.isnan(x) or math.isnan(y):
        return ("value", "one side is NaN", text)
    diff = abs(y - x)
    if diff <= tol + 1e-12 * max(abs(x), abs(y), 1.0):  # float noise of the subtraction
        return None
    return ("value", f"|diff| {_fmt(diff)}", text)


def _tolerance(rule: dict, x: float, old: Table, old_row: list[str]) -> tuple[float, str]:
    """The tolerance for a cell whose committed value is ``x``, and how it was derived."""
    floor = float(rule.get("abs", 0.0))
    tol, parts = floor, []
    if "rel" in rule and not math.isnan(x):
        tol = max(tol, rule["rel"] * abs(x))
        parts.append(f"rel {_fmt(rule['rel'])} = {_fmt(rule['rel'] * abs(x))}")
    if "sd" in rule:
        cell = old_row[old.columns.index(rule["sd"])] if rule["sd"] in old.columns else ""
        sd = _number(cell)
        if sd is not None and not math.isnan(sd):
            tol = max(tol, rule["k"] * abs(sd))
            parts.append(f"{_fmt(rule['k'])} x {rule['sd']} = {_fmt(rule['k'] * abs(sd))}")
        elif floor == 0:
            return 0.0, f"0 ({rule['sd']} empty)"
    if floor > 0 or not parts:
        parts.insert(0, (_fmt(floor) + (" cross-device" if rule.get("cross") else ""))
                     if floor > 0 else "exact")
    return tol, parts[0] if len(parts) == 1 else f"max({', '.join(parts)})"


# --- every table of a results folder ------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def _committed_names(repo: Path, rev: str, folder: str) -> list[str]:
    out = _git(repo, "ls-tree", "--name-only", rev, f"{folder}/")
    return sorted(Path(p).name for p in out.splitlines() if p.endswith(".csv"))


def _declarations(prefix: str, results: Path, repo: Path, rev: str, folder: str) -> dict:
    """The ``"tables"`` record of ``NN_provenance.json``: the rerun's, else the committed one's
    (the rerun's reflects the code that wrote the new tables)."""
    for read in (lambda: (results / f"{prefix}_provenance.json").read_text(),
                 lambda: _git(repo, "show", f"{rev}:{folder}/{prefix}_provenance.json")):
        try:
            tables = json.loads(read()).get("tables")
        except (OSError, subprocess.CalledProcessError, json.JSONDecodeError):
            continue
        if tables:
            return tables
    return {}


#: The ledger stage's record (:mod:`.ledger_stage`): its tables' tolerances, keyed by
#: repository-relative path (``results/08_claims.csv``, ``results/base/02_verdicts.csv``).
STAGE_PROVENANCE = "results/ledger_provenance.json"


def _stage_declarations(results: Path, repo: Path, rev: str, cache: dict) -> dict:
    """The ``"tables"`` record of the ledger stage's provenance: the rerun's (in ``results``
    or the folder above it), else the committed one's."""
    if "stage" not in cache:
        cache["stage"] = {}
        name = Path(STAGE_PROVENANCE).name
        for read in (lambda: (results / name).read_text(),
                     lambda: (results.parent / name).read_text(),
                     lambda: _git(repo, "show", f"{rev}:{STAGE_PROVENANCE}")):
            try:
                tables = json.loads(read()).get("tables")
            except (OSError, subprocess.CalledProcessError, json.JSONDecodeError):
                continue
            if tables:
                cache["stage"] = tables
                break
    return cache["stage"]


@dataclass
class Report:
    """What :func:`compare_results` found."""

    rev: str
    tables: int = 0
    issues: list[Issue] = field(default_factory=list)
    #: ``{prefix: (committed side's device, new side's device)}`` from the provenance files:
    #: each a :class:`Device` (None where a side has no readable provenance)
    devices: dict = field(default_factory=dict)

    def device_lines(self) -> list[str]:
        """One line per notebook: which device made each side."""
        return [f"compare: {p}: committed ({self.rev}) made on {old or 'unknown'}, new on "
                f"{new or 'unknown'}" + ("; cross-device tolerances apply"
                                         if _cross_device(old, new) else "")
                for p, (old, new) in sorted(self.devices.items()) if old or new]

    @property
    def ok(self) -> bool:
        return not self.issues

    def summary(self) -> str:
        differ = len({i.table for i in self.issues})
        if self.ok:
            return f"compare: {self.tables} tables match {self.rev} within tolerance"
        counts: dict[str, int] = {}
        for i in self.issues:
            counts[i.kind] = counts.get(i.kind, 0) + 1
        names = {"value": "values outside tolerance", "text": "text cells differ",
                 "row": "rows missing or extra", "column": "columns missing or extra",
                 "shape": "shapes changed", "table": "tables on one side only",
                 "key": "key problems"}
        parts = ", ".join(f"{names[k]}: {n}" for k, n in counts.items())
        return f"compare: {differ} of {self.tables} tables differ from {self.rev}: {parts}"


@dataclass(frozen=True)
class Device:
    """The device one side's notebook ran on: ``name`` as its provenance's ``device`` says
    (``cpu (2 cores)``, ``NVIDIA H100 80GB HBM3``) and ``kind`` (``cpu`` / ``cuda`` /
    ``mps``: its ``device_kind`` where recorded, else :func:`device_kind` of the name)."""

    name: str
    kind: str

    def __str__(self) -> str:
        return self.name if self.name.split()[0].split(":")[0] == self.kind \
            else f"{self.kind} ({self.name})"


def device_kind(device: str | None) -> str | None:
    """``cpu`` / ``cuda`` / ``mps`` from a provenance ``device``: ``cpu (2 cores)`` -> cpu,
    ``cuda:0`` -> cuda, a GPU's name (``NVIDIA H100 80GB HBM3``, what provenance records
    under CUDA) -> cuda; None stays None."""
    if not device:
        return None
    head = str(device).split()[0].split(":")[0].lower()
    return head if head in ("cpu", "cuda", "mps") else "cuda"


def _cross_device(old: Device | None, new: Device | None) -> bool:
    """Both sides' devices are known and of different kinds."""
    return old is not None and new is not None and old.kind != new.kind


def _devices(prefix: str, results: Path, repo: Path, rev: str, folder: str) -> tuple:
    """``(committed side's Device, new side's Device)`` from the two provenance files (None
    for a side without one)."""
    out = []
    for read in (lambda: _git(repo, "show", f"{rev}:{folder}/{prefix}_provenance.json"),
                 lambda: (results / f"{prefix}_provenance.json").read_text()):
        try:
            prov = json.loads(read())
            name = prov.get("device")
            kind = prov.get("device_kind") or device_kind(name)
            out.append(Device(str(name or kind), kind) if kind else None)
        except (OSError, subprocess.CalledProcessError, json.JSONDecodeError, AttributeError):
            out.append(None)
    return tuple(out)


def cross_device_tolerances(old_text: str) -> dict:
    """The ``cross_device`` argument of :func:`compare_tables` for a committed per-seed table
    (``task``, ``init``, ``seed``, ``dev`` and metric columns): per task, init and metric,
    :func:`analysis_utils.publish.tolerances.propose` of its seed spread."""
    from . import tolerances as tol

    rows = list(csv.DictReader(io.StringIO(old_text)))
    return {"key": ["task", "init"],
            "tolerances": {(t.task, t.init, t.metric): t.tolerance
                           for t in tol.propose(tol.seed_spread(rows))}}


def compare_results(results: str | Path | None = None, rev: str = "HEAD",
                    repo: str | Path | None = None, folder: str = "results",
                    only: list[str] | None = None) -> Report:
    """Compare every ``*.csv`` in ``results`` with ``REV:folder/NAME.csv`` in git ``repo``.

    results: the rerun's results folder (default: where this process's ``run`` writes);
    repo: the git checkout holding the committed tables (default: this compendium);
    only: notebook prefixes to compare (``["01", "02"]``), default all.
    """
    from .. import paths

    results = Path(results) if results is not None else paths.output_dirs()[0]
    repo = Path(repo) if repo is not None else paths.REPO_ROOT
    try:
        short = _git(repo, "rev-parse", "--short", rev).strip()
        committed = _committed_names(repo, rev, folder)
    except subprocess.CalledProcessError as err:
        raise ValueError(f"cannot read revision {rev!r} in {repo}: {err.stderr.strip()}") \
            from err
    fresh = sorted(p.name for p in results.glob("*.csv")) if results.is_dir() else []
    if only:
        wanted = tuple(f"{o.strip().zfill(2)}_" for o in only if o.strip())
        committed = [n for n in committed if n.startswith(wanted)]
        fresh = [n for n in fresh if n.startswith(wanted)]
    out = Report(rev=f"{rev} ({short})" if short != rev else rev)
    decls: dict[str, dict] = {}
    for name in sorted(set(committed) | set(fresh)):
        out.tables += 1
        if name not in fresh:
            out.issues.append(Issue(name, "table", f"only in {rev}: not in {results}"))
            continue
        if name not in committed:
            out.issues.append(Issue(name, "table", f"only in the new results: not in {rev}"))
            continue
        prefix = name.split("_", 1)[0]
        if prefix not in decls:
            decls[prefix] = _declarations(prefix, results, repo, rev, folder)
            out.devices[prefix] = _devices(prefix, results, repo, rev, folder)
        decl = decls[prefix].get(name) or _stage_declarations(
            results, repo, rev, decls).get(f"{folder}/{name}") or {}
        old_text = _git(repo, "show", f"{rev}:{folder}/{name}")
        new_text = (results / name).read_text()
        old_dev, new_dev = out.devices[prefix]
        cross = (cross_device_tolerances(old_text) if name in CROSS_DEVICE_TABLES
                 and _cross_device(old_dev, new_dev) else None)
        out.issues += compare_tables(old_text, new_text, name, decl.get("tolerance"),
                                     decl.get("key"), cross)
    return out


def cli(argv: list[str] | None = None) -> int:
    """``python -m analysis_utils compare``; returns the exit status."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m analysis_utils compare",
        description="Compare every results/*.csv of a rerun with its committed version, "
                    "within the tolerance each table declares. Exit 1 if anything differs.")
    ap.add_argument("--against", default="HEAD", metavar="REV",
                    help="git revision holding the reference tables (default HEAD)")
    ap.add_argument("--results", default=None, metavar="DIR",
                    help="the rerun's results folder (default: where `run` writes)")
    ap.add_argument("--repo", default=None, metavar="DIR",
                    help="git checkout holding the committed results/ (default: this one)")
    ap.add_argument("--only", default="", help="comma-separated notebook prefixes, e.g. 01,02")
    ap.add_argument("--max-per-table", type=int, default=20, metavar="N",
                    help="print at most N lines per table (0: all; default 20)")
    args = ap.parse_args(argv)
    try:
        rep = compare_results(args.results, args.against, args.repo,
                              only=[o for o in args.only.split(",") if o])
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for line in rep.device_lines():
        print(line)
    shown: dict[str, int] = {}
    for issue in rep.issues:
        shown[issue.table] = shown.get(issue.table, 0) + 1
        if args.max_per_table <= 0 or shown[issue.table] <= args.max_per_table:
            print(issue.line())
    for table, n in shown.items():
        if 0 < args.max_per_table < n:
            print(f"{table}: ... {n - args.max_per_table} more lines (--max-per-table 0 "
                  "shows all)")
    print(rep.summary())
    return 0 if rep.ok else 1
