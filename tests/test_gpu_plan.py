"""The run plan on a GPU box, tested without one: the precision (validated, applied around a
unit's work and undone after it, named by the fine-tuning key so every precision shares one
cache; a root the earlier separate-root code marked is refused), the GPU figures and the unit record, GPU shares chosen from measurements, and the
long-lived Ray workers, on Ray's LOGICAL GPUs (``ray.init(num_gpus=2)``: scheduling only, no
CUDA). Units here are probes that train nothing (seconds in all)."""

from __future__ import annotations

import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

from analysis_utils.runplan import cli, execute, gpu, precision

# ------------------------------------------------------------------------------ precision

def test_precision_names_are_validated_with_the_valid_ones_in_the_error():
    assert precision.PRECISIONS == ("float32", "tf32", "bf16") and precision.DEFAULT == "float32"
    with pytest.raises(ValueError, match="'fp16' is not one of float32, tf32, bf16"):
        precision.validate("fp16")
    assert precision.validate("float32", "cpu") == "float32"
    assert precision.validate("bf16", "cpu") == "bf16"  # CPU autocast
    with pytest.raises(ValueError, match="tf32 applies to CUDA matrix products only.*cpu"):
        precision.validate("tf32", "cpu")
    with pytest.raises(ValueError, match="torch does not see here"):
        precision.validate("tf32", "cuda", capability=lambda: None)
    with pytest.raises(ValueError, match="compute capability 8.0 or later.*7.5"):
        precision.validate("bf16", "cuda", capability=lambda: (7, 5))
    assert precision.validate("tf32", "cuda", capability=lambda: (9, 0)) == "tf32"


def test_plan_run_refuses_a_bad_precision_before_anything_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BERTOLOGY_CACHE_DIR", str(tmp_path))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--profile", "smoke", "--precision", "fp16"])
    assert exit_.value.code == 2 and "float32, tf32, bf16" in capsys.readouterr().err
    if torch.cuda.is_available():
        pytest.skip("CUDA is here: tf32 is allowed")
    assert cli.main(["run", "--profile", "smoke", "--in-process", "--precision", "tf32"]) == 1
    assert "tf32 applies to CUDA matrix products only" in capsys.readouterr().err
    assert not (tmp_path / "precision").exists() and not (tmp_path / "finetune").exists()


def _flags():
    return (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
            torch.get_float32_matmul_precision())


def test_precision_is_applied_around_the_block_and_undone_after_it(monkeypatch):
    before = _flags()
    with precision.applied("float32", "cpu") as state:
        assert _flags()[0] is False and _flags()[2] == "highest"
        assert state == {"precision": "float32", "device_kind": "cpu", "autocast": None}
    assert _flags() == before
    with precision.applied("bf16", "cpu") as state:
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
        assert state["autocast"] == "cpu:bfloat16"
    assert not torch.is_autocast_enabled("cpu") and _flags() == before
    # tf32 on a (pretended) Ampere GPU: the flags are set inside, restored after
    monkeypatch.setattr(precision, "_cuda_capability", lambda: (8, 0))
    monkeypatch.setattr(precision.validate, "__kwdefaults__",
                        {"capability": precision._cuda_capability})
    with precision.applied("tf32", "cuda"):
        assert _flags() == (True, True, "high")
    assert _flags() == before
    with pytest.raises(ValueError, match="tf32"):
        with precision.applied("tf32", "cpu"):
            pass
    assert _flags() == before


def test_a_root_the_separate_root_code_marked_is_refused(tmp_path):
    """Its entries were keyed as float32 ones; every precision now shares the one cache."""
    assert precision.check_root(tmp_path) == tmp_path
    old = tmp_path / "precision" / "bf16"
    old.mkdir(parents=True)
    (old / precision.MARKER).write_text(json.dumps({"precision": "bf16"}))
    with pytest.raises(ValueError, match="holds bf16 results of the earlier separate-root.*"
                                         "-p precision=bf16"):
        precision.check_root(old)
    assert precision.check_root(tmp_path) == tmp_path  # the cache above it is not marked


