"""Notebook 01's ledger rules (Clark et al. Section 3) on the unit that was sampled: each rule
on a hand-made run folder (per-segment statistics of a 6 x 2 model from a few Wikipedia
articles), checked against the hand-computed statistic and the Check it hands to the ledger
core (issue 33); resampling articles instead of segments widens the interval when the
segments of an article agree; every 01 row names its claims-registry entries."""

from __future__ import annotations

import json
import math
import shutil
import tomllib

import numpy as np
import pandas as pd
import pytest

from analysis_utils import paths
from analysis_utils.analyses import gradients, surface
from analysis_utils.ledger import clark, core, resample, spec_clark

L, H, N, A = 6, 2, 30, 6  # layers, heads, segments, articles
STATS = surface.SEGMENT_STATISTICS


def _arrays(rng, article: np.ndarray, shift: dict | None = None) -> dict[str, np.ndarray]:
    """Per-segment statistics: shares around a per-(layer, head) level plus an article effect
    and noise; ``shift`` adds to a statistic's level (name -> (L, H) array or number)."""
    n = len(article)
    art_effect = rng.normal(0, 0.03, size=(A, 1, 1))[article]
    out = {"segment": np.arange(n, dtype=np.int32), "article": article.astype(np.int32),
           "article_names": np.array([f"Article {i}" for i in range(A)])}
    for name in STATS:
        level = rng.uniform(0.05, 0.3, size=(L, H))
        if name.startswith("entropy"):
            level = rng.uniform(2.0, 4.0, size=(L, H))
        level = level + (shift or {}).get(name, 0.0)
        v = level + art_effect + rng.normal(0, 0.02, size=(n, L, H))
        out[name] = v.astype(np.float32)
        out[f"count_{name}"] = np.full(n, 100, dtype=np.int32)
        out[f"uniform_{name}"] = np.full(n, 0.01, dtype=np.float32)
    toks = ["the", ".", ",", "of", "and"]
    means = np.array([9.0, 7.0, 6.0, 4.0, 3.0])
    out["piece_tokens"] = np.array(toks)
    out["piece_ids"] = np.arange(len(toks), dtype=np.int32)
    out["piece_counts"] = rng.poisson(means, size=(n, len(toks))).astype(np.int32)
    return out


