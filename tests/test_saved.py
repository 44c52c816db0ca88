"""Saved evidence (analysis_utils.publish.saved): what a notebook's heavy step stores, how it is
keyed, and when it is replayed instead of computed (issue 54, item 2)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis_utils.analyses.surface import ByExample
from analysis_utils.publish import saved, shipped

REPO = Path(__file__).resolve().parents[1]


def _roundtrip(value):
    buf = io.BytesIO()
    np.savez_compressed(buf, **saved.pack(value))
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as z:  # no pickle anywhere
        return saved.unpack({k: z[k] for k in z.files})


def test_frames_come_back_equal_with_dtypes_index_columns_and_attrs():
    df = pd.DataFrame({"layer": np.arange(3, dtype=np.int16),
                       "x": np.array([0.1, 0.2, np.nan], dtype=np.float32),
                       "name": ["a", "b", "c"]})
    df.attrs = {"uniform": pd.Series([1.0, 2.0], index=["a", "b"]), "n": 3}
    wide = pd.DataFrame(np.eye(2), index=pd.Index(["p", "q"], name="row"), columns=[1, 2])
    multi = pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples(
        [("w", "cls"), ("n", "cls")], names=["kind", "target"]))
    back = _roundtrip({"df": df, "wide": wide, "multi": multi})
    pd.testing.assert_frame_equal(back["df"], df)
    pd.testing.assert_series_equal(back["df"].attrs["uniform"], df.attrs["uniform"])
    assert back["df"].attrs["n"] == 3
    pd.testing.assert_frame_equal(back["wide"], wide)
    pd.testing.assert_frame_equal(back["multi"], multi)


def test_containers_scalars_arrays_and_the_packages_dataclasses():
    bx = ByExample(values={"cls": np.ones((2, 1, 3), np.float32)},
                   counts={"cls": np.array([4, 0])}, uniform={"cls": np.array([0.5, 0.25])})
    value = {(1, 2): [np.float32(1.5), None, "x", (1, 2.5), True],
             "arr": np.arange(6, dtype=np.float16).reshape(2, 3),
             "series": pd.Series([1, 2], name=("a", 1)), "bx": bx, 7: float("nan")}
    back = _roundtrip(value)
    assert back[(1, 2)][:3] == [np.float32(1.5), None, "x"]
    assert type(back[(1, 2)][0]) is np.float32 and back[(1, 2)][3] == (1, 2.5)
    assert back[(1, 2)][4] is True and np.isnan(back[7])
    assert back["arr"].dtype == np.float16 and (back["arr"] == value["arr"]).all()
    pd.testing.assert_series_equal(back["series"], value["series"])
    assert isinstance(back["bx"], ByExample)
    np.testing.assert_array_equal(back["bx"].values["cls"], bx.values["cls"])
    assert back["bx"].pooled("cls").shape == (1, 3)


def test_what_cannot_be_stored_without_pickle_is_refused_by_name():
    with pytest.raises(saved.EvidenceError, match=r"value\['bad'\]: an object array"):
        saved.pack({"bad": np.array([{}, 1], dtype=object)})
    with pytest.raises(saved.EvidenceError, match="value\\[0\\]: cannot save a set"):
        saved.pack([{1, 2}])
    from dataclasses import dataclass

    @dataclass
    class Foreign:
        x: int

    with pytest.raises(saved.EvidenceError, match="only the package's own dataclasses"):
        saved.pack(Foreign(1))


def test_the_mode_line_says_whether_steps_compute_or_replay():
    class Run:
        params = {"recompute": False}

    assert saved.mode(Run()).startswith("heavy steps: read from the saved evidence")
    Run.params = {"recompute": True}
    assert saved.mode(Run()) == "heavy steps: computed here (recompute=True)"


def test_the_key_follows_parameters_models_and_data_but_not_device_or_recompute():
    models = {"model": {"weights_sha256": "a", "init": "pretrained", "label": "shown only"}}
    base = saved.key("01", "norms", {"seed": 0, "device": ""}, models, {"n": 1})
    assert base == saved.key("01", "norms", {"seed": 0, "device": "cuda", "recompute": True},
                             models, {"n": 1})
    # a field of the identity that does not say which weights (a label) does not count
    assert base == saved.key("01", "norms", {"seed": 0}, {"model": {
        "weights_sha256": "a", "init": "pretrained"}}, {"n": 1})
    for other in (saved.key("01", "norms", {"seed": 1}, models, {"n": 1}),
                  saved.key("01", "surface", {"seed": 0}, models, {"n": 1}),
                  saved.key("02", "norms", {"seed": 0}, models, {"n": 1}),
                  saved.key("01", "norms", {"seed": 0},
                            {"model": {"weights_sha256": "b", "init": "pretrained"}}, {"n": 1}),
                  saved.key("01", "norms", {"seed": 0}, models, {"n": 2})):
        assert other != base


def _step(tmp_path, compute, *, recompute=False, params=None, out="out", search=("repo",)):
    return saved.resolve("01", "norms", compute, what="norms", recompute=recompute,
                      params=params or {"seed": 0}, models={}, data={},
                      out_dir=tmp_path / out, search=[tmp_path / s for s in search],
                      commit="abc1234def", device="cpu (2 cores)")


def test_a_step_is_computed_once_then_replayed_and_recomputed_only_when_asked(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"t": pd.DataFrame({"a": [len(calls)]})}

    value, path, line = _step(tmp_path, compute, out="repo")
    assert path == tmp_path / "repo" / "01_evidence_norms.npz" and path.is_file()
    assert "computed here" in line and "no saved evidence" in line and len(calls) == 1
    # another run, writing elsewhere, finds the repository's file and copies it to its own
    value, path, line = _step(tmp_path, compute)
    assert len(calls) == 1 and value["t"]["a"].tolist() == [1]
    assert path == tmp_path / "out" / "01_evidence_norms.npz" and path.is_file()
    assert "read from" in line and "computed at abc1234 on cpu (2 cores)" in line
    assert saved.read_meta(path)["key"] == saved.read_meta(tmp_path / "repo" / path.name)["key"]
    # other parameters: no match, computed
    value, _, line = _step(tmp_path, compute, params={"seed": 1}, out="other")
    assert len(calls) == 2 and "no saved evidence for these parameters" in line
    # recompute=True computes even where a matching file exists, and says why
    value, _, line = _step(tmp_path, compute, recompute=True)
    assert len(calls) == 3 and "(recompute=True)" in line and value["t"]["a"].tolist() == [3]


def test_a_profile_subfolder_is_searched_and_a_corrupt_file_is_named(tmp_path):
    _step(tmp_path, lambda: [1, 2], out="repo/base")
    value, _, line = _step(tmp_path, lambda: pytest.fail("must replay"))
    assert value == [1, 2] and "repo/base/01_evidence_norms.npz" in line
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(saved.EvidenceError, match="bad.npz: saved evidence does not read"):
        saved.read(bad)
    assert saved.read_meta(bad) == {}


def _saved_steps(prefix: str) -> list[str]:
    """The step names notebook ``prefix``'s source passes to ``saved.step``."""
    (source,) = (REPO / "notebooks").glob(f"{prefix}_*.py")
    return sorted(set(re.findall(r"(?:saved|shipped)\.step\(\s*run,\s*\"(\w+)\"",
                                 source.read_text())))


