"""A GPU check: a subset of the default plan and the smoke notebooks on CUDA, timed, with the
GPU's utilisation and peak memory, and the fine-tunes compared with the committed run.

On a machine without CUDA it says so and exits 0 without running anything.

With CUDA, into a scratch cache and output folder (the committed results and your cache are
never touched):

1. the plan subset, through the run plan's own executor (``runplan.execute.run_units``,
   in-process by default, ``--backend ray`` for the long-lived workers): the default
   profile's MRPC and RTE fine-tunes of seed 42 (issue 34 measured MiniLM's MRPC fine-tune at
   16.6-18.0 s on an H100), then notebook 06's maps unit (about 1 s) and notebook 07's study
   (8.3 s) of the MRPC model; per unit its wall time, the GPU's utilisation (mean and max,
   NVML) and the peak GPU memory torch allocated;
2. the smoke notebooks (``python -m analysis_utils run --profile smoke --only 01,...,08``,
   one driver, a kernel per notebook): per notebook its wall time and device (its
   provenance), the GPU's utilisation and its peak memory in use over the notebook's time
   (NVML, device-wide, less what was in use before);
3. ``compare`` (``analysis_utils.publish.compare.compare_tables``, what ``python -m analysis_utils
   compare`` runs per table) of the subset's fine-tuned metrics with the committed rows of
   ``results/06_finetune_runs.csv``, under 06's declared tolerance and under the proposed
   cross-device one (:mod:`analysis_utils.publish.tolerances`). The smoke notebooks have no
   committed tables (their rendered notebooks in ``tests/golden/`` are checked by nbval in
   ``make test``), so only their run is checked here.

Sized for under 8 minutes on one H100 (an estimate: about 1.5 min of units and imports from
issue 34's figures; the smoke notebooks, each kernel paying about 16 s of imports, plus their
own seconds). Exit status: 0 when every unit and notebook ran,
1 otherwise (differences from the committed run are printed, not failed on).

Usage: ``python benchmarks/gpu_check.py [--scratch DIR] [--keep] [--notebooks 01,...,08 |
--no-notebooks] [--backend inprocess|ray] [--precision float32|tf32|bf16] [-p NAME=VALUE]``.
``--device cpu`` runs the same path on the CPU (for testing the check itself on a machine
without a GPU; give small ``-p`` values, it is not sized for a CPU). ``--precision`` is notebooks
06/07's ``precision`` parameter (``-p precision=...``): the fine-tunes' keys name it (and the
device kind, ``cuda`` here), so they never collide with CPU float32 entries; the smoke
notebooks 06 and 07 get the same ``-p precision=...``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from a checkout: this checkout's package
    sys.path.insert(0, str(REPO))

#: The plan subset: fine-tunes (labels of the default plan), and whose maps / study to run.
FINETUNES = ("MRPC/pretrained/seed42", "RTE/pretrained/seed42")
MEASURED = "MRPC/pretrained/seed42"
SMOKE_NOTEBOOKS = ("01", "02", "03", "04", "05", "06", "07", "08")
BUDGET_S = 8 * 60


def cuda_state() -> tuple[bool, str]:
    """``(available, one line saying what torch sees)``."""
    import torch

    if not torch.cuda.is_available():
        return False, (f"torch {torch.__version__} sees no CUDA device (built with CUDA "
                       f"{torch.version.cuda or 'none'}; CUDA_VISIBLE_DEVICES="
                       f"{os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')!s})")
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return True, f"torch {torch.__version__}, CUDA {torch.version.cuda}: {', '.join(names)}"


def select(profile: str, extra: dict, finetunes=FINETUNES, measured: str = MEASURED):
    """The subset's fine-tune units, then the maps and study units of ``measured``."""
    from analysis_utils.runplan import units

    fts = {u.label: u for u in units.build(profile, extra)}
    missing = [f for f in finetunes if f not in fts]
    if missing:
        raise SystemExit(f"gpu_check: {missing} not in the {profile} plan (its units: "
                         f"{', '.join(fts)})")
    maps = [m for m in units.build_maps(profile, extra) if m.finetune.label == measured]
    studies = [s for s in units.build_studies(profile, extra) if s.finetune.label == measured]
    return [fts[f] for f in finetunes], maps, studies