# ----------------------------------------------------------------------- GPU figures, shares

def test_choose_share_packs_by_memory_and_utilisation():
    # hand-computed: k = min(4, floor(total / (peak x 1.25)), ceil(100 / util))
    assert gpu.choose_share(1500, 81559, 27) == 1 / 4  # min(4, 43, 4)
    assert gpu.choose_share(1500, 81559, 40) == 1 / 3  # min(4, 43, 3)
    assert gpu.choose_share(9000, 81559, 79) == 1 / 2  # min(4, 7, 2)
    assert gpu.choose_share(30000, 81559, 10) == 1 / 2  # memory: floor(81559 / 37500) = 2
    assert gpu.choose_share(70000, 81559, 10) == 1.0  # floor(0.93) = 0 -> at least 1
    assert gpu.choose_share(None, None, 27) == 1 / 4  # no memory figure: utilisation alone
    assert gpu.choose_share(1500, 81559, None) == 1 / 4  # no utilisation: memory and the cap
    assert gpu.choose_share(None, None, None) is None
    assert gpu.choose_share(100, 80000, 5, max_per_gpu=8) == 1 / 8


class Probe:
    """A unit that trains nothing: it records the precision state it ran under, waits until
    ``barrier`` units have started (so they must run side by side), or fails."""

    kind, model = "probe", "tiny"

    def __init__(self, label, folder, *, barrier=1, gpu_share=0.5, num_cpus=1, fail=False,
                 crash_first=False):
        self.label, self.folder, self.barrier = label, str(folder), barrier
        self.gpu_share, self.num_cpus, self.device = gpu_share, num_cpus, ""
        self.fail, self.crash_first = fail, crash_first

    def execute(self, key, cache_dir, device):
        folder = Path(self.folder)
        if self.crash_first and not (folder / f"{key}.crashed").exists():
            (folder / f"{key}.crashed").touch()
            os._exit(134)
        if self.fail:
            raise ValueError(f"{self.label} is broken")
        (folder / f"{key}.started").touch()
        deadline = time.monotonic() + 60
        while len(list(folder.glob("*.started"))) < self.barrier:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.barrier} units never ran side by side")
            time.sleep(0.02)
        return {"device": device or "cpu", "autocast_on": torch.is_autocast_enabled("cpu"),
                "worker_pid": os.getpid()}


def _probes(folder, n, **kw):
    folder.mkdir(exist_ok=True)
    return [execute.Job(Probe(f"probe{i}", folder, **kw), f"probe{i}") for i in range(n)]


def test_monitor_without_cuda_says_n_a_and_samples_what_it_is_given():
    with gpu.Monitor("cpu") as m:
        pass
    assert m.stats["gpu_peak_allocated_mb"] is None and m.stats["gpu_util_mean"] is None
    assert gpu.fmt_stats(m.stats) == "GPU n/a"
    readings = iter([(20.0, 1000.0), (40.0, 3000.0)] + [(30.0, 2000.0)] * 1000)
    with gpu.Monitor("cpu", interval=0.01, reader=lambda: next(readings)) as m:
        time.sleep(0.1)
    assert m.stats["gpu_util_max"] == 40.0 and m.stats["gpu_mem_used_max_mb"] == 3000.0
    assert m.stats["gpu_samples"] >= 2 and 20.0 <= m.stats["gpu_util_mean"] <= 40.0
    assert gpu.fmt_stats({**m.stats, "gpu_util_mean": 25.0}) == \
        "GPU 25% busy (max 40%), peak n/a"


