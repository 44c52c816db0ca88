"""Saved evidence whose arrays ship in the run's own arrays files (analysis_utils.publish.shipped):
stored once, found by checksum, and the same value whether computed or replayed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis_utils import paths
from analysis_utils.publish import saved, shipped

REPO = Path(__file__).resolve().parents[1]


class _Run:
    """What saved.step reads of a notebook's Run."""

    def __init__(self, recompute: bool, seed: int = 0):
        self.prefix, self.commit = "01", "abc1234def"
        self.params = {"seed": seed, "recompute": recompute}
        self.models, self.data, self.written = {}, {}, []

    def arrays(self, name, arrays):  # as report.Run.arrays writes them
        results, _ = paths.output_dirs()
        results.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(results / f"{self.prefix}_{name}.npz", **arrays)


def _compute(calls, scale=1.0):
    def compute():
        calls.append(1)
        return {"stats": pd.DataFrame({"a": [1.5, 2.5]}),
                "by_segment_model": {"x": np.arange(6, dtype=np.float32).reshape(2, 3) * scale,
                                     "article": np.array([0, 1], dtype=np.int32)}}
    return compute


def _notebook(run, compute):
    """Notebook 01's pattern: the step, then run.arrays with the entry and one array more."""
    ev = shipped.step(run, "surface", compute, "maps", arrays=["by_segment_model"])
    run.arrays("by_segment_model", {**ev["by_segment_model"], "extra": np.ones(2)})
    return ev


@pytest.fixture
def folders(tmp_path, monkeypatch):
    repo = tmp_path / "repo_results"
    monkeypatch.setattr(paths, "RESULTS_DIR", repo)
    monkeypatch.delenv(saved.PUBLISHED_ENV, raising=False)

    def out(name):
        monkeypatch.setenv(paths.OUTPUT_ENV, str(tmp_path / name))
        return tmp_path / name / "results"
    return repo, out


def test_the_evidence_keeps_a_checksum_and_replay_gives_the_same_value(folders, capsys):
    repo, out = folders
    calls = []
    # the committed run: computed, written to the repository's results/
    out_repo = out("committed")
    ev = _notebook(_Run(recompute=True), _compute(calls))
    for f in ("01_evidence_surface.npz", "01_by_segment_model.npz"):
        (repo / f).parent.mkdir(parents=True, exist_ok=True)
        (repo / f).write_bytes((out_repo / f).read_bytes())
    stored = saved.read(repo / "01_evidence_surface.npz")
    assert shipped.is_reference(stored["by_segment_model"])  # no copy of the arrays
    assert stored["by_segment_model"]["names"] == ["article", "x"]
    # a reader with an empty output folder replays both, without computing
    out("reader")
    again = _notebook(_Run(recompute=False), _compute(calls))
    assert len(calls) == 1
    assert "read from 01_by_segment_model.npz (matched by checksum)" in capsys.readouterr().out
    pd.testing.assert_frame_equal(again["stats"], ev["stats"])
    for k, v in ev["by_segment_model"].items():
        np.testing.assert_array_equal(again["by_segment_model"][k], v)
        assert again["by_segment_model"][k].dtype == v.dtype


def test_arrays_with_another_checksum_are_not_used_and_the_step_computes(folders, capsys):
    repo, out = folders
    calls = []
    out_repo = out("committed")
    _notebook(_Run(recompute=True), _compute(calls))
    for f in ("01_evidence_surface.npz", "01_by_segment_model.npz"):
        repo.mkdir(parents=True, exist_ok=True)
        (repo / f).write_bytes((out_repo / f).read_bytes())
    # another run re-made the arrays file: same names, other numbers
    np.savez_compressed(repo / "01_by_segment_model.npz", x=np.zeros((2, 3), np.float32),
                        article=np.array([0, 1], dtype=np.int32))
    reader = out("reader")
    ev = _notebook(_Run(recompute=False), _compute(calls, scale=2.0))
    assert len(calls) == 2 and "with the saved checksum not found; computing here" in \
        capsys.readouterr().out
    assert ev["by_segment_model"]["x"][1, 2] == 10.0
    # and the evidence it leaves refers to what it wrote, so its own replay matches
    ref = saved.read(reader / "01_evidence_surface.npz")["by_segment_model"]
    assert shipped.lookup(ref, [reader]) is not None


def test_a_reference_refuses_what_is_not_an_array():
    with pytest.raises(saved.EvidenceError, match="entry 'x' is not an array"):
        shipped.reference("01_a.npz", {"x": [1, 2]})


def test_every_committed_reference_finds_its_arrays_beside_it():
    """Each committed evidence file's references (shipped.step) resolve, by checksum, to the
    arrays file committed in the same folder: a reader's replay does not fall back on
    computing, and a re-made arrays file without its evidence is caught here."""
    refs = 0
    for p in sorted(REPO.glob("results/**/*_evidence_*.npz")):
        value = saved.read(p)
        for entry in (value.values() if isinstance(value, dict) else ()):
            if shipped.is_reference(entry):
                refs += 1
                assert shipped.lookup(entry, [p.parent]) is not None, \
                    f"{p.relative_to(REPO)}: {entry[shipped.REF]} does not match its checksum"
    assert refs >= 4  # 01's surface step, model and control, in both profiles


def test_no_committed_evidence_file_exceeds_5_mb():
    """The size a repository can ship per file: bulk arrays that a run writes anyway are kept
    once (shipped.step), not again inside the evidence."""
    big = {str(p.relative_to(REPO)): round(p.stat().st_size / 1e6, 1)
           for p in REPO.glob("results/**/*_evidence_*.npz") if p.stat().st_size > 5e6}
    assert not big, f"evidence files over 5 MB (MB): {big}"
