"""The head atlas: one self-contained HTML page per model where any head shows every value
the compendium measured for it.

``python -m analysis_utils atlas [--profile P]`` reads the per-head tables a profile's run
left in ``results/`` (``results/base/`` for ``base``), never recomputing them, and writes
``figures/atlas/<model>.html`` (``figures/base/atlas/`` for ``base``) plus its provenance
``<model>_provenance.json`` beside it. The page holds its data, script and style inline
(``analysis_utils/publish/atlas_page/``, written for this compendium, MIT like the package), so it
opens from a file browser, Binder or any static host with nothing fetched.

Three modules, by what they build:

- :mod:`.atlas_data`: the tables and the ledger read into JSON-able dicts (``collect``,
  ``neighbours``, ``claims``, ``model_info``);
- :mod:`.atlas_examples`: what comes from the model's attention (``example_maps``,
  ``head_sentences``, scored with notebook 02's own scorer in both directions);
- this module: the other profile's page, the page itself, its provenance and the command.

Data flow::

    results/NN_*.csv (per-head tables, model + random-weights control)
      -> atlas_data.collect(): one (layers, heads) grid per measured property, JSON-able;
         a family whose table is absent is "not measured"
      -> atlas_data.claims(): ledger rows naming a head
      -> atlas_examples.example_maps(): 2-3 fixed sentences through engine.attention (cached)
      -> atlas_examples.head_sentences(): a seeded sample of UD EWT dev through
         engine.attention (cached), scored by analyses.syntax.score_heads as notebook 02
         scores it; per head the sentences where it is right on its best-ranked relation
      -> other_pages(): the other profile's page (links matched by relative depth) and its
         value ranges (a colour scale shared across models)
      -> render(): atlas_page/template.html with the data, CSS and JS inlined

The page opens at ``#L-H&p=<property id>`` and keeps the address in step with the selection.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

from .. import paths, profiles
from ..engine import atomic
from .atlas_data import (
    FAMILIES,
    FIGURES,
    LEDGER,
    AtlasError,
    Family,
    Property,
    _shown,
    best_offsets,
    claims,
    collect,
    figure_links,
    heads_named,
    model_info,
    neighbours,
    ranks,
    seed_stats,
)
from .atlas_examples import (
    EXAMPLE_SENTENCES,
    SENTENCE_SAMPLE,
    SENTENCE_SEED,
    SENTENCE_SPLIT,
    SENTENCE_WORDS,
    SENTENCES_PER_HEAD,
    best_roles,
    example_maps,
    head_sentences,
    scoring_poss_mode,
    top_examples,
)

# what the atlas offers from one import, as before it was split
__all__ = [
    "EXAMPLE_SENTENCES", "FAMILIES", "FIGURES", "LEDGER", "MAX_PAGE_BYTES", "PAGE_DIR",
    "SENTENCES_PER_HEAD", "SENTENCE_SAMPLE", "SENTENCE_SEED", "SENTENCE_SPLIT", "SENTENCE_WORDS",
    "AtlasError", "Family", "Property", "best_heads", "best_offsets", "best_roles",
    "book_links", "build", "claims", "cli", "collect", "depth_layer", "example_maps",
    "figure_links", "head_sentences", "heads_named", "model_info", "neighbours", "other_pages",
    "ranks", "render", "scoring_poss_mode", "seed_stats", "slug", "top_examples",
]

PAGE_DIR = Path(__file__).resolve().parent / "atlas_page"
MAX_PAGE_BYTES = 3 * 1024 * 1024


# --- the other model's page -------------------------------------------------------------

def depth_layer(layer: int, num_layers: int, other_layers: int) -> int:
    """The layer (1-based) of an ``other_layers``-layer model at the relative depth of
    ``layer`` of ``num_layers`` (notebook 08's ``layer / num_layers``), rounded half up.

    >>> depth_layer(3, 6, 12), depth_layer(7, 12, 6), depth_layer(1, 12, 6)
    (6, 4, 1)
    """
    return min(other_layers, max(1, int(np.floor(layer / num_layers * other_layers + 0.5))))


def other_pages(profile: str, page_dir: Path) -> list[dict]:
    """The atlas pages of the other profiles whose runs are in the repository (default and
    base): ``[{"profile", "name", "num_layers", "num_heads", "href" (relative to
    ``page_dir``), "ranges": {property id: [lo, hi]}}]``, read from their results so that a
    page can link the same head and property there and share a colour scale."""
    import os

    from .pipeline import destination

    out = []
    for other in ("default", "base"):
        if other == profile:
            continue
        dest = destination(other)
        try:
            info = model_info(dest.results)["identity"]
        except AtlasError:
            continue
        L, H = int(info["num_layers"]), int(info["num_heads"])
        ranges, best = {}, {}
        for fam in collect(dest.results, L, H):
            for p in fam["properties"]:
                vals = [v for row in p["values"] for v in row if isinstance(v, float)]
                if vals and p["kind"] == "number":
                    ranges[p["id"]] = [min(vals), max(vals)]
                    best[p["id"]] = best_heads(p["values"], p.get("order", "desc"))
        href = os.path.relpath(dest.figures / "atlas" / f"{slug(info['name'])}.html", page_dir)
        out.append({"profile": other, "name": info["name"], "num_layers": L, "num_heads": H,
                    "href": Path(href).as_posix(), "ranges": ranges, "best": best})
    return out


def _kept_examples(page: Path) -> tuple[dict, dict] | None:
    """The example maps and head sentences of an atlas page already written (``atlas
    --keep-examples``); raises naming the command when there is none to keep."""
    if not page.is_file():
        raise AtlasError(f"no page {_shown(page)} to keep the examples of: build it once with "
                         "the model installed (`python -m analysis_utils atlas`)")
    text = page.read_text()
    try:
        data = json.loads(text.split('type="application/json">', 1)[1].split("</script>", 1)[0]
                          .replace("<\\/", "</").replace("<\\!--", "<!--"))
    except (IndexError, json.JSONDecodeError) as err:
        raise AtlasError(f"{_shown(page)} holds no readable atlas data ({err}); rebuild it "
                         "with the model installed (`python -m analysis_utils atlas`)") from None
    return data["examples"], data["sentences"]


def book_links(claims_data: dict, sub: str, name: str, num_layers: int, num_heads: int,
               page_dir: Path) -> dict:
    """Where a claim card links: ``{"root": the repository's top folder relative to the page,
    "notebooks": {notebook: its rendered notebook, repository-relative, with the anchor of
    its Verdicts section}, "claims": None, "html": False}``. The book (which serves every
    atlas page from ``atlas/`` beside ``claims/<id>.html`` and the notebooks' pages) rewrites
    ``root``, ``claims`` and ``html`` in its copy (:func:`analysis_utils.publish.book.
    atlas_for_book`); the committed page links the notebooks in the repository."""
    import os

    from .readme import Run, row_anchor

    run = Run(sub, name, num_layers, num_heads)
    notebooks = {}
    for r in claims_data.get("rows", []):
        nb = r["notebook"]
        if nb and nb not in notebooks:
            try:
                notebooks[nb] = f"{run.notebook_page(nb, paths.REPO_ROOT)}#{row_anchor(nb)}"
            except FileNotFoundError:
                continue
    root = Path(os.path.relpath(paths.REPO_ROOT, page_dir)).as_posix() + "/"
    return {"root": root, "notebooks": notebooks, "claims": None, "html": False}


def best_heads(values: list[list], order: str = "desc") -> dict:
    """The best head (largest value for ``order="desc"``, smallest for ``"asc"``) of each
    layer (``"layers"``: 1-based head or ``None`` where the layer has no value) and of the
    model (``"all"``: ``"L-H"``): what the cross-model link needs to name the other model's
    best head at a relative depth or for a role (issue 42: a head number copied across models
    names no relation).

    >>> best_heads([[0.1, 0.5, None], [None, 0.7, None]])
    {'layers': [2, 2], 'values': [0.5, 0.7], 'all': '2-2', 'order': 'desc'}
    """
    pick = max if order == "desc" else min
    layers: list[int | None] = []
    best_values: list[float | None] = []
    everywhere = []
    for layer, row in enumerate(values):
        scored = [(v, h) for h, v in enumerate(row) if isinstance(v, float) and v == v]
        top = pick(scored, key=lambda t: t[0]) if scored else None
        layers.append(top[1] + 1 if top else None)
        best_values.append(top[0] if top else None)
        everywhere += [(v, layer, h) for v, h in scored]
    best = pick(everywhere, key=lambda t: t[0]) if everywhere else None
    return {"layers": layers, "values": best_values,
            "all": f"{best[1] + 1}-{best[2] + 1}" if best else None, "order": order}


# --- page -------------------------------------------------------------------------------

def slug(name: str) -> str:
    """A model name as a file name: ``sentence-transformers/x y`` -> ``x-y``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name.split("/")[-1]).strip("-") or "model"


def _inline_json(data) -> str:
    # "</" would end the <script> element early; "<!--" would start a comment in it.
    return (json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
            .replace("</", "<\\/").replace("<!--", "<\\!--"))


def render(data: dict) -> str:
    """The self-contained page for ``data`` (what :func:`build` assembles)."""
    template = (PAGE_DIR / "template.html").read_text()
    title = f"Head atlas: {data['model']['name']}"
    return (template.replace("{{TITLE}}", html.escape(title))
            .replace("{{CSS}}", (PAGE_DIR / "atlas.css").read_text())
            .replace("{{JS}}", (PAGE_DIR / "atlas.js").read_text())
            .replace("{{DATA}}", _inline_json(data)))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(profile: str = "default", results: Path | None = None, out_dir: Path | None = None,
          ledger_dir: Path | None = None, examples: bool = True, model: str | None = None,
          keep_examples: bool = False) -> Path:
    """Write the atlas page of ``profile``'s run and its provenance; return the page path.

    results: the run's tables (default: where ``run --profile P`` publishes them:
    ``results/``, ``results/base/`` for ``base``, the cache's ``smoke_outputs/`` for
    ``smoke``); out_dir: default ``atlas/`` in that run's figures folder; ledger_dir: where
    ``08_claims.csv`` lives (default: the top results folder of the
    run); examples: compute
    the example maps (cached) with ``model`` (default: the profile's model).
    """
    from . import report
    from .pipeline import destination

    started = time.time()
    if profile not in profiles.PROFILES:
        raise AtlasError(f"unknown profile {profile!r}; choose one of {sorted(profiles.PROFILES)}")
    dest = destination(profile)  # where `run --profile P` publishes
    sub = profiles.SUBFOLDER.get(profile)
    results = Path(results) if results else dest.results
    if not results.is_dir():
        raise AtlasError(f"no results folder {_shown(results)}: run `python -m analysis_utils run "
                         f"--profile {profile}` (`make {'base' if sub else 'reproduce'}`) first")
    out_dir = Path(out_dir) if out_dir else dest.figures / "atlas"
    # the ledger and notebook 08 cover every model, in the top results folder
    ledger_dir = Path(ledger_dir) if ledger_dir else (results.parent if sub else results)
    info = model_info(results)
    ident = info["identity"]
    L, H = int(ident["num_layers"]), int(ident["num_heads"])
    # the run's figures are known only for the folder its profile publishes to, however
    # the caller spelled it (relative, with `..`)
    same_run = results.resolve() == dest.results.resolve()
    families = collect(results, L, H, figures=dest.figures if same_run else None)
    model = model or profiles.overrides(profile, "01").get("model", "minilm")
    kept = _kept_examples(out_dir / f"{slug(ident['name'])}.html") if keep_examples else None
    if kept is not None:
        maps, sentences = kept
    else:
        maps = (example_maps(model, expected=ident) if examples
                else {"unavailable": "example maps not computed (atlas --no-examples)"})
        sentences = (head_sentences(model, results, L, H) if examples
                     else {"unavailable": "example sentences not computed (atlas --no-examples)"})
    read = [f for fam in families if fam["measured"] for f in fam["sources"]
            if (results / f).exists()]
    data = {
        "model": {k: ident.get(k) for k in ("name", "source", "num_layers", "num_heads",
                                             "hidden_size", "model_type")},
        "profile": profile, "results": _shown(results),
        "families": families, "neighbours": neighbours(results, L, H),
        "claims": claims(ledger_dir, ident["name"], L, H),
        "examples": maps, "sentences": sentences,
        "others": other_pages(profile, out_dir) if profile in ("default", "base") else [],
    }
    data["book"] = book_links(data["claims"], sub or "", ident["name"], L, H, out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / f"{slug(ident['name'])}.html"
    text = render(data)
    size = len(text.encode("utf-8"))
    if size > MAX_PAGE_BYTES:
        raise AtlasError(f"{page.name} would be {size / 1e6:.1f} MB, over the "
                         f"{MAX_PAGE_BYTES / 2**20:.0f} MB limit; drop properties or example maps")
    atomic.write_text(page, text)
    prov = {
        "output": page.name, "profile": profile, "bytes": size,
        "model": ident, "results": _shown(results), "results_commits": info["commits"],
        "sources": {f: _sha256(results / f) for f in
                    read + [f"05_js_distance_{k}.csv" for k in data["neighbours"]]},
        "claims_source": data["claims"]["source"],
        "examples": {"sentences": list(EXAMPLE_SENTENCES) if "sentences" in maps else [],
                     "model": maps.get("identity"), "unavailable": maps.get("unavailable")},
        "head_sentences": {"source": sentences.get("source"),
                           "sent_ids": sentences.get("sent_ids", []),
                           "unavailable": sentences.get("unavailable")},
        "git_commit": report.git_commit(), "versions": report.versions(),
        "wall_time_s": round(time.time() - started, 1),
    }
    atomic.write_text(out_dir / f"{slug(ident['name'])}_provenance.json", json.dumps(prov, indent=2) + "\n")
    return page


def cli(argv: list[str] | None = None) -> int:
    """``python -m analysis_utils atlas``; returns the exit status."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m analysis_utils atlas",
        description="Write the head atlas of a profile's run: one self-contained HTML page "
                    "(figures/atlas/<model>.html; figures/base/atlas/ for --profile base) from "
                    "the per-head tables in results/, with example attention maps.")
    ap.add_argument("--profile", default="default", help="default | base | paper | smoke")
    ap.add_argument("--results", default=None, metavar="DIR",
                    help="the run's tables (default: the profile's results folder)")
    ap.add_argument("--out", default=None, metavar="DIR",
                    help="output folder (default: figures/atlas/ or figures/base/atlas/)")
    ap.add_argument("--ledger", default=None, metavar="DIR",
                    help="folder of the claims ledger 08_claims.csv (default: results/)")
    ap.add_argument("--no-examples", action="store_true",
                    help="skip the example attention maps (no model is loaded)")
    ap.add_argument("--keep-examples", action="store_true",
                    help="keep the example maps and sentences of the page already there (they "
                         "depend on the model and fixed sentences only; for a change to the "
                         "page's code or the ledger, on a machine without the model)")
    args = ap.parse_args(argv)
    try:
        page = build(args.profile, args.results, args.out, args.ledger,
                     examples=not args.no_examples, keep_examples=args.keep_examples)
    except AtlasError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {_shown(page)} ({page.stat().st_size / 1e6:.2f} MB)")
    return 0
