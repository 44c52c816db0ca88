"""Which verdicts changed between two ledgers, matched through the claims registry.

A ledger row's wording may change between two runs (a claim reworded to say what the paper
says), so rows are matched by the registry entries they test, not by their text: for the old
ledger through the entries' ``ledger_claims`` lists of the registry at that commit (the field
the registry had before ``Claim.registry`` replaced it), or through the claims it then
declared; for the new one through :func:`.coverage.rows_by_entry`. Per model and entry the
result gives the old rows with their verdicts and the new ones with theirs, and whether the
verdict changed: ``python -m analysis_utils claims --changes REV`` prints it for the
committed ``results/08_claims.csv`` against the one at ``REV``.

>>> changes(old, new, old_rows, new_rows)                         # doctest: +SKIP
"""

from __future__ import annotations

import io
import subprocess
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

COLUMNS = ["model", "entry", "old rows", "old verdict", "new rows", "new verdict", "change"]


def _key(row) -> str:
    return f"{row['notebook']}: {row['claim']}"


def _verdicts(ledger: pd.DataFrame, model: str, keys: Sequence[str]) -> list[tuple[str, str]]:
    mine = ledger[ledger["model"] == model]
    by_key = {_key(r): r["verdict"] for _, r in mine.iterrows()}
    return [(k, by_key[k]) for k in keys if k in by_key]


def _summary(found: list[tuple[str, str]]) -> str:
    vs = sorted({v for _, v in found})
    return " / ".join(vs) if vs else "\u2013"


def changes(old: pd.DataFrame, new: pd.DataFrame, old_rows: Mapping[str, Sequence[str]],
            new_rows: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Per model and registry entry: the old and new ledgers' rows testing it and their
    verdicts. ``old``/``new``: ledgers (columns ``model``, ``notebook``, ``claim``,
    ``verdict``); ``old_rows``/``new_rows``: ``{entry id: ["NN: claim", ...]}``. ``change``:
    ``"same"``, ``"changed"``, ``"new"`` (no old row tested the entry) or ``"dropped"``; an
    entry neither ledger tests for a model is left out. Models in the order of ``new``, then
    any only in ``old``."""
    for name, frame in (("old", old), ("new", new)):
        missing = {"model", "notebook", "claim", "verdict"} - set(frame.columns)
        if missing:
            raise ValueError(f"the {name} ledger lacks the columns {sorted(missing)}")
    models = list(dict.fromkeys([*new["model"], *old["model"]]))
    entries = list(dict.fromkeys([*new_rows, *old_rows]))
    out = []
    for model in models:
        for entry in entries:
            was = _verdicts(old, model, old_rows.get(entry, ()))
            now = _verdicts(new, model, new_rows.get(entry, ()))
            if not was and not now:
                continue
            a, b = _summary(was), _summary(now)
            change = ("new" if not was else "dropped" if not now else
                      "same" if a == b else "changed")
            out.append({"model": model, "entry": entry,
                        "old rows": "; ".join(k for k, _ in was), "old verdict": a,
                        "new rows": "; ".join(k for k, _ in now), "new verdict": b,
                        "change": change})
    return pd.DataFrame(out, columns=COLUMNS)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def rows_at(rev: str, repo: str | Path) -> dict[str, list[str]]:
    """``{entry id: ["NN: claim", ...]}`` at ``rev``: the registry's ``ledger_claims`` lists
    where it has them (before ``Claim.registry``), else the claims the ledger code of ``rev``
    declared (:func:`_declared_rows_at`). An error names the commit when it has neither."""
    try:
        text = _git(Path(repo), "show", f"{rev}:analysis_utils/claims/registry.toml")
    except subprocess.CalledProcessError as err:
        raise ValueError(f"no claims registry at {rev}: {err.stderr.strip()}") from None
    data = tomllib.loads(text)
    out = {c["id"]: list(c["ledger_claims"]) for c in data.get("claim", [])
           if "ledger_claims" in c}
    return out or _declared_rows_at(rev, Path(repo))


def _declared_rows_at(rev: str, repo: Path) -> dict[str, list[str]]:
    """``coverage.rows_by_entry()`` of the package as committed at ``rev``: its
    ``analysis_utils/`` is exported (``git archive``) to a temporary folder and imported there
    by this interpreter in a child process, so the rows are matched with the code that wrote
    that ledger, not with today's."""
    import json
    import os
    import sys
    import tarfile
    import tempfile

    code = ("import json, sys\ntry:\n    from analysis_utils.ledger import coverage\n"
            "except ImportError:  # before the ledger became its own stage\n"
            "    from analysis_utils.claims import coverage\n"
            "json.dump(coverage.rows_by_entry(), sys.stdout)")
    with tempfile.TemporaryDirectory(prefix="bertology-claims-") as tmp:
        try:
            archive = subprocess.run(["git", "-C", str(repo), "archive", rev, "analysis_utils"],
                                     check=True, capture_output=True).stdout
        except subprocess.CalledProcessError as err:
            raise ValueError(f"no analysis_utils at {rev}: {err.stderr.decode().strip()}"
                             ) from None
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        env = {k: v for k, v in os.environ.items() if k != "BERTOLOGY_PACKAGE_ROOT"}
        env["PYTHONPATH"] = tmp
        env["BERTOLOGY_PACKAGE_ROOT"] = tmp
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, cwd=tmp)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise ValueError(f"the ledger code at {rev} could not list its claims' registry "
                         f"entries: {last}")
    out = json.loads(done.stdout)
    if not out:
        raise ValueError(f"the ledger at {rev} names no registry entries")
    return out


def ledger_at(rev: str, repo: str | Path, path: str = "results/08_claims.csv") -> pd.DataFrame:
    """The committed ledger ``path`` at ``rev``."""
    try:
        return pd.read_csv(io.StringIO(_git(Path(repo), "show", f"{rev}:{path}")),
                           dtype=str, keep_default_na=False)
    except subprocess.CalledProcessError as err:
        raise ValueError(f"no {path} at {rev}: {err.stderr.strip()}") from None


def markdown(table: pd.DataFrame, only_changed: bool = True) -> str:
    """The table as Markdown; by default only the entries whose verdict changed, is new or was
    dropped."""
    if only_changed:
        table = table[table["change"] != "same"]
    return table.to_markdown(index=False) if len(table) else "(no verdict changed)"
