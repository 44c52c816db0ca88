"""The run plan (``analysis_utils.runplan``): its units per profile, agreeing with the calls
notebooks 06 and 07 make; a real local Ray run of a tiny plan equal bit for bit to the
in-process run; GPU placement on Ray's logical resources (no GPU needed); retries of failed
units and of crashed workers; a killed plan that resumes; a cache workers cannot see, refused.

Fine-tunes here are the packaged MiniLM on 16 MRPC examples for one epoch (seconds each)."""

from __future__ import annotations

import ast
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from analysis_utils import paths
from analysis_utils.params import ParameterError
from analysis_utils.runplan import cli, execute, finetunes, units

# The smoke profile's plan cut to two MRPC fine-tunes (seeds 42, 43) on 16 examples, 1 epoch,
# scored on 16 dev rows; given as `-p` gives them (text, typed per notebook).
TINY = {"tasks": "MRPC", "multi_seed_tasks": "MRPC", "train_subsets": "MRPC:16",
        "max_dev": "16", "random_init": "0", "lr_check": "",
        # notebook 07's measurements of each model (the study wave), kept as small
        "importance_examples": "16", "n_random_orders": "1"}
TINY_ARGS = [a for k, v in TINY.items() for a in ("-p", f"{k}={v}")]


# ------------------------------------------------------------------------ the plan's contents

def test_units_per_profile():
    smoke = units.build("smoke")
    assert [u.label for u in smoke] == [
        "MRPC/pretrained/seed42", "MRPC/pretrained/seed43", "STS-B/pretrained/seed42",
        "MRPC/random/seed42", "STS-B/random/seed42", "MRPC/pretrained/seed42@lr0.0001"]
    assert {(u.model, u.run.max_train, u.max_dev, u.settings.epochs) for u in smoke} == {
        ("minilm", 64, 24, 1)}
    assert [u.notebooks for u in smoke] == [("06", "07")] * 3 + [("06",)] * 3

    default = units.build("default")
    # five fine-tuning seeds per task in both arms (issue 43), and the learning-rate check
    assert len(default) == 54 and len(set(default)) == 54
    main = [u for u in default if u.settings.learning_rate == 5e-5]
    pre = [u for u in main if u.run.init == "pretrained"]
    assert [(u.run.task, u.run.seed, u.run.max_train) for u in pre] == [
        (t, s, n) for t, n in (("MRPC", None), ("STS-B", None), ("SST-2", 8000), ("RTE", None),
                               ("CoLA", 4000)) for s in (42, 43, 44, 45, 46)]
    assert all(u.notebooks == ("06", "07") for u in pre)
    # notebook 06's learning-rate check: RTE and CoLA's first seed at two other rates
    check = [u for u in default if u.settings.learning_rate != 5e-5]
    assert [(u.run.task, u.run.seed, u.settings.learning_rate) for u in check] == [
        ("RTE", 42, 1e-4), ("RTE", 42, 2e-5), ("CoLA", 42, 1e-4), ("CoLA", 42, 2e-5)]
    assert all(u.notebooks == ("06",) for u in check)
    # five random-init seeds per task, so "beats random init" has seeds on both sides
    assert [(u.run.task, u.run.seed) for u in main if u.run.init == "random"] == [
        (t, s) for t in ("MRPC", "STS-B", "SST-2", "RTE", "CoLA") for s in (42, 43, 44, 45, 46)]
    s = default[0].settings  # the paper's recipe, one torch thread (notebook parameters)
    assert (s.epochs, s.batch_size, s.learning_rate, s.max_length, s.warmup_ratio,
            s.num_threads) == (3, 32, 5e-5, 128, 0.1, 1)
    assert {u.num_cpus for u in default} == {1} and {u.max_dev for u in default} == {0}
    assert all(u.data_dir == str(paths.data_dir()) for u in default)

    # notebook 06's maps: each pre-trained fine-tune at the main rate, on 06's dev examples
    maps = units.build_maps("default")
    assert [m.finetune for m in maps] == pre
    assert {(m.n_examples, m.max_tokens, m.notebooks) for m in maps} == {(1000, 128, ("06",))}
    assert units.build_maps("base") == []

    paper = units.build("paper")
    assert [(u.run, u.settings) for u in paper] == [(u.run, u.settings) for u in default]
    assert {u.model for u in paper} == {"bert-base-uncased"}
    assert units.build("base") == []  # notebooks 01-05 only: nothing to fine-tune