def test_a_unit_runs_at_the_plans_precision_and_leaves_a_record(tmp_path):
    lines = []
    [o] = execute.run_units(_probes(tmp_path / "p", 1), tmp_path, precision="bf16",
                            out=lines.append)
    assert o.ok and o.summary["autocast_on"] is True and o.summary["autocast"] == "cpu:bfloat16"
    assert not torch.is_autocast_enabled("cpu")  # undone after the unit
    record = json.loads(execute.record_path(tmp_path, "probe0").read_text())
    assert {k: record[k] for k in ("kind", "model", "device", "device_kind", "precision")} == {
        "kind": "probe", "model": "tiny", "device": "cpu", "device_kind": "cpu",
        "precision": "bf16"}
    assert record["gpu"]["gpu_peak_allocated_mb"] is None
    assert "; bf16; GPU n/a)" in lines[0]
    assert "precision bf16" in o.log.read_text()
    # a precision this worker cannot run at fails at once, without a second attempt
    if not torch.cuda.is_available():
        [bad] = execute.run_units(_probes(tmp_path / "q", 1), tmp_path, precision="tf32",
                                  retries=2, out=lines.append)
        assert not bad.ok and bad.attempts == 1 and "tf32 applies to CUDA" in bad.error
    with pytest.raises(ValueError, match="not one of float32, tf32, bf16"):
        execute.run_units([], tmp_path, precision="half")
    # without a plan-wide precision, a unit runs at its own (a fine-tune's: its settings')
    own = _probes(tmp_path / "r", 1)
    own[0].unit.precision = "bf16"
    [o] = execute.run_units(own, tmp_path / "r", out=lines.append)
    assert o.ok and o.summary["autocast"] == "cpu:bfloat16" and o.summary["precision"] == "bf16"
    [o] = execute.run_units(_probes(tmp_path / "s", 1), tmp_path / "s", out=lines.append)
    assert o.ok and o.summary["autocast"] is None and o.summary["precision"] == "float32"
    with pytest.raises(ValueError, match="choose one of actors, tasks"):
        execute.run_units([], tmp_path, workers="threads")


def test_measured_share_reads_the_records_of_the_same_kind_model_and_device():
    unit = Probe("x", ".")
    rec = {"kind": "probe", "model": "tiny", "device_kind": "cuda",
           "gpu": {"gpu_peak_allocated_mb": 1000.0, "gpu_total_mb": 80000.0,
                   "gpu_util_mean": 20.0}}
    assert gpu.measured_share(unit, [rec]) == 0.25
    assert gpu.measured_share(unit, [{**rec, "model": "bert"}]) is None
    assert gpu.measured_share(unit, [{**rec, "device_kind": "cpu"}]) is None
    high = {**rec, "gpu": {**rec["gpu"], "gpu_util_mean": 60.0}}
    assert gpu.measured_share(unit, [rec, high, high]) == 0.5  # medians: 60% busy
    assert execute.slots(1, 0.25, [{"CPU": 4, "GPU": 2}]) == 4
    assert execute.slots(0.5, 0.25, [{"CPU": 4, "GPU": 2}, {"CPU": 2}]) == 8 + 0


# ------------------------------------------------- long-lived workers on logical GPUs (Ray)

