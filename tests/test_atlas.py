"""The head atlas: table -> JSON assembly on a tiny hand-made results folder, and the pages in
a real browser (Playwright driving Debian's ``chromium``; ``.ci/run`` installs it)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pandas as pd
import pytest

from analysis_utils import paths
from analysis_utils.publish import atlas, atlas_data, book

# --- a tiny results folder: 2 layers x 3 heads ------------------------------------------

L, H = 2, 3


def _heads(base: int):
    return [(layer + base, head + base) for layer in range(L) for head in range(H)]


@pytest.fixture
def tiny_results(tmp_path):
    """01 (head 2-3 missing from the model table), 02 (nsubj only), a provenance; nothing of
    03-07, so those families are not measured. Layers and heads 1-based, as every table."""
    res = tmp_path / "results"
    res.mkdir()
    prov = {"notebook": "01", "profile": "default", "git_commit": "abc",
            "models": {"model": {"name": "tiny-bert", "num_layers": L, "num_heads": H,
                                 "source": "test", "weights_sha256": None}}}
    (res / "01_provenance.json").write_text(json.dumps(prov))
    rows = [{"layer": la, "head": he, "previous": 0.1 * k, "entropy": 3.0 - 0.5 * k}
            for k, (la, he) in enumerate(_heads(1))]
    pd.DataFrame(rows[:-1]).to_csv(res / "01_per_head_model.csv", index=False)  # no 2-3
    pd.DataFrame([{**r, "previous": 0.01, "entropy": 4.0} for r in rows]).to_csv(
        res / "01_per_head_control.csv", index=False)
    syn = [{"relation": "nsubj", "layer": la, "head": he, "direction": "dep2head",
            "correct": k, "total": 10, "accuracy": k / 10} for k, (la, he) in enumerate(_heads(1))]
    pd.DataFrame(syn).to_csv(res / "02_head_scores_model.csv", index=False)
    pd.DataFrame([{**r, "accuracy": 0.05} for r in syn]).to_csv(
        res / "02_head_scores_control.csv", index=False)
    return res


def _family(fams, fid):
    return next(f for f in fams if f["id"] == fid)


def _prop(fams, pid):
    return next(p for f in fams for p in f["properties"] if p["id"] == pid)


def test_collect_reads_each_table_and_marks_unmeasured(tiny_results):
    fams = atlas.collect(tiny_results, L, H)
    prev = _prop(fams, "01.previous")
    # the row (layer 1, head 2) is cell [0][1]; the missing head is null, not 0
    assert prev["values"][0][1] == pytest.approx(0.1)
    assert prev["values"][1][2] is None
    assert prev["control"][1][2] == pytest.approx(0.01)
    assert prev["rank"][1][2] is None and prev["n_measured"] == L * H - 1
    # the row (layer 2, head 3) = cell [1][2], accuracy 0.5
    nsubj = _prop(fams, "02.nsubj.dep2head")
    assert nsubj["values"][1][2] == pytest.approx(0.5) and nsubj["rank"][1][2] == 1
    assert nsubj["control"][0][0] == pytest.approx(0.05)
    # entropy ranks highest first; families without a table are not measured (no zeros)
    assert _prop(fams, "01.entropy")["rank"][0][0] == 1
    for fid in ("coref", "probe", "behaviour", "framenet", "drift", "disabling", "importance"):
        fam = _family(fams, fid)
        assert fam["measured"] is False and fam["properties"] == []


def test_neighbours_sort_the_saved_matrix(tiny_results):
    assert atlas.neighbours(tiny_results, L, H) == {}  # notebook 05 did not run
    labels = ["1-1", "1-2", "1-3", "2-1", "2-2", "2-3"]
    pos = np.array([0.0, 5.0, 1.0, 9.0, 2.0, 7.0])  # heads on a line: distance = |a - b|
    d = pd.DataFrame(np.abs(pos[:, None] - pos[None, :]), columns=labels).assign(head=labels)
    d[["head", *labels]].to_csv(tiny_results / "05_js_distance_model.csv", index=False)
    nb = atlas.neighbours(tiny_results, L, H, k=2)
    assert nb["model"]["1-1"] == [["1-3", 1.0], ["2-2", 2.0]] and "control" not in nb
    d[["head", *labels[:4]]].to_csv(tiny_results / "05_js_distance_control.csv", index=False)
    with pytest.raises(atlas.AtlasError, match="05_js_distance_control.csv"):
        atlas.neighbours(tiny_results, L, H)


def test_ranks_ascending_and_ties():
    a = np.array([[0.2, np.nan, 0.2], [0.1, 0.5, 0.3]])
    assert atlas.ranks(a, "asc").tolist()[1] == [1.0, 5.0, 4.0]
    assert atlas.ranks(a, "desc")[0, 0] == atlas.ranks(a, "desc")[0, 2] == 3
    assert np.isnan(atlas.ranks(a)[0, 1])


def test_a_table_numbered_from_0_or_mislabelled_is_refused(tiny_results):
    df = pd.read_csv(tiny_results / "02_head_scores_model.csv")
    # a table saved before every table was 1-based: refused, naming the file and the fix
    with pytest.raises(atlas.AtlasError, match=r"02_head_scores_model.csv.*run --only 02"):
        atlas_data._grid(df.assign(layer=df.layer - 1, head=df["head"] - 1), "accuracy", L, H,
                    "02_head_scores_model.csv")
    with pytest.raises(atlas.AtlasError, match="run --only 02"):
        atlas.best_roles(df.assign(layer=df.layer - 1, head=df["head"] - 1))
    # a top-k table without a head 1 but with labels that say it is 0-based (6-5 saved as 5-4)
    top = pd.DataFrame({"layer": [2], "head": [3], "head_label": ["3-4"], "z": [2.0]})
    with pytest.raises(atlas.AtlasError, match="'head_label' column disagrees"):
        atlas_data._grid(top, "z", L, H, "06_framenet_heads.csv")
    assert atlas_data._grid(top.assign(head_label="2-3"), "z", L, H, "x.csv")[1][2] == 2.0
    # a head outside the model
    with pytest.raises(atlas.AtlasError, match="outside a 2 x 3 model"):
        atlas_data._grid(df.assign(layer=df.layer + 1), "accuracy", L, H, "02_head_scores_model.csv")


def test_feature_grids_average_the_fine_tuning_seeds(tmp_path):
    rows = [{"task": "RTE", "model": model, "feature": "nouns", "layer": la, "head": he,
             "score": score + 0.01 * he}
            for model, score in (("pre-trained", 0.1), ("fine-tuned s42", 0.2),
                                 ("fine-tuned s43", 0.4))
            for la, he in _heads(1)]
    pd.DataFrame(rows).to_csv(tmp_path / "06_feature_attention.csv", index=False)
    props = {p.id: p for p in atlas_data._features(tmp_path, L, H)}
    assert sorted(props) == ["06.feature.RTE.fine-tuned.nouns", "06.feature.RTE.pre-trained.nouns"]
    ft = props["06.feature.RTE.fine-tuned.nouns"]
    np.testing.assert_allclose(ft.values[0], [0.31, 0.32, 0.33])
    assert ft.note == "mean over the fine-tuning seeds"
    assert props["06.feature.RTE.pre-trained.nouns"].note == ""


def test_heads_named_ignores_layer_ranges_and_out_of_range():
    assert atlas.heads_named("case 3-9: 68.0 vs. 38.2 (+29.8)", 6, 12) == ["3-9"]
    assert atlas.heads_named("2.8% [layers 3-5]", 6, 12) == []
    assert atlas.heads_named("L5 [layers 1-6]; layers 2-4", 6, 12) == []
    assert atlas.heads_named("head 7-1 vs 1-13", 6, 12) == []
    assert atlas.heads_named("1 head (1-3), 5-4 and 1-3", 6, 12) == ["1-3", "5-4"]


def test_claims_come_from_the_ledger_and_say_when_it_is_absent(tmp_path):
    from analysis_utils import ledger

    none = atlas.claims(tmp_path, "tiny-bert", L, H)
    assert none["rows"] == [] and "08_claims.csv" in none["note"]
    # the ledger's own columns: a model of a longer name and a row naming no head are left out
    row = dict.fromkeys(ledger.COLUMNS, "")
    rows = [{**row, "model": "tiny-bert (2 x 3)", "notebook": "02", "claim": "syntax head",
             "heads": "1-2, 2-3", "this_run": "58% [layers 1-2]", "verdict": "yes",
             "control_verdict": "no"},
            {**row, "model": "tiny-bert-large (2 x 3)", "claim": "x", "heads": "1-1"},
            {**row, "model": "tiny-bert (2 x 3)", "claim": "no head", "this_run": "1-1"}]
    pd.DataFrame(rows, columns=ledger.COLUMNS).to_csv(tmp_path / atlas.LEDGER, index=False)
    led = atlas.claims(tmp_path, "tiny-bert", L, H)
    assert led["source"] == "results/08_claims.csv" and led["note"] == ""
    assert [(r["heads"], r["claim"], r["verdict"], r["control_verdict"]) for r in led["rows"]] \
        == [(["1-2", "2-3"], "syntax head", "yes", "no")]
    pd.DataFrame({"model": ["tiny-bert"], "claim": ["c"]}).to_csv(tmp_path / atlas.LEDGER)
    with pytest.raises(atlas.AtlasError, match="re-run notebook 08"):
        atlas.claims(tmp_path, "tiny-bert", L, H)


def test_build_writes_a_self_contained_page_and_portable_provenance(tiny_results, tmp_path):
    page = atlas.build("default", tiny_results, tmp_path / "out", tmp_path, examples=False)
    text = page.read_text()
    assert page.name == "tiny-bert.html" and len(text.encode()) < atlas.MAX_PAGE_BYTES
    for remote in ('src="http', "src='http", 'href="http', "url(http", "import(", "fetch("):
        assert remote not in text
    data = json.loads(text.split('type="application/json">', 1)[1].split("</script>", 1)[0])
    assert data["model"]["num_layers"] == L and data["examples"]["unavailable"]
    prov_text = (page.parent / "tiny-bert_provenance.json").read_text()
    assert str(paths.REPO_ROOT) not in prov_text and str(tmp_path) not in prov_text
    prov = json.loads(prov_text)
    assert set(prov["sources"]) == {"01_per_head_model.csv", "01_per_head_control.csv",
                                    "02_head_scores_model.csv", "02_head_scores_control.csv"}


def _page_data(page_path):
    text = page_path.read_text()
    return json.loads(text.split('type="application/json">', 1)[1].split("</script>", 1)[0])


@pytest.mark.parametrize("profile", ["default", "base"])
def test_committed_pages_match_the_committed_tables(profile, tmp_path):
    """A committed page is regenerated whenever the tables, the ledger or this code change:
    its data equal a fresh build's (the example maps aside, which need the model)."""
    page_path, results = PAGES[profile]
    fresh = _page_data(atlas.build(profile, out_dir=tmp_path, examples=False))
    committed = _page_data(page_path)
    for d in (fresh, committed):  # links are relative to where each page was written
        for o in d.get("others", []):
            o.pop("href", None)
        d.get("book", {}).pop("root", None)
    stale = [k for k in fresh if k not in ("examples", "sentences")
             and fresh[k] != committed.get(k)]
    assert not stale, (f"{page_path.name} is stale ({', '.join(stale)} changed): run "
                       f"`python -m analysis_utils atlas --profile {profile}` and commit it")
    assert "sentences" in committed["examples"], committed["examples"]
    assert "heads" in committed["sentences"], committed["sentences"]


