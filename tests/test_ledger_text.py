"""Every text cell of a ledger row agrees with the test that made its numbers (issue 41): the
interval's level is the family's, seed wording appears only where there are seeds, the test
names the unit the row resampled, and a level stated in a note is the row's own."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from analysis_utils import paths
from analysis_utils.ledger.core import level

CLAIMS = paths.REPO_ROOT / "results" / "08_claims.csv"


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    if not CLAIMS.is_file():
        pytest.fail("results/08_claims.csv is missing: run `python -m analysis_utils ledger`")
    return pd.read_csv(CLAIMS, dtype=str, keep_default_na=False)


def _where(r) -> str:
    return f"{r['model']} {r['notebook']}: {r['claim']}"


def contradictions(r) -> list[str]:
    """What in row ``r`` (a mapping of the ledger's columns) contradicts its numbers or unit."""
    out = []
    m = re.search(r"m = (\d+)", r["family"])
    levels = re.findall(r"\((\d+(?:\.\d+)?%)\)", r["interval"])
    if levels:
        if not m:
            out.append(f"an interval level {levels} without a Holm family")
        elif any(x != level(0.05 / int(m.group(1))) for x in levels):
            out.append(f"interval level {levels} is not 1 - 0.05/{m.group(1)}")
    # a no-effect or no-drop claim's "yes" reads the 1 - 2a interval (TOST): both levels
    allowed = set(levels)
    if m:
        a = 0.05 / int(m.group(1))
        allowed |= {level(a), level(min(2 * a, 0.5))}
    text = " ".join([r["note"], r["per_task"], r["test"]])
    if re.search(r"\bseeds?\b", text) and not (r["seeds"] or "seed" in r["unit"]):
        out.append("seed wording in a row without seeds")
    for lv in re.findall(r"the (\d+(?:\.\d+)?%) interval", r["note"]):
        if lv not in allowed and f"the {lv} interval" not in r["test"] and not re.search(
                rf"{re.escape(lv)} interval \(not corrected", r["note"]):
            out.append(f"the note states a {lv} interval, the row's is {levels}")
    said = re.search(r"resamples of (\w+)|(\w+) \(\w+'s sampling unit\) resampled", r["test"])
    if said and r["unit"]:
        noun = said.group(1) or said.group(2)
        if noun.rstrip("s")[:5] not in r["unit"]:
            out.append(f"the test resamples {noun}, the unit is {r['unit']!r}")
    if r["verdict"] == "yes" and r["control_verdict"] == "yes" and not r.get(
            "training_specific", "").startswith("not specific"):
        out.append("the control passes the same rule but the row does not say so")
    return out


def test_a_row_that_contradicts_itself_is_caught():
    r = {"model": "m", "notebook": "02", "claim": "c", "family": "f (Holm, m = 6)",
         "interval": "[+1.0, +2.0] (95%)", "note": "det fails in every seed", "per_task": "",
         "test": "10,000 resamples of sentences", "seeds": "", "unit": "634 documents",
         "verdict": "yes", "control_verdict": "yes", "training_specific": ""}
    found = contradictions(r)
    assert len(found) == 4, found
    ok = {**r, "interval": "[+1.0, +2.0] (99.2%)", "note": "det fails",
          "test": "10,000 resamples of documents", "training_specific": "not specific to "
          "training: the random-weights control passes the same rule"}
    assert contradictions(ok) == []


def test_no_committed_row_contradicts_its_numbers_or_unit(rows):
    bad = {_where(r): c for _, r in rows.iterrows() if (c := contradictions(r))}
    assert not bad, "\n".join(f"{w}: {'; '.join(c)}" for w, c in bad.items())


def test_every_table_of_the_stage_numbers_layers_and_heads_from_1(rows):
    labels = [h.strip() for cell in rows["heads"] for h in re.split(r"[,;]", cell) if h.strip()]
    zero = [h for h in labels if re.match(r"^0-\d|^\d+-0\b", h)]
    assert not zero, f"0-based head labels in the ledger: {zero[:5]}"