def test_plan_parameters_are_checked_as_the_driver_checks_them():
    assert [u.label for u in units.build("smoke", TINY)] == ["MRPC/pretrained/seed42",
                                                            "MRPC/pretrained/seed43"]
    with pytest.raises(ValueError, match="unknown profile"):
        units.build("nightly")
    with pytest.raises(ParameterError, match="epochs=0"):
        units.build("smoke", {"epochs": "0"})
    with pytest.raises(ParameterError, match="no selected notebook has a parameter 'n_segments'"):
        units.build("smoke", {"n_segments": "5"})


def test_the_precision_parameter_reaches_every_fine_tune_and_only_the_fine_tunes():
    """-p precision=bf16 (issue 34): every fine-tune of 06 and 07, the learning-rate check's
    too, trains at it (its key names it); their maps and study units measure at float32, as
    the notebooks do; a precision the notebooks do not know is refused by the driver's check."""
    smoke = units.build("smoke", {"precision": "bf16"})
    assert smoke and {u.settings.precision for u in smoke} == {u.precision for u in smoke} \
        == {"bf16"}
    assert any("@lr" in u.label for u in smoke)  # 06's learning-rate check
    assert {u.settings.precision for u in units.build("smoke")} == {"float32"}
    second = units.build_maps("smoke", {"precision": "bf16"}) + units.build_studies(
        "smoke", {"precision": "bf16"})
    assert second and {u.precision for u in second} == {"float32"}
    assert {u.finetune.settings.precision for u in second} == {"bf16"}
    with pytest.raises(ParameterError, match="precision='fp16': expected one of 'float32'"):
        units.build("smoke", {"precision": "fp16"})


def _notebook_units(prefix: str, p: dict) -> list[units.FinetuneUnit]:
    """The fine-tunes notebook ``prefix`` makes, read from its own source: its
    ``X = plan.runs(...)`` / ``plan.settings(...)`` assignments and its ``plan.fit_run(...)``
    call, evaluated with the parameters ``p``; an independent reference for the plan."""
    source = next(paths.NOTEBOOKS_DIR.glob(f"{prefix}_*.py"))
    tree = ast.parse(source.read_text())
    assigned, fits = {}, []

    def plan_call(node, name):
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == name and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "plan")

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            assert node.targets[0].id not in assigned or not any(
                plan_call(v, f) for v in (node.value, assigned[node.targets[0].id])
                for f in ("runs", "settings")), f"{source.name}: two plans named the same"
            assigned[node.targets[0].id] = node.value
        if plan_call(node, "fit_run"):
            fits.append(node)
    loops = {id(f): next(n for n in ast.walk(tree) if isinstance(n, ast.For)
                         and f in list(ast.walk(n))) for f in fits}
    checks = [f for f in fits if plan_call(loops[id(f)].iter, "lr_check_runs")]
    fits = [f for f in fits if f not in checks]
    assert len(fits) == 1 and len(checks) <= 1, (
        f"{source.name} calls plan.fit_run {len(fits) + len(checks)} times: update the plan")
    [fit] = fits
    namespace = {**p, "plan": finetunes}

    def value(node):
        return eval(compile(ast.Expression(node), str(source), "eval"), namespace)  # noqa: S307

    run_var, model_node, settings_node = fit.args[0], fit.args[1], fit.args[2]
    loop = next(n for n in ast.walk(tree) if isinstance(n, ast.For)
                and isinstance(n.target, ast.Name) and n.target.id == run_var.id
                and fit in list(ast.walk(n)))
    runs_node = assigned[loop.iter.id] if isinstance(loop.iter, ast.Name) else loop.iter
    assert plan_call(runs_node, "runs"), ast.unparse(runs_node)
    settings = value(assigned[settings_node.id])
    kw = {k.arg: value(k.value) for k in fit.keywords if k.arg != "progress"}
    runs = value(runs_node)
    out = [units.FinetuneUnit(value(model_node), r, settings, data_dir=str(paths.data_dir()),
                              **kw) for r in runs]
    for check in checks:  # for RUN, RATE in plan.lr_check_runs(runs, ...): plan.fit_run(RUN, ...)
        loop = loops[id(check)]
        run_name, rate_name = (t.id for t in loop.target.elts)
        namespace[loop.iter.args[0].id] = runs
        for r, rate in value(loop.iter):
            namespace.update({run_name: r, rate_name: rate})
            kw = {k.arg: value(k.value) for k in check.keywords if k.arg != "progress"}
            out.append(units.FinetuneUnit(value(check.args[1]), r, value(check.args[2]),
                                          data_dir=str(paths.data_dir()), **kw))
    return out