@pytest.fixture(scope="module")
def ray_gpus():
    """A local Ray instance of its own (own temp dir) with 4 CPUs and 2 LOGICAL GPUs."""
    ray = pytest.importorskip("ray", reason="Ray is the optional extra .[distributed]")
    if ray.is_initialized():
        ray.shutdown()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Probe, by value
    temp = tempfile.mkdtemp(prefix="rgpu")
    ray.init(num_cpus=4, num_gpus=2, include_dashboard=False, log_to_driver=False,
             _temp_dir=temp)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_long_lived_workers_run_many_units_each(ray_gpus, tmp_path):
    """Six units, four slots (1 CPU, 0.5 GPU each): four workers, started once, two on each
    logical GPU; the last two units reuse workers that ran one before (no new process, no
    second import)."""
    lines = []
    outcomes = execute.run_units(_probes(tmp_path / "b", 6, barrier=4), tmp_path,
                                 backend="ray", out=lines.append)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    pids = collections.Counter(o.summary["pid"] for o in outcomes)
    assert len(pids) == 4 and os.getpid() not in pids  # the first four ran side by side
    for pid, n in pids.items():  # each worker counted its units: 1, 2, ... in one process
        assert sorted(o.summary["worker_units"] for o in outcomes
                      if o.summary["pid"] == pid) == list(range(1, n + 1))
    assert max(pids.values()) >= 2  # the last two ran on workers that had run one before
    assert "4 long-lived worker(s): 4 x (1 CPU, 0.5 GPU)" in "\n".join(lines)
    assert all(o.summary["resources"] == {"CPU": 1.0, "GPU": 0.5} for o in outcomes)
    gpu_of = {o.summary["pid"]: tuple(o.summary["gpu_ids"]) for o in outcomes}
    assert collections.Counter(gpu_of.values()) == {("0",): 2, ("1",): 2}  # two per GPU
    # the unit's record says what its outcome says: which of its worker's units it was (1-3:
    # Ray may start the six in any order, and one worker may take both of the last two)
    rec = json.loads(execute.record_path(tmp_path, "probe5").read_text())
    [five] = [o for o in outcomes if o.job.key == "probe5"]
    assert rec["worker_units"] == five.summary["worker_units"] in (1, 2, 3)
    assert rec["resources"] == {"CPU": 1.0, "GPU": 0.5}


def test_default_shares_come_from_measurements_and_the_option_overrides(ray_gpus, tmp_path):
    """Records of earlier units of the same kind and model, measured at 20% busy with a small
    peak, make the next ones ask for a quarter GPU each (four fit a GPU); without a record
    the unit's stated share; --gpus-per-unit overrides both."""
    records = tmp_path / "runplan" / "units"
    records.mkdir(parents=True)
    (records / "earlier.json").write_text(json.dumps({
        "kind": "probe", "model": "tiny", "device_kind": "cuda",
        "gpu": {"gpu_peak_allocated_mb": 900.0, "gpu_total_mb": 81559.0,
                "gpu_util_mean": 20.0}}))
    lines = []
    outcomes = execute.run_units(_probes(tmp_path / "b", 4, barrier=4), tmp_path,
                                 backend="ray", out=lines.append)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    assert "probe tiny: 0.25 (measured, 4 units)" in "\n".join(lines)
    assert all(o.summary["resources"] == {"CPU": 1.0, "GPU": 0.25} for o in outcomes)
    per_gpu = collections.Counter(g for o in outcomes for g in o.summary["gpu_ids"])
    assert sum(per_gpu.values()) == 4 and set(per_gpu) <= {"0", "1"}
    # no record of this model: the unit's own share; the option: whole GPUs, one unit each
    shares = execute._shares(_probes(tmp_path / "s", 1, gpu_share=0.5), str(tmp_path / "x"),
                             True, None, lines.append)
    assert shares == {"probe0": 0.5} and "probe tiny: 0.5 (stated default, 1 unit)" in lines[-1]
    assert execute._shares(_probes(tmp_path / "s", 1), str(tmp_path), False, None,
                           lines.append) == {"probe0": 0.0}  # a cluster without GPUs
    lines = []
    outcomes = execute.run_units(_probes(tmp_path / "c", 2, barrier=2), tmp_path,
                                 backend="ray", gpus_per_unit=1.0, out=lines.append)
    assert [o.summary["resources"] for o in outcomes] == [{"CPU": 1.0, "GPU": 1.0}] * 2
    assert sorted(g for o in outcomes for g in o.summary["gpu_ids"]) == ["0", "1"]
    assert "GPU share per unit: 1 (--gpus-per-unit)" in lines[1]


