"""``python -m analysis_utils plan show|run [--profile P] [--address ADDR] [-p NAME=VALUE]``.

``show`` lists the profile's units (:mod:`analysis_utils.runplan.units`): the fine-tunes, then
(a second wave) notebook 06's attention maps of each fine-tuned model (drift's input) and
notebook 07's measurements of it, cached or left, with an estimated cost each. ``run``
computes what is left: on Ray when it is installed (a new local
instance, or the cluster at ``--address`` / ``$RAY_ADDRESS``), else, or with ``--in-process``,
in this process, one unit after the other; the notebooks then load the results from the
cache. The numerics are notebooks 06 and 07's ``precision`` parameter: ``-p precision=bf16``
(float32, tf32, bf16; ``--precision bf16`` says the same). The fine-tuning key names the
precision and the device kind whenever they differ from the CPU float32 run, so every
precision and device shares the one cache, and the notebooks load the same models with the
same ``-p precision=...`` (:mod:`.precision`). ``show`` keys the units for this machine's
device kind (CUDA when torch sees it); ``run`` on Ray keys them for the cluster's (``cuda``
when it has GPUs and units ask for them), as its workers will. On Ray the units
run on long-lived workers (``--workers``) with the GPU share measured for their kind
(``--gpus-per-unit`` overrides it). Exit status: 0 when every unit is cached at the end, 1
otherwise (each failed unit is listed with its log).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

from .. import paths, profiles
from ..params import ParameterError
from . import precision

USAGE_EPILOG = """examples:
  python -m analysis_utils plan show --profile default
  python -m analysis_utils plan run                      # Ray local when installed
  python -m analysis_utils plan run --address 10.0.0.1:6379   # join a Ray cluster
  python -m analysis_utils plan run --in-process -p tasks=MRPC
  python -m analysis_utils plan run -p precision=bf16    # bf16 fine-tunes, keys of their own
  python -m analysis_utils plan run --precision tf32     # the same as -p precision=tf32
  python -m analysis_utils plan run --gpus-per-unit 1    # override the measured GPU shares
