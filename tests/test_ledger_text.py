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


_NUM = r"([-+]?\d[\d.]*(?:e[-+]?\d+)?)"
_STATED = re.compile(rf"interval \[{_NUM}, {_NUM}\] (lies above|lies below|holds both|holds|"
                     rf"lies short of|lies on the other side of|lies within|lies beyond the "
                     rf"margin|excludes) {_NUM}(?: and {_NUM}| \+- {_NUM}| of {_NUM}| ([-+]) {_NUM})?")


def interval_statements(text: str) -> list[str]:
    """Each "the interval [a, b] lies above x" (holds, lies below, lies within c +- m, ...) in
    ``text`` that its own numbers contradict."""
    out = []
    for m in _STATED.finditer(text):
        lo, hi, verb, x, y, pm, of, sign, shift = m.groups()
        lo, hi, x = float(lo), float(hi), float(x)
        if sign:  # "lies above 0 - 0.01": the margin's edge
            x = x - float(shift) if sign == "-" else x + float(shift)
        ok = {"lies above": lo > x, "lies below": hi < x,
              "holds": lo <= x <= hi,
              "holds both": lo <= x <= hi and y is not None and lo <= float(y) <= hi,
              "lies short of": not lo <= x <= hi, "excludes": not lo <= x <= hi,
              "lies on the other side of": not lo <= x <= hi,
              "lies within": pm is not None and x - float(pm) <= lo and hi <= x + float(pm),
              "lies beyond the margin": of is not None and (lo > float(of) + x
                                                             or hi < float(of) - x)}[verb]
        if not ok:
            out.append(f"'{m.group(0)}' is false")
    return out


def contradictions(r) -> list[str]:
    """What in row ``r`` (a mapping of the ledger's columns) contradicts its numbers or unit."""
    out = interval_statements(" ".join([r["note"], r["per_task"]]))
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


@pytest.mark.parametrize("text, false", [
    ("the interval [0.01874, 0.02164] holds 0: this test could not tell", 1),
    ("the interval [0.01874, 0.02164] holds 0.02 (the null 0 + ...)", 0),
    ("the interval [-0.003858, 0.1046] lies above 0 on the claimed side", 1),
    ("the interval [0.2587, 0.3382] lies above 0 on the claimed side", 0),
    ("the interval [-0.01, 0.03] holds both 0 and 0.02", 0),
    ("the interval [0.01, 0.03] holds both 0 and 0.02", 1),
    ("the 99.3% interval [0.343, 0.3871] lies within 0 +- 0.5", 0),
    ("the 99.3% interval [0.343, 0.5871] lies within 0 +- 0.5", 1),
    ("the interval [1.321, 1.42] lies beyond the margin 0.5 of 0: an effect is shown", 0),
    ("the interval [0.3, 1.42] lies beyond the margin 0.5 of 0", 1),
    ("the interval [0.0125, 0.01934] lies short of 0.02: any effect is smaller", 0),
    ("the interval [-0.01317, -0.0008876] lies on the other side of 0: reversed", 0),
    ("the interval [0.4496, 0.4629] lies below 0.1 on the claimed side", 1),
    ("the 99% interval [-0.005, 0.02] lies above 0 - 0.01: no drop beyond the margin", 0),
    ("the 99% interval [-0.015, 0.02] lies above 0 - 0.01: no drop beyond the margin", 1),
    ("the 99% interval [-0.252, -0.177] lies below 0 + 0.2: no rise beyond the margin", 0),
])
def test_a_false_statement_about_an_interval_is_caught(text, false):
    assert len(interval_statements(text)) == false, interval_statements(text)


def test_no_committed_row_contradicts_its_numbers_or_unit(rows):
    bad = {_where(r): c for _, r in rows.iterrows() if (c := contradictions(r))}
    assert not bad, "\n".join(f"{w}: {'; '.join(c)}" for w, c in bad.items())


def test_every_table_of_the_stage_numbers_layers_and_heads_from_1(rows):
    labels = [h.strip() for cell in rows["heads"] for h in re.split(r"[,;]", cell) if h.strip()]
    zero = [h for h in labels if re.match(r"^0-\d|^\d+-0\b", h)]
    assert not zero, f"0-based head labels in the ledger: {zero[:5]}"
