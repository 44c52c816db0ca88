"""Where the run plan spends its time: each unit kind's measured seconds, and the plan's wall
time on this machine's cores from them.

Reads the records ``plan run`` writes for every finished unit (``<cache>/runplan/units/``) for
the units of a profile's plan (default: the ``default`` profile, five fine-tuning seeds), and
prints, as Markdown:

- one row per unit kind (the fine-tunes of each task and arm; the maps units; the study of a
  task's first seed, which adds the zero mode and the pruning curves, and of a later seed):
  the units planned, those measured, the median / min / max seconds of one unit, and the CPU
  share (the unit's CPU time over its wall time, where the record has it: about 1.0 means the
  unit had a core of its own, less that it shared one);
- the plan's unit time one after the other, and its wall time on ``--slots`` cores (default
  2, as ``plan run`` packs one single-thread unit per core) by greedy list scheduling in the
  plan's order and longest first, with the fine-tunes before the units that measure them (the
  second wave waits for the first, as ``plan run`` does). A unit without a record of its own
  takes its kind's median (a fine-tune kind never measured: the task's pre-trained runs',
  since it computes the same), and the rows say how many did;
- the same for a reference plan (default: three seeds and three random-init runs, the plan
  before issue 43), so the cost of the extra seeds is one ratio.

Only records of units that trained (``from_cache`` false) on this machine's device kind
count; records older than ``cpu_seconds`` (before 29 Nov 2026) have no CPU share and were
often measured beside other jobs, so ``--min-cpu-share 0.9`` keeps only units that had a core
of their own.

With ``--segments FILE``, also the measured run: a plan run from an empty cache that was
stopped and resumed (a session ends, a batch job's time runs out) logs each stretch as
``segment N start <ISO time> epoch <seconds> ...`` and ``segment N end <ISO time> epoch
<seconds> ...`` lines; the plan's measured wall time is the sum of the stretches, with the
units each one finished and the work in progress when it stopped (lost, but for a fine-tune's
epochs saved as checkpoints), read from the units' records.

Usage: ``python benchmarks/bench_plan_units.py [--profile default] [-p NAME=VALUE ...]
[--reference seeds=42,43,44 --reference random_init=3] [--slots 2] [--min-cpu-share X]
[--segments FILE] [--json FILE]``. Needs the gold data (``BERTOLOGY_DATA_DIR``); reads the cache, writes
nothing there.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

from analysis_utils import paths
from analysis_utils.publish.pipeline import parse_overrides
from analysis_utils.runplan import estimate as est
from analysis_utils.runplan import units
from analysis_utils.runplan.execute import record_path


def kind_of(unit, first_seeds: dict[str, int]) -> str:
    """The row a unit is counted in: ``fine-tune TASK/init`` (``@lr`` runs apart),
    ``maps``, ``study TASK first seed`` / ``study TASK later seed``."""
    if isinstance(unit, units.StudyUnit):
        run = unit.finetune.run
        which = "first seed" if run.seed == first_seeds.get(run.task) else "later seed"
        return f"study {run.task} {which}"
    if isinstance(unit, units.MapsUnit):
        return "maps"
    run = unit.run
    lr = "@lr" if "@lr" in unit.label else ""
    return f"fine-tune {run.task}/{run.init}{lr}"


def _wave(unit) -> int:
    return 0 if isinstance(unit, units.FinetuneUnit) else 1


def plan_units(profile: str, extra: dict, cache: Path) -> list[tuple]:
    """``[(unit, key, record or None)]`` of every unit of the plan, fine-tunes first."""
    planned = units.build(profile, extra)
    entries = units.resolve(planned, cache, None)
    maps = units.resolve_maps(units.build_maps(profile, extra), cache, entries)
    studies = units.resolve_studies(units.build_studies(profile, extra), cache, entries)
    out = []
    for e in [*entries, *maps, *studies]:
        p = record_path(cache, e.key)
        rec = json.loads(p.read_text()) if p.is_file() else None
        out.append((e.unit, e.key, rec))
    return out


def usable(rec: dict | None, min_share: float) -> bool:
    if not rec or rec.get("from_cache") or rec.get("device_kind") not in (None, "cpu"):
        return False
    if min_share > 0:
        cpu, wall = rec.get("cpu_seconds"), rec.get("seconds")
        return bool(cpu and wall) and cpu / wall >= min_share
    return True


def wall_time(waves: list[list[float]], slots: int, longest: bool) -> float:
    """Each wave's makespan (:func:`~analysis_utils.runplan.estimate.list_schedule`), the
    second starting when the first ends, as ``plan run`` runs them."""
    order = "longest" if longest else "given"
    return sum(est.list_schedule(jobs, slots, order) for jobs in waves if jobs)


def summarise(rows: list[tuple], min_share: float, slots: int) -> dict:
    first = {}
    for unit, _, _ in rows:
        if isinstance(unit, units.FinetuneUnit) and unit.run.init == "pretrained":
            first[unit.run.task] = min(first.get(unit.run.task, unit.run.seed), unit.run.seed)
    kinds: dict[str, dict] = {}
    for unit, _, rec in rows:
        k = kinds.setdefault(kind_of(unit, first), {"planned": 0, "seconds": [], "shares": []})
        k["planned"] += 1
        if usable(rec, min_share):
            k["seconds"].append(float(rec["seconds"]))
            if rec.get("cpu_seconds"):
                k["shares"].append(rec["cpu_seconds"] / rec["seconds"])
    table = []
    for name, k in kinds.items():
        s = k["seconds"]
        table.append({"kind": name, "planned": k["planned"], "measured": len(s),
                      "median_s": statistics.median(s) if s else None,
                      "min_s": min(s) if s else None, "max_s": max(s) if s else None,
                      "cpu_share": round(statistics.median(k["shares"]), 2) if k["shares"]
                      else None})
    median = {r["kind"]: r["median_s"] for r in table}
    for kind in [k for k, v in median.items() if v is None and k.startswith("fine-tune")]:
        # a random-init run or a learning-rate check computes what the task's pre-trained
        # run does (same examples, epochs and shape): its time stands in until measured
        task = kind.split()[1].split("/")[0]
        median[kind] = median.get(f"fine-tune {task}/pretrained")
    waves: list[list[float]] = [[], []]
    missing = 0
    for unit, _, rec in rows:
        kind = kind_of(unit, first)
        d = float(rec["seconds"]) if usable(rec, min_share) else median.get(kind)
        if d is None:
            missing += 1
            continue
        waves[_wave(unit)].append(d)
    unit_time = sum(map(sum, waves))
    return {"kinds": table, "unit_seconds": unit_time, "unestimated_units": missing,
            "wall_plan_order_s": wall_time(waves, slots, False),
            "wall_longest_first_s": wall_time(waves, slots, True), "slots": slots}


_SEGMENT = re.compile(r"^segment (\d+) (start|end) \S+ epoch (\d+)(?:.* rc (\d+))?")


def read_segments(text: str) -> list[dict]:
    """``[{"segment", "start", "end", "rc"}]`` (epoch seconds; ``end`` and ``rc`` None for a
    stretch still running or killed before it could log; ``rc`` 0: the plan ended, else it
    was stopped) from a segments log; other lines are ignored."""
    out: dict[int, dict] = {}
    for line in text.splitlines():
        m = _SEGMENT.match(line.strip())
        if m:
            n, what, t = int(m.group(1)), m.group(2), int(m.group(3))
            row = out.setdefault(n, {"segment": n, "start": None, "end": None, "rc": None})
            row[what] = t
            if what == "end" and m.group(4) is not None:
                row["rc"] = int(m.group(4))
    return [out[n] for n in sorted(out)]


def _epoch(iso: str) -> float:
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S%z").timestamp()


def segments_summary(segments: list[dict], records: list[dict], workers: int = 2) -> dict:
    """Per stretch its wall seconds, the units it finished (records whose ``finished`` lies in
    it) and, for a stretch that was stopped (``rc`` not 0), the seconds of work in progress
    when it stopped (per worker process, from its last finished unit, or the stretch's start,
    to the stretch's end; ``workers`` processes ran units, those that finished none since the
    start); and the totals. Records from cache hits do not count."""
    rows = []
    done = [(r, _epoch(r["finished"])) for r in records
            if not r.get("from_cache") and r.get("finished")]
    for seg in segments:
        start, end = seg["start"], seg["end"]
        if start is None or end is None:
            rows.append({**seg, "wall_s": None, "units": None, "in_progress_s": None})
            continue
        mine = [(r, t) for r, t in done if start <= t <= end]
        last: dict = {}
        for r, t in mine:
            last[r.get("pid")] = max(last.get(r.get("pid"), start), t)
        ends = sorted(last.values()) + [start] * max(0, workers - len(last))
        lost = 0 if seg.get("rc") == 0 else sum(end - t for t in ends)
        rows.append({**seg, "wall_s": end - start, "units": len(mine), "in_progress_s": lost})
    complete = [r for r in rows if r["wall_s"] is not None]
    return {"segments": rows, "wall_s": sum(r["wall_s"] for r in complete),
            "units": sum(r["units"] for r in complete),
            "in_progress_s": sum(r["in_progress_s"] for r in complete),
            "open": len(rows) - len(complete)}


def print_segments(s: dict, planned: int, recorded: int) -> None:
    print("\n### the measured run, stretch by stretch\n")
    print("| stretch | start (UTC) | wall | units finished | work in progress at its end |")
    print("|---|---|---|---|---|")
    for r in s["segments"]:
        when = datetime.fromtimestamp(r["start"], UTC).strftime("%Y-%m-%d %H:%M")
        if r["wall_s"] is None:
            print(f"| {r['segment']} | {when} | running or not logged | | |")
            continue
        print(f"| {r['segment']} | {when} | {_fmt(r['wall_s'])} | {r['units']} | "
              f"{_fmt(r['in_progress_s'])} |")
    state = ("every unit finished" if recorded >= planned
             else f"{planned - recorded} of {planned} units left")
    print(f"\nmeasured wall time: {s['wall_s'] / 3600:.2f} h over "
          f"{len(s['segments']) - s['open']} stretch(es) ({state}); of it, work in progress "
          f"at the stops: {_fmt(s['in_progress_s'])} (an upper bound of what the stops cost)")


def _fmt(x) -> str:
    return "–" if x is None else f"{x / 60:.1f} min"


def print_summary(title: str, s: dict) -> None:
    print(f"\n### {title}\n")
    print("| unit kind | planned | measured | median | min | max | CPU share |")
    print("|---|---|---|---|---|---|---|")
    for r in s["kinds"]:
        print(f"| {r['kind']} | {r['planned']} | {r['measured']} | {_fmt(r['median_s'])} | "
              f"{_fmt(r['min_s'])} | {_fmt(r['max_s'])} | "
              f"{'–' if r['cpu_share'] is None else r['cpu_share']} |")
    print(f"\nunit time one after the other: {s['unit_seconds'] / 3600:.2f} h"
          + (f" ({s['unestimated_units']} units of a kind never measured left out)"
             if s["unestimated_units"] else ""))
    print(f"wall time on {s['slots']} cores, fine-tunes first: plan order "
          f"{s['wall_plan_order_s'] / 3600:.2f} h, longest first "
          f"{s['wall_longest_first_s'] / 3600:.2f} h")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="default")
    ap.add_argument("-p", "--param", action="append", default=[])
    ap.add_argument("--reference", action="append", default=None,
                    help="NAME=VALUE of the reference plan (default: seeds=42,43,44 and "
                         "random_init=3, the plan before issue 43)")
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--min-cpu-share", type=float, default=0.0)
    ap.add_argument("--segments", default=None,
                    help="a segments log of a measured run (module docstring)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    cache = paths.cache_dir()
    extra = parse_overrides(args.param)
    ref = parse_overrides(args.reference or ["seeds=42,43,44", "random_init=3"])
    plan = summarise(plan_units(args.profile, extra, cache), args.min_cpu_share, args.slots)
    reference = summarise(plan_units(args.profile, {**extra, **ref}, cache),
                          args.min_cpu_share, args.slots)
    print(f"cache {cache}; profile {args.profile} {extra or ''}; records with a CPU share "
          f">= {args.min_cpu_share}")
    given = ", ".join(f"{k}={v}" for k, v in extra.items()) or "its own parameters"
    print_summary(f"the plan ({args.profile}, {given})", plan)
    print_summary("the reference plan (" + ", ".join(f"{k}={v}" for k, v in ref.items()) + ")",
                  reference)
    ratio = plan["wall_longest_first_s"] / reference["wall_longest_first_s"]
    print(f"\nthe plan costs {ratio:.2f}x the reference's wall time (longest first)")
    measured = None
    if args.segments:
        rows = plan_units(args.profile, extra, cache)
        records = [rec for _, _, rec in rows if rec]
        measured = segments_summary(read_segments(Path(args.segments).read_text()), records,
                                    args.slots)
        print_segments(measured, len(rows), sum(1 for r in records if not r.get("from_cache")))
    if args.json:
        Path(args.json).write_text(json.dumps({"plan": plan, "reference": reference,
                                               "ratio": ratio, "measured": measured},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
