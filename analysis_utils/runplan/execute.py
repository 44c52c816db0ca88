"""Execute a plan's units: in this process, or as Ray tasks (a local instance or a cluster).

:func:`run_units` ``(jobs, cache_dir, backend="inprocess" | "ray") -> [Outcome]``. A job is a
unit and its cache key; a unit is any object with

- ``label`` (str), ``num_cpus`` (int: cores, and the torch threads it runs with),
  ``gpu_share`` (float: GPUs it asks for where the Ray cluster has any; 0.5 lets two share
  one), ``device`` (str, "": where the executor puts it);
- ``execute(key, cache_dir, device) -> dict``: compute (or load) the unit into the cache at
  ``cache_dir`` and return a small JSON-able summary.

Both backends run the same function around ``execute`` (:func:`execute_unit`): output of the
unit (Python's, its warnings, and the C libraries' on file descriptors 1 and 2) goes to its log,
``<cache>/runplan/logs/<key>.log`` (appended, one header per attempt), torch runs with
``num_cpus`` threads, and the summary gains where and how it ran (host, pid, seconds,
torch threads, niceness, Ray's assigned resources and GPU ids). A local Ray instance started
here runs its workers at niceness 0, as an in-process run (Ray's default is 15). In-process units run one after the
other in plan order on this machine's device ("" : CUDA when available). Ray tasks are
submitted in plan order and run as resources allow: ``num_cpus`` each, and ``gpu_share`` GPUs
where the cluster has GPUs (a unit then runs on CUDA when its node has it, else on the CPU).

Every unit runs at its ``precision`` (:mod:`.precision`: float32, tf32 or bf16, set
around its work and restored after it: the ``precision`` given to :func:`run_units`, else the
unit's own ``precision`` attribute, a fine-tune's being its settings', part of its key, and a
maps or study unit's float32, as in the notebooks, else float32) and under a
:class:`~.gpu.Monitor` (peak GPU memory
torch allocated, the GPU's utilisation where NVML is at hand; ``n/a`` on a CPU). A unit that
finishes leaves a record, ``<cache>/runplan/units/<key>.json`` (:func:`record_path`): what it
is (kind, model, label), the device and device kind that made it, the precision, seconds,
the GPU figures, host and worker; the default GPU share of later runs is read from these
(:func:`.gpu.measured_share`).

On Ray (``workers="actors"``, the default) the units run on long-lived workers: Ray actors,
one per slot a unit shape (CPUs, GPU share) has on the cluster, each importing torch and the
package once and running unit after unit, so a unit does not pay the start-up (about 16 s of
imports on a GPU box) again; an actor whose shape has no unit left is ended, freeing its
resources for the next shape. ``workers="tasks"`` runs each unit as a Ray task of its own,
as before (Ray may or may not reuse a worker process for the next task, so nothing
guarantees the imports are not paid again).

A unit that raises, or whose Ray worker dies (a crash on start such as "Mutex corrupt", a
killed process, a lost node), is tried again up to ``retries`` more times, then reported with
its error and log path; the other units go on. Two errors are not retried: a worker that
cannot see the driver's cache (:class:`CacheNotShared`: the whole run stops, since workers
would write where neither the driver nor the notebooks read) and a worker whose cache key
differs from the driver's (the nodes differ in code or data).

On Ray, the driver writes a token file into the cache (``<cache>/runplan/tokens/``) and
every unit checks it before doing anything (:func:`check_shared`): on a cluster the cache must
be storage every node mounts at the same path.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import sys
import time
import traceback
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Job", "Outcome", "CacheNotShared", "NotRetried", "run_units", "execute_unit", "log_path",
           "record_path", "write_token", "check_shared", "remove_token", "ray_session",
           "BACKENDS", "WORKERS", "slots"]

BACKENDS = ("inprocess", "ray")
WORKERS = ("actors", "tasks")
RUNPLAN_SUBDIR = "runplan"


class CacheNotShared(RuntimeError):
    """A worker cannot see the cache folder the driver wrote its token into."""


class NotRetried(RuntimeError):
    """A unit's error that another attempt cannot cure (e.g. a worker whose cache key differs
    from the driver's): reported at once."""


