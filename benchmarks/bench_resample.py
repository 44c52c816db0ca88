"""Benchmark of the ledger's resampling tests (:mod:`analysis_utils.ledger.resample`) at the
sizes of the committed default run, on synthetic 0/1 scores of those shapes (the time does
not depend on the values).

Each case is timed once with ``--resamples`` resamples (default 10,000), wall and CPU time:

- 01: one head's mean share over 1,000 text segments from 122 articles (cluster bootstrap),
  and the best of 72 heads against a 50% threshold (max-over-heads);
- 02: the best of 144 head-directions against the offset baseline on the same words,
  sentences resampled: the brief's 25,000 words in 2,000 sentences, and the run's 50,241
  words in 4,078 sentences (notebook 02's "All");
- 03: one head vs. a baseline on 3,923 mentions in 60 documents (paired), and the best of
  72 heads (max-over-heads);
- 06/07: three fine-tuning seeds, seeds and dev examples resampled together: accuracy on
  QNLI's 5,463 examples, F1 on MRPC's 408, a paired Pearson difference on STS-B's 1,500;
  the best of 72 disabled heads in one fine-tuned model (F1 on MRPC, Pearson on STS-B),
  common resamples of the dev examples, max-T.

Usage: ``python benchmarks/bench_resample.py [--resamples 10000] [--threads 1]``. Shared
machines are rarely idle: CPU time is printed beside wall time.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _units(n_items: int, n_units: int, rng) -> np.ndarray:
    """Unit ids of ``n_items`` items spread over ``n_units`` units of uneven size."""
    sizes = rng.multinomial(n_items - n_units, rng.dirichlet(np.ones(n_units) * 2)) + 1
    return np.repeat(np.arange(n_units), sizes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=0,
                    help="BLAS threads (0: leave as set); set before numpy is imported")
    args = ap.parse_args()
    if args.threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    from analysis_utils.ledger import resample as rs

    B = args.resamples
    rng = np.random.default_rng(0)
    cases = []

    u01 = _units(1000, 122, rng)
    share = rng.beta(2, 5, size=(1000, 72))
    cases.append(("01 one head's mean share, 1,000 segments / 122 articles",
                  lambda: rs.cluster_bootstrap(share[:, 0], u01, null=0.5,
                                               alternative="greater", n_resamples=B)))
    cases.append(("01 max over 72 heads vs. 0.5, 1,000 segments / 122 articles",
                  lambda: rs.max_over_heads(share, None, u01, null=0.5, alternative="greater",
                                            n_resamples=B)))
    for words, sents in ((25_000, 2_000), (50_241, 4_078)):
        u = _units(words, sents, rng)
        base = (rng.random(words) < 0.29).astype(float)
        heads = (rng.random((words, 144)) < 0.3).astype(np.float32)
        cases.append((f"02 max over 144 head-directions, {words:,} words / {sents:,} sentences",
                      lambda h=heads, b=base, u=u: rs.max_over_heads(h, b, u, n_resamples=B)))
    u03 = _units(3923, 60, rng)
    base03 = (rng.random(3923) < 0.39).astype(float)
    heads03 = (rng.random((3923, 72)) < 0.45).astype(float)
    cases.append(("03 paired head vs. baseline, 3,923 mentions / 60 documents",
                  lambda: rs.paired_cluster_bootstrap(heads03[:, 0], base03, u03,
                                                      n_resamples=B)))
    cases.append(("03 max over 72 heads, 3,923 mentions / 60 documents",
                  lambda: rs.max_over_heads(heads03, base03, u03, n_resamples=B)))
    y = rng.integers(0, 2, 5463)
    preds = np.where(rng.random((3, 5463)) < 0.9, y, 1 - y)
    cases.append(("06 accuracy, 3 seeds x 5,463 QNLI examples (hierarchical)",
                  lambda: rs.hierarchical_bootstrap(y, preds, "accuracy", n_resamples=B)))
    ym = rng.integers(0, 2, 408)
    pm = np.where(rng.random((3, 408)) < 0.8, ym, 1 - ym)
    cases.append(("07 F1, 3 seeds x 408 MRPC examples (hierarchical)",
                  lambda: rs.hierarchical_bootstrap(ym, pm, "f1", n_resamples=B)))
    ys = rng.random(1500) * 5
    ps = ys + rng.normal(0, 1, (3, 1500))
    ps_off = ps + rng.normal(0, 0.2, (3, 1500))
    cases.append(("07 Pearson difference, 3 paired seeds x 1,500 STS-B pairs",
                  lambda: rs.hierarchical_bootstrap(ys, ps_off, "pearson", preds_b=ps,
                                                    n_resamples=B)))

    pm72 = np.where(rng.random((73, 408)) < 0.8, ym, 1 - ym)  # row 0: the intact model

    def best_head_f1():
        est, draws = rs.metric_draws(ym, pm72, "f1", n_resamples=B)
        return rs.max_t(est[1:] - est[0], draws[:, 1:] - draws[:, :1])

    cases.append(("07 best of 72 disabled heads by F1, 408 MRPC examples (max-T)", best_head_f1))
    ps72 = ys + rng.normal(0, 1, (73, 1500))

    def best_head_pearson():
        est, draws = rs.metric_draws(ys, ps72, "pearson", n_resamples=B)
        return rs.max_t(est[1:] - est[0], draws[:, 1:] - draws[:, :1])

    cases.append(("07 best of 72 disabled heads by Pearson, 1,500 STS-B pairs (max-T)",
                  best_head_pearson))

    print(f"{B:,} resamples per case")
    print(f"{'case':<72} {'wall s':>7} {'cpu s':>7}")
    for name, fn in cases:
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        print(f"{name:<72} {time.perf_counter() - w0:7.2f} {time.process_time() - c0:7.2f}")


if __name__ == "__main__":
    main()
