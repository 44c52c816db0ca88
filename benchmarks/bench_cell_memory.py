"""Resident memory of one notebook, cell by cell: where its peak comes from.

Runs a ``notebooks/NN_topic.py`` source in this process, one code cell at a time (shell and
magic lines skipped, outputs under a temporary ``$BERTOLOGY_OUTPUT_DIR`` so nothing committed
is touched), and prints after each cell its seconds, the current RSS (split into anonymous
memory and file pages, the memory-mapped attention stores) and the peak RSS so far.
``--trim`` also calls :func:`analysis_utils.engine.memory.release` (garbage collection and
glibc's ``malloc_trim``) after every cell: the difference shows what glibc keeps of freed
memory. This is how the figures in ``analysis_utils/engine/memory.py`` and in
``analyses.norms.norm_statistics``'s docstring were measured (notebook 01, default
parameters, a warm attention cache).

Usage: ``python benchmarks/bench_cell_memory.py notebooks/01_surface_patterns.py [--trim]``
(with ``BERTOLOGY_DATA_DIR`` set). The notebook runs with the defaults of its parameters cell.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time


def _rss_parts() -> dict[str, float]:
    """``RssAnon`` / ``RssFile`` / ``RssShmem`` of ``/proc/self/status`` in MB ({} elsewhere).
    The peak (``ru_maxrss``) counts file pages too: the attention stores are memory-mapped,
    and the pages a notebook has read stay resident until the kernel needs them back. A
    memory limit (Binder's 2 GB) reclaims those clean file pages before it kills anything, so
    the anonymous part is what a notebook needs; the file part is what it has read."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("RssAnon", "RssFile", "RssShmem")):
                    name, value = line.split(":", 1)
                    out[name] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", help="a notebooks/NN_topic.py source")
    ap.add_argument("--trim", action="store_true",
                    help="engine.memory.release() (gc + malloc_trim) after every cell")
    args = ap.parse_args(argv)

    import jupytext
    import matplotlib

    from analysis_utils.engine import memory

    matplotlib.use("Agg")
    os.environ["BERTOLOGY_OUTPUT_DIR"] = tempfile.mkdtemp(prefix="cell_memory_")
    nb = jupytext.read(args.source)
    ns: dict = {"__name__": "__main__"}
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        src = "\n".join(line for line in cell.source.splitlines()
                        if not line.lstrip().startswith(("%", "!")))
        t0 = time.perf_counter()
        exec(compile(src, f"cell {k}", "exec"), ns)  # noqa: S102 - the notebook's own code
        if args.trim:
            memory.release()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        first = (cell.source.splitlines() or [""])[0][:60]
        parts = _rss_parts()
        print(f"cell {k:3d} {time.perf_counter() - t0:7.1f} s  rss {memory.rss_mb():7.0f} MB  "
              f"(anon {parts.get('RssAnon', float('nan')):6.0f}, file "
              f"{parts.get('RssFile', float('nan')):6.0f})  peak {peak:7.0f} MB | {first}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
