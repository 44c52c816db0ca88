"""Give freed memory back to the operating system after a large transient computation.

A notebook's peak resident memory is what Binder (about 2 GB) sees. glibc's allocator keeps the
heap pages of freed tensors (a backward pass's activations, a batch of attention maps) in the
process, so one gradient pass left notebook 01's kernel 620 MB larger than before it, and the
attention norms computed next peaked on top of that (2,371 MB). :func:`release` collects
garbage and asks glibc to return free pages (``malloc_trim``): measured on notebook 01's
cells, the kernel stays at 883 MB after the gradient pass instead of 1,688 MB. It changes no
number, only what stays resident; on a platform without glibc it only collects garbage.
(Measured with ``benchmarks/bench_cell_memory.py notebooks/01_surface_patterns.py``, with and
without ``--trim``.)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys

_LIBC = None


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = False
        if sys.platform.startswith("linux"):
            try:
                lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                _LIBC = lib if hasattr(lib, "malloc_trim") else False
            except OSError:
                _LIBC = False
    return _LIBC


def release() -> bool:
    """Collect garbage and return the allocator's free pages to the operating system. True
    when glibc's ``malloc_trim`` ran (Linux), False where only garbage was collected."""
    gc.collect()
    lib = _libc()
    if not lib:
        return False
    lib.malloc_trim(0)
    return True


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (a notebook's kernel), in MB
    (``ru_maxrss``: Linux reports kilobytes, macOS bytes); NaN where the platform does not
    report it (Windows). The provenance records it, and notebooks print it."""
    try:
        import resource
    except ImportError:  # Windows
        return float("nan")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def rss_mb() -> float:
    """This process's resident memory now, in MB (``VmRSS`` of ``/proc/self/status``; NaN
    where there is no such file): what :func:`release` lowers, beside the peak the
    provenance records."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")