def test_profile_folder_given_relatively_keeps_its_figure_links(tmp_path, monkeypatch):
    """The profile's own results folder, named relative to the working directory, is still
    the run whose figures the head cards link."""
    monkeypatch.chdir(paths.REPO_ROOT / "notebooks")
    rel = Path("..") / paths.RESULTS_DIR.relative_to(paths.REPO_ROOT)
    got = _page_data(atlas.build("default", rel, tmp_path / "rel", examples=False))
    want = _page_data(atlas.build("default", out_dir=tmp_path / "own", examples=False))
    links = [f["figures"] for f in got["families"]]
    assert any(links), "no family lists a figure"
    assert links == [f["figures"] for f in want["families"]]


def test_missing_results_name_the_command(tmp_path, capsys):
    with pytest.raises(atlas.AtlasError, match="analysis_utils run --profile base"):
        atlas.build("base", tmp_path / "nope", tmp_path / "out", examples=False)
    (tmp_path / "empty").mkdir()
    assert atlas.cli(["--results", str(tmp_path / "empty"), "--out", str(tmp_path / "o"),
                      "--no-examples"]) == 2
    assert "analysis_utils run --profile default" in capsys.readouterr().err


def test_example_maps_are_the_models_attention_as_uint8(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "cache"))
    ex = atlas.example_maps(str(tiny_model_dir), sentences=("the cat sat", "a dog ran ."))
    assert len(ex["sentences"]) == 2
    s = ex["sentences"][1]
    n = len(s["tokens"])
    assert s["tokens"][0] == "[CLS]" and s["tokens"][-1] == "[SEP]"
    maps = np.frombuffer(base64.b64decode(s["maps"]), dtype=np.uint8).reshape(2, 2, n, n)
    # each row of attention sums to 1: its uint8 rounding to within half a step per entry
    assert np.all(np.abs(maps.sum(-1).astype(int) - 255) <= n)
    (tmp_path / "no-model").mkdir()
    missing = atlas.example_maps(str(tmp_path / "no-model"))
    assert "not available" in missing["unavailable"] and str(tmp_path) not in str(missing)