@dataclass(frozen=True)
class Job:
    """A unit to run and its cache key (logs are named after it)."""

    unit: object
    key: str


@dataclass
class Outcome:
    """What became of a job: ``ok``; ``attempts`` made; ``summary`` (the unit's, plus where
    and how it ran; from the last successful attempt); ``error`` (the last failure, one line);
    ``log`` (the unit's log file)."""

    job: Job
    ok: bool
    attempts: int
    log: Path
    summary: dict = field(default_factory=dict)
    error: str | None = None


def log_path(cache_dir: str | os.PathLike, key: str) -> Path:
    """The log file of the unit with cache key ``key``."""
    return Path(cache_dir) / RUNPLAN_SUBDIR / "logs" / f"{key}.log"


def record_path(cache_dir: str | os.PathLike, key: str) -> Path:
    """The plan's record of the unit with cache key ``key`` (module docstring)."""
    return Path(cache_dir) / RUNPLAN_SUBDIR / "units" / f"{key}.json"


# ----------------------------------------------------------------------------- shared cache

def write_token(cache_dir: str | os.PathLike) -> dict:
    """Write a fresh token file into ``cache_dir`` for workers to find; returns what
    :func:`check_shared` needs (token, path, the driver's host)."""
    token = {"token": uuid.uuid4().hex, "cache_dir": str(cache_dir),
             "host": socket.gethostname()}
    path = Path(cache_dir) / RUNPLAN_SUBDIR / "tokens" / f"{token['token']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(token))
    return token


def remove_token(token: dict) -> None:
    """Remove the token file :func:`write_token` wrote (at the end of a run)."""
    (Path(token["cache_dir"]) / RUNPLAN_SUBDIR / "tokens" / f"{token['token']}.json"
     ).unlink(missing_ok=True)


def check_shared(token: dict) -> None:
    """Raise :class:`CacheNotShared` unless this process sees the token file the driver wrote,
    with the same content: the cache folder is the same storage here and there."""
    path = Path(token["cache_dir"]) / RUNPLAN_SUBDIR / "tokens" / f"{token['token']}.json"
    try:
        seen = json.loads(path.read_text())
    except (OSError, ValueError):
        seen = None
    if seen != token:
        raise CacheNotShared(
            f"the worker on {socket.gethostname()} cannot see the cache folder "
            f"{token['cache_dir']} that the driver on {token['host']} uses (its token file "
            f"{path} is {'missing' if seen is None else 'different'} here); its units would "
            "be computed into a cache the driver and the notebooks never read. Put the cache "
            "on storage every node mounts at the same path (NFS or a cluster file system) and "
            "set BERTOLOGY_CACHE_DIR to it on the driver and on every node before "
            "`ray start`, or run without --address / RAY_ADDRESS.")


# ------------------------------------------------------------------------- one unit, anywhere