@pytest.mark.parametrize("profile", ["smoke", "default", "paper"])
def test_study_units_measure_what_notebook_07_reads(profile):
    """The study wave computes, for each model 07 loads, the parts with the settings 07's own
    ``disabling_study.notebook_settings(...)`` call gives (read from its source and evaluated
    with the profile's parameters), so the notebook finds them cached."""
    from analysis_utils.analyses import disabling_study

    p = units.notebook_parameters(profile).get("07")
    studies = units.build_studies(profile)
    if p is None:
        assert studies == []
        return
    source = next(paths.NOTEBOOKS_DIR.glob("07_*.py"))
    [call] = [n for n in ast.walk(ast.parse(source.read_text())) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Attribute) and n.func.attr == "notebook_settings"]
    runs = finetunes.runs(p["tasks"], p["seeds"], p["multi_seed_tasks"], p["train_subsets"])
    expected = []
    for r in runs:
        namespace = {**p, "r": r, "runs": runs}

        def value(node, namespace=namespace):
            return eval(compile(ast.Expression(node), str(source), "eval"), namespace)  # noqa: S307

        expected.append(disabling_study.notebook_settings(
            *[value(a) for a in call.args], **{k.arg: value(k.value) for k in call.keywords}))
    assert [u.settings for u in studies] == expected
    assert [u.finetune.run for u in studies] == runs
    assert len({u.settings.modes for u in studies}) == (1 if len(p["modes"].split(",")) == 1
                                                        or not p["extras_first_seed_only"]
                                                        or len(runs) == len({r.task for r in runs})
                                                        else 2)


@pytest.mark.parametrize("profile", ["smoke", "default", "paper"])
def test_plan_is_what_the_notebooks_fine_tune(profile):
    """``plan run --profile P`` trains exactly the models notebooks 06 and 07 load under P."""
    params = units.notebook_parameters(profile)
    expected = []
    for prefix in units.PLAN_NOTEBOOKS:
        expected += [u for u in _notebook_units(prefix, params[prefix]) if u not in expected]
    assert units.build(profile) == expected
    assert len(expected) >= 5


# ------------------------------------------------------------------- running it: fine-tunes

@pytest.fixture(scope="module")
def tiny_plan(tmp_path_factory):
    """The tiny plan run in-process into a fresh cache: (entries before, outcomes, cache)."""
    if not (paths.data_dir() / "glue").is_dir():
        pytest.skip(f"gold GLUE data not found in {paths.data_dir()}: set {paths.DATA_ENV}")
    cache = tmp_path_factory.mktemp("plan_inprocess")
    before = units.resolve(units.build("smoke", TINY), cache)
    lines = []
    outcomes = execute.run_units([execute.Job(e.unit, e.key) for e in before], cache,
                                 backend="inprocess", out=lines.append)
    return before, outcomes, cache, lines


def _entry_files(cache: Path, key: str):
    folder = cache / "finetune" / key
    with np.load(folder / "predictions.npz") as z:
        arrays = {k: z[k] for k in z.files}
    record = json.loads((folder / "result.json").read_text())
    return (folder / "model.safetensors").read_bytes(), arrays, record


