"""Each notebook as an explorer meets it on Binder or Colab: opened alone, with an empty cache,
one core and a memory ceiling (issue 54, item 3).

Binder gives a server about 1-2 GB and a core or so, starts with nothing cached and shuts
down an idle or long-running session; Colab's free tier is similar for CPU work. For each
selected notebook this runs ``python -m analysis_utils run --profile P --only NN`` into a
temporary folder (committed outputs are never touched) with

- a fresh, empty ``BERTOLOGY_CACHE_DIR`` (nothing extracted, trained or downloaded before);
- one core: the process tree pinned to one CPU (``sched_setaffinity``) and every thread pool
  set to one thread;
- a memory ceiling, by a watchdog that sums the resident memory of the whole process tree
  (driver, kernel, any workers) every half second and stops the run above it, as Binder's
  out-of-memory killer would (``RLIMIT_AS`` cannot stand in: torch reserves far more address
  space than it touches);
- a time limit (default 5 minutes, the issue's goal for reaching the last cell);
- the notebook's own ``recompute = False`` where it has that parameter (the profile's
  ``recompute = True`` is for rendered runs): its heavy steps read the committed run's saved
  evidence in ``results/`` (:mod:`analysis_utils.publish.saved`), as an explorer's would.

It prints one row per notebook: how the run ended (``last cell`` or what stopped it), its wall
time and the tree's peak resident memory. A speed goal lives here, not in a timed test.

Usage::

    python benchmarks/bench_binder.py [--profile default] [--only 02,03] [--limit-s 300]
                                      [--memory-mb 2048] [--cores 1]

Run it on an otherwise idle machine: the numbers are this machine's, one core of it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "TOKENIZERS_PARALLELISM")


class Outcome(NamedTuple):
    notebook: str
    ended: str  # "last cell", "time limit", "memory ceiling", "failed (rc N)"
    wall_s: float
    peak_mb: float


def tree_rss_mb(root: int) -> float:
    """Resident memory of ``root`` and all its descendants, in MB, from ``/proc`` (0 where a
    process has gone between the listing and the read)."""
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            parent[int(d)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    tree, frontier = {root}, [root]
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    while frontier:
        nxt = [c for p in frontier for c in children.get(p, []) if c not in tree]
        tree.update(nxt)
        frontier = nxt
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
    return total / 2**20


def watch(cmd: list[str], env: dict, limit_s: float, memory_mb: float, cores: int,
          poll_s: float = 0.5) -> tuple[str, float, float]:
    """Run ``cmd`` in its own process group under the limits; ``(ended, wall_s, peak_mb)``."""
    cpus = sorted(os.sched_getaffinity(0))[:max(1, cores)]

    def pin():  # in the child before exec: one core for it and everything it starts
        os.setsid()
        os.sched_setaffinity(0, cpus)

    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, preexec_fn=pin,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
    reader.start()
    peak, ended = 0.0, ""
    while proc.poll() is None:
        peak = max(peak, tree_rss_mb(proc.pid))
        if peak > memory_mb:
            ended = "memory ceiling"
        elif time.monotonic() - t0 > limit_s:
            ended = "time limit"
        if ended:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            break
        time.sleep(poll_s)
    wall = time.monotonic() - t0
    reader.join(timeout=5)
    if not ended:
        ended = "last cell" if proc.returncode == 0 else f"failed (rc {proc.returncode})"
        if proc.returncode:
            sys.stderr.write("".join(err[-20:]))
    return ended, wall, peak


def as_opened(nb: str) -> list[str]:
    """``-p recompute=False`` where notebook ``nb`` has that parameter (as its reader opens
    it), else nothing."""
    from analysis_utils.publish.notebook import parameter_names

    (source,) = sorted((REPO / "notebooks").glob(f"{nb}_*.py"))
    return ["-p", "recompute=False"] if "recompute" in parameter_names(source) else []


def run_notebook(nb: str, profile: str, limit_s: float, memory_mb: float, cores: int,
                 python: str = sys.executable, output_dir: str | Path | None = None) -> Outcome:
    """Run notebook ``nb`` as opened alone (:func:`as_opened`) with an empty cache under the
    limits, with ``python`` (another environment's, e.g. one built as Binder builds it); its
    tables, figures and rendered notebook go to ``output_dir`` (default: a temporary folder,
    removed with the cache)."""
    with tempfile.TemporaryDirectory(prefix="bench_binder_") as tmp:
        env = {**os.environ, "BERTOLOGY_CACHE_DIR": str(Path(tmp) / "cache"),
               "PYTHONUNBUFFERED": "1"}
        env.update({v: ("false" if v == "TOKENIZERS_PARALLELISM" else str(cores))
                    for v in THREAD_VARS})
        out = Path(output_dir) if output_dir is not None else Path(tmp) / "out"
        cmd = [python, "-m", "analysis_utils", "run", "--profile", profile, "--only", nb,
               "--output-dir", str(out), *as_opened(nb)]
        ended, wall, peak = watch(cmd, env, limit_s, memory_mb, cores)
    return Outcome(nb, ended, wall, peak)


def table(rows: list[Outcome], limit_s: float, memory_mb: float) -> str:
    out = ["| notebook | ended | wall (s) | peak RSS of the tree (MB) |", "|---|---|---:|---:|"]
    out += [f"| {r.notebook} | {r.ended} | {r.wall_s:,.0f} | {r.peak_mb:,.0f} |" for r in rows]
    ok = sum(r.ended == "last cell" for r in rows)
    out.append(f"\n{ok} of {len(rows)} notebooks reached their last cell within "
               f"{limit_s:,.0f} s and {memory_mb:,.0f} MB")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="default")
    ap.add_argument("--only", default="", help="comma-separated prefixes (default: all)")
    ap.add_argument("--limit-s", type=float, default=300.0)
    ap.add_argument("--memory-mb", type=float, default=2048.0)
    ap.add_argument("--cores", type=int, default=1)
    args = ap.parse_args(argv)
    nbs = [o for o in args.only.split(",") if o] or sorted(
        p.name[:2] for p in (REPO / "notebooks").glob("[0-9][0-9]_*.py"))
    print(f"profile {args.profile}; each notebook alone, empty cache, {args.cores} core(s), "
          f"{args.memory_mb:,.0f} MB, {args.limit_s:,.0f} s", flush=True)
    rows = []
    for nb in nbs:
        rows.append(run_notebook(nb, args.profile, args.limit_s, args.memory_mb, args.cores))
        r = rows[-1]
        print(f"  {nb}: {r.ended} after {r.wall_s:,.0f} s, peak {r.peak_mb:,.0f} MB", flush=True)
    print(table(rows, args.limit_s, args.memory_mb))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