@contextlib.contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """Send this process's output, Python's and that of C libraries (file descriptors 1 and
    2), to ``log`` (appended) while the block runs."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", buffering=1) as fh:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            with contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh), \
                    warnings.catch_warnings():
                # warnings too, even where a caller records them (pytest does)
                warnings.showwarning = (lambda message, category, filename, lineno, file=None,
                                        line=None: fh.write(warnings.formatwarning(
                                            message, category, filename, lineno, line)))
                yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


@contextlib.contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(max(1, int(n)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def unit_precision(unit, precision: str | None = None) -> str:
    """The precision ``unit`` runs at: ``precision`` when given, else the unit's own
    ``precision`` attribute (a fine-tune's settings'), else float32."""
    return precision or getattr(unit, "precision", None) or "float32"


def execute_unit(unit, key: str, cache_dir: str, device: str, attempt: int = 1,
                 token: dict | None = None, where: dict | None = None,
                 precision: str | None = None) -> dict:
    """Run ``unit.execute(key, cache_dir, device)`` with its output in its log, torch on
    ``unit.num_cpus`` threads, at ``precision`` (:func:`.precision.applied`) and under a
    :class:`.gpu.Monitor`; returns its summary plus ``host``, ``pid``, ``seconds``,
    ``cpu_seconds`` (this process's CPU time over the unit), ``load_average``, ``cpu_count``,
    ``torch_threads``, ``niceness``, ``precision``, ``device_kind``, ``gpu`` (the monitor's
    figures) and ``where`` (Ray's resources), and writes it as the unit's record
    (:func:`record_path`). ``token``: check the shared cache first (:func:`check_shared`).
    Exceptions propagate, their traceback written to the log."""
    from . import gpu
    from . import precision as prec

    precision = unit_precision(unit, precision)
    if token is not None:
        check_shared(token)
    try:
        prec.validate(precision, prec.device_kind(device))
    except ValueError as err:  # this worker cannot run at it: another attempt would not either
        raise NotRetried(f"{unit.label}: {err}") from None
    log = log_path(cache_dir, key)
    t0, c0 = time.perf_counter(), time.process_time()
    with _output_to(log), _torch_threads(unit.num_cpus):
        import torch

        threads = torch.get_num_threads()
        print(f"=== {unit.label} ({key}) attempt {attempt} on {socket.gethostname()} "
              f"pid {os.getpid()}, device {device or 'auto'}, {threads} torch threads, "
              f"precision {precision}, {json.dumps(where or {}, sort_keys=True)}, "
              f"{time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
        try:
            with gpu.Monitor(device) as monitor, prec.applied(precision, device) as state:
                summary = dict(unit.execute(key, cache_dir, device))
            summary["autocast"] = state["autocast"]
        except BaseException:
            traceback.print_exc()
            raise
        seconds = time.perf_counter() - t0
        cpu_seconds = time.process_time() - c0
        summary["gpu"] = monitor.stats
        print(f"=== done in {seconds:.1f} s, {gpu.fmt_stats(monitor.stats)}: "
              f"{json.dumps(summary, default=str)}", flush=True)
    out = {**summary, "host": socket.gethostname(), "pid": os.getpid(), "seconds": seconds,
           "cpu_seconds": cpu_seconds, "load_average": _load_average(),
           "cpu_count": os.cpu_count(), "torch_threads": threads, "niceness": os.nice(0), "precision": precision,
           "device_kind": prec.device_kind(str(summary.get("device") or device or "")),
           **(where or {})}
    _write_record(cache_dir, key, unit, out, attempt)
    return out


def _load_average() -> float | None:
    """The machine's 1-minute load average as the unit ends (None where the OS has none): with
    ``cpu_seconds`` against ``seconds`` it tells a reader of the record whether the unit ran
    on a core of its own."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _write_record(cache_dir: str, key: str, unit, out: dict, attempt: int) -> None:
    """The plan's record of a finished unit (module docstring); atomic."""
    from ..engine import atomic
    from . import gpu

    record = {"key": key, "label": unit.label, "kind": gpu.unit_kind(unit),
              "model": gpu.unit_model(unit), "attempt": attempt,
              "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              **{k: out.get(k) for k in ("device", "device_kind", "precision", "seconds",
                                          "cpu_seconds", "load_average", "cpu_count",
                                          "autocast", "from_cache", "gpu", "host", "pid", "worker_units",
                                          "torch_threads", "resources", "gpu_ids")}}
    atomic.write_text(record_path(cache_dir, key), json.dumps(record, indent=1, default=str))


def _ray_task(unit, key: str, cache_dir: str, attempt: int, token: dict,
              precision: str | None = None, worker_units: int | None = None) -> dict:
    """The Ray task around :func:`execute_unit`: the unit's device from the GPUs Ray gave it."""
    import ray
    import torch

    ctx = ray.get_runtime_context()
    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    device = unit.device or ("cuda" if gpu_ids and torch.cuda.is_available() else "cpu")
    where = {"resources": ctx.get_assigned_resources(), "gpu_ids": gpu_ids,
             "node_id": ctx.get_node_id()}
    if worker_units is not None:  # a long-lived worker: the units it ran, this one included
        where["worker_units"] = worker_units
    return execute_unit(unit, key, cache_dir, device, attempt, token, where, precision)