@pytest.mark.packaged_model
@pytest.mark.gold_data
def test_in_process_run_computes_what_is_left_and_show_says_so(tiny_plan, capsys,
                                                               monkeypatch):
    before, outcomes, cache, lines = tiny_plan
    assert [e.cached for e in before] == [False, False] and all(e.key for e in before)
    assert all(o.ok and o.attempts == 1 and not o.summary["from_cache"] for o in outcomes)
    assert [o.summary["torch_threads"] for o in outcomes] == [1, 1]
    assert [line.split(":")[0] for line in lines] == [
        "[plan] 1/2 MRPC/pretrained/seed42", "[plan] 2/2 MRPC/pretrained/seed43"]
    for o in outcomes:  # a log per unit: its header and its end
        text = o.log.read_text()
        assert o.log == cache / "runplan" / "logs" / f"{o.job.key}.log"
        assert "attempt 1" in text and "=== done in" in text
    after = units.resolve([e.unit for e in before], cache)
    assert all(e.cached and e.estimate_from == "recorded" for e in after)
    assert [e.estimate_s for e in after] == [o.summary["train_seconds"] for o in outcomes]
    monkeypatch.setenv(paths.CACHE_ENV, str(cache))
    assert cli.main(["show", "--profile", "smoke", *TINY_ARGS]) == 0
    out = capsys.readouterr().out
    assert "2 units: 2 cached, 0 left" in out
    assert "2 study units: 0 cached, 2 left" in out  # notebook 07's measurements: the 2nd wave
    assert "2 maps units: 0 cached, 2 left" in out  # notebook 06's maps: the 2nd wave too
    # run: the fine-tunes are cached; the studies run, on the first seed with both modes and
    # the pruning curves, on the second with the paper's mode only (extras_first_seed_only)
    assert cli.main(["run", "--profile", "smoke", "--in-process", *TINY_ARGS]) == 0
    out = capsys.readouterr().out
    assert "running 2 maps units and 2 study units in this process" in out and \
        "fine-tuning units" not in out.split("[plan] then")[1]
    assert "seed42 study (uniform+zero +curves): done" in out
    assert "seed43 study (uniform): done" in out
    studies = units.resolve_studies(units.build_studies("smoke", TINY), cache)
    assert all(e.cached for e in studies)
    assert [sorted(e.parts) for e in studies] == [
        ["curves", "importance", "sweep-uniform", "sweep-zero"], ["importance", "sweep-uniform"]]
    # the maps are the ones notebook 06 reads: its own calls find them in the cache
    from analysis_utils.analyses import drift
    from analysis_utils.engine import attention

    maps = units.resolve_maps(units.build_maps("smoke", TINY), cache)
    assert [e.cached for e in maps] == [True, True]
    p = units.notebook_parameters("smoke", TINY)["06"]
    for e in maps:
        f = e.unit.finetune
        ft = finetunes.fit_run(f.run, f.model, f.settings, subset_seed=f.subset_seed,
                               max_dev=f.max_dev, progress=False, cache_dir=cache)
        _, enc = drift.dev_inputs(f.run.task, ft.loaded.tokenizer, p["n_examples"],
                                  p["max_tokens"])
        store = attention.extract_attention(ft.reload().loaded, enc.inputs, cache_dir=cache,
                                            progress=False)
        assert not store.extracted_now and len(store.lengths) == p["n_examples"]
        record = json.loads((cache / units.MAPS_SUBDIR / f"{e.key}.json").read_text())
        assert record["store"] == store.directory.name
    # and then nothing starts
    assert cli.main(["run", "--profile", "smoke", "--in-process", *TINY_ARGS]) == 0
    assert "all 6 units cached; nothing to run" in capsys.readouterr().out
    # a maps record whose store is gone counts as left (one warm-up step leaves the tiny
    # plan's encoders as they were, so both models may share one store)
    stores = [json.loads((cache / units.MAPS_SUBDIR / f"{e.key}.json").read_text())["store"]
              for e in maps]
    shutil.rmtree(cache / "attention" / record["store"])
    assert [x.cached for x in units.resolve_maps(units.build_maps("smoke", TINY), cache)] == [
        s != record["store"] for s in stores]


@pytest.mark.packaged_model
@pytest.mark.gold_data
def test_a_cut_off_weights_file_counts_as_left(tiny_plan, tmp_path):
    import shutil

    before, _, cache, _ = tiny_plan
    copy = tmp_path / "cache"
    shutil.copytree(cache / "finetune", copy / "finetune")
    weights = copy / "finetune" / before[0].key / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    entries = units.resolve([e.unit for e in before], copy)
    assert [(e.cached, e.damaged) for e in entries] == [(False, True), (True, False)]
    assert "1 damaged" in units.describe(entries)
    # running it: a warning in the unit's log, the entry dropped and trained again, same bits
    [o] = execute.run_units([execute.Job(entries[0].unit, entries[0].key)], copy,
                            out=lambda line: None)
    assert o.ok and not o.summary["from_cache"] and "cannot be read" in o.log.read_text()
    assert _entry_files(copy, before[0].key)[0] == _entry_files(cache, before[0].key)[0]