# --- the pages in a real browser ----------------------------------------------------------

PAGES = {  # committed page -> its results folder
    "default": (paths.FIGURES_DIR / "atlas" / "all-MiniLM-L6-v2.html", paths.RESULTS_DIR),
    "base": (paths.FIGURES_DIR / "base" / "atlas" / "all-mpnet-base-v2.html",
             paths.RESULTS_DIR / "base"),
}


@pytest.fixture(scope="module")
def browser(chromium):
    """The session's chromium (``tests/conftest.py``), under the name these tests use."""
    return chromium


@pytest.fixture(scope="module")
def fresh_page(tmp_path_factory):
    """The default page built now by this code from the committed results (no example maps:
    no model is loaded), so the code path is tested as well as the committed artefact."""
    out = tmp_path_factory.mktemp("atlas")
    return atlas.build("default", out_dir=out, examples=False), paths.RESULTS_DIR


def _open(browser, page_path):
    """Open ``page_path`` offline: any request that is not the file itself fails the test."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_path.as_uri())
    page.wait_for_selector("#detail h2")
    return page, errors, requests


def _cases(fresh_page):
    return {"fresh": fresh_page, **PAGES}


@pytest.mark.parametrize("which", ["fresh", "default", "base"])
def test_page_loads_offline_with_every_head(browser, fresh_page, which):
    page_path, results = _cases(fresh_page)[which]
    assert page_path.exists(), f"{page_path.name} missing: run `python -m analysis_utils atlas`"
    assert page_path.stat().st_size <= atlas.MAX_PAGE_BYTES
    info = atlas.model_info(results)["identity"]
    page, errors, requests = _open(browser, page_path)
    assert errors == []
    assert requests == [page_path.as_uri()]
    cells = page.eval_on_selector_all("#grid [data-head]", "cs => cs.map(c => c.dataset.head)")
    assert sorted(cells) == sorted(f"{la}-{he}" for la in range(1, info["num_layers"] + 1)
                                   for he in range(1, info["num_heads"] + 1))
    if which != "fresh":  # committed pages carry the example maps
        assert page.locator("#detail .maps canvas").count() == len(atlas.EXAMPLE_SENTENCES)
    page.close()


def _colours(page):
    return page.eval_on_selector_all("#grid .cell", "cs => cs.map(c => c.style.background)")


@pytest.mark.parametrize("which", ["fresh", "default"])
def test_choosing_another_property_recolours(browser, fresh_page, which):
    page, _, _ = _open(browser, _cases(fresh_page)[which][0])
    before = _colours(page)
    page.select_option("#property", "01.previous")
    after = _colours(page)
    assert len(set(after)) > 1 and after != before
    page.select_option("#property", "05.behaviour")  # categorical: one colour per label
    beh = pd.read_csv(paths.RESULTS_DIR / "05_head_behaviour_model.csv")
    assert len(set(_colours(page))) == beh["behaviour"].nunique()
    page.close()


def _shown_values(page, prefix, kind="model"):
    return page.eval_on_selector_all(
        f'#detail td.value[data-kind="{kind}"][data-prop^="{prefix}"]',
        "ts => Object.fromEntries(ts.map(t => [t.dataset.prop, t.dataset.value ?? null]))")


@pytest.mark.parametrize("which", ["fresh", "default", "base"])
def test_head_3_9_shows_the_tables_numbers(browser, fresh_page, which):
    page_path, results = _cases(fresh_page)[which]
    page, _, _ = _open(browser, page_path)
    page.fill("#search", "3-9")
    page.click("#search-form button")
    assert page.get_attribute("#detail", "data-selected") == "3-9"
    for kind in ("model", "control"):
        syn = pd.read_csv(results / f"02_head_scores_{kind}.csv")
        syn = syn[(syn.layer == 3) & (syn["head"] == 9)]  # 1-based table
        shown = _shown_values(page, "02.", kind)
        assert len(shown) == len(syn) > 0
        for r in syn.itertuples():
            assert float(shown[f"02.{r.relation}.{r.direction}"]) == r.accuracy
        surf = pd.read_csv(results / f"01_per_head_{kind}.csv").set_index(["layer", "head"])
        shown = _shown_values(page, "01.", kind)
        for col, value in surf.loc[(3, 9)].items():  # 1-based table
            assert float(shown[f"01.{col}"]) == value
    # the rank shown is the head's place among all heads, counted here from the table
    syn = pd.read_csv(results / "02_head_scores_model.csv").query(
        "relation == 'nsubj' and direction == 'dep2head'")
    rank = int((syn.accuracy > syn.query("layer == 3 and head == 9").accuracy.iloc[0]).sum()) + 1
    shown = page.text_content('#detail tr[data-prop="02.nsubj.dep2head"] td.rank')
    assert shown == f"{rank} / {len(syn)}"
    page.close()


@pytest.mark.parametrize("query, prop", [("nsubj", "02.nsubj.dep2head"),
                                         ("coreference", "03.all.All"),
                                         ("vertical", "01.cls")])
def test_role_search_colours_by_the_role_and_selects_its_best_head(browser, fresh_page,
                                                                   query, prop):
    page, errors, _ = _open(browser, fresh_page[0])
    page.fill("#search", query)
    page.click("#search-form button")
    assert page.input_value("#property") == prop
    table, col, base, filt = {
        "02": ("02_head_scores_model.csv", "accuracy", 1,
               "relation == 'nsubj' and direction == 'dep2head'"),
        "03": ("03_head_scores_model.csv", "accuracy", 1, "breakdown == 'all'"),
        "01": ("01_per_head_model.csv", "cls", 1, "layer > 0"),
    }[prop[:2]]
    df = pd.read_csv(paths.RESULTS_DIR / table).query(filt)
    best = df.loc[df[col].idxmax()]
    expected = f"{int(best.layer) + 1 - base}-{int(best['head']) + 1 - base}"
    assert page.get_attribute("#detail", "data-selected") == expected
    assert expected in page.eval_on_selector_all("#grid .cell.hit",
                                                 "cs => cs.map(c => c.dataset.head)")
    assert errors == []
    page.close()


def test_base_page_says_not_measured_never_zero(browser):
    page_path, _ = PAGES["base"]
    page, _, _ = _open(browser, page_path)
    for fid in ("framenet", "drift", "features", "disabling", "importance"):
        family = f'#detail details[data-family="{fid}"]'
        assert "not measured" in page.text_content(family)
        assert page.locator(f"{family} td.value").count() == 0
    assert page.locator("#property option[disabled]").count() == 5
    page.fill("#search", "13-1")
    page.click("#search-form button")
    assert "No head 13-1" in page.text_content("#search-result")
    page.close()


def test_closest_heads_are_read_from_the_js_distance_table(browser, fresh_page):
    page, errors, _ = _open(browser, fresh_page[0])
    page.click('#grid [data-head="3-9"]')
    dist = pd.read_csv(paths.RESULTS_DIR / "05_js_distance_model.csv", index_col="head")
    expected = list(dist.loc["3-9"].drop("3-9").nsmallest(5).index)
    shown = page.eval_on_selector_all('#detail .neighbours [data-kind="model"] a',
                                      "as => as.map(a => a.dataset.goto)")
    assert shown == expected
    page.click(f'#detail .neighbours a[data-goto="{expected[0]}"]')
    assert page.get_attribute("#detail", "data-selected") == expected[0]
    assert errors == []
    page.close()


# --- the statistics behind a value (hand-computed cases) ----------------------------------

def test_best_offsets_take_each_relations_best_and_its_n(tmp_path):
    assert atlas.best_offsets(tmp_path) == {}
    pd.DataFrame({"relation": ["nsubj"] * 3 + ["obj"] * 2, "offset": [-1, 1, 2, -1, 1],
                  "correct": [5, 8, 8, 1, 2], "total": [10] * 3 + [4] * 2,
                  "accuracy": [0.5, 0.8, 0.8, 0.25, 0.5]}).to_csv(
        tmp_path / "02_offset_baselines.csv", index=False)
    assert atlas.best_offsets(tmp_path) == {  # a tie goes to the offset listed first
        "nsubj": {"offset": 1, "accuracy": 0.8, "n": 10},
        "obj": {"offset": 1, "accuracy": 0.5, "n": 4}}


def test_disabling_is_a_seed_mean_with_each_seeds_interval_and_holm_flag(tmp_path):
    rows = []
    for seed, deltas in ((42, [-10.0, 1.0, 0, 0, 0, 0]), (43, [-6.0, 3.0, 0, 0, 0, 0])):
        for k, (la, he) in enumerate(_heads(1)):  # 1-based, as notebook 07 writes it
            rows.append({"task": "MRPC", "seed": seed, "mode": "uniform", "kind": "head",
                         "layer": la, "head": he, "label": f"{la}-{he}", "metric": "f1",
                         "delta": deltas[k],
                         "ci_lo": deltas[k] - 2, "ci_hi": deltas[k] + 2,
                         "p_holm": 0.01 if k == 0 else 1.0, "holm": k == 0})
    rows.append({**rows[0], "kind": "baseline", "layer": None, "head": None})
    pd.DataFrame(rows).to_csv(tmp_path / "07_disabling.csv", index=False)
    (prop,) = atlas_data._disabling(tmp_path, L, H)
    assert prop.id == "07.disable.MRPC.uniform" and prop.seeds["labels"] == ["s42", "s43"]
    assert prop.values[0, 0] == -8.0 and prop.values[0, 1] == 2.0
    assert prop.spread[0, 0] == pytest.approx(np.std([-10, -6], ddof=1))
    assert prop.seeds["lo"][0][0, 0] == -12.0 and prop.seeds["hi"][1][0, 0] == -4.0
    assert prop.seeds["holm"][0][0, 0] == 1.0 and prop.seeds["holm"][1][0, 1] == 0.0
    assert prop.seeds["p"][1][0, 0] == 0.01
    js = atlas_data._prop_json(prop)
    assert js["rank"][0][0] == 1 and js["seeds"]["values"][1][0][1] == 3.0


def test_claims_name_the_papers_head_apart_from_this_runs(tmp_path):
    from analysis_utils import ledger

    row = dict.fromkeys(ledger.COLUMNS, "")
    rows = [{**row, "model": "tiny-bert (2 x 3)", "claim": "nn head", "heads": "1-2",
             "paper_value": "4-10: 70.4 vs. 70.2 (+0.2)", "p_adjusted": "0.576",
             "test": "binomial", "note": "n = 285 words"}]
    pd.DataFrame(rows, columns=ledger.COLUMNS).to_csv(tmp_path / atlas.LEDGER, index=False)
    (r,) = atlas.claims(tmp_path, "tiny-bert", L, H)["rows"]
    # 4-10 is outside a 2 x 3 model but is BERT-base's head: kept as the paper's
    assert r["heads"] == ["1-2"] and r["paper_heads"] == ["4-10"]
    assert (r["p_adjusted"], r["test"], r["note"]) == ("0.576", "binomial", "n = 285 words")


def test_depth_layer_matches_relative_depth():
    assert [atlas.depth_layer(la, 6, 12) for la in range(1, 7)] == [2, 4, 6, 8, 10, 12]
    assert [atlas.depth_layer(la, 12, 6) for la in range(1, 13)] == \
        [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]  # 0.5 rounds up, never to layer 0


def test_top_examples_pick_the_strongest_correct_edge_per_sentence():
    from types import SimpleNamespace as NS

    from analysis_utils.engine.wordmaps import WordMaps

    # one layer, one head; sentence of 3 words, word 0 --nsubj--> word 1 (the root)
    sent = NS(words=("she", "runs", "fast"), heads=(2, 0, 2), deprels=("nsubj", "root", "advmod"))

    def maps(w01, w02):
        a = np.full((1, 1, 5, 5), 0.1, dtype=np.float32)
        a[0, 0, 1, 2], a[0, 0, 1, 3] = w01, w02  # positions: [CLS] she runs fast [SEP]
        return WordMaps(attn=a, is_special=np.array([1, 0, 0, 0, 1], bool),
                        word_pos=np.array([1, 2, 3]))

    roles = {"1-1": {"relation": "nsubj", "direction": "dep2head"}}
    items = [(sent, maps(0.5, 0.2)), (sent, maps(0.2, 0.6)), (sent, maps(0.7, 0.1))]
    out = atlas.top_examples(roles, items, 1)["1-1"]
    # sentence 1 attends to the wrong word (fast): left out, but counted
    assert out["hits"] == 2 and out["total"] == 3
    assert out["examples"] == [{"s": 2, "from": 0, "to": 1, "w": 0.7},
                               {"s": 0, "from": 0, "to": 1, "w": 0.5}]


def test_top_examples_score_head2dep_as_notebook_02():
    """head -> dependent: word d is right when the word that attends most to d is its gold
    head (argmax of column d), as notebook 02 scores it, not when the head word's own
    strongest attention falls on d."""
    from types import SimpleNamespace as NS

    from analysis_utils.engine.wordmaps import WordMaps

    # "she runs fast": she --nsubj--> runs (root). Positions: [CLS] she runs fast [SEP]
    sent = NS(words=("she", "runs", "fast"), heads=(2, 0, 2), deprels=("nsubj", "root", "advmod"))
    a = np.full((1, 1, 5, 5), 0.1, dtype=np.float32)
    a[0, 0, 2, 1] = 0.3  # runs -> she: the most anything attends to "she" (right)
    a[0, 0, 2, 3] = 0.5  # but "runs" itself attends to "fast" most
    maps = WordMaps(attn=a, is_special=np.array([1, 0, 0, 0, 1], bool),
                    word_pos=np.array([1, 2, 3]))
    roles = {"1-1": {"relation": "nsubj", "direction": "head2dep"}}
    out = atlas.top_examples(roles, [(sent, maps)], 1)["1-1"]
    assert (out["hits"], out["total"]) == (1, 1)
    assert out["examples"] == [{"s": 0, "from": 1, "to": 0, "w": 0.3}]  # runs -> she
    a[0, 0, 3, 1] = 0.4  # now "fast" attends to "she" more than "runs" does: a miss
    out = atlas.top_examples(roles, [(sent, maps)], 1)["1-1"]
    assert (out["hits"], out["total"], out["examples"]) == (0, 1, [])


def test_top_examples_take_the_possessive_gold_head_as_notebook_02():
    """With poss_mode="clark" notebook 02 scores an nmod:poss edge on the possessor's 's,
    whose gold head is the possessed noun (not its own head, the possessor): the example
    shows 's -> dog, the edge the head was found right on. With "ud" it is John -> dog."""
    from types import SimpleNamespace as NS

    from analysis_utils.engine.wordmaps import WordMaps

    # "John 's dog barks": John --nmod:poss--> dog, 's --case--> John, dog --nsubj--> barks
    sent = NS(words=("John", "'s", "dog", "barks"), heads=(3, 1, 4, 0),
              deprels=("nmod:poss", "case", "nsubj", "root"))
    a = np.full((1, 1, 6, 6), 0.1, dtype=np.float32)  # [CLS] John 's dog barks [SEP]
    a[0, 0, 2, 3] = 0.6  # 's -> dog
    a[0, 0, 1, 3] = 0.4  # John -> dog
    maps = WordMaps(attn=a, is_special=np.array([1, 0, 0, 0, 0, 1], bool),
                    word_pos=np.array([1, 2, 3, 4]))
    roles = {"1-1": {"relation": "nmod:poss", "direction": "dep2head"}}
    out = atlas.top_examples(roles, [(sent, maps)], 1, poss_mode="clark")["1-1"]
    assert (out["hits"], out["total"]) == (1, 1)
    assert out["examples"] == [{"s": 0, "from": 1, "to": 2, "w": 0.6}]  # 's -> dog
    out = atlas.top_examples(roles, [(sent, maps)], 1, poss_mode="ud")["1-1"]
    assert (out["hits"], out["total"]) == (1, 1)
    assert out["examples"] == [{"s": 0, "from": 0, "to": 2, "w": 0.4}]  # John -> dog