class _Worker:
    """A long-lived Ray worker (an actor): imports torch and the modules its units name
    (``warm_imports``) once, then runs unit after unit (:func:`_ray_task`), freeing what a unit left on the GPU
    between them."""

    def __init__(self, warm_imports: Sequence[str] = ()):
        import importlib

        import torch  # noqa: F401 - the imports a unit would otherwise pay for

        for name in warm_imports:  # the units' own (``unit.warm_imports``)
            importlib.import_module(name)
        self.units_run = 0

    def run(self, unit, key: str, cache_dir: str, attempt: int, token: dict,
            precision: str | None) -> dict:
        import gc

        import torch

        self.units_run += 1
        try:
            return _ray_task(unit, key, cache_dir, attempt, token, precision, self.units_run)
        finally:
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()


# ------------------------------------------------------------------------------ the drivers

def _one_line(err: BaseException) -> str:
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):  # a RayTaskError: the unit's own exception
        err = cause
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".strip()


def _fatal(err: BaseException) -> bool:
    """Errors retrying cannot cure: a cache workers cannot see."""
    return isinstance(err, CacheNotShared) or isinstance(getattr(err, "cause", None),
                                                         CacheNotShared)


def _retried(err: BaseException) -> bool:
    return not (isinstance(err, NotRetried) or isinstance(getattr(err, "cause", None),
                                                          NotRetried))


class _Progress:
    """One line per finished, retried or failed unit: ``[plan] 3/12 LABEL: ...``."""

    def __init__(self, total: int, out: Callable[[str], None], cache_dir: str):
        self.total, self.done, self.out, self.cache_dir = total, 0, out, cache_dir

    def finished(self, o: Outcome) -> None:
        self.done += 1
        s = o.summary
        if o.ok:
            what = "loaded from the cache" if s.get("from_cache") else "done"
            gpu = f", GPU {','.join(s['gpu_ids'])}" if s.get("gpu_ids") else ""
            tries = f", attempt {o.attempts}" if o.attempts > 1 else ""
            worker = (f", worker pid {s['pid']} unit {s['worker_units']}"
                      if s.get("worker_units") else "")
            from .gpu import fmt_stats

            self.out(f"[plan] {self.done}/{self.total} {o.job.unit.label}: {what} in "
                     f"{s.get('seconds', 0):.1f} s on {s.get('device', '?')}{gpu} "
                     f"({s.get('host', '?')}{tries}{worker}; {s.get('precision', 'float32')}; "
                     f"{fmt_stats(s.get('gpu') or {})})")
        else:
            self.out(f"[plan] {self.done}/{self.total} {o.job.unit.label}: FAILED after "
                     f"{o.attempts} attempt(s): {o.error}; log: {o.log}")

    def retry(self, job: Job, attempt: int, error: str) -> None:
        self.out(f"[plan] {job.unit.label}: attempt {attempt} failed ({error}); trying again "
                 f"(log: {log_path(self.cache_dir, job.key)})")


def _run_inprocess(jobs: Sequence[Job], cache_dir: str, retries: int,
                   progress: _Progress, precision: str | None = None) -> list[Outcome]:
    outcomes = []
    for job in jobs:
        for attempt in range(1, retries + 2):
            try:
                summary = execute_unit(job.unit, job.key, cache_dir,
                                       getattr(job.unit, "device", ""), attempt,
                                       precision=precision)
                outcome = Outcome(job, True, attempt, log_path(cache_dir, job.key), summary)
                break
            except Exception as err:  # noqa: BLE001 - reported below, never hidden
                outcome = Outcome(job, False, attempt, log_path(cache_dir, job.key),
                                  error=_one_line(err))
                if attempt <= retries and _retried(err):
                    progress.retry(job, attempt, outcome.error)
                    continue
                break
        progress.finished(outcome)
        outcomes.append(outcome)
    return outcomes