@pytest.mark.packaged_model
@pytest.mark.gold_data
def test_ray_local_run_equals_the_in_process_run_bit_for_bit(tiny_plan, tmp_path):
    pytest.importorskip("ray", reason="Ray is the optional extra .[distributed]; "
                                      "`make install` installs it")
    before, outcomes, cache, _ = tiny_plan
    lines = []
    on_ray = execute.run_units([execute.Job(e.unit, e.key) for e in before], tmp_path,
                               backend="ray", out=lines.append)
    assert lines[0].startswith("[plan] Ray: 1 node(s), ") and "0 GPUs" in lines[0]
    # long-lived workers, one per unit that fits at once (no GPU here: none asked for)
    assert lines[1] == "[plan] 2 long-lived worker(s): 2 x (1 CPU, 0 GPU)"
    assert len(lines) == 4 and all(o.ok and o.attempts == 1 for o in on_ray)
    for o in on_ray:  # no GPU on this cluster: one CPU each, no GPU asked for
        assert o.summary["resources"] == {"CPU": 1.0} and o.summary["gpu_ids"] == []
        assert o.summary["torch_threads"] == 1 and o.summary["pid"] != os.getpid()
        assert o.summary["niceness"] == os.nice(0)  # the priority of an in-process run
    for e in before:
        weights, arrays, record = _entry_files(tmp_path, e.key)
        weights0, arrays0, record0 = _entry_files(cache, e.key)
        assert weights == weights0
        assert arrays.keys() == arrays0.keys()
        for k in arrays:
            np.testing.assert_array_equal(arrays[k], arrays0[k])
        assert record["weights_fingerprint"] == record0["weights_fingerprint"]
        assert record["metrics"] == record0["metrics"]
    assert not list((tmp_path / "runplan" / "tokens").iterdir())  # the driver cleaned up


@pytest.mark.packaged_model
@pytest.mark.gold_data
def test_a_killed_plan_resumes_without_recomputing_what_finished(tmp_path):
    if not (paths.data_dir() / "glue").is_dir():
        pytest.skip(f"gold GLUE data not found in {paths.data_dir()}: set {paths.DATA_ENV}")
    three = {**TINY, "tasks": "MRPC,STS-B", "train_subsets": "MRPC:16,STS-B:16"}
    args = [a for k, v in three.items() for a in ("-p", f"{k}={v}")]
    env = {**os.environ, paths.CACHE_ENV: str(tmp_path), "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": str(paths.REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "analysis_utils", "plan", "run", "--profile", "smoke",
           "--in-process", *args]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    first = None
    for line in proc.stdout:
        if line.startswith("[plan] 1/3 "):
            first = line
            proc.send_signal(signal.SIGKILL)  # no chance to clean up, as with `kill -9`
            break
    proc.wait(timeout=120)
    assert first and "MRPC/pretrained/seed42: done" in first, first
    entries = units.resolve(units.build("smoke", three), tmp_path)
    done = entries[0].key
    complete = tmp_path / "finetune" / done / "COMPLETE"
    stamp = complete.stat().st_mtime_ns
    assert entries[0].cached and not entries[2].cached
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    ran = [line for line in again.stdout.splitlines() if line.startswith("[plan] ") and "/" in
           line.split()[1]]
    assert not any(line.split(":")[0].endswith("MRPC/pretrained/seed42") for line in ran), ran
    assert any("STS-B/pretrained/seed42: done" in line for line in ran), again.stdout
    assert complete.stat().st_mtime_ns == stamp  # the finished unit was not recomputed
    assert all(e.cached for e in units.resolve([e.unit for e in entries], tmp_path))


# ------------------------------------------------------- Ray's scheduling, with probe units

class Probe:
    """A unit that trains nothing: it waits until ``barrier`` units have started (so they
    must run side by side), optionally crashes its worker on the first attempt, or fails."""

    def __init__(self, label, folder, *, barrier=1, gpu_share=0.5, num_cpus=1,
                 crash_first=False, fail=False):
        self.label, self.folder, self.barrier = label, str(folder), barrier
        self.gpu_share, self.num_cpus, self.device = gpu_share, num_cpus, ""
        self.crash_first, self.fail = crash_first, fail

    def execute(self, key, cache_dir, device):
        folder = Path(self.folder)
        if self.crash_first and not (folder / f"{key}.crashed").exists():
            (folder / f"{key}.crashed").touch()
            print("Mutex corrupt: a stand-in for the crash seen on a worker's first start",
                  file=sys.stderr, flush=True)
            os._exit(134)
        if self.fail:
            raise ValueError(f"{self.label} is broken")
        (folder / f"{key}.started").touch()
        deadline = time.monotonic() + 60
        while len(list(folder.glob("*.started"))) < self.barrier:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.barrier} units never ran side by side")
            time.sleep(0.05)
        return {"device": device}