@pytest.mark.packaged_model
@pytest.mark.gold_data
def test_sentence_hits_agree_with_notebook_02_in_both_directions(gold_data_dir):
    """Each head's "right on h of n <relation> edges in this sample" estimates the accuracy
    notebook 02 committed for it (results/02_head_scores_model.csv, EWT dev + test): for
    every head with at least 10 edges of its best relation in a small seeded sample, the
    accuracy lies in the exact binomial 99.9% interval of h / n, in either direction. (The
    page once checked the head word's own argmax for head -> dependent: 0 of 164 for a head
    at 82.9%.)"""
    from scipy.stats import binomtest

    info = atlas.model_info(paths.RESULTS_DIR)["identity"]
    got = atlas.head_sentences("minilm", paths.RESULTS_DIR, int(info["num_layers"]),
                               int(info["num_heads"]), n=150)
    if "unavailable" in got:
        pytest.skip(got["unavailable"])
    checked, off = {"dep2head": 0, "head2dep": 0}, []
    for lab, hd in got["heads"].items():
        if hd["total"] < 10:
            continue
        checked[hd["direction"]] += 1
        ci = binomtest(hd["hits"], hd["total"]).proportion_ci(0.999, method="exact")
        if not ci.low <= hd["accuracy"] <= ci.high:
            off.append(f"{lab} {hd['relation']} {hd['direction']}: {hd['hits']}/{hd['total']} "
                       f"here, {hd['accuracy']:.3f} in notebook 02")
    assert not off, "\n".join(off)
    assert min(checked.values()) >= 10, checked  # both directions are tested