@contextlib.contextmanager
def ray_session(address: str | None = None, **init_kwargs) -> Iterator[object]:
    """The ``ray`` module, connected: the running session if there is one, else
    ``ray.init(address)`` (None: ``$RAY_ADDRESS`` when set, else a new local instance), shut
    down again at the end if it was started here. ``init_kwargs`` go to ``ray.init``."""
    try:
        import ray
    except ImportError:
        raise RuntimeError(
            "Ray is not installed: `pip install -e '.[distributed]'` (`make install` does), or "
            "run the plan in this process with `plan run --in-process`") from None
    started = not ray.is_initialized()
    if started:
        init_kwargs.setdefault("include_dashboard", False)
        init_kwargs.setdefault("log_to_driver", False)
        if not (address or os.environ.get("RAY_ADDRESS")):
            # A local instance's workers run at the priority an in-process run has; Ray's
            # default (niceness 15) makes them yield to every other job on the machine. A
            # cluster keeps what `ray start` set.
            init_kwargs.setdefault("_system_config", {"worker_niceness": 0})
        try:
            ray.init(address=address, **init_kwargs)
        except Exception as err:  # noqa: BLE001 - ConnectionError, RuntimeError, ...
            where = address or os.environ.get("RAY_ADDRESS")
            raise RuntimeError(
                (f"could not join the Ray cluster at {where}" if where
                 else "could not start a local Ray instance")
                + f" ({type(err).__name__}: {err}); check the address (`ray status` on the "
                "head node), or run the plan in this process with --in-process") from err
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _check_feasible(jobs: Sequence[Job], gpus: Callable[[Job], float],
                    nodes: list[dict]) -> None:
    """Refuse units no node of the cluster can hold (Ray would wait for them forever)."""
    for job in jobs:
        cpus, share = job.unit.num_cpus, gpus(job)
        if not any(n.get("CPU", 0) >= cpus and n.get("GPU", 0) >= share for n in nodes):
            most = max((n.get("CPU", 0) for n in nodes), default=0)
            raise ValueError(
                f"{job.unit.label} asks for {cpus} CPU(s)"
                + (f" and {share} GPU(s)" if share else "")
                + f", which no node of the Ray cluster has (the largest has {most:g} CPUs): "
                "lower the notebooks' num_threads (-p num_threads=N) or --gpus-per-unit, or "
                "add a larger node")


def slots(cpus: float, share: float, nodes: Sequence[dict]) -> int:
    """How many units asking for ``cpus`` CPUs and ``share`` GPUs the ``nodes`` (Ray's
    resource dicts) hold at once.

    >>> slots(1, 0.5, [{"CPU": 4, "GPU": 2}, {"CPU": 1, "GPU": 1}])
    5
    """
    total = 0
    for n in nodes:
        fit = [math.floor(n.get("CPU", 0) / cpus + 1e-6)] if cpus else []
        if share:
            fit.append(math.floor(n.get("GPU", 0) / share + 1e-6))
        total += min(fit) if fit else 0
    return total


def _shares(jobs: Sequence[Job], cache_dir: str, has_gpus: bool, gpus_per_unit: float | None,
            out: Callable[[str], None]) -> dict[str, float]:
    """Each job's GPU share: ``gpus_per_unit`` when given, else what units of its kind and
    model were measured to use on a GPU (:func:`.gpu.measured_share` over the cache's unit
    records), else on issue 34's H100 (:func:`.gpu.prior_share`), else the unit's stated
    ``gpu_share``; 0 on a cluster without GPUs. Says which."""
    from . import gpu

    if not has_gpus:
        return {job.key: 0.0 for job in jobs}
    if gpus_per_unit is not None:
        out(f"[plan] GPU share per unit: {gpus_per_unit:g} (--gpus-per-unit)")
        return {job.key: float(gpus_per_unit) for job in jobs}
    records = gpu.read_records(Path(cache_dir) / RUNPLAN_SUBDIR / "units")
    shares, why = {}, {}
    for job in jobs:
        share, how = gpu.measured_share(job.unit, records), "measured"
        if share is None:
            share, how = gpu.prior_share(job.unit), "measured on an H100, issue 34"
        if share is None:
            share, how = float(job.unit.gpu_share), "stated default"
        shares[job.key] = math.floor(share * 1e4) / 1e4  # Ray counts GPUs in 1e-4 steps
        group = (gpu.unit_kind(job.unit), gpu.unit_model(job.unit), shares[job.key], how)
        why[group] = why.get(group, 0) + 1
    out("[plan] GPU share per unit: " + "; ".join(
        f"{kind} {model}: {share:g} ({how}, {n} unit{'s' if n > 1 else ''})"
        for (kind, model, share, how), n in why.items()))
    return shares


