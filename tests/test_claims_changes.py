"""Verdict changes between two ledgers, matched through the claims registry
(:mod:`analysis_utils.claims.changes`), on hand-made ledgers."""

import subprocess

import pandas as pd
import pytest

from analysis_utils import paths
from analysis_utils.claims import changes


def _ledger(rows):
    return pd.DataFrame(rows, columns=["model", "notebook", "claim", "verdict"])


def test_rows_are_matched_through_their_entries_not_their_wording():
    old = _ledger([("m", "02", "a head tracks All better", "yes"),
                   ("m", "07", "some head improves every task", "mixed"),
                   ("m", "03", "beats nearest", "yes"),
                   ("m", "04", "gone", "no")])
    new = _ledger([("m", "02", "no single head does well overall", "yes"),
                   ("m", "07", "some head improves every task", "inconclusive"),
                   ("m", "03", "beats nearest", "yes"),
                   ("m", "01", "a new row", "no")])
    old_rows = {"all": ["02: a head tracks All better"], "some": ["07: some head improves every "
                "task"], "near": ["03: beats nearest"], "gone": ["04: gone"]}
    new_rows = {"all": ["02: no single head does well overall"],
                "some": ["07: some head improves every task"], "near": ["03: beats nearest"],
                "fresh": ["01: a new row"]}
    t = changes.changes(old, new, old_rows, new_rows).set_index("entry")
    assert t.loc["all", "change"] == "same"  # reworded, same verdict
    assert (t.loc["some", "old verdict"], t.loc["some", "new verdict"],
            t.loc["some", "change"]) == ("mixed", "inconclusive", "changed")
    assert t.loc["near", "change"] == "same"
    assert t.loc["gone", "change"] == "dropped" and t.loc["gone", "new verdict"] == "\u2013"
    assert t.loc["fresh", "change"] == "new" and t.loc["fresh", "old verdict"] == "\u2013"
    assert "(no verdict changed)" not in changes.markdown(t.reset_index())


def test_models_are_kept_apart_and_a_row_testing_two_entries_counts_for_both():
    old = _ledger([("a", "01", "x", "yes"), ("b", "01", "x", "no")])
    new = _ledger([("a", "01", "x", "yes"), ("b", "01", "x", "yes")])
    rows = {"e1": ["01: x"], "e2": ["01: x"]}
    t = changes.changes(old, new, rows, rows)
    assert t[t["model"] == "a"]["change"].tolist() == ["same", "same"]
    assert t[t["model"] == "b"]["change"].tolist() == ["changed", "changed"]
    assert changes.markdown(t[t["model"] == "a"]) == "(no verdict changed)"


def test_a_ledger_without_the_columns_is_refused():
    with pytest.raises(ValueError, match="verdict"):
        changes.changes(pd.DataFrame({"model": [], "notebook": [], "claim": []}),
                        _ledger([]), {}, {})


def test_the_registry_of_a_commit_before_claim_registry_gives_its_rows():
    try:
        rows = changes.rows_at("13f1524", paths.REPO_ROOT)
    except ValueError as err:  # a shallow clone without that commit
        pytest.skip(str(err))
    assert rows["clark-3.1-previous-token-heads"] == [
        "01: heads put > 50% of their attention on the previous token"]


def test_a_later_commit_gives_the_rows_its_own_ledger_code_declared():
    # after Claim.registry the rows come from that commit's code, run in a child process
    head = subprocess.run(["git", "-C", str(paths.REPO_ROOT), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    from analysis_utils.ledger import coverage

    committed = subprocess.run(["git", "-C", str(paths.REPO_ROOT), "diff", "--quiet", "HEAD",
                                "--", "analysis_utils/ledger", "analysis_utils/claims"])
    rows = changes.rows_at(head, paths.REPO_ROOT)
    if committed.returncode == 0:  # the working tree's ledger code is HEAD's
        assert rows == coverage.rows_by_entry()
    assert any(k.startswith("01: ") for v in rows.values() for k in v)
    with pytest.raises(ValueError, match="no claims registry at"):
        changes.rows_at("0" * 40, paths.REPO_ROOT)
