"""``benchmarks/gpu_check.py``: on a machine without CUDA it says so and exits 0 having run
nothing; its CUDA path, run with the device forced to the CPU on a tiny subset (one MiniLM
fine-tune on 8 examples, its maps and study units), prints the per-unit table and the
comparison with the committed run; the notebook runner, on a stand-in command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from analysis_utils import paths
from analysis_utils.publish import tolerances

SCRIPT = paths.REPO_ROOT / "benchmarks" / "gpu_check.py"


def _env(**extra):
    return {**os.environ, "PYTHONPATH": str(paths.REPO_ROOT), **extra}


def test_without_cuda_it_says_so_and_runs_nothing(tmp_path):
    scratch = tmp_path / "scratch"
    out = subprocess.run([sys.executable, str(SCRIPT), "--scratch", str(scratch)],
                         capture_output=True, text=True, timeout=300,
                         env=_env(CUDA_VISIBLE_DEVICES=""))  # hides any GPU there is
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("gpu_check: no CUDA here (") and "nothing run" in out.stdout
    assert "## plan subset" not in out.stdout
    assert not scratch.exists()  # no cache, no outputs


@pytest.fixture(scope="module")
def gpu_check():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import gpu_check as module
    finally:
        sys.path.pop(0)
    return module


@pytest.mark.packaged_model
@pytest.mark.gold_data
def test_the_cuda_path_on_the_cpu_with_a_tiny_subset(tmp_path, gpu_check, capsys):
    if not (paths.data_dir() / "glue").is_dir():
        pytest.skip(f"gold GLUE data not found in {paths.data_dir()}: set {paths.DATA_ENV}")
    tiny = {"train_subsets": "MRPC:8", "max_dev": "8", "epochs": "1", "n_examples": "8",
            "importance_examples": "8", "n_random_orders": "1", "modes": "uniform",
            "tasks": "MRPC", "seeds": "42,43", "multi_seed_tasks": "MRPC", "random_init": "0",
            "lr_check": ""}
    label = "MRPC/pretrained/seed43"  # not the first seed: a study without pruning curves
    args = ["--device", "cpu", "--no-notebooks", "--scratch", str(tmp_path), "--finetunes",
            label, "--measured", label, *[a for k, v in tiny.items() for a in ("-p", f"{k}={v}")]]
    assert gpu_check.main(args) == 0
    out = capsys.readouterr().out
    assert "device forced to the CPU" in out
    rows = [line for line in out.splitlines() if line.startswith(f"| {label}")]
    assert [r.split(" | ")[1] for r in rows] == ["ok", "ok", "ok"]  # fine-tune, maps, study
    assert all(" | cpu | float32 | n/a / n/a | n/a |" in r for r in rows), rows
    assert "compare (06's declared tolerance) of 1 fine-tune(s) with HEAD" in out
    assert "train: committed 3668, new 8" in out and "another train size" in out
    # the cross-device tolerance of the committed seeds' spread (tests/test_cross_device.py)
    runs = tolerances.read_runs(paths.REPO_ROOT / "results" / "06_finetune_runs.csv")
    band = {(t.task, t.init, t.metric): t.tolerance
            for t in tolerances.propose(tolerances.seed_spread(runs))}
    assert "MRPC/pretrained f1:" in out
    assert f"(tolerance {band[('MRPC', 'pretrained', 'f1')]:.2f}) OUTSIDE" in out
    assert "gpu_check: 3 units, 0 notebooks in" in out and out.rstrip().endswith("all ran")
    records = list((tmp_path / "cache" / "runplan" / "units").glob("*.json"))
    assert sorted(json.loads(r.read_text())["kind"] for r in records) == [
        "finetune", "maps", "study"]


def test_the_notebook_runner_times_each_and_reads_its_provenance(tmp_path, gpu_check):
    def command(prefixes):  # a stand-in for `run --profile smoke --only 01,02,03`: 01 runs
        # (0.3 s), 02 fails before writing its provenance, so 03 never runs
        code = ("import json, pathlib, sys, time; p = pathlib.Path(sys.argv[1]) / 'results'; "
                "p.mkdir(parents=True, exist_ok=True); time.sleep(0.3); "
                "(p / '01_provenance.json').write_text(json.dumps("
                "{'device': 'cuda (fake)', 'wall_time_s': 0.3})); "
                "print('02 failed: boom'); sys.exit(1)")
        return [sys.executable, "-c", code, str(tmp_path)]

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "03_provenance.json").write_text("{}")  # older than the run
    os.utime(tmp_path / "results" / "03_provenance.json", (1, 1))
    readings = iter([(0.0, 500.0)] + [(50.0, 1700.0)] * 10_000)
    rows, total = gpu_check.run_notebooks(["01", "02", "03"], tmp_path, dict(os.environ),
                                          reader=lambda: next(readings), command=command,
                                          interval=0.02)
    assert [(r["prefix"], r["ok"], r["device"]) for r in rows] == [
        ("01", True, "cuda (fake)"), ("02", False, None), ("03", False, None)]
    assert rows[0]["seconds"] == 0.3 and total >= 0.3
    assert rows[0]["gpu_mem_mb"] == 1200.0 and rows[0]["gpu_util_max"] == 50.0
    assert "02 failed: boom" in rows[1]["tail"]
    table = gpu_check.notebook_table(rows)
    assert "| 01 | ok | 0.3 | cuda (fake) | 50 / 50 | 1,200 |" in table
    assert "| 02 | FAILED | n/a | ? | n/a / n/a | n/a |" in table
    rows, _ = gpu_check.run_notebooks(["01"], tmp_path, dict(os.environ), reader=None,
                                      command=command)
    assert rows[0]["ok"] and rows[0]["gpu_mem_mb"] is None


def test_the_h100_estimate_by_hand():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import gpu_plan_estimate as e
    finally:
        sys.path.pop(0)
    plan = [{"label": "MRPC/pretrained/seed42", "kind": "finetune", "task": "MRPC", "flops": 10},
            {"label": "RTE/pretrained/seed42", "kind": "finetune", "task": "RTE", "flops": 5},
            {"label": "MRPC/pretrained/seed42 study (uniform)", "kind": "study", "task": "MRPC",
             "flops": 4}]
    units = e.unit_seconds(plan, "minilm")
    # MRPC as measured; RTE scaled by FLOPs from it: 5 + (17.3 - 5) x 5 / 10; study as measured
    assert [round(t, 2) for *_, t in units] == [17.3, 11.15, 8.3, 1.0]
    # packed four to a GPU (27% busy), gain min(4, 1.8 x 0.79 / 0.27) = 4: times as alone;
    # each wave 16 s of imports plus its longest unit
    assert e.makespan(units, 1, "minilm") == pytest.approx(16 + 17.3 + 16 + 8.3)
    # one at a time: the sums
    assert e.makespan(units, 1, "minilm", packed=False) == pytest.approx(
        16 + 17.3 + 11.15 + 16 + 8.3 + 1.0)
    # BERT-base: two to a GPU (79% busy), each 2 / 1.8 slower
    bert = e.unit_seconds(plan, "bert-base-uncased")
    assert e.makespan(bert, 1, "bert") == pytest.approx(
        16 + 32 * 2 / 1.8 + 16 + 43 * 2 / 1.8)