def _run_ray(jobs: Sequence[Job], cache_dir: str, retries: int, progress: _Progress,
             gpus_per_unit: float | None, precision: str | None = None,
             workers: str = "actors", out: Callable[[str], None] = print) -> list[Outcome]:
    import ray

    has_gpus = ray.cluster_resources().get("GPU", 0) > 0
    if not has_gpus and any(unit_precision(j.unit, precision) == "tf32" for j in jobs):
        raise ValueError("precision tf32 applies to CUDA matrix products only, and this Ray "
                         "cluster has no GPU: use --precision float32 (or bf16)")
    shares = _shares(jobs, cache_dir, has_gpus, gpus_per_unit, out)

    def gpus(job: Job) -> float:
        return shares[job.key]

    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    _check_feasible(jobs, gpus, nodes)
    token = write_token(cache_dir)
    outcomes: list[Outcome | None] = [None] * len(jobs)

    def settle(ref_or_err, i: int, job: Job, attempt: int, resubmit) -> bool:
        """Record a finished attempt; True when the job is settled, False when retried."""
        log = log_path(cache_dir, job.key)
        try:
            outcome = Outcome(job, True, attempt, log, ray.get(ref_or_err))
        except Exception as err:  # noqa: BLE001 - RayTaskError, WorkerCrashedError, ...
            if _fatal(err):
                raise CacheNotShared(_one_line(err).split(": ", 1)[-1]) from None
            outcome = Outcome(job, False, attempt, log, error=_one_line(err))
            if attempt <= retries and _retried(err):
                progress.retry(job, attempt, outcome.error)
                resubmit(i, job, attempt + 1)
                return False
        outcomes[i] = outcome
        progress.finished(outcome)
        return True

    try:
        if workers == "tasks":
            remote = ray.remote(max_retries=0)(_ray_task)  # retries are counted here

            def submit(i: int, job: Job, attempt: int):
                ref = remote.options(num_cpus=job.unit.num_cpus, num_gpus=gpus(job),
                                     name=f"plan:{job.unit.label}").remote(
                    job.unit, job.key, cache_dir, attempt, token, precision)
                pending[ref] = (i, job, attempt)

            pending: dict = {}
            for i, job in enumerate(jobs):
                submit(i, job, 1)
            try:
                while pending:
                    [ref], _ = ray.wait(list(pending), num_returns=1)
                    i, job, attempt = pending.pop(ref)
                    settle(ref, i, job, attempt, submit)
            except CacheNotShared:
                for other in pending:
                    ray.cancel(other, force=True)
                raise
            return outcomes
        _run_actors(ray, jobs, gpus, nodes, cache_dir, token, precision, settle, out)
        return outcomes
    finally:
        remove_token(token)