def run_subset(profile: str, extra: dict, cache: Path, backend: str, precision: str,
               out=print, finetunes=FINETUNES, measured: str = MEASURED) -> tuple[list, dict]:
    """Run the subset into ``cache`` at ``precision`` (the plan's ``precision`` parameter:
    each unit runs at its own); ``(outcomes, {label: train rows})``."""
    from analysis_utils.runplan import execute, units

    if precision and precision != "float32":
        extra = {**extra, "precision": precision}
    fts, maps, studies = select(profile, extra, finetunes, measured)
    entries = units.resolve(fts, cache)
    bad = [e for e in entries if e.error]
    if bad:
        raise SystemExit(f"gpu_check: no cache key for {bad[0].unit.label}: {bad[0].error}")
    train_n = {e.unit.label: e.key_inputs["train"]["n"] for e in entries}
    jobs = [execute.Job(e.unit, e.key) for e in entries]
    outcomes = execute.run_units(jobs, cache, backend=backend, out=out)
    second = (units.resolve_maps(maps, cache, entries)
              + units.resolve_studies(studies, cache, entries))
    jobs = [execute.Job(e.unit, e.key) for e in second if e.key]
    if all(o.ok for o in outcomes):
        outcomes += execute.run_units(jobs, cache, backend=backend, out=out)
    return outcomes, train_n


def unit_table(outcomes) -> str:
    """Per unit: seconds, device, GPU busy (mean / max %), peak allocated MiB."""
    def fmt(x, spec):
        return "n/a" if x is None else format(x, spec)

    lines = ["| unit | status | seconds | device | precision | GPU busy mean / max (%) | "
             "peak GPU memory allocated (MiB) |", "|---|---|---|---|---|---|---|"]
    for o in outcomes:
        s, g = o.summary, o.summary.get("gpu") or {}
        lines.append(
            f"| {o.job.unit.label} | {'ok' if o.ok else 'FAILED'} | "
            f"{fmt(s.get('seconds'), '.1f')} | {s.get('device', '?')} | "
            f"{s.get('precision', '?')} | {fmt(g.get('gpu_util_mean'), '.0f')} / "
            f"{fmt(g.get('gpu_util_max'), '.0f')} | "
            f"{fmt(g.get('gpu_peak_allocated_mb'), ',.0f')} |")
    return "\n".join(lines)


# ------------------------------------------------------------------- compare with committed

def finetune_rows(outcomes, train_n: dict) -> list[dict]:
    """06's per-run table rows (metrics x100) of the subset's fine-tunes that ran."""
    rows = []
    for o in outcomes:
        u = o.job.unit
        if getattr(u, "kind", "") != "finetune" or not o.ok:
            continue
        metrics = o.summary.get("metrics") or {}
        rows.append({"task": u.run.task, "init": u.run.init, "seed": str(u.run.seed),
                     "train": str(train_n[u.label]),
                     **{m: f"{100 * v:.6f}" for m, v in metrics.items()
                        if isinstance(v, (int, float))}})
    return rows


def _committed(name: str, rev: str = "HEAD") -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:results/{name}"],
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return (REPO / "results" / name).read_text()


def compare_finetunes(rows: list[dict], rev: str = "HEAD") -> list[str]:
    """``compare`` of ``rows`` with the committed rows of the same task, init and seed, under
    06's declared tolerance and the proposed cross-device one; lines to print."""
    from analysis_utils.publish import compare
    from analysis_utils.publish import tolerances as tol

    name = "06_finetune_runs.csv"
    committed = list(csv.DictReader(io.StringIO(_committed(name, rev))))
    keyed = {(r["task"], r["init"], r["seed"]): r for r in committed}
    mine = [r for r in rows if (r["task"], r["init"], r["seed"]) in keyed]
    if not mine:
        return ["compare: none of the subset's fine-tunes is in the committed " + name]
    cols = ["task", "init", "seed", "train"] + [m for m in tol.METRICS
                                                 if any(m in r for r in mine)]

    def text(table):
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(table)
        return buf.getvalue()

    old = [keyed[(r["task"], r["init"], r["seed"])] for r in mine]
    decl = json.loads(_committed("06_provenance.json", rev))["tables"][name]
    tolerance = {c: r for c, r in decl["tolerance"].items() if c in cols}
    issues = compare.compare_tables(text(old), text(mine), name, tolerance, decl["key"])
    out = [f"compare (06's declared tolerance) of {len(mine)} fine-tune(s) with {rev}: "
           + ("all within tolerance" if not issues else f"{len(issues)} difference(s)")]
    other = [f"{r['task']}/{r['init']}/seed{r['seed']}" for r, ref in zip(mine, old, strict=True)
             if r["train"] != ref["train"]]
    if other:
        out.append(f"  (note: {', '.join(other)} trained on another train size than the "
                   "committed run (-p train_subsets?): differences are expected)")
    out += [f"  {i.line()}" for i in issues]
    proposal = tol.propose(tol.seed_spread(committed))
    diffs = {}
    for new, ref in zip(mine, old, strict=True):
        for m in cols[4:]:
            if new.get(m) and ref.get(m):
                diffs.setdefault((new["task"], new["init"], m), []).append(
                    float(new[m]) - float(ref[m]))
    out.append("cross-device tolerance (seed spread; publish.tolerances), this device minus "
               "the committed CPU run:")
    for task, init, metric, d, t, inside in tol.check(proposal, diffs):
        out.append(f"  {task}/{init} {metric}: {d:+.2f} (tolerance {t:.2f}) "
                   f"{'inside' if inside else 'OUTSIDE'}")
    return out


