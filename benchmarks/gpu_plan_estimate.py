"""Wall time of a plan on 1-8 H100s, estimated from the unit times measured on one H100
(issue 34, at 0dec0e2) and the plan's FLOPs: an ESTIMATE, nothing here runs on a GPU.

Per unit, alone on one H100 (the measured figures, listed in :data:`MEASURED`):

- a fine-tune: its task's measured time where issue 34 has one (MiniLM: MRPC, STS-B, SST-2;
  BERT-base-shaped: MRPC), else the model's MRPC time scaled by FLOPs (``fixed + train x
  F / F_MRPC``; the FLOPs from :func:`analysis_utils.runplan.estimate.plan_costs`);
- a study: the model's measured MRPC seed-42 study scaled by FLOPs;
- a maps unit: the measured seconds (1 s MiniLM, 3 s BERT-base-shaped).

Packing: each unit asks for the share :func:`analysis_utils.runplan.gpu.choose_share` gives
its measured utilisation (MiniLM fine-tunes at most 27% busy: four to a GPU; BERT-base-shaped
at most 79%: two). ``k`` units packed on a GPU each run ``k / gain(k)`` times slower, with
``gain(k) = min(k, G)``, ``G = 1.8 x u_bert / u`` (``u`` the unit's busy fraction alone):
calibrated on the one packing measured (three BERT-base-shaped fine-tunes at once: 1.8x the
throughput of one at a time) and assuming busy time adds up until that saturation. The study
wave has no measured utilisation: it is packed like its model's fine-tunes. Units are placed
longest first on ``GPUs x k`` slots (:func:`~analysis_utils.runplan.estimate.list_schedule`),
the study and maps wave after the fine-tunes, each wave starting its long-lived workers once
(16 s of imports, measured).

Usage: ``python benchmarks/gpu_plan_estimate.py [--profiles default,paper] [--gpus 1,2,4,8]
[--costs FILE]`` (``--costs``: a JSON of the plans' unit FLOPs, written on first use, since
counting them tokenises every train set: about 2 min here).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: Issue 34's H100 figures (one unit at a time, `plan run --in-process`, float32).
MEASURED = {
    "minilm": {"finetune": {"MRPC": 17.3, "STS-B": 23.7, "SST-2": 26.5},  # 16.6-18.0, 22.9-24.5
               "finetune_fixed": 5.0, "study_mrpc42": 8.3, "maps": 1.0,
               "busy": 0.27},  # 14-27% busy during MiniLM fine-tunes: the highest
               "bert": {"finetune": {"MRPC": 32.0}, "finetune_fixed": 5.0,  # 27 s of training
                        "study_mrpc42": 43.0, "maps": 3.0, "busy": 0.79},  # 55-79% busy
               }
IMPORT_S = 16.0  # each Python process, before any work
PACKED_GAIN_BERT = 1.8  # three BERT-base-shaped fine-tunes at once: 1.8x one at a time


def family(model: str) -> str:
    return "minilm" if "minilm" in model.lower() else "bert"


def unit_seconds(costs: list[dict], model: str) -> list[tuple[str, str, float]]:
    """``(label, wave, seconds alone on one H100)`` per unit (module docstring)."""
    m = MEASURED[family(model)]
    ft_mrpc = next(c["flops"] for c in costs if c["kind"] == "finetune"
                   and c["label"] == "MRPC/pretrained/seed42")
    st_mrpc = next(c["flops"] for c in costs if c["kind"] == "study"
                   and c["label"].startswith("MRPC/pretrained/seed42 "))
    mrpc = m["finetune"]["MRPC"]
    out = []
    for c in costs:
        if c["kind"] == "finetune":
            t = m["finetune"].get(c["task"]) if "@lr" not in c["label"] else None
            if t is None:
                t = m["finetune_fixed"] + (mrpc - m["finetune_fixed"]) * c["flops"] / ft_mrpc
            out.append((c["label"], "finetune", t))
        else:
            out.append((c["label"], "second", m["study_mrpc42"] * c["flops"] / st_mrpc))
            out.append((c["label"] + " maps", "second", m["maps"]))
    return out


def makespan(units: list[tuple[str, str, float]], gpus: int, model: str,
             packed: bool = True) -> float:
    from analysis_utils.runplan import estimate as est
    from analysis_utils.runplan import gpu

    m = MEASURED[family(model)]
    k = round(1 / gpu.choose_share(None, None, 100 * m["busy"])) if packed else 1
    g = min(k, PACKED_GAIN_BERT * MEASURED["bert"]["busy"] / m["busy"])
    total = 0.0
    for wave in ("finetune", "second"):
        times = [t * k / g for _, w, t in units if w == wave]
        if times:
            total += IMPORT_S + est.list_schedule(times, gpus * k)
    return total


def load_costs(path: Path | None, profiles: list[str]) -> dict:
    if path is not None and path.exists():
        costs = json.loads(path.read_text())
        if all(p in costs for p in profiles):
            return costs
    from analysis_utils.runplan import estimate as est
    from analysis_utils.runplan import units

    data = est.Examples(None)
    costs = {}
    for p in profiles:
        model = next(iter(units.notebook_parameters(p).values()))["model"]
        costs[p] = {"model": model, "units": [
            {"label": c.label, "kind": c.kind, "task": c.task, "flops": c.flops}
            for c in est.plan_costs(p, None, None, data)]}
    if path is not None:
        path.write_text(json.dumps(costs, indent=1))
    return costs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", default="default,paper")
    ap.add_argument("--gpus", default="1,2,4,8")
    ap.add_argument("--costs", default=None, help="JSON cache of the plans' unit FLOPs")
    args = ap.parse_args(argv)
    profiles = [p for p in args.profiles.split(",") if p]
    gpus = [int(g) for g in args.gpus.split(",") if g]
    costs = load_costs(Path(args.costs) if args.costs else None, profiles)
    print("ESTIMATE from issue 34's H100 unit times (module docstring); no GPU used.\n")
    head = " | ".join(f"{g} GPU{'s' if g > 1 else ''}" for g in gpus)
    print(f"| plan | one at a time, 1 GPU | {head} | speed-up at {gpus[-1]} |")
    print("|---|---|" + "---|" * len(gpus) + "---|")
    for p in profiles:
        model, plan = costs[p]["model"], costs[p]["units"]
        units = unit_seconds(plan, model)
        serial = makespan(units, 1, model, packed=False)
        spans = [makespan(units, g, model) for g in gpus]
        cells = " | ".join(f"{s / 60:.1f} min" for s in spans)
        print(f"| {p} ({model}, {len(plan)} units + maps) | {serial / 60:.1f} min | {cells} | "
              f"{spans[0] / spans[-1]:.1f}x |")
        longest = max(t for _, _, t in units)
        print(f"|   (longest unit alone: {longest:.0f} s; sum of units alone "
              f"{sum(t for *_, t in units) / 60:.1f} min) |" + " |" * (len(gpus) + 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
