"""Estimate of a profile's run plan on 1 and 8 GPUs (default: the ``paper`` profile,
bert-base-uncased) from the FLOPs of its units, the seconds per FLOP measured on the cache's own
units on this CPU, and an assumed GPU throughput. No GPU is used or needed: every GPU number
printed is an estimate (:mod:`analysis_utils.runplan.estimate` has the formula and the
assumptions).

Prints, as Markdown tables: the rate measured here (fine-tunes and study parts recorded in
the cache, all-MiniLM-L6-v2 on this CPU); per unit kind (the fine-tunes of each task, the
studies of each task) the units, examples, pieces, FLOPs, the time one after the other on this
CPU at that rate, and one GPU's time at the default throughput; the plan's wall time on 1 and
8 GPUs at low / default / high throughput, packed as ``plan run`` asks Ray to pack them; and,
listed apart, the notebooks' own time outside the units, from the committed default run's
provenance. The output depends only on the code, the data and the cache's records.

Usage: ``python benchmarks/estimate_plan.py [--profile paper] [--reference default]
[-p NAME=VALUE ...] [--gpus 1,8] [--throughput 10,20,40] [--overhead 45,20]
[--gpus-per-unit X] [--min-tflop 1] [--cache-dir DIR] [--results-dir DIR] [--json FILE]``.
Needs the gold data (``BERTOLOGY_DATA_DIR``); reads the cache, writes nothing there.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis_utils import paths, profiles
from analysis_utils.publish.pipeline import parse_overrides
from analysis_utils.runplan import estimate as est
from analysis_utils.runplan import units
from analysis_utils.runplan.units import duration

T = 1e12


def _floats(text: str, n: int, what: str) -> list[float]:
    values = [float(v) for v in text.split(",") if v.strip()]
    if len(values) != n:
        raise SystemExit(f"{what}: expected {n} comma-separated numbers, got {text!r}")
    return values


def table(rows: list[tuple]) -> list[str]:
    head, *body = rows
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in body]


def groups(costs: list[est.UnitCost]) -> list[tuple[str, str, list[est.UnitCost]]]:
    """``(kind, task, units)`` in plan order of first appearance."""
    seen: dict[tuple[str, str], list] = {}
    for c in costs:
        seen.setdefault((c.kind, c.task), []).append(c)
    return [(k, t, v) for (k, t), v in seen.items()]


def rate_line(name: str, r: est.Rate | None) -> str:
    if r is None:
        return f"- {name}: no recorded unit on this CPU"
    g = 1e-9
    return (f"- {name}: {r.n} records, median {g / r.median:.1f} GFLOP/s "
            f"(quartiles {g / r.q3:.1f}-{g / r.q1:.1f}, range {g / r.high:.1f}-"
            f"{g / r.low:.1f}; pooled {g / r.pooled:.1f})")


def shape_line(info: est.ModelInfo) -> str:
    s = info.shape
    return (f"{info.name}: {s.layers} layers x {s.heads} heads, hidden {s.hidden}, "
            f"feed-forward {s.intermediate}; {s.non_embedding_params / 1e6:.1f} M non-embedding "
            f"parameters ({info.source})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Every GPU number is an estimate: see "
                                        "analysis_utils/runplan/estimate.py.")
    ap.add_argument("--profile", default="paper", choices=sorted(profiles.PROFILES),
                    help="the plan to estimate (default: paper)")
    ap.add_argument("--reference", default="default", choices=sorted(profiles.PROFILES),
                    help="the profile whose plan gives the FLOP ratio and whose committed run "
                         "gives the notebooks' own time (default: default)")
    ap.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                    help="override a parameter of notebooks 06/07 in both plans, as `plan -p`")
    ap.add_argument("--gpus", default="1,8", help="GPU counts (default 1,8)")
    ap.add_argument("--throughput", default=",".join(
        f"{est.GPU_THROUGHPUT[k] / T:g}" for k in ("low", "default", "high")),
        help="assumed sustained TFLOP/s of one GPU: low,default,high (default %(default)s)")
    ap.add_argument("--overhead", default=",".join(
        f"{est.UNIT_OVERHEAD_S[k]:g}" for k in ("finetune", "study")),
        help="assumed fixed seconds per unit on a GPU: fine-tune,study (default %(default)s)")
    ap.add_argument("--gpus-per-unit", type=float, default=None,
                    help="GPUs every unit asks for, as `plan run --gpus-per-unit` (default: "
                         "the units' own, 0.5 per fine-tune and 0.25 per study)")
    ap.add_argument("--min-tflop", type=float, default=est.MIN_FIT_FLOPS / T,
                    help="recorded units under this many TFLOP are not fitted (default "
                         "%(default)g)")
    ap.add_argument("--cache-dir", default=None, help="default: $BERTOLOGY_CACHE_DIR")
    ap.add_argument("--data-dir", default=None, help="default: $BERTOLOGY_DATA_DIR")
    ap.add_argument("--results-dir", default=None,
                    help="the reference run's provenance (default: results/, or its profile's "
                         "subfolder)")
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    args = ap.parse_args(argv)

    extra = parse_overrides(args.param)
    gpu_counts = [int(g) for g in args.gpus.split(",") if g.strip()]
    throughput = dict(zip(("low", "default", "high"),
                          [t * T for t in _floats(args.throughput, 3, "--throughput")],
                          strict=True))
    overhead = dict(zip(("finetune", "study"), _floats(args.overhead, 2, "--overhead"),
                        strict=True))
    data = est.Examples(args.data_dir)
    costs = est.plan_costs(args.profile, extra, args.data_dir, data)
    ref_costs = est.plan_costs(args.reference, extra, args.data_dir, data)
    if not costs:
        raise SystemExit(f"the {args.profile} profile has no run plan (it runs neither 06 "
                         "nor 07)")
    flops = sum(c.flops for c in costs)
    ref_flops = sum(c.flops for c in ref_costs)
    ratio = flops / ref_flops if ref_flops else float("nan")
    p06 = units.notebook_parameters(args.profile, extra)
    model = next(iter(p06.values()))["model"]
    ref_p = units.notebook_parameters(args.reference, extra)
    ref_model = next(iter(ref_p.values()))["model"] if ref_p else None
    epochs = next(iter(p06.values()))["epochs"]

    measured = est.measured_units(args.cache_dir, args.data_dir)
    rates = est.fit_rates(measured, "cpu", args.min_tflop * T)
    cpu = [m for m in measured if m.device == "cpu"]
    left_out = [m for m in cpu if m.flops < args.min_tflop * T]
    kind_rate = {k: rates.get(k) or rates.get("all") for k in ("finetune", "study")}

    lines = [f"# Estimate of the `{args.profile}` plan's cost (no GPU here: FLOPs counted, "
             "rate measured on this CPU, GPU throughput assumed)", ""]
    lines += [f"- plan model: {shape_line(est.model_info(model))}"]
    if ref_model:
        lines += [f"- reference `{args.reference}` model: "
                  f"{shape_line(est.model_info(ref_model))}",
                  f"- FLOPs of the plans, {args.profile} / {args.reference}: "
                  f"{flops / 1e15:.2f} / {ref_flops / 1e15:.2f} PFLOP = {ratio:.2f}"]
    lines += ["", f"Rate measured on this CPU ({len(cpu)} recorded units in the cache; "
              f"{len(left_out)} under {args.min_tflop:g} TFLOP left out):",
              rate_line("fine-tunes", rates.get("finetune")),
              rate_line("study parts", rates.get("study")), ""]

    gpu_t = throughput["default"]
    rows = [("unit kind (estimate)", "units", "examples per unit", "mean pieces",
             "TFLOP per unit", "PFLOP", "this CPU, one at a time",
             f"one GPU at {gpu_t / T:g} TFLOP/s")]
    cpu_total = 0.0
    for kind, task, group in groups(costs):
        ex = group[0].examples
        if kind == "finetune":
            label = f"fine-tunes {task}"
            shown = f"{ex['train'][0]} train x {epochs}, {ex['dev'][0]} dev"
            pieces = f"{ex['train'][1]:.1f} / {ex['dev'][1]:.1f}"
        else:
            label = f"studies {task}"
            shown = f"{ex['dev'][0]} dev, {ex['importance'][0]} importance"
            pieces = f"{ex['dev'][1]:.1f} / {ex['importance'][1]:.1f}"
        per = sorted({round(c.flops / T) for c in group})
        total = sum(c.flops for c in group)
        rate = kind_rate[kind]
        cpu_s = None if rate is None else total * rate.median
        cpu_total += cpu_s or 0.0
        rows.append((label, len(group), shown, pieces,
                     " / ".join(f"{v:,}" for v in per[::-1]), f"{total / 1e15:.2f}",
                     "?" if cpu_s is None else duration(cpu_s), duration(total / gpu_t)))
    have_rates = all(kind_rate[c.kind] for c in costs)
    lo = est.cpu_seconds(costs, rates, "q3") if have_rates else None
    hi = est.cpu_seconds(costs, rates, "q1") if have_rates else None
    rows.append(("total", len(costs), "", "", "", f"{flops / 1e15:.2f}",
                 "?" if not have_rates else
                 f"{duration(cpu_total)} (quartiles {duration(hi)}-{duration(lo)})",
                 duration(flops / gpu_t)))
    lines += table(rows)
    lines += ["", "Pieces: train / dev (fine-tunes), dev / importance (studies). A fine-tune is "
              f"{epochs} epochs of training (3 forward passes each) and {epochs + 1} dev "
              "scorings; TFLOP per unit for studies: the task's first seed (every mode, pruning "
              "curves) / the others.", ""]

    share_note = ("the units' own shares: 0.5 GPU per fine-tune, 0.25 per study"
                  if args.gpus_per_unit is None else f"{args.gpus_per_unit:g} GPU per unit")
    rows = [("GPUs", "throughput (assumed)", "fine-tune wave", "study wave",
             "total (estimate)", "FLOPs alone")]
    spans = {}
    for g in gpu_counts:
        for name in ("low", "default", "high"):
            span = est.gpu_makespan(costs, g, throughput[name], overhead,
                                    share=args.gpus_per_unit)
            bare = est.gpu_makespan(costs, g, throughput[name], {},
                                    share=args.gpus_per_unit)
            spans[(g, name)] = {**span, "flops_only": bare["total"]}
            rows.append((g, f"{throughput[name] / T:g} TFLOP/s ({name})",
                         duration(span["finetune"]), duration(span["study"]),
                         duration(span["total"]), duration(bare["total"])))
    lines += [f"Wall time of the plan on GPUs (estimate; {share_note}; longest unit first on "
              f"the slots that free first; the study wave after the fine-tunes; "
              f"{overhead['finetune']:g} s per fine-tune and {overhead['study']:g} s per "
              "study of fixed cost, \"FLOPs alone\" without it):", ""]
    lines += table(rows)
    given = {g: est.gpu_makespan(costs, g, gpu_t, overhead, order="given",
                                 share=args.gpus_per_unit)["total"] for g in gpu_counts}
    lines += ["", "In plan order instead (as `plan run` submits them), default throughput: "
              + ", ".join(f"{g} GPU{'s' if g > 1 else ''} {duration(s)}"
                          for g, s in given.items()) + "."]

    # the notebooks' own time outside the units, from the reference profile's committed run
    results = Path(args.results_dir) if args.results_dir else \
        paths.RESULTS_DIR / profiles.SUBFOLDER.get(args.reference, "")
    wanted = profiles.notebooks(args.profile, None) or sorted(
        p.name[:2] for p in paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.py"))
    prov = est.read_provenance(results, wanted)
    unit_s = {}
    if "07" in prov and kind_rate["study"] is not None:
        # the recorded 07 predates the study cache: it computed its studies itself, with the
        # parameters it records (06's recorded run found its fine-tunes in the cache)
        cur = units.notebook_parameters(args.reference).get("07", {})
        old = {k: str(v) for k, v in prov["07"]["parameters"].items()
               if k in cur and cur[k] != v}
        old_costs = [c for c in est.plan_costs(args.reference, old, args.data_dir, data)
                     if c.kind == "study"]
        unit_s["07"] = sum(c.flops for c in old_costs) * kind_rate["study"].median
    rest = est.notebook_remainder(prov, unit_s)
    if rest:
        own = sum(r["rest"] for r in rest.values())
        parts = []
        for nb, r in rest.items():
            text = f"{nb} {duration(r['rest'])}"
            if r["units"]:
                threads = prov[nb].get("torch_threads", "?")
                text += (f" (recorded {duration(r['wall'])}, {threads} torch threads, less "
                         f"its studies' estimate "
                         f"{duration(r['units'])}"
                         + (": not separable" if r["units"] >= r["wall"] else "") + ")")
            parts.append(text)
        lines += ["", f"Not in the totals above: the notebooks' own time outside the units "
                  f"(estimate). The committed `{args.reference}` run on this CPU "
                  f"({results.relative_to(paths.REPO_ROOT) if results.is_relative_to(paths.REPO_ROOT) else results}"
                  "/NN_provenance.json, with the caches those runs found): "
                  + ", ".join(parts) + f"; {duration(own)} in all. x the FLOP ratio "
                  f"{ratio:.2f}: {duration(own * ratio)} on this CPU if all of it grew with "
                  "the model (an upper bound: probes, clustering, CNNs on maps and bootstraps "
                  "do not); on a GPU box its model passes move to the GPU, the rest stays "
                  "on the CPUs."]
    print("\n".join(lines))

    if args.json:
        Path(args.json).write_text(json.dumps({
            "profile": args.profile, "reference": args.reference, "extra": extra,
            "flops": flops, "reference_flops": ref_flops, "flop_ratio": ratio,
            "rates": {k: vars(r) for k, r in rates.items()},
            "units": [{"label": c.label, "kind": c.kind, "task": c.task, "flops": c.flops,
                       "parts": c.parts, "gpu_share": c.gpu_share} for c in costs],
            "cpu_seconds": cpu_total if have_rates else None,
            "throughput": throughput, "overhead": overhead,
            "gpu_wall_s": {f"{g}x{n}": v for (g, n), v in spans.items()},
            "notebooks_outside_units": rest}, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