# ------------------------------------------------------------------------ smoke notebooks

class _Sampler:
    """NVML samples of one GPU in a thread: ``(time, utilisation %, memory MiB)``."""

    def __init__(self, reader, interval: float = 0.5):
        self.reader, self.interval, self.samples = reader, interval, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.samples.append((time.time(), *self.reader()))
            except Exception:  # noqa: BLE001 - a failed read is a missing sample
                pass
            self._stop.wait(self.interval)

    def __enter__(self):
        if self.reader is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=15)


def run_notebooks(prefixes, output: Path, env: dict, reader=None, command=None,
                  timeout: float = BUDGET_S, interval: float = 0.5,
                  params: Sequence[str] = ()) -> tuple[list[dict], float]:
    """The notebooks in one driver process (``command(prefixes)``, default ``python -m
    analysis_utils run --profile smoke --only 01,02,... --output-dir OUTPUT``: the driver's
    imports are paid once; each notebook's kernel is its own process, as in every run).
    Returns per notebook ``prefix``, ``ok`` (its provenance was written by this run),
    ``seconds`` (its own wall time, from the provenance), ``device`` (the provenance's), GPU
    busy mean / max and peak memory in use above the idle baseline over the notebook's
    window (it ends when its provenance is written, and lasts its wall time; ``reader``:
    NVML, None: n/a), ``tail`` (the driver's output where one failed); and the whole run's
    seconds. ``params``: ``NAME=VALUE`` overrides for the default command (``-p``)."""
    from analysis_utils.runplan import gpu

    if command is None:
        def command(prefixes):
            return [sys.executable, "-m", "analysis_utils", "run", "--profile", "smoke",
                    "--only", ",".join(prefixes), "--output-dir", str(output),
                    *[a for p in params for a in ("-p", p)]]
    baseline = None
    if reader is not None:
        try:
            baseline = reader()[1]
        except Exception:  # noqa: BLE001
            baseline = None
    t0, wall0 = time.perf_counter(), time.time()
    with _Sampler(reader, interval) as sampler:
        try:
            proc = subprocess.run(command(list(prefixes)), env=env, capture_output=True,
                                  text=True, timeout=timeout, cwd=str(REPO))
            tail = (proc.stdout + proc.stderr)[-3000:]
        except subprocess.TimeoutExpired:
            tail = f"timed out after {timeout:.0f} s"
    total = time.perf_counter() - t0
    rows = []
    for prefix in prefixes:
        path = output / "results" / f"{prefix}_provenance.json"
        prov, end = {}, None
        try:
            if path.stat().st_mtime >= wall0:
                prov, end = json.loads(path.read_text()), path.stat().st_mtime
        except (OSError, ValueError):
            pass
        seconds = prov.get("wall_time_s")
        window = ([(u, m) for t, u, m in sampler.samples if end - seconds <= t <= end]
                  if end is not None and isinstance(seconds, (int, float)) else [])
        stats = gpu.summarise(window)
        peak = stats["gpu_mem_used_max_mb"]
        rows.append({"prefix": prefix, "ok": end is not None, "seconds": seconds,
                     "device": prov.get("device"), "gpu_util_mean": stats["gpu_util_mean"],
                     "gpu_util_max": stats["gpu_util_max"],
                     "gpu_mem_mb": None if peak is None or baseline is None
                     else max(0.0, peak - baseline), "tail": "" if end else tail})
    return rows, total