def test_every_committed_run_ships_the_evidence_a_reader_replays():
    """For each committed render of a notebook with saved steps: each step's file is there,
    among the run's outputs, and its key is the one a reader with the run's parameters, models
    and data computes (so opening the notebook with those parameters replays it instead of
    computing). The models are those recorded when the step ran: the run's two, and, for steps
    after the labelled maps are loaded (05), the labels' model too."""
    import json

    checked = 0
    for prov_path in sorted(REPO.glob("results/**/[0-9][0-9]_provenance.json")):
        prov = json.loads(prov_path.read_text())
        prefix = prov["notebook"]
        for step in _saved_steps(prefix):
            name = saved.file_name(prefix, step)
            path = prov_path.parent / name
            assert path.is_file() and name in prov["outputs"], \
                f"{path.relative_to(REPO)}: missing; render {prefix} again"
            meta = saved.read_meta(path)
            roles = [prov["models"], {k: v for k, v in prov["models"].items()
                                      if k in ("model", "control")}]
            keys = {saved.key(prefix, step, prov["parameters"], m, prov["data"]) for m in roles}
            assert meta["key"] in keys, f"{path.relative_to(REPO)}: its key is not its run's"
            assert meta["commit"] == prov["git_commit"]
            checked += 1
    assert checked > 0  # notebooks 01, 04 and 05 save steps, in both profiles