def test_a_dead_worker_is_replaced_and_fresh_tasks_remain_available(ray_gpus, tmp_path):
    crash = _probes(tmp_path / "crash", 1, crash_first=True)
    outcomes = execute.run_units(crash, tmp_path, backend="ray", retries=1,
                                 out=lambda line: None)
    assert all(o.ok and o.attempts == 2 for o in outcomes), [o.error for o in outcomes]
    on_tasks = execute.run_units(_probes(tmp_path / "t", 1), tmp_path,
                                 backend="ray", workers="tasks", out=lambda line: None)
    assert all(o.ok and "worker_units" not in o.summary for o in on_tasks)


@pytest.mark.packaged_model
@pytest.mark.gold_data
def _keys(text: str) -> list[str]:
    return [w for w in text.split() if w.startswith("all-MiniLM-L6-v2-")]


@pytest.mark.packaged_model
@pytest.mark.gold_data
def test_plan_show_at_bf16_keys_its_units_apart_in_the_one_cache(tmp_path, monkeypatch, capsys):
    from analysis_utils import paths

    if not (paths.data_dir() / "glue").is_dir():
        pytest.skip(f"gold GLUE data not found in {paths.data_dir()}: set {paths.DATA_ENV}")
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path))
    tiny = ["-p", "tasks=MRPC", "-p", "multi_seed_tasks=", "-p", "train_subsets=MRPC:16",
            "-p", "max_dev=16", "-p", "random_init=0", "-p", "lr_check="]
    assert cli.main(["show", "--profile", "smoke", *tiny]) == 0
    float32 = capsys.readouterr().out
    assert cli.main(["show", "--profile", "smoke", "-p", "precision=bf16", *tiny]) == 0
    bf16 = capsys.readouterr().out
    assert f"cache {tmp_path}; precision bf16" in bf16  # the one cache, no root of its own
    assert len(_keys(bf16)) == len(_keys(float32)) == 3  # fine-tune, maps, study
    assert not set(_keys(bf16)) & set(_keys(float32))  # maps and study follow the fine-tune
    # --precision is -p precision=..., and the two must agree
    assert cli.main(["show", "--profile", "smoke", "--precision", "bf16", *tiny]) == 0
    assert _keys(capsys.readouterr().out) == _keys(bf16)
    assert cli.main(["show", "--profile", "smoke", "--precision", "bf16", "-p",
                     "precision=float32", *tiny]) == 1
    assert "disagree" in capsys.readouterr().err
    # a root the earlier separate-root code marked stops the plan before anything is read
    old = tmp_path / "precision" / "bf16"
    old.mkdir(parents=True)
    (old / precision.MARKER).write_text(json.dumps({"precision": "bf16"}))
    monkeypatch.setenv(paths.CACHE_ENV, str(old))
    assert cli.main(["show", "--profile", "smoke", *tiny]) == 1
    assert "holds bf16 results" in capsys.readouterr().err


def test_without_records_the_h100_figures_then_the_stated_share_apply(tmp_path):
    class Unit:
        gpu_share = 0.5

        def __init__(self, kind, model):
            self.kind, self.model = kind, model

    # MiniLM fine-tunes were at most 27% busy on an H100: a quarter each; BERT-base 79%: half
    assert gpu.prior_share(Unit("finetune", "minilm")) == 0.25
    assert gpu.prior_share(Unit("finetune", "bert-base-uncased")) == 0.5
    assert gpu.prior_share(Unit("study", "minilm")) is None
    lines = []
    jobs = [execute.Job(Unit("finetune", "minilm"), "a"), execute.Job(Unit("study", "m"), "b")]
    assert execute._shares(jobs, str(tmp_path), True, None, lines.append) == {"a": 0.25,
                                                                              "b": 0.5}
    assert lines == ["[plan] GPU share per unit: finetune minilm: 0.25 (measured on an H100, "
                     "issue 34, 1 unit); study m: 0.5 (stated default, 1 unit)"]