def _run_actors(ray, jobs, gpus, nodes, cache_dir, token, precision, settle, out):
    """Run ``jobs`` on long-lived workers (module docstring): per unit shape (CPUs, GPU share)
    as many actors as the cluster holds (no more than that shape has units), each fed the next
    unit of its shape as it finishes one, in plan order; an actor that died (a crashed worker)
    is replaced before its unit is retried; an actor whose shape has nothing left is ended."""
    from collections import deque

    worker_cls = ray.remote(max_restarts=0, max_task_retries=0)(_Worker)
    shape_of = {job.key: (job.unit.num_cpus, gpus(job)) for job in jobs}
    queues: dict[tuple, deque] = {}
    for i, job in enumerate(jobs):
        queues.setdefault(shape_of[job.key], deque()).append((i, job, 1))
    idle: dict[tuple, list] = {shape: [] for shape in queues}
    pending: dict = {}  # ref -> (actor, shape, i, job, attempt)
    actors: list = []

    warm = {shape: sorted({m for _, job, _ in queue for m in getattr(job.unit, "warm_imports", ())})
            for shape, queue in queues.items()}

    def new_actor(shape):
        cpus, share = shape
        actor = worker_cls.options(num_cpus=cpus, num_gpus=share,
                                   name=f"plan-worker-{uuid.uuid4().hex[:8]}").remote(
            warm[shape])
        actors.append(actor)
        return actor

    for shape, queue in queues.items():
        n = max(1, min(len(queue), slots(*shape, nodes)))
        idle[shape] = [new_actor(shape) for _ in range(n)]
    out(f"[plan] {len(actors)} long-lived worker(s): "
        + ", ".join(f"{len(idle[s])} x ({s[0]} CPU, {s[1]:g} GPU)" for s in queues))

    def resubmit(i, job, attempt):
        queues[shape_of[job.key]].appendleft((i, job, attempt))

    def dispatch() -> None:
        for shape, queue in queues.items():
            while queue and idle[shape]:
                actor = idle[shape].pop(0)
                i, job, attempt = queue.popleft()
                ref = actor.run.options(name=f"plan:{job.unit.label}").remote(
                    job.unit, job.key, cache_dir, attempt, token, precision)
                pending[ref] = (actor, shape, i, job, attempt)
            if not queue and not any(p[1] == shape for p in pending.values()):
                for actor in idle[shape]:  # nothing left of this shape: free its resources
                    ray.kill(actor)
                idle[shape] = []

    try:
        dispatch()
        while pending:
            [ref], _ = ray.wait(list(pending), num_returns=1)
            actor, shape, i, job, attempt = pending.pop(ref)
            try:
                ray.get(ref)
                alive = True
            except ray.exceptions.RayActorError:
                alive = False  # the worker died: a fresh one takes its place
            except Exception:  # noqa: BLE001 - the unit's own error; the worker lives on
                alive = True
            settle(ref, i, job, attempt, resubmit)
            if alive:
                idle[shape].append(actor)
            elif queues[shape]:
                idle[shape].append(new_actor(shape))
            dispatch()
    finally:
        for actor in actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)


def run_units(jobs: Sequence[Job], cache_dir: str | os.PathLike, *, backend: str = "inprocess",
              address: str | None = None, retries: int = 1, gpus_per_unit: float | None = None,
              out: Callable[[str], None] = print, ray_init: dict | None = None,
              precision: str | None = None, workers: str = "actors") -> list[Outcome]:
    """Run ``jobs`` (module docstring) into ``cache_dir``; returns one :class:`Outcome` per
    job, in the jobs' order, and prints a line per finished unit through ``out``.

    backend: ``"inprocess"`` or ``"ray"`` (``address``: a cluster to join; None:
    ``$RAY_ADDRESS``, else a local instance; an already connected session is used as it is;
    ``ray_init``: more ``ray.init`` arguments). retries: further attempts of a failed unit.
    gpus_per_unit: the GPUs each unit asks for on a cluster with GPUs (None: measured on
    earlier runs of units of its kind and model, else the unit's own ``gpu_share``).
    precision: float32 / tf32 / bf16 for every unit (:mod:`.precision`); None: each unit's own
    (:func:`unit_precision`). workers: on Ray, ``"actors"`` (long-lived workers) or
    ``"tasks"`` (a fresh task per unit). Raises :class:`CacheNotShared` when a worker cannot
    see ``cache_dir``.
    """
    from . import precision as prec

    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if workers not in WORKERS:
        raise ValueError(f"workers {workers!r}: choose one of {', '.join(WORKERS)}")
    if retries < 0:
        raise ValueError(f"retries must be 0 or more, got {retries}")
    if precision is not None:
        prec.validate(precision)
    cache_dir = str(Path(cache_dir).expanduser().resolve())
    progress = _Progress(len(jobs), out, cache_dir)
    if not jobs:
        return []
    if backend == "inprocess":
        return _run_inprocess(jobs, cache_dir, retries, progress, precision)
    t0 = time.perf_counter()
    with ray_session(address, **(ray_init or {})) as ray:
        res = ray.cluster_resources()
        out(f"[plan] Ray: {len([n for n in ray.nodes() if n.get('Alive')])} node(s), "
            f"{res.get('CPU', 0):g} CPUs, {res.get('GPU', 0):g} GPUs "
            f"(connected in {time.perf_counter() - t0:.1f} s)")
        return _run_ray(jobs, cache_dir, retries, progress, gpus_per_unit, precision, workers,
                        out)