def notebook_table(rows: list[dict]) -> str:
    def fmt(x, spec):
        return "n/a" if x is None else format(x, spec)

    lines = ["| notebook | status | seconds | device (provenance) | GPU busy mean / max (%) | "
             "peak GPU memory in use (MiB, above idle) |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['prefix']} | {'ok' if r['ok'] else 'FAILED'} | "
                     f"{fmt(r['seconds'], '.1f')} | {r['device'] or '?'} | "
                     f"{fmt(r['gpu_util_mean'], '.0f')} / {fmt(r['gpu_util_max'], '.0f')} | "
                     f"{fmt(r['gpu_mem_mb'], ',.0f')} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scratch", default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument("--notebooks", default=",".join(SMOKE_NOTEBOOKS),
                    help="smoke notebooks to run (comma-separated prefixes)")
    ap.add_argument("--no-notebooks", action="store_true")
    ap.add_argument("--backend", default="inprocess", choices=("inprocess", "ray"))
    ap.add_argument("--precision", default="float32", choices=("float32", "tf32", "bf16"))
    ap.add_argument("--profile", default="default")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                    help="override a parameter of the plan's notebooks (06/07)")
    ap.add_argument("--finetunes", default=",".join(FINETUNES),
                    help="the plan's fine-tunes to run (labels, comma-separated)")
    ap.add_argument("--measured", default=MEASURED,
                    help="the fine-tune whose maps and study units run")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: run the check's CUDA path on the CPU (testing the check)")
    args = ap.parse_args(argv)

    available, what = cuda_state()
    if args.device == "cuda" and not available:
        print(f"gpu_check: no CUDA here ({what}); nothing run. Run it on a machine with a GPU.")
        return 0
    print(f"gpu_check: {what if args.device == 'cuda' else 'device forced to the CPU'}",
          flush=True)
    from analysis_utils import paths
    from analysis_utils.publish.pipeline import parse_overrides
    from analysis_utils.runplan import gpu

    extra = parse_overrides(args.param)
    if args.device == "cpu":
        extra.setdefault("device", "cpu")
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="gpu_check_"))
    cache, output = scratch / "cache", scratch / "outputs"
    cache.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, paths.CACHE_ENV: str(cache),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    if args.device == "cpu":
        env["BERTOLOGY_DEVICE"] = "cpu"
    t0 = time.perf_counter()
    try:
        print(f"\n## plan subset ({args.profile} profile, {args.backend}, {args.precision}), "
              f"cache {cache}", flush=True)
        outcomes, train_n = run_subset(
            args.profile, extra, cache, args.backend, args.precision,
            finetunes=[f.strip() for f in args.finetunes.split(",") if f.strip()],
            measured=args.measured)
        print(unit_table(outcomes))
        print()
        for line in compare_finetunes(finetune_rows(outcomes, train_n)):
            print(line)
        notebooks = [] if args.no_notebooks else [
            p.strip().zfill(2) for p in args.notebooks.split(",") if p.strip()]
        rows = []
        if notebooks:
            print(f"\n## smoke notebooks {', '.join(notebooks)}, output {output}", flush=True)
            reader = gpu.nvml_reader(0) if args.device == "cuda" else None
            params = ([f"precision={args.precision}"] if args.precision != "float32"
                      and {"06", "07"} & set(notebooks) else [])
            rows, seconds = run_notebooks(notebooks, output, env, reader, params=params)
            print(notebook_table(rows))
            print(f"(the driver and {len(rows)} notebook kernels: {seconds:.0f} s in all, "
                  "imports and kernel starts included)")
            failed = next((r for r in rows if not r["ok"]), None)
            if failed:
                print(f"\n{failed['prefix']} FAILED or did not run (the driver stops at the "
                      f"first failure); the end of the driver's output:\n{failed['tail']}")
            print("(no committed smoke tables to compare with: tests/golden/ holds the "
                  "smoke notebooks nbval checks in `make test`)")
        total = time.perf_counter() - t0
        failed = [o.job.unit.label for o in outcomes if not o.ok] + [
            r["prefix"] for r in rows if not r["ok"]]
        print(f"\ngpu_check: {len(outcomes)} units, {len(rows)} notebooks in {total:.0f} s "
              f"(budget {BUDGET_S} s{' exceeded' if total > BUDGET_S else ''}); "
              + (f"FAILED: {', '.join(failed)}" if failed else "all ran"))
        return 1 if failed else 0
    finally:
        if not args.keep and not args.scratch:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