@pytest.fixture(scope="module")
def ray_with_gpus():
    """A local Ray instance with 4 CPUs and 2 logical GPUs (none real: scheduling only)."""
    ray = pytest.importorskip("ray", reason="Ray is the optional extra .[distributed]; "
                                            "`make install` installs it")
    if ray.is_initialized():
        ray.shutdown()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Probe, by value
    ray.init(num_cpus=4, num_gpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _probes(folder, n, **kw):
    folder.mkdir(exist_ok=True)
    return [execute.Job(Probe(f"probe{i}", folder, **kw), f"probe{i}") for i in range(n)]


def test_fractional_gpus_pack_two_units_per_gpu(ray_with_gpus, tmp_path):
    jobs = _probes(tmp_path / "barrier", 4, barrier=4, gpu_share=0.5)
    outcomes = execute.run_units(jobs, tmp_path, backend="ray", out=lambda line: None)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    assert all(o.summary["resources"] == {"CPU": 1.0, "GPU": 0.5} for o in outcomes)
    # all four ran at once (the barrier), so two shared each GPU
    assert collections.Counter(g for o in outcomes for g in o.summary["gpu_ids"]) == {
        "0": 2, "1": 2}
    assert {o.summary["device"] for o in outcomes} == {"cpu"}  # logical GPUs, no CUDA here


def test_whole_gpus_spread_one_unit_per_gpu_and_cpus_set_threads(ray_with_gpus, tmp_path):
    jobs = _probes(tmp_path / "barrier", 2, barrier=2, num_cpus=2)
    outcomes = execute.run_units(jobs, tmp_path, backend="ray", gpus_per_unit=1.0,
                                 out=lambda line: None)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    assert [o.summary["resources"] for o in outcomes] == [{"CPU": 2.0, "GPU": 1.0}] * 2
    assert sorted(g for o in outcomes for g in o.summary["gpu_ids"]) == ["0", "1"]
    assert [o.summary["torch_threads"] for o in outcomes] == [2, 2]


def test_a_crashed_worker_is_retried_and_a_failing_unit_reported(ray_with_gpus, tmp_path):
    crash = _probes(tmp_path / "crash", 1, crash_first=True)
    broken = [execute.Job(Probe("broken", tmp_path, fail=True), "broken")]
    lines = []
    ok, bad = execute.run_units(crash + broken, tmp_path, backend="ray", retries=1,
                                out=lines.append)
    assert ok.ok and ok.attempts == 2
    log = ok.log.read_text()
    assert "Mutex corrupt" in log and "attempt 1" in log and "attempt 2" in log
    assert not bad.ok and bad.attempts == 2 and "ValueError: broken is broken" in bad.error
    assert "Traceback" in bad.log.read_text()
    failed = [line for line in lines if "FAILED" in line]
    assert len(failed) == 1 and failed[0].endswith(
        f" broken: FAILED after 2 attempt(s): {bad.error}; log: {bad.log}"), lines
    assert sum("trying again" in line for line in lines) == 2  # one retry each


def test_in_process_failures_are_retried_then_reported(tmp_path):
    lines = []
    [bad] = execute.run_units([execute.Job(Probe("broken", tmp_path, fail=True), "broken")],
                              tmp_path, retries=2, out=lines.append)
    assert not bad.ok and bad.attempts == 3 and bad.log.read_text().count("Traceback") == 3
    assert lines[-1].endswith(f"log: {bad.log}") and "FAILED after 3 attempt(s)" in lines[-1]


def test_a_unit_no_node_can_hold_is_refused_not_left_waiting(ray_with_gpus, tmp_path):
    jobs = _probes(tmp_path / "barrier", 1, num_cpus=8)
    with pytest.raises(ValueError, match="asks for 8 CPU.* largest has 4 CPUs.*num_threads"):
        execute.run_units(jobs, tmp_path, backend="ray", out=lambda line: None)
    jobs = _probes(tmp_path / "barrier", 1)
    with pytest.raises(ValueError, match="asks for 1 CPU.* and 3.0 GPU"):
        execute.run_units(jobs, tmp_path, backend="ray", gpus_per_unit=3.0,
                          out=lambda line: None)


def test_a_cache_the_workers_cannot_see_is_refused(ray_with_gpus, tmp_path, monkeypatch):
    # the driver's token goes where the workers do not look: as if the cache folder were a
    # local disk of the driver's machine that the other nodes do not mount
    elsewhere = tmp_path / "driver-only"
    real = execute.write_token
    monkeypatch.setattr(execute, "write_token", lambda cache_dir: real(elsewhere) | {
        "cache_dir": str(cache_dir)})
    jobs = _probes(tmp_path / "barrier", 2)
    with pytest.raises(execute.CacheNotShared, match="BERTOLOGY_CACHE_DIR") as err:
        execute.run_units(jobs, tmp_path / "cache", backend="ray", out=lambda line: None)
    assert str(tmp_path / "cache") in str(err.value)
    assert not list((tmp_path / "barrier").glob("*.started"))  # no unit ran


def test_check_shared_accepts_the_drivers_token_only(tmp_path):
    token = execute.write_token(tmp_path)
    execute.check_shared(token)
    with pytest.raises(execute.CacheNotShared, match="is different here"):
        execute.check_shared({**token, "host": "another-driver"})
    execute.remove_token(token)
    with pytest.raises(execute.CacheNotShared, match="is missing here"):
        execute.check_shared(token)


def test_a_profile_without_notebooks_06_07_has_nothing_to_plan(capsys):
    assert cli.main(["run", "--profile", "base"]) == 0
    assert "runs neither of notebooks 06 and 07: nothing to plan" in capsys.readouterr().out


def test_bad_calls_say_how_to_fix_them(tmp_path, monkeypatch, capsys):
    with pytest.raises(ValueError, match="choose one of inprocess, ray"):
        execute.run_units([], tmp_path, backend="dask")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(RuntimeError, match=r"pip install -e '\.\[distributed\]'"):
        with execute.ray_session():
            pass
    args = cli._parser().parse_args(["run", "--address", "10.0.0.1:6379"])
    with pytest.raises(ValueError, match="Ray is not installed"):
        cli._backend(args)
    args = cli._parser().parse_args(["run", "--in-process", "--address", "10.0.0.1:6379"])
    with pytest.raises(ValueError, match="exclude each other"):
        cli._backend(args)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # no cluster named, no Ray: in-process
    assert cli._backend(cli._parser().parse_args(["run"])) == "inprocess"
    assert "Ray is not installed" in capsys.readouterr().out


@pytest.mark.packaged_model
@pytest.mark.gold_data
def test_plan_run_exits_1_naming_each_failed_unit_and_its_log(tiny_plan, tmp_path,
                                                               monkeypatch, capsys):
    """A unit that cannot run (its cache folder is a file) is tried twice, then listed with
    its error and log; nothing is hidden and the exit status says so."""
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path))
    (tmp_path / "finetune").write_text("not a folder")
    args = ["run", "--profile", "smoke", "--in-process", *TINY_ARGS,
            "-p", "multi_seed_tasks="]  # one unit: MRPC, seed 42
    assert cli.main(args) == 1
    captured = capsys.readouterr()
    assert "1 fine-tuning units for notebooks" in captured.out, captured.err
    assert "skipped, its fine-tune failed" in captured.out
    [log] = (tmp_path / "runplan" / "logs").glob("*.log")
    assert "FAILED after 2 attempt(s)" in captured.out and f"log: {log}" in captured.err
    assert log.read_text().count("Traceback") == 2 and "FileExistsError" in captured.err