# --- the committed pages as a reader uses them ----------------------------------------------

@pytest.fixture(scope="module")
def reader(browser):
    """One page (tab) shared by the reader tests: each test opens its address in it."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.errors = errors
    yield page
    page.close()


def _goto(page, which, fragment="", width=1280):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("about:blank")
    page.goto(PAGES[which][0].as_uri() + fragment)
    page.wait_for_selector("#detail h2")


def test_a_deep_link_opens_the_head_and_property(reader):
    _goto(reader, "default", "#4-10&p=02.nsubj.dep2head")
    assert reader.get_attribute("#detail", "data-selected") == "4-10"
    assert reader.input_value("#property") == "02.nsubj.dep2head"
    assert reader.eval_on_selector_all('#grid [aria-selected="true"]',
                                       "cs => cs.map(c => c.dataset.head)") == ["4-10"]
    syn = pd.read_csv(paths.RESULTS_DIR / "02_head_scores_model.csv").query(
        "relation == 'nsubj' and direction == 'dep2head'")
    acc = syn.query("layer == 4 and head == 10").accuracy.iloc[0]  # a 1-based table
    rank = int((syn.accuracy > acc).sum()) + 1
    assert reader.get_attribute('#grid [data-head="4-10"]', "aria-label") == \
        f"head 4-10, {acc:.3f}, rank {rank}"
    assert "is not BERT-base's head 4-10" in reader.text_content("#not-bert")
    # property names are buttons: one colours the grid by it, and the address follows
    reader.click('#detail details[data-family="surface"] summary')
    reader.click('#detail tr[data-prop="01.previous"] button.prop')
    assert reader.input_value("#property") == "01.previous"
    assert reader.url.endswith("#4-10&p=01.previous")
    assert reader.errors == []


def test_a_link_the_page_cannot_follow_says_so(reader):
    _goto(reader, "default", "#9-1&p=07.no-such-property")
    said = reader.text_content("#search-result")
    assert "head \u201c9-1\u201d, which this 6 x 12 model does not have" in said, said
    assert "does not have (\u201c07.no-such-property\u201d); showing" in said, said
    _goto(reader, "default", "#4-10&p=02.nsubj.dep2head")
    assert reader.text_content("#search-result") == ""  # a good link says nothing
    assert reader.errors == []


def test_the_address_follows_a_click_and_the_other_model_is_linked_by_depth(reader):
    _goto(reader, "default")
    reader.select_option("#property", "01.previous")
    reader.click('#grid [data-head="2-5"]')
    assert reader.url.endswith("#2-5&p=01.previous")
    href = reader.get_attribute('#detail .cross a[data-other="base"][data-match="depth"]', "href")
    assert href.startswith("../base/atlas/all-mpnet-base-v2.html#")
    assert (PAGES["default"][0].parent / href.split("#")[0]).resolve() == \
        PAGES["base"][0].resolve()


def _cross(reader, which, fragment, match):
    _goto(reader, which, fragment)
    href = reader.get_attribute(f'#detail .cross a[data-match="{match}"]', "href")
    return href.split("#", 1)[1]


@pytest.mark.parametrize("prop", ["03.all.All", "01.previous", "02.nsubj.dep2head"])
def test_the_cross_model_links_match_depth_and_role_and_come_back(reader, prop):
    """Issue 42: the other model's head is its best on the same property at the same relative
    depth (the layers covering this layer's depth) or overall (the same role), never this
    head's number copied; from the smaller model's layer-best head, both links come back."""
    data = {w: book.atlas_data(PAGES[w][0].read_text()) for w in PAGES}
    other = {o["profile"]: o for o in data["default"]["others"]}["base"]
    best_small = {o["profile"]: o for o in data["base"]["others"]}["default"]["best"][prop]
    best_big = other["best"][prop]
    for layer, head in enumerate(best_small["layers"], start=1):
        start = f"{layer}-{head}&p={prop}"
        there = _cross(reader, "default", "#" + start, "depth")
        big_layer = int(there.split("-")[0])
        assert 2 * layer - 1 <= big_layer <= 2 * layer  # 6 -> 12 layers: the same depth
        assert _cross(reader, "base", "#" + there, "depth") == start  # a round trip
    role = _cross(reader, "default", f"#1-1&p={prop}", "role")
    assert role == f"{best_big['all']}&p={prop}"
    assert _cross(reader, "base", "#" + role, "role") == f"{best_small['all']}&p={prop}"


def test_the_grid_is_one_tab_stop_and_arrow_keys_move_focus(reader):
    _goto(reader, "default", "#3-9")
    assert reader.eval_on_selector_all('#grid [tabindex="0"]',
                                       "cs => cs.map(c => c.dataset.head)") == ["3-9"]
    reader.focus("#search")
    reader.keyboard.press("Tab")  # the Find button
    reader.keyboard.press("Tab")  # the shared-scale box
    reader.keyboard.press("Tab")  # the grid: its one stop, the selected head
    active = "() => document.activeElement.dataset.head"
    assert reader.evaluate(active) == "3-9"
    for key, head in (("ArrowRight", "3-10"), ("ArrowDown", "4-10"), ("ArrowLeft", "4-9"),
                      ("ArrowUp", "3-9"), ("End", "3-12"), ("Home", "3-1")):
        reader.keyboard.press(key)
        assert reader.evaluate(active) == head, key
    assert reader.get_attribute("#detail", "data-selected") == "3-9"  # focus is not selection
    reader.keyboard.press("ArrowDown")
    reader.keyboard.press("Enter")
    assert reader.get_attribute("#detail", "data-selected") == "4-1"
    reader.keyboard.press("ArrowRight")
    reader.keyboard.press(" ")
    assert reader.get_attribute("#detail", "data-selected") == "4-2"
    assert reader.url.split("#")[1].startswith("4-2&p=")
    # the live region says which head, not the whole panel
    said = reader.text_content("#announce")
    assert said.startswith("Head 4-2 selected") and len(said) < 200
    assert reader.get_attribute("#detail", "aria-live") is None


@pytest.mark.parametrize("which", ["default", "base"])
def test_a_phone_has_no_horizontal_scroll(reader, which):
    _goto(reader, which, "#3-9&p=02.All.dep2head", width=390)
    assert reader.evaluate("document.documentElement.scrollWidth") <= 390
    box = reader.eval_on_selector(f'#grid [data-head="3-{atlas.model_info(PAGES[which][1])["identity"]["num_heads"]}"]',
                                  "c => c.getBoundingClientRect().right")
    assert box <= 390
    assert reader.errors == []


@pytest.mark.parametrize("which", ["default", "base"])
def test_axe_finds_no_serious_or_critical_violation(reader, which):
    from axe_playwright_python.sync_playwright import Axe

    for width in (1280, 390):
        _goto(reader, which, "#3-9", width=width)
        reader.click("#detail details[data-family=syntax] summary")
        found = Axe().run(reader).response["violations"]
        bad = [(v["id"], v["impact"], len(v["nodes"])) for v in found
               if v["impact"] in ("serious", "critical")]
        assert bad == [], bad


def test_disabling_3_8_shows_the_seed_mean_intervals_and_holm_flags(reader):
    _goto(reader, "default", "#3-8&p=07.disable.MRPC.uniform")
    d = pd.read_csv(paths.RESULTS_DIR / "07_disabling.csv").query(
        "kind == 'head' and task == 'MRPC' and mode == 'uniform' and label == '3-8'")
    shown = float(reader.get_attribute(
        '#detail td.value[data-kind="model"][data-prop="07.disable.MRPC.uniform"]', "data-value"))
    assert shown == pytest.approx(d["delta"].mean(), abs=1e-9)
    row = '#detail tr[data-prop="07.disable.MRPC.uniform"]'
    text = reader.text_content(f"{row} td.extra")
    assert f"Holm-significant drop in {int((d.holm & (d.delta < 0)).sum())} of {len(d)}" in text
    assert f"sd {d.delta.std(ddof=1):.2f}" in text
    for r in d.itertuples():
        item = reader.text_content(f'{row} li[data-seed="s{r.seed}"]')
        assert f"{r.delta:.2f} [{r.ci_lo:.2f}, {r.ci_hi:.2f}]" in item
        assert ("(significant)" if r.holm else "(not significant)") in item
    # drift: the mean over the fine-tuned seeds, the control beside it
    drift = pd.read_csv(paths.RESULTS_DIR / "06_drift_cosine.csv").query(
        "task == 'MRPC' and layer == 3 and head == 8")  # 1-based table
    tuned = drift[drift.compared != "control"].cosine
    cell = '#detail td.value[data-kind="{}"][data-prop="06.drift.MRPC"]'
    assert float(reader.get_attribute(cell.format("model"), "data-value")) == \
        pytest.approx(tuned.mean(), abs=1e-12)
    assert float(reader.get_attribute(cell.format("control"), "data-value")) == \
        drift[drift.compared == "control"].cosine.iloc[0]
    # the ranked list: rank 1 is the largest mean drop
    means = pd.read_csv(paths.RESULTS_DIR / "07_disabling.csv").query(
        "kind == 'head' and task == 'MRPC' and mode == 'uniform'").groupby("label").delta.mean()
    assert reader.text_content("#top-rows tr[data-head] button") == means.idxmin()
    reader.click('#top-rows button.sort[data-sort="holm"]')  # most Holm-significant seeds first
    holm = pd.read_csv(paths.RESULTS_DIR / "07_disabling.csv").query(
        "kind == 'head' and task == 'MRPC' and mode == 'uniform' and holm and delta < 0")
    assert reader.text_content("#top-rows tr[data-head] td.holm") == \
        f"{holm.label.value_counts().max()} of {len(d)}"
    assert reader.get_attribute('#top-rows th:has(button[data-sort="holm"])', "aria-sort") == \
        "descending"
    reader.click("#top-rows tr[data-head] button")
    assert reader.get_attribute("#detail", "data-selected") == \
        reader.get_attribute("#top-rows tr[data-head]", "data-head")


def test_4_10_shows_its_ledger_rows_baselines_and_sentences(reader):
    _goto(reader, "default", "#4-10&p=02.compound.dep2head")
    led = pd.read_csv(paths.RESULTS_DIR / atlas.LEDGER, dtype=str, keep_default_na=False)
    led = led[led.model.str.startswith("all-MiniLM-L6-v2") & led.paper_value.str.contains("4-10")]
    cards = reader.locator('#detail .claim[data-kind="paper"]')
    assert cards.count() == len(led) > 0
    text = reader.text_content("#detail")
    for r in led.itertuples():
        assert r.this_run in text and r.note in text and r.p_adjusted in text
    base = pd.read_csv(paths.RESULTS_DIR / "02_offset_baselines.csv").query("relation == 'compound'")
    best = base.loc[base.accuracy.idxmax()]
    cell = '#detail tr[data-prop="02.compound.dep2head"] td.extra'
    assert float(reader.get_attribute(cell, "data-baseline")) == best.accuracy
    assert int(reader.get_attribute(cell, "data-n")) == best.total
    # the sentences: each marks one attended word, with its weight
    items = reader.locator("#detail ol.sentences li")
    assert 1 <= items.count() <= atlas.SENTENCES_PER_HEAD
    assert reader.locator("#detail ol.sentences li mark.to").count() == items.count()
    assert reader.errors == []


def test_category_colours_are_fixed_by_label_across_pages(reader):
    colours = {}
    for which in ("default", "base"):
        _goto(reader, which, "#1-1&p=05.behaviour")
        colours[which] = dict(reader.eval_on_selector_all(
            "#grid .cell", "cs => cs.map(c => [c.getAttribute('aria-label').split(', ')[1], "
            "c.style.background])"))
    both = set(colours["default"]) & set(colours["base"])
    assert {"syntax", "other"} <= both
    assert all(colours["default"][k] == colours["base"][k] for k in both)


def test_the_shared_scale_spans_both_models(reader):
    _goto(reader, "default", "#1-1&p=01.previous")
    lo_hi = reader.eval_on_selector_all("#legend > span", "ss => ss.map(s => s.textContent)")
    reader.check("#shared")
    shared = reader.eval_on_selector_all("#legend > span", "ss => ss.map(s => s.textContent)")
    own = pd.read_csv(paths.RESULTS_DIR / "01_per_head_model.csv")["previous"]
    other = pd.read_csv(paths.RESULTS_DIR / "base" / "01_per_head_model.csv")["previous"]
    assert lo_hi[0] != shared[0] or lo_hi[2] != shared[2]
    assert float(shared[2]) == pytest.approx(max(own.max(), other.max()), rel=5e-3)


def test_figure_links_list_the_figures_the_run_wrote(tmp_path):
    figs = tmp_path / "figures"
    figs.mkdir()
    (figs / "01_entropy.png").write_bytes(b"png")
    (figs / "01_sep_to_sep.png").write_bytes(b"png")
    got = atlas.figure_links("surface", figs)
    # in FIGURES' order, only those written, each with what it draws
    assert [g["path"].rsplit("/", 1)[1] for g in got] == ["01_sep_to_sep.png", "01_entropy.png"]
    assert got[1]["draws"] == dict(atlas.FIGURES["surface"])["01_entropy.png"]
    assert atlas.figure_links("surface", None) == [] and atlas.figure_links("coref", figs) == []
    # every family of the atlas has its figures named, and only figures of its own notebook
    fams = {f.id: f.notebook for f in atlas.FAMILIES}
    assert set(atlas.FIGURES) == set(fams)
    for fid, figures in atlas.FIGURES.items():
        assert all(name.startswith(fams[fid] + "_") for name, _ in figures), fid


@pytest.mark.parametrize("profile", ["default", "base"])
def test_committed_pages_link_figures_that_exist(profile):
    """A head card's figure links (book.root + path) reach the committed figures from where
    the page lies; every measured family with a figure in the run links it."""
    page_path, _ = PAGES[profile]
    data = _page_data(page_path)
    root = data["book"]["root"]
    linked = 0
    for f in data["families"]:
        for g in f["figures"]:
            assert (page_path.parent / (root + g["path"])).resolve().is_file(), g["path"]
            linked += 1
    assert linked >= 5 and book._atlas_links(page_path.read_text())
    assert any(h.endswith("01_entropy.png") for h in book._atlas_links(page_path.read_text()))


@pytest.mark.parametrize("which", ["fresh", "default"])
def test_a_head_card_links_the_figures_of_its_numbers(browser, fresh_page, which):
    """The ranked view of a property and each family of a head's card link the figures that
    draw them, and the links reach files."""
    page_path, _ = _cases(fresh_page)[which]
    page, _, _ = _open(browser, page_path)
    page.select_option("#property", "01.previous")
    hrefs = page.eval_on_selector_all("#top-table p.figures a", "as => as.map(a => a.href)")
    assert any(h.endswith("/figures/01_relative_position.png") for h in hrefs), hrefs
    card = page.eval_on_selector_all('#detail details[data-family="syntax"] p.figures a',
                                      "as => as.map(a => a.href)")
    assert any(h.endswith("/figures/02_relation_heatmaps.png") for h in card), card
    for h in hrefs + card:  # the root is relative to where each page was written
        assert Path(unquote(urlsplit(h).path)).is_file(), h
    page.close()
