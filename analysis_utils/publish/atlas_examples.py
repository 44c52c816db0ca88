"""What the head atlas shows of the model's attention itself: the example maps of a few fixed
sentences, and for each head the sentences of a seeded UD EWT dev sample where it is right on
its best-ranked syntax relation, scored as notebook 02 scores it
(:func:`analysis_utils.analyses.syntax.score_heads`). Both go through the package's cached
attention extraction; :mod:`.atlas` puts them on the page.

    example_maps(): 2-3 fixed sentences through engine.attention (cached), uint8
    head_sentences(): a seeded sample of UD EWT dev through engine.attention (cached);
      best_roles() picks each head's best-ranked (relation, direction) in notebook 02's
      table, top_examples() scores the sample with notebook 02's scorer in that direction
      and keeps the sentences where the head is right with the most attention on the edge
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .atlas_data import _refuse_0_based

# Fixed example sentences for the small attention maps: short, with a subject, an object,
# a pronoun that corefers and punctuation, so the common head types show on them.
EXAMPLE_SENTENCES = (
    "The cat sat on the mat because it was warm.",
    "Mary told John that she would call him tomorrow.",
    "The keys to the old cabinet are on the table.",
)


# --- example maps -----------------------------------------------------------------------

def example_maps(model: str, sentences=EXAMPLE_SENTENCES, expected: dict | None = None) -> dict:
    """Attention maps of ``sentences`` from ``model`` (a :func:`~.engine.models.load_model`
    name), through the package's cached extraction: ``{"sentences": [{"text", "tokens",
    "maps"}], "identity"}`` where ``maps`` is base64 of uint8 ``round(255 * attn)`` with attn
    (layers, heads, n, n), rows = attending token. When the model cannot be loaded the dict is
    ``{"unavailable": reason}`` and the page says so. ``expected``: the identity the results
    were computed with; a different weights hash is reported on the page."""
    from ..engine import attention, models

    try:
        lm = models.load_model(model)
    except (models.ModelError, OSError, ImportError, ValueError) as err:
        # The reason goes to the terminal; the page, which may be committed, gets no local path.
        print(f"atlas: no example maps: {err}", file=sys.stderr)
        hint = "; `make mpnet` assembles it" if model == "mpnet" else ""
        return {"unavailable": f"example maps not available: the model ({Path(model).name}) "
                               f"is not installed where this page was built{hint}"}
    tok = lm.tokenizer
    ids = [tok(s)["input_ids"] for s in sentences]
    store = attention.extract_attention(lm, [attention.ModelInput(tuple(i)) for i in ids],
                                        progress=False, desc="atlas examples")
    out = []
    for k, (s, i) in enumerate(zip(sentences, ids, strict=True)):
        attn = np.asarray(store[k], dtype=np.float32)  # (layers, heads, n, n)
        q = np.clip(np.rint(attn * 255), 0, 255).astype(np.uint8)
        out.append({"text": s, "tokens": tok.convert_ids_to_tokens(i),
                    "maps": base64.b64encode(q.tobytes()).decode("ascii")})
    res = {"sentences": out, "identity": {k: lm.identity.get(k) for k in
                                           ("name", "source", "weights_sha256")}}
    if expected and expected.get("weights_sha256") not in (None, lm.identity["weights_sha256"]):
        res["warning"] = ("the example maps come from weights that differ from the ones the "
                          "tables were computed with")
    return res


# --- the sentences a head attends in ----------------------------------------------------

SENTENCE_SPLIT = "ud-english-ewt/en_ewt-ud-dev.conllu"  # notebook 02 reads EWT dev (and test)
SENTENCE_SAMPLE = 400  # sentences drawn (seeded) from EWT dev for the examples
SENTENCE_WORDS = (6, 28)  # only sentences of this many words: short enough to read at a glance
SENTENCE_SEED = 0
SENTENCES_PER_HEAD = 3


def best_roles(scores: pd.DataFrame) -> dict[str, dict]:
    """Each head's best-ranked syntax relation in notebook 02's head scores
    (``02_head_scores_model.csv``, layers and heads 1-based; a table numbered from 0 is
    refused): the (relation, direction) where the head's rank among all heads is best
    (rank 1 = most accurate; ties: the higher accuracy, then the table order). "All" is not a
    relation and is left out. Returns ``{"L-H": {"relation", "direction", "rank",
    "accuracy"}}``.

    >>> df = pd.DataFrame({"relation": ["a"] * 2 + ["b"] * 2, "direction": ["dep2head"] * 4,
    ...                    "layer": [1, 1] * 2, "head": [1, 2] * 2,
    ...                    "accuracy": [0.9, 0.8, 0.1, 0.2]})
    >>> {k: (v["relation"], v["rank"]) for k, v in best_roles(df).items()}
    {'1-1': ('a', 1), '1-2': ('b', 1)}
    """
    _refuse_0_based(scores, "02_head_scores_model.csv")
    df = scores[scores["relation"] != "All"].copy()
    df["rank"] = (df.groupby(["relation", "direction"], sort=False)["accuracy"]
                  .rank(method="min", ascending=False).astype(int))
    df = df.reset_index(drop=True).reset_index(names="order")
    df = df.sort_values(["rank", "accuracy", "order"], ascending=[True, False, True])
    out = {}
    for r in df.drop_duplicates(["layer", "head"]).itertuples():
        out[f"{int(r.layer)}-{int(r.head)}"] = {
            "relation": str(r.relation), "direction": str(r.direction), "rank": int(r.rank),
            "accuracy": float(r.accuracy)}
    return out


def top_examples(roles: dict[str, dict], items, num_heads: int, k: int = SENTENCES_PER_HEAD,
                 poss_mode: str = "clark") -> dict[str, dict]:
    """For each head of ``roles`` (:func:`best_roles`), the ``k`` sentences of ``items`` where
    it is right on a gold edge of its relation with the most attention on it, one example per
    sentence, strongest first, and its hits on the relation's edges of ``items``.

    Right and wrong are notebook 02's: the words are scored by
    :func:`analyses.syntax.score_heads` (same ``poss_mode``), in the role's direction. A word
    ``d`` with gold head ``g`` is right for ``dep2head`` when the word ``d`` attends to most is
    ``g``, and for ``head2dep`` when the word that attends most to ``d`` is ``g``: the
    attending word of an example is ``d`` for ``dep2head`` and ``g`` for ``head2dep``, so
    ``hits / total`` estimates the head's accuracy in notebook 02's table.

    items: ``(sentence, WordMaps)`` pairs (:func:`engine.wordmaps.with_items`). Returns
    ``{"L-H": {"examples": [{"s", "from", "to", "w"}], "hits", "total"}}`` with ``s`` the
    item's index, word indices 0-based and ``w`` the attention weight from ``from`` to ``to``
    (word level: summed over the attended word's pieces, averaged over the attending
    word's)."""
    from ..analyses import syntax

    blocks = []  # per sentence its word-by-word attention, for the examples' weights
    sents = []  # and the sentence itself, for each scored word's gold head

    def keep_blocks():
        for sent, maps in items:
            wp = np.asarray(maps.word_pos)
            blocks.append(np.asarray(maps.attn, dtype=np.float32)[:, :, wp][:, :, :, wp])
            sents.append(sent)
            yield sent, maps

    try:
        _, scored = syntax.score_heads(keep_blocks(), min_count=0, poss_mode=poss_mode,
                                       return_correct=True)
    except ValueError:
        if blocks:
            raise
        return {lab: {"examples": [], "hits": 0, "total": 0} for lab in roles}  # no sentence
    gold = _scored_gold(syntax, sents, scored, poss_mode)
    direction = {d: i for i, d in enumerate(scored.directions)}
    relation = scored.relation.astype(str)
    out = {}
    for lab, role in roles.items():
        la, he = (int(x) - 1 for x in lab.split("-"))
        edges = relation == role["relation"]
        right = np.flatnonzero(edges & scored.correct[direction[role["direction"]], la, he])
        found = []
        for w in right:
            i, d, g = int(scored.sentence[w]), int(scored.dependent[w]), int(gold[w])
            src, dst = (d, g) if role["direction"] == "dep2head" else (g, d)
            found.append((float(blocks[i][la, he, src, dst]), i, src, dst))
        chosen, seen = [], set()
        for wt, i, src, dst in sorted(found, key=lambda x: (-x[0], x[1], x[2])):
            if i in seen:
                continue
            seen.add(i)
            chosen.append({"s": i, "from": src, "to": dst, "w": round(wt, 3)})
            if len(chosen) == k:
                break
        out[lab] = {"examples": chosen, "hits": int(len(right)), "total": int(edges.sum())}
    return out


def _scored_gold(syntax, sents, scored, poss_mode: str) -> np.ndarray:
    """Each scored word's gold head (0-based in its sentence, -1 for the root), the word a
    right head predicts, taken where :func:`analyses.syntax.score_heads` takes it: the
    sentences' :func:`~analyses.syntax.scoring_entries` (same ``poss_mode``, subtypes kept),
    which ``scored`` lists in the same order. Not ``sentence.heads[dependent] - 1``: with
    ``poss_mode="clark"`` an ``nmod:poss`` edge is scored on the possessor's ``'s``, whose
    gold head is the possessed noun, not its own head (the possessor). The dependents are
    checked against ``scored.dependent``, so the two cannot drift apart silently."""
    entries = [e for sent in sents
               for e in syntax.scoring_entries(sent, poss_mode, collapse_subtypes=False)]
    dep = np.fromiter((e[0] for e in entries), dtype=np.int64, count=len(entries))
    if not np.array_equal(dep, np.asarray(scored.dependent, dtype=np.int64)):
        raise RuntimeError("atlas: scoring_entries and score_heads disagree on the scored "
                           "words; the gold heads of the examples would be misaligned")
    return np.fromiter((e[1] for e in entries), dtype=np.int64, count=len(entries))


def scoring_poss_mode(results: Path) -> str:
    """The possessive convention notebook 02 scored the run's heads with (its ``poss_mode``
    parameter in ``02_provenance.json``; ``"clark"``, the notebook's default, when the
    provenance does not say)."""
    prov = results / "02_provenance.json"
    if prov.is_file():
        mode = json.loads(prov.read_text()).get("parameters", {}).get("poss_mode")
        if mode:
            return str(mode)
    return "clark"


def head_sentences(model: str, results: Path, num_layers: int, num_heads: int,
                   n: int = SENTENCE_SAMPLE, seed: int = SENTENCE_SEED) -> dict:
    """The sentences each head attends in: a seeded sample of ``n`` UD EWT dev sentences
    (the data notebook 02 reads; :data:`SENTENCE_WORDS` words long) through ``model`` with the
    package's cached extraction (:func:`engine.attention.extract_attention`: extracted once,
    then read from the cache dir), scored by :func:`top_examples` on each head's best-ranked
    relation in ``02_head_scores_model.csv``. Returns ``{"source", "sentences": [[word, ...]],
    "heads": {"L-H": {"relation", "direction", "rank", "accuracy", "examples", "hits",
    "total"}}}``, only the sentences some head shows kept (indices renumbered), or
    ``{"unavailable": reason}``."""
    from ..data import manifest, treebank
    from ..engine import attention, models, wordmaps

    table = results / "02_head_scores_model.csv"
    if not table.exists():
        return {"unavailable": "no syntax head scores (02_head_scores_model.csv) in this run"}
    try:
        lm = models.load_model(model)
        path = manifest.require(SENTENCE_SPLIT)
    except (models.ModelError, OSError, ImportError, ValueError) as err:
        print(f"atlas: no example sentences: {err}", file=sys.stderr)
        return {"unavailable": "example sentences not available: the model or UD EWT dev is "
                               "not installed where this page was built"}
    lo, hi = SENTENCE_WORDS
    pool = [s for s in treebank.read_conllu(path) if lo <= len(s.words) <= hi]
    sample = treebank.subsample(pool, n, seed)
    enc = wordmaps.encode_corpus(lm.tokenizer, [s.words for s in sample],
                                 max_length=wordmaps.max_input_length(lm.tokenizer, lm.model))
    kept = [sample[i] for i in enc.kept]
    store = attention.extract_attention(lm, enc.inputs(), progress=False,
                                        desc="atlas sentences")
    roles = best_roles(pd.read_csv(table))
    found = top_examples(roles, wordmaps.with_items(kept, store, enc.encoded), num_heads,
                         poss_mode=scoring_poss_mode(results))
    used = sorted({e["s"] for v in found.values() for e in v["examples"]})
    renum = {old: new for new, old in enumerate(used)}
    heads = {}
    for lab, v in found.items():
        heads[lab] = {**roles[lab], "hits": v["hits"], "total": v["total"],
                      "examples": [{**e, "s": renum[e["s"]]} for e in v["examples"]]}
    return {"source": (f"UD English EWT dev, {len(kept)} sentences of {lo}-{hi} words drawn "
                       f"with seed {seed}"),
            "sentences": [list(kept[i].words) for i in used],
            "sent_ids": [kept[i].sent_id for i in used], "heads": heads,
            "identity": {k: lm.identity.get(k) for k in ("name", "weights_sha256")}}