def _folder(tmp_path, name="run", article=None, shift=None, seed=0, grad_source=None,
            grad_articles=True):
    f = tmp_path / name
    f.mkdir()
    ident = {"name": "tiny", "num_layers": L, "num_heads": H}
    (f / "01_provenance.json").write_text(json.dumps(
        {"parameters": {"n_segments": N, "max_tokens": 128}, "models": {"model": ident}}))
    rng = np.random.default_rng(seed)
    article = np.repeat(np.arange(A), N // A) if article is None else np.asarray(article)
    for which in ("model", "control"):
        arr = _arrays(rng, article, shift if which == "model" else None)
        np.savez_compressed(f / f"01_by_segment_{which}.npz", **arr)
        per_head = {"layer": np.repeat(np.arange(1, L + 1), H),
                    "head": np.tile(np.arange(1, H + 1), L)}
        for s in STATS:
            per_head[s] = arr[s].astype(np.float64).mean(0).ravel()
        pd.DataFrame(per_head).to_csv(f / f"01_per_head_{which}.csv", index=False)
    rows = [{"claim": "words split into several pieces", "model": 5.9,
             "layers of this model": "", "from": "tokenizer"}]
    if grad_source is not None:
        g = []
        for seg in range(N):
            for layer in (3, 4, 5, 6):
                for target, level in (("[SEP]", 0.3), ("other", 1.0), ("./,", 1.0)):
                    g.append({"segment": seg, "layer": layer, "target": target,
                              "sum_abs_grad": 10 * level * rng.uniform(0.5, 1.5),
                              "n_weights": 10, "article": f"Article {article[seg]}"})
        g = pd.DataFrame(g)
        if not grad_articles:
            g = g.drop(columns="article")
        g.to_csv(f / "01_gradient_by_segment.csv", index=False)
        rows.append({"claim": "|grad| of the MLM loss w.r.t. attention to [SEP], vs. other "
                              "tokens", "model": 0.3, "layers of this model": "3-6",
                     "from": grad_source})
    pd.DataFrame(rows).to_csv(f / "01_paper_vs_run.csv", index=False)
    return f


def _load(folder, which="model"):
    with np.load(folder / f"01_by_segment_{which}.npz") as z:
        return {k: z[k] for k in z.files}


def _claim(registry_id):
    return next(c for c in spec_clark.claims() if registry_id in c.registry)


def _run(folder, registry_id, which="model"):
    return _claim(registry_id).rule(core.Tables(folder), which)


def _means(z, name):
    """(L, H) pooled means of the saved float32 values, as the rules read them."""
    return z[name].astype(np.float64).mean(0)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    # one strong previous-token head (1-2), a strong [SEP] band, broad layer-1 heads
    prev = np.zeros((L, H))
    prev[0, 1] = 0.6
    sep = np.zeros((L, H))
    sep[2:5] = 0.45
    return _folder(tmp_path_factory.mktemp("c01"), shift={"previous": prev, "sep": sep},
                   grad_source=gradients.OWN_HEAD)


def _check(o, *, null, direction=1, kind="effect", paper_effect=None, margin=None):
    assert not o.untestable, o.untestable
    c = o.check
    assert (c.null, c.direction, c.kind, c.paper_effect, c.margin) == pytest.approx(
        (null, direction, kind, paper_effect, margin))
    assert o.unit.startswith(f"{A} articles ({N} segments)")
    return c.result


@pytest.mark.parametrize("rid,column,null", [
    ("clark-3.1-previous-token-heads", "previous", 0.5),
    ("clark-3.1-next-token-heads", "next", 0.5),
    ("clark-3.2-sep-to-sep-90", "sep_to_sep", 0.9)])
def test_best_head_rules_test_the_largest_head_against_the_threshold(folder, rid, column, null):
    o = _run(folder, rid)
    r = _check(o, null=null)
    assert isinstance(r, resample.MaxOverHeads)
    m = _means(_load(folder), column).ravel()
    assert r.estimate == pytest.approx(m.max()) and r.best == int(np.argmax(m))
    # the interval is on the share's scale (the threshold is the null, not a margin over it)
    lo, hi = r.interval_at(0.05)
    assert lo < r.estimate < hi and r.margins == pytest.approx(m)
    if column == "previous":  # head 1-2 (0.6 + noise) clears 50% over 6 articles
        assert o.heads == "1-2" and lo > 0.5 and r.p_value < 0.01
        assert o.value.startswith("best head 1-2")
    if column == "sep_to_sep":  # nothing near 90%: the best head's upper bound is below it
        assert hi < 0.9


def test_broad_layer1_chooses_the_smallest_layer1_head(folder):
    r = _check(_run(folder, "clark-3.3-broad-10-percent"), null=0.10, direction=-1)
    m = _means(_load(folder), "max_weight")[0]
    assert r.estimate == pytest.approx(m.min()) and len(r.margins) == H


def test_sep_band_pools_the_layers_at_bertbase_depths_6_to_10(folder):
    o = _run(folder, "clark-3.2-sep-layers-6-10")
    r = _check(o, null=0.5)
    # BERT-base layers 6-10 of 12 are layers 3-5 of 6
    assert r.estimate == pytest.approx(_means(_load(folder), "sep")[2:5].mean())
    assert "layers 3-5 of 6" in o.value
    assert np.isfinite(r.design_effect)


def test_layer_order_is_the_smallest_of_three_gaps_by_thirds(folder):
    r = _check(_run(folder, "clark-3.2-fig2-layer-order"), null=0.0,
               margin=clark.SHARE_MARGIN)
    z = _load(folder)
    thirds = {"early": [0, 1], "middle": [2, 3], "deep": [4, 5]}
    gaps = []
    for tok, third in (("cls", "early"), ("sep", "middle"), ("punct", "deep")):
        by_layer = _means(z, tok).mean(1)
        by = {k: by_layer[v].mean() for k, v in thirds.items()}
        gaps.append(by[third] - max(v for k, v in by.items() if k != third))
    assert r.estimate == pytest.approx(min(gaps))


def test_current_token_little_is_the_median_heads_share(folder):
    r = _check(_run(folder, "clark-3.1-current-token"), null=0.10, direction=-1)
    m = np.sort(_means(_load(folder), "current").ravel())
    assert r.estimate == pytest.approx(m[len(m) // 2])  # the 7th smallest of 12


def test_positional_early_compares_the_halves(folder):
    r = _check(_run(folder, "clark-3.1-positional-early"), null=0.0,
               margin=clark.SHARE_MARGIN)
    z = _load(folder)
    pos = np.maximum(_means(z, "previous"), _means(z, "next"))
    assert r.estimate == pytest.approx(pos[:3].mean() - pos[3:].mean())


def test_few_tokens_is_the_excess_over_uniform(folder):
    r = _check(_run(folder, "clark-3.2-few-tokens"), null=clark.SUBSTANTIAL)
    z = _load(folder)
    got = sum(_means(z, t).mean() for t in ("cls", "sep", "punct"))
    assert r.estimate == pytest.approx(got - 3 * 0.01, abs=1e-6)


def test_half_to_special_is_the_top_quarter_heads_share(folder):
    r = _check(_run(folder, "clark-3.2-fig2-half-to-special"), null=0.5)
    z = _load(folder)
    special = np.sort(sum(_means(z, t) for t in ("cls", "sep", "punct")).ravel())
    assert r.estimate == pytest.approx(special[12 - math.ceil(12 / 4)])  # 3rd largest


def test_sep_from_sep_is_the_median_heads_paired_difference(folder):
    r = _check(_run(folder, "clark-3.2-fig2-sep-from-sep"), null=0.0,
               margin=clark.SHARE_MARGIN)
    z = _load(folder)
    d = np.sort((_means(z, "sep_to_sep") - _means(z, "rest_to_sep")).ravel())
    assert r.estimate == pytest.approx(d[12 - 7])  # the 7th largest: more than half above it


def test_broad_lower_layers_compares_the_halves_entropy(folder):
    from analysis_utils.ledger import readings

    # the main reading: where the broadest tenth of heads sit, earlier half minus later half
    r = _check(_run(folder, "clark-3.3-broad-lower-layers"), null=0.0)
    e = _means(_load(folder), "entropy")
    q = max(1, round(e.size / 10))
    top = np.argsort(-e.ravel(), kind="stable")[:q] // e.shape[1]  # their layers, 0-based
    assert r.estimate == pytest.approx(((top < 3).sum() - (top >= 3).sum()) / q)
    # the other reading: the mean entropy of all heads, halves compared
    with readings.reading("broad heads", "the mean entropy of all heads"):
        r = _check(_run(folder, "clark-3.3-broad-lower-layers"), null=0.0,
                   margin=clark.ENTROPY_DIFF_MARGIN)
    assert r.estimate == pytest.approx(e[:3].mean() - e[3:].mean())


def test_cls_entropy_close_is_a_no_effect_claim_on_the_median_layer(folder):
    r = _check(_run(folder, "clark-3.3-cls-entropy-close"), null=0.0, kind="no effect",
               margin=clark.ENTROPY_MARGIN)
    z = _load(folder)
    gap = np.sort(np.abs(_means(z, "entropy_cls").mean(1) - _means(z, "entropy").mean(1)))
    assert r.estimate == pytest.approx(gap[3])  # the 4th smallest of 6 layers


def test_cls_entropy_last_is_a_no_effect_claim_at_the_papers_value(folder):
    o = _run(folder, "clark-3.3-cls-entropy-last")
    r = _check(o, null=3.89, kind="no effect", margin=0.5)
    assert r.estimate == pytest.approx(_means(_load(folder), "entropy_cls")[-1].mean())
    assert "nats (layer 6)" in o.value


def test_punct_most_common_counts_the_text_not_attention(folder):
    claim = _claim("clark-3.2-punct-most-common")
    assert claim.control is False
    r = _check(claim.rule(core.Tables(folder), "model"), null=0.0)
    c = _load(folder)["piece_counts"].mean(0)  # the, ., ,, of, and
    assert r.estimate == pytest.approx(min(c[1], c[2]) - max(c[3], c[4]))


def test_gradient_ratio_resamples_articles(folder, tmp_path):
    o = _run(folder, "clark-3.2-gradient-sep")
    r = _check(o, null=0.5, direction=-1)
    g = pd.read_csv(folder / "01_gradient_by_segment.csv")
    g = g[g["target"].isin(["[SEP]", "other"])].groupby(["layer", "target"])[
        ["sum_abs_grad", "n_weights"]].sum()
    mean = (g["sum_abs_grad"] / g["n_weights"]).unstack()
    assert r.estimate == pytest.approx((mean["[SEP]"] / mean["other"]).mean())
    assert r.n_clusters == A and r.hi < 0.5
    # an older table without the articles, and a fitted head, are untestable and say why
    old = _run(_folder(tmp_path, "old", grad_source=gradients.OWN_HEAD, grad_articles=False),
               "clark-3.2-gradient-sep")
    assert "re-run notebook 01" in old.untestable
    fitted = _run(_folder(tmp_path, "fit", grad_source=gradients.FITTED_HEAD),
                  "clark-3.2-gradient-sep")
    assert "fitted here" in fitted.untestable


def test_split_words_stays_untestable(folder):
    assert "tokenizer" in _run(folder, "clark-4.1-split-words").untestable


def test_the_control_runs_the_same_rule(folder):
    o = _run(folder, "clark-3.1-previous-token-heads", "control")
    m = _means(_load(folder, "control"), "previous").ravel()
    assert o.check.result.estimate == pytest.approx(m.max())


def test_a_run_without_per_segment_statistics_is_untestable_not_a_crash(tmp_path):
    f = _folder(tmp_path)
    (f / "01_by_segment_model.npz").unlink()
    claim = _claim("clark-3.2-sep-layers-6-10")
    row = core.evaluate([claim], core.Tables(f)).iloc[0]
    assert row["verdict"] == "untestable" and "01_by_segment_model.npz" in row["note"]


def test_articles_widen_the_interval_when_their_segments_agree(tmp_path):
    # the same segments, once tagged with their 6 articles and once each its own article:
    # segments of one article share an article effect, so resampling articles gives the
    # wider interval (and a design effect above 1), resampling segments a too-narrow one
    shift = {"sep": np.full((L, H), 0.3)}
    art = _folder(tmp_path, "art", shift=shift, seed=3)
    seg = tmp_path / "seg"
    shutil.copytree(art, seg)
    z = _load(art)
    z["article"] = np.arange(N, dtype=np.int32)
    z["article_names"] = np.array([f"segment {i}" for i in range(N)])
    np.savez_compressed(seg / "01_by_segment_model.npz", **z)
    by_article = _run(art, "clark-3.2-sep-layers-6-10")
    alone = _run(seg, "clark-3.2-sep-layers-6-10")
    r_art, r_seg = by_article.check.result, alone.check.result
    assert r_art.estimate == pytest.approx(r_seg.estimate)
    w_art = np.subtract(*r_art.interval_at(0.05)[::-1])
    w_seg = np.subtract(*r_seg.interval_at(0.05)[::-1])
    assert w_art > 1.5 * w_seg
    assert r_art.design_effect > 2 and r_art.n_clusters == A and r_seg.n_clusters == N
    assert alone.unit.startswith(f"{N} articles")


def test_every_01_row_names_its_registry_entries():
    reg = {e["id"]: e for e in tomllib.loads(
        (paths.REPO_ROOT / "analysis_utils/claims/registry.toml").read_text())["claim"]}
    rows = [c for c in spec_clark.claims() if c.notebook == "01"]
    named = [r for c in rows for r in c.registry]
    assert all(c.registry for c in rows) and set(named) <= set(reg)
    wanted = {"clark-3.1-current-token", "clark-3.1-positional-early", "clark-3.2-few-tokens",
              "clark-3.2-fig2-half-to-special", "clark-3.2-fig2-sep-from-sep",
              "clark-3.3-broad-lower-layers", "clark-3.3-cls-entropy-close",
              "clark-3.2-punct-most-common"}
    assert wanted <= set(named)
    # every registry entry that lists notebook 01 has a row
    assert {i for i, e in reg.items() if "01" in e.get("notebooks", [])} <= set(named)


def _run_folders():
    here = [paths.REPO_ROOT / "results", paths.REPO_ROOT / "results" / "base",
            paths.REPO_ROOT / ".cache" / "smoke_outputs" / "results"]
    return [f for f in here if (f / "01_by_segment_model.npz").is_file()]


@pytest.mark.parametrize("folder", _run_folders() or [None])
def test_the_saved_segments_pool_to_the_per_head_table(folder):
    """A run's per-segment arrays, pooled as the per-head table pools them, give the table."""
    if folder is None:
        pytest.skip("no run folder holds 01_by_segment_model.npz yet")
    for which in ("model", "control"):
        z = _load(folder, which)
        table = pd.read_csv(folder / f"01_per_head_{which}.csv")
        for name in STATS:
            pooled = surface.pool(z[name].astype(np.float64), z[f"count_{name}"])
            np.testing.assert_allclose(pooled.ravel(), table[name], atol=2e-6, err_msg=name)
        assert len(z["article"]) == len(z["segment"]) and z["article"].max() < len(
            z["article_names"])


def test_an_older_file_without_a_statistic_is_untestable_not_a_crash(tmp_path):
    f = _folder(tmp_path)
    z = _load(f)
    del z["sep_to_sep"]
    np.savez_compressed(f / "01_by_segment_model.npz", **z)
    row = core.evaluate([_claim("clark-3.2-sep-to-sep-90")], core.Tables(f)).iloc[0]
    assert row["verdict"] == "untestable" and "'sep_to_sep'" in row["note"]


def test_the_readings_of_substantial_and_often_move_their_rules(folder):
    """'substantial' as 5 points is a null of 5 points on the same excess; 'often' as half of
    the heads reads the 6th largest of 12 heads, not the 3rd."""
    from analysis_utils.ledger import readings

    assert _claim("clark-3.2-few-tokens").reading == "substantial"
    with readings.reading("substantial", "more than 5 points above uniform attention"):
        r = _check(_run(folder, "clark-3.2-few-tokens"), null=0.05)
    z = _load(folder)
    got = sum(_means(z, t).mean() for t in ("cls", "sep", "punct"))
    assert r.estimate == pytest.approx(got - 3 * 0.01, abs=1e-6)
    assert _claim("clark-3.2-fig2-half-to-special").reading == "often"
    with readings.reading("often", "half of the heads"):
        r = _check(_run(folder, "clark-3.2-fig2-half-to-special"), null=0.5)
    special = np.sort(sum(_means(z, t) for t in ("cls", "sep", "punct")).ravel())
    assert r.estimate == pytest.approx(special[12 - 6])  # the 6th largest