def test_every_committed_evidence_file_reads_back_and_names_its_run():
    files = sorted(REPO.glob("results/**/*_evidence_*.npz"))
    total = sum(p.stat().st_size for p in files)
    assert total < 50e6, f"committed evidence is {total / 1e6:.1f} MB, over the 50 MB budget"
    for p in files:
        meta = saved.read_meta(p)
        assert {"key", "commit", "device", "seconds", "notebook", "step"} <= set(meta), p
        assert p.name == saved.file_name(meta["notebook"], meta["step"])
        saved.read(p)


#: Each notebook with saved evidence: its source's stem, the steps it saves and whether its
#: replay still extracts maps (05 draws the 210 hand-labelled maps, a few seconds, itself).
CONVERTED = {"01": ("01_surface_patterns", ["examples", "gradients", "norms", "surface"], False),
             "04": ("04_probes", ["probes"], False),
             "05": ("05_head_clustering", ["cv", "glue", "maps"], True)}


@pytest.mark.slow
@pytest.mark.parametrize("nb", sorted(CONVERTED))
def test_a_notebook_replayed_from_its_evidence_gives_the_same_tables_and_figures(tmp_path, nb):
    """The smoke notebook computed, then run again with an empty cache and recompute=False from
    its saved evidence alone: every table and figure byte for byte the same."""
    stem, steps, extracts = CONVERTED[nb]
    env = {**os.environ, "BERTOLOGY_CACHE_DIR": str(tmp_path / "cache_a")}
    cmd = [sys.executable, "-m", "analysis_utils", "run", "--profile", "smoke", "--only", nb]
    subprocess.run([*cmd, "--output-dir", str(tmp_path / "a")], env=env, check=True, cwd=REPO,
                   capture_output=True)
    (tmp_path / "b" / "results").mkdir(parents=True)
    for p in (tmp_path / "a" / "results").glob(f"{nb}_evidence_*.npz"):
        # the evidence, and the arrays files it refers to by checksum (shipped.step)
        value = saved.read(p)
        refs = [v[shipped.REF] for v in value.values() if shipped.is_reference(v)] \
            if isinstance(value, dict) else []
        for f in [p.name, *refs]:
            (tmp_path / "b" / "results" / f).write_bytes((p.parent / f).read_bytes())
    env["BERTOLOGY_CACHE_DIR"] = str(tmp_path / "cache_b")
    subprocess.run([*cmd, "-p", "recompute=False", "--output-dir", str(tmp_path / "b")],
                   env=env, check=True, cwd=REPO, capture_output=True)
    rendered = (tmp_path / "b" / "notebooks" / f"{stem}.ipynb").read_text()
    replayed = re.findall(rf": read from \S*{nb}_evidence_(\w+)\.npz", rendered)
    assert sorted(replayed) == steps
    assert ": computed here in" not in rendered
    assert (tmp_path / "cache_b" / "attention").exists() == extracts
    a, b = tmp_path / "a", tmp_path / "b"
    outputs = sorted(p.relative_to(a) for p in a.glob(f"*/{nb}_*.*")
                     if p.suffix in (".csv", ".md", ".png"))
    assert len(outputs) > 10
    assert [o for o in outputs if (a / o).read_bytes() != (b / o).read_bytes()] == []