On a cluster, BERTOLOGY_CACHE_DIR must be storage every node mounts at the same path."""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m analysis_utils plan",
        description="The fine-tunes notebooks 06 and 07 need, then 06's attention maps and "
                    "07's measurements of each fine-tuned model, as units computed ahead of "
                    "them.",
        epilog=USAGE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("show", "run"),
                    help="show: list the units, cached or left, with an estimated cost; "
                         "run: show, then compute what is left")
    ap.add_argument("--profile", default="default", choices=sorted(profiles.PROFILES))
    ap.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                    help="override a parameter of notebooks 06/07, as `run -p` does")
    ap.add_argument("--address", default=None,
                    help="Ray cluster to join (default: $RAY_ADDRESS, else a local instance)")
    ap.add_argument("--in-process", action="store_true",
                    help="run the units here, one after the other, without Ray")
    ap.add_argument("--retries", type=int, default=1,
                    help="further attempts of a failed unit (default 1)")
    ap.add_argument("--gpus-per-unit", type=float, default=None,
                    help="GPUs each unit asks for where the cluster has GPUs (default: chosen "
                         "per unit from what units of its kind and model were measured to use "
                         "on earlier runs, its peak memory and the GPU's utilisation; without a "
                         "measurement 0.5 for a fine-tune, 0.25 for a maps or study unit)")
    ap.add_argument("--precision", default=None, type=_precision,
                    help=f"{' / '.join(precision.PRECISIONS)}: the same as -p precision=NAME, "
                         f"notebooks 06/07's parameter (default {precision.DEFAULT}, the "
                         "committed run's; tf32: CUDA only; bf16: autocast). The fine-tuning "
                         "key names it, so all precisions share the one cache; render the "
                         "notebooks with the same -p precision=NAME")
    ap.add_argument("--workers", default="actors", choices=("actors", "tasks"),
                    help="on Ray: long-lived workers that import once and run many units "
                         "(actors, default) or a Ray task per unit (tasks)")
    return ap


def _precision(text: str) -> str:
    try:
        return precision.validate(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _backend(args) -> str:
    """``"inprocess"`` or ``"ray"``; refuses --in-process with a cluster address, and a cluster
    address without Ray installed."""
    address = args.address or os.environ.get("RAY_ADDRESS")
    if args.in_process:
        if args.address:
            raise ValueError("--in-process and --address exclude each other: drop one")
        return "inprocess"
    try:
        import ray  # noqa: F401
    except ImportError:
        if address:
            raise ValueError(
                f"a Ray cluster was named ({address}) but Ray is not installed: "
                "`pip install -e '.[distributed]'` (`make install` does it)") from None
        print("[plan] Ray is not installed (pip install -e '.[distributed]'): running the "
              "units in this process", flush=True)
        return "inprocess"
    return "ray"


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m analysis_utils plan``; returns the exit status."""
    from ..publish.pipeline import parse_overrides
    from . import units

    args = _parser().parse_args(argv)
    try:
        extra = parse_overrides(args.param)
        if args.precision is not None:  # --precision NAME is -p precision=NAME
            given = extra.get("precision", args.precision).strip("'\"")
            if given != args.precision:
                raise ParameterError(f"--precision {args.precision} and -p precision={given} "
                                     "disagree: give one of them")
            extra["precision"] = args.precision
        planned = units.build(args.profile, extra)
    except (ParameterError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if not planned:
        print(f"[plan] profile {args.profile!r} runs neither of notebooks "
              f"{' and '.join(units.PLAN_NOTEBOOKS)}: nothing to plan", flush=True)
        return 0
    with contextlib.ExitStack() as stack:
        return _main(args, extra, planned, stack)


def _cluster_kind(ray, gpus_per_unit: float | None) -> str:
    """``cuda`` when the Ray cluster has GPUs and units ask for them, else ``cpu``: where
    units that name no device train (:func:`analysis_utils.runplan.execute._ray_task`)."""
    has_gpus = ray.cluster_resources().get("GPU", 0) > 0
    return "cuda" if has_gpus and (gpus_per_unit is None or gpus_per_unit > 0) else "cpu"


def _main(args, extra: dict, planned: list, stack: contextlib.ExitStack) -> int:
    from . import execute, units

    kind, backend = None, None  # None: this machine's device kind
    try:
        cache = precision.check_root(paths.cache_dir())
        if args.action == "run":
            backend = _backend(args)
            if backend == "ray":  # connected before the keys: they name the cluster's kind
                kind = _cluster_kind(stack.enter_context(execute.ray_session(args.address)),
                                     args.gpus_per_unit)
            for u in planned:  # on Ray, each worker checks its own as well
                precision.validate(u.precision, units._device_kind(u, kind))
    except (RuntimeError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    precisions = sorted({u.precision for u in planned})
    print(f"[plan] profile {args.profile!r}: {len(planned)} fine-tuning units for notebooks "
          f"{', '.join(units.PLAN_NOTEBOOKS)}; cache {cache}"
          + (f"; precision {', '.join(precisions)}" if precisions != [precision.DEFAULT]
             else "") + (f"; keyed for {kind} (the Ray cluster's)" if kind else ""),
          flush=True)
    t0 = time.perf_counter()
    entries = units.resolve(planned, cache, kind)
    print(units.describe(entries), flush=True)
    try:
        maps = units.resolve_maps(units.build_maps(args.profile, extra), cache, entries)
        studies = units.resolve_studies(units.build_studies(args.profile, extra), cache,
                                        entries)
    except (ParameterError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if maps:
        print("[plan] then notebook 06's attention maps of each fine-tuned model on its dev "
              "examples (drift's input), once its fine-tune is cached:", flush=True)
        print(units.describe_maps(maps), flush=True)
    if studies:
        print("[plan] then notebook 07's measurements of each fine-tuned model (disabling "
              "sweeps, head importance, pruning curves), once its fine-tune is cached:",
              flush=True)
        print(units.describe_studies(studies), flush=True)
    if args.action == "show":
        return 0
    unknown = [e for e in [*entries, *maps, *studies] if e.error]
    if unknown:
        print("error: cannot compute the cache key of "
              + "; ".join(f"{e.unit.label} ({e.error})" for e in unknown), file=sys.stderr)
        return 1
    left = [e for e in entries if not e.cached]
    # the second wave: what each fine-tuned model is measured on, once it is trained
    second = [e for e in [*maps, *studies] if not e.cached]
    if not left and not second:
        print(f"[plan] all {len(entries) + len(maps) + len(studies)} units cached; nothing "
              f"to run ({time.perf_counter() - t0:.1f} s)", flush=True)
        return 0
    try:
        where = "in this process" if backend == "inprocess" else (
            f"on Ray at {args.address or os.environ.get('RAY_ADDRESS')}"
            if args.address or os.environ.get("RAY_ADDRESS") else "on Ray (local instance)")
        session = (execute.ray_session(args.address) if backend == "ray"
                   else contextlib.nullcontext())
        with session:
            outcomes = []
            if left:
                jobs = [execute.Job(e.unit, e.key) for e in left]
                print(f"[plan] running {len(jobs)} fine-tuning units {where}; logs in "
                      f"{execute.log_path(cache, '<key>')}", flush=True)
                outcomes += execute.run_units(jobs, cache, backend=backend,
                                              address=args.address, retries=args.retries,
                                              gpus_per_unit=args.gpus_per_unit,
                                              workers=args.workers)
            failed_ft = {o.job.unit for o in outcomes if not o.ok}
            ready = [e for e in second if e.unit.finetune not in failed_ft]
            for e in second:
                if e.unit.finetune in failed_ft:
                    print(f"[plan] {e.unit.label}: skipped, its fine-tune failed", flush=True)
            if ready:
                jobs = [execute.Job(e.unit, e.key) for e in ready]
                n_maps = sum(isinstance(e.unit, units.MapsUnit) for e in ready)
                counts = [(n_maps, "maps"), (len(jobs) - n_maps, "study")]
                what = " and ".join(f"{n} {kind} units" for n, kind in counts if n)
                print(f"[plan] running {what} {where}", flush=True)
                outcomes += execute.run_units(jobs, cache, backend=backend,
                                              address=args.address, retries=args.retries,
                                              gpus_per_unit=args.gpus_per_unit,
                                              workers=args.workers)
    except (execute.CacheNotShared, RuntimeError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    failed = [o for o in outcomes if not o.ok]
    skipped = len(second) - len(ready)
    print(f"[plan] {len(outcomes) - len(failed)} of {len(outcomes)} units done in "
          f"{time.perf_counter() - t0:.0f} s" + (f"; {len(failed)} FAILED:" if failed else "")
          + (f"; {skipped} skipped" if skipped else ""), flush=True)
    for o in failed:
        print(f"  {o.job.unit.label}: {o.error}; log: {o.log}", file=sys.stderr)
    return 1 if failed or skipped else 0
