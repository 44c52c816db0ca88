"""Leave-one-fine-tuning-seed-out (issue 43): a run folder without one seed's entries.

Hand-made folders in each layout notebooks 06-07 save per-seed entries in; the filter removes
exactly that seed's entries (both arms), keeps everything else, and refuses a 06/07 file of no
known layout. The committed folder's every 06/07 file has a layout, and no rule of the ledger
reads a file of seed aggregates (those would not be filtered)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis_utils import paths
from analysis_utils.ledger import seeds_left_out as slo

ROOT = paths.REPO_ROOT


def _folder(tmp_path: Path) -> Path:
    src = tmp_path / "results"
    src.mkdir()
    (src / "06_provenance.json").write_text(json.dumps({"parameters": {"seeds": "43,42,44"}}))
    pd.DataFrame({"task": ["MRPC"] * 4, "init": ["pretrained", "pretrained", "random", "random"],
                  "seed": [42, 43, 42, 43], "f1": [1.0, 2.0, 3.0, 4.0]}
                 ).to_csv(src / "06_finetune_runs.csv", index=False)
    pd.DataFrame({"task": ["RTE"] * 3, "seed_a": [42, 42, 43], "seed_b": [43, 44, 44],
                  "spearman": [0.1, 0.2, 0.3]}).to_csv(src / "07_seed_agreement.csv", index=False)
    pd.DataFrame({"task": ["MRPC"] * 3, "model": ["pre-trained", "fine-tuned s42", "fine-tuned s43"],
                  "seed": [0, 0, 0], "Vertical": [0.1, 0.2, 0.3]}
                 ).to_csv(src / "06_type_proportions_by_seed.csv", index=False)
    np.savez(src / "06_dev_predictions.npz", labels_MRPC=np.array([0, 1]),
             pred_MRPC_pretrained_42=np.array([0, 0]), pred_MRPC_pretrained_43=np.array([1, 1]),
             pred_MRPC_random_43=np.array([1, 0]), pred_MRPC_random_44=np.array([0, 1]),
             pred_MRPC_untrained_43=np.array([1, 1]))
    np.savez(src / "07_predictions_MRPC.npz", labels=np.array([0, 1]),
             pred_42_uniform=np.zeros((3, 2)), pred_42_zero=np.zeros((3, 2)),
             pred_43_uniform=np.ones((3, 2)), metric=np.array("f1"))
    np.savez(src / "06_by_example.npz",
             models_MRPC=np.array(["pre-trained", "fine-tuned s42", "fine-tuned s43"]),
             cls_MRPC=np.arange(3 * 2 * 4).reshape(3, 2, 4),
             tophead_MRPC=np.arange(3 * 5).reshape(3, 5),
             seeds_MRPC=np.array([42, 43]), drift_MRPC=np.array([[1.0, 1.0], [2.0, 2.0]]),
             increase_MRPC_noun=np.array([[[1.0]], [[2.0]]]),
             relations=np.array(["verb->subject", "pronoun->noun", "x"]))
    (src / "01_surface.csv").write_text("a\n1\n")
    return src


def test_finetune_seeds_read_from_06s_parameters(tmp_path):
    assert slo.finetune_seeds(_folder(tmp_path)) == [42, 43, 44]
    assert slo.finetune_seeds(tmp_path) == []


def test_drop_seed_removes_that_seeds_entries_in_every_layout(tmp_path):
    dst = slo.drop_seed(_folder(tmp_path), tmp_path / "out", 43)
    runs = pd.read_csv(dst / "06_finetune_runs.csv")
    assert runs["seed"].tolist() == [42, 42] and runs["f1"].tolist() == [1.0, 3.0]
    pairs = pd.read_csv(dst / "07_seed_agreement.csv")
    assert pairs[["seed_a", "seed_b"]].values.tolist() == [[42, 44]]
    types = pd.read_csv(dst / "06_type_proportions_by_seed.csv")
    assert types["model"].tolist() == ["pre-trained", "fine-tuned s42"]
    with np.load(dst / "06_dev_predictions.npz") as z:
        assert sorted(z.files) == ["labels_MRPC", "pred_MRPC_pretrained_42",
                                   "pred_MRPC_random_44", "pred_MRPC_untrained_43"]
    with np.load(dst / "07_predictions_MRPC.npz") as z:
        assert sorted(z.files) == ["labels", "metric", "pred_42_uniform", "pred_42_zero"]
    with np.load(dst / "06_by_example.npz") as z:
        assert z["models_MRPC"].tolist() == ["pre-trained", "fine-tuned s42"]
        assert z["cls_MRPC"].shape == (2, 2, 4)
        assert (z["cls_MRPC"][1] == np.arange(8, 16).reshape(2, 4)).all()
        assert z["tophead_MRPC"].tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
        assert z["seeds_MRPC"].tolist() == [42] and z["drift_MRPC"].tolist() == [[1.0, 1.0]]
        assert z["increase_MRPC_noun"].tolist() == [[[1.0]]]
        assert z["relations"].shape == (3,)  # no task suffix: not a per-model array
    assert (dst / "01_surface.csv").is_symlink()


def test_drop_seed_leaves_the_source_unchanged(tmp_path):
    src = _folder(tmp_path)
    before = {p.name: p.read_bytes() for p in src.iterdir()}
    slo.drop_seed(src, tmp_path / "out", 42)
    assert {p.name: p.read_bytes() for p in src.iterdir()} == before


def test_an_array_of_no_known_layout_is_refused(tmp_path):
    src = _folder(tmp_path)
    with np.load(src / "06_by_example.npz") as z:
        arrays = {k: z[k] for k in z.files}
    np.savez(src / "06_by_example.npz", **arrays, newstat_MRPC=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="newstat_MRPC.*seeds_left_out.py"):
        slo.drop_seed(src, tmp_path / "out", 42)
    np.savez(src / "06_by_example.npz", **{**arrays, "cls_MRPC": np.zeros((2, 2))})
    with pytest.raises(ValueError, match="not one per model"):
        slo.drop_seed(src, tmp_path / "out2", 42)


def test_the_committed_folder_without_a_seed_keeps_every_array_consistent(tmp_path):
    """Every array of 06's by-example file loses exactly the left-out seed's row."""
    src = ROOT / "results"
    seeds = slo.finetune_seeds(src)
    if len(seeds) < 2 or not (src / "06_by_example.npz").is_file():
        pytest.skip("no multi-seed 06 results committed")
    dst = slo.drop_seed(src, tmp_path / "out", seeds[0])
    with np.load(src / "06_by_example.npz") as a, np.load(dst / "06_by_example.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for k in a.files:
            if k not in slo.SHARED:
                assert len(b[k]) == len(a[k]) - 1, k


def test_a_06_07_file_of_no_known_layout_is_refused(tmp_path):
    src = _folder(tmp_path)
    pd.DataFrame({"seed": [42]}).to_csv(src / "07_new_table.csv", index=False)
    with pytest.raises(ValueError, match="07_new_table.csv.*seeds_left_out.py"):
        slo.drop_seed(src, tmp_path / "out", 42)


@pytest.mark.parametrize("folder", ["results", "results/base"])
def test_every_committed_06_07_file_has_a_layout(folder):
    files = sorted(p.name for p in (ROOT / folder).glob("0[67]_*") if p.is_file())
    for name in files:
        slo._classify(name)  # raises on a file of no known layout


def test_no_rule_reads_a_file_of_seed_aggregates():
    code = "".join(p.read_text() for p in (ROOT / "analysis_utils/ledger").glob("*.py")
                   if p.name != "seeds_left_out.py")
    read = set(re.findall(r'"(0[67]_[A-Za-z0-9_\-]+\.(?:csv|npz))"', code))
    assert read and not read & set(slo.AGGREGATE_FILES)
