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
           "write_token", "check_shared", "remove_token", "ray_session", "BACKENDS"]

BACKENDS = ("inprocess", "ray")
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


def execute_unit(unit, key: str, cache_dir: str, device: str, attempt: int = 1,
                 token: dict | None = None, where: dict | None = None) -> dict:
    """Run ``unit.execute(key, cache_dir, device)`` with its output in its log and torch on
    ``unit.num_cpus`` threads; returns its summary plus ``host``, ``pid``, ``seconds``,
    ``torch_threads``, ``niceness`` and ``where`` (Ray's resources). ``token``: check the shared cache
    first (:func:`check_shared`). Exceptions propagate, their traceback written to the log."""
    if token is not None:
        check_shared(token)
    log = log_path(cache_dir, key)
    t0 = time.perf_counter()
    with _output_to(log), _torch_threads(unit.num_cpus):
        import torch

        threads = torch.get_num_threads()
        print(f"=== {unit.label} ({key}) attempt {attempt} on {socket.gethostname()} "
              f"pid {os.getpid()}, device {device or 'auto'}, {threads} torch threads, "
              f"{json.dumps(where or {}, sort_keys=True)}, {time.strftime('%Y-%m-%d %H:%M:%S')}",
              flush=True)
        try:
            summary = dict(unit.execute(key, cache_dir, device))
        except BaseException:
            traceback.print_exc()
            raise
        seconds = time.perf_counter() - t0
        print(f"=== done in {seconds:.1f} s: {json.dumps(summary, default=str)}", flush=True)
    return {**summary, "host": socket.gethostname(), "pid": os.getpid(), "seconds": seconds,
            "torch_threads": threads, "niceness": os.nice(0), **(where or {})}


def _ray_task(unit, key: str, cache_dir: str, attempt: int, token: dict) -> dict:
    """The Ray task around :func:`execute_unit`: the unit's device from the GPUs Ray gave it."""
    import ray
    import torch

    ctx = ray.get_runtime_context()
    gpu_ids = [str(g) for g in ray.get_gpu_ids()]
    device = unit.device or ("cuda" if gpu_ids and torch.cuda.is_available() else "cpu")
    where = {"resources": ctx.get_assigned_resources(), "gpu_ids": gpu_ids,
             "node_id": ctx.get_node_id()}
    return execute_unit(unit, key, cache_dir, device, attempt, token, where)


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
            self.out(f"[plan] {self.done}/{self.total} {o.job.unit.label}: {what} in "
                     f"{s.get('seconds', 0):.1f} s on {s.get('device', '?')}{gpu} "
                     f"({s.get('host', '?')}{tries})")
        else:
            self.out(f"[plan] {self.done}/{self.total} {o.job.unit.label}: FAILED after "
                     f"{o.attempts} attempt(s): {o.error}; log: {o.log}")

    def retry(self, job: Job, attempt: int, error: str) -> None:
        self.out(f"[plan] {job.unit.label}: attempt {attempt} failed ({error}); trying again "
                 f"(log: {log_path(self.cache_dir, job.key)})")


def _run_inprocess(jobs: Sequence[Job], cache_dir: str, retries: int,
                   progress: _Progress) -> list[Outcome]:
    outcomes = []
    for job in jobs:
        for attempt in range(1, retries + 2):
            try:
                summary = execute_unit(job.unit, job.key, cache_dir,
                                       getattr(job.unit, "device", ""), attempt)
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


def _run_ray(jobs: Sequence[Job], cache_dir: str, retries: int, progress: _Progress,
             gpus_per_unit: float | None) -> list[Outcome]:
    import ray

    has_gpus = ray.cluster_resources().get("GPU", 0) > 0

    def gpus(job: Job) -> float:
        share = gpus_per_unit if gpus_per_unit is not None else job.unit.gpu_share
        return share if has_gpus else 0

    _check_feasible(jobs, gpus, [n["Resources"] for n in ray.nodes() if n.get("Alive")])
    remote = ray.remote(max_retries=0)(_ray_task)  # retries are counted here, same as in-process
    token = write_token(cache_dir)
    try:
        def submit(job: Job, attempt: int):
            return remote.options(num_cpus=job.unit.num_cpus, num_gpus=gpus(job),
                                  name=f"plan:{job.unit.label}").remote(
                job.unit, job.key, cache_dir, attempt, token)

        pending = {submit(job, 1): (i, job, 1) for i, job in enumerate(jobs)}
        outcomes: list[Outcome | None] = [None] * len(jobs)
        while pending:
            [ref], _ = ray.wait(list(pending), num_returns=1)
            i, job, attempt = pending.pop(ref)
            log = log_path(cache_dir, job.key)
            try:
                outcome = Outcome(job, True, attempt, log, ray.get(ref))
            except Exception as err:  # noqa: BLE001 - RayTaskError, WorkerCrashedError, ...
                if _fatal(err):
                    for other in pending:
                        ray.cancel(other, force=True)
                    raise CacheNotShared(_one_line(err).split(": ", 1)[-1]) from None
                outcome = Outcome(job, False, attempt, log, error=_one_line(err))
                if attempt <= retries and _retried(err):
                    progress.retry(job, attempt, outcome.error)
                    pending[submit(job, attempt + 1)] = (i, job, attempt + 1)
                    continue
            outcomes[i] = outcome
            progress.finished(outcome)
        return outcomes
    finally:
        remove_token(token)


def run_units(jobs: Sequence[Job], cache_dir: str | os.PathLike, *, backend: str = "inprocess",
              address: str | None = None, retries: int = 1, gpus_per_unit: float | None = None,
              out: Callable[[str], None] = print, ray_init: dict | None = None) -> list[Outcome]:
    """Run ``jobs`` (module docstring) into ``cache_dir``; returns one :class:`Outcome` per
    job, in the jobs' order, and prints a line per finished unit through ``out``.

    backend: ``"inprocess"`` or ``"ray"`` (``address``: a cluster to join; None:
    ``$RAY_ADDRESS``, else a local instance; an already connected session is used as it is;
    ``ray_init``: more ``ray.init`` arguments). retries: further attempts of a failed unit.
    gpus_per_unit: the GPUs each unit asks for on a cluster with GPUs (None: the unit's own
    ``gpu_share``). Raises :class:`CacheNotShared` when a worker cannot see ``cache_dir``.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: choose one of {', '.join(BACKENDS)}")
    if retries < 0:
        raise ValueError(f"retries must be 0 or more, got {retries}")
    cache_dir = str(Path(cache_dir).expanduser().resolve())
    progress = _Progress(len(jobs), out, cache_dir)
    if not jobs:
        return []
    if backend == "inprocess":
        return _run_inprocess(jobs, cache_dir, retries, progress)
    t0 = time.perf_counter()
    with ray_session(address, **(ray_init or {})) as ray:
        res = ray.cluster_resources()
        out(f"[plan] Ray: {len([n for n in ray.nodes() if n.get('Alive')])} node(s), "
            f"{res.get('CPU', 0):g} CPUs, {res.get('GPU', 0):g} GPUs "
            f"(connected in {time.perf_counter() - t0:.1f} s)")
        return _run_ray(jobs, cache_dir, retries, progress, gpus_per_unit)
