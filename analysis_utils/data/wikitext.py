"""WikiText-2 raw (Wikipedia paragraphs) and the paragraph-pair segments of Clark et al. (2019)
Section 3.

- ``read_wikitext(path) -> list[Article]``: WikiText-2 raw layout, detokenised paragraphs.
- ``make_segments(articles, tokenizer, ...) -> SegmentSet``: sampled consecutive paragraph pairs,
  encoded by the model's own tokenizer as a text pair.
"""

from __future__ import annotations

import os
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..engine.wordmaps import segment_ids
from .errors import CorpusFormatError

# --------------------------------------------------------------------------- WikiText-2


@dataclass(frozen=True)
class Paragraph:
    """One detokenised WikiText paragraph; ``section`` is the innermost heading above it (None
    before the article's first section heading); ``raw`` the WikiText-tokenised line."""

    text: str
    section: str | None
    raw: str = ""


@dataclass(frozen=True)
class Article:
    title: str
    paragraphs: list[Paragraph] = field(default_factory=list)


_HEADING = re.compile(r"^ (=(?: =)*) (.*?) \1 ?$")
_ATTACH_LEFT = {",", ".", ";", ":", "!", "?", ")", "]", "}", "%", "'s", "'S", "n't", "N'T", "'re",
                "'ve", "'ll", "'d", "'m", "'RE", "'VE", "'LL", "'D", "'M"}
_ATTACH_RIGHT = {"(", "[", "{", "$", "£", "€", "#"}


def detokenize_wikitext(text: str) -> str:
    """Undo WikiText tokenisation: ``@-@``/``@,@``/``@.@`` joins, spaces before closing punctuation
    and clitics (``'s``, ``n't``, ...), after opening brackets and currency signs; straight double
    quotes alternate open/close within the paragraph."""
    text = text.strip()
    for a, b in ((" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", ".")):
        text = text.replace(a, b)
    out: list[str] = []
    glue_next = False
    quote_open = False
    for tok in text.split():
        if tok == '"':
            if quote_open:  # closing quote attaches to the previous word
                quote_open = False
                if out:
                    out[-1] += tok
                else:
                    out.append(tok)
                glue_next = False
            else:
                quote_open = True
                if glue_next and out:
                    out[-1] += tok
                else:
                    out.append(tok)
                glue_next = True
            continue
        if out and (glue_next or tok in _ATTACH_LEFT):
            out[-1] += tok
        else:
            out.append(tok)
        glue_next = tok in _ATTACH_RIGHT
    return " ".join(out)


def read_wikitext(path: str | os.PathLike) -> list[Article]:
    """Articles of a WikiText-2/103 raw file: `` = Title = `` starts an article, `` = = Sec = = ``
    (any depth) sets the section, blank lines are ignored, every other line is one paragraph."""
    path = Path(path)
    articles: list[Article] = []
    current: Article | None = None
    section: str | None = None
    with open(path, encoding="utf-8") as fh:
        for no, raw in enumerate(fh, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                continue
            m = _HEADING.match(line)
            if m:
                depth = m.group(1).count("=")
                title = detokenize_wikitext(m.group(2))
                if depth == 1:
                    current = Article(title=title, paragraphs=[])
                    articles.append(current)
                    section = None
                else:
                    section = title
                continue
            if current is None:
                raise CorpusFormatError(f"{path}:{no}: paragraph before the first ' = Title = ' "
                                        f"heading (expected a WikiText raw file)")
            current.paragraphs.append(Paragraph(text=detokenize_wikitext(line), section=section,
                                                raw=line.strip()))
    return articles


# --------------------------------------------------------------------------- segments


@dataclass(frozen=True)
class Segment:
    """A tokenised paragraph pair: paragraphs ``index`` and ``index + 1`` of ``article``.

    ``word_ids`` are the fast tokenizer's word indices, made unique across the pair (the second
    paragraph's continue after the first's last word in this encoding); None for special tokens.
    """

    article: str
    index: int
    input_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...]
    word_ids: tuple[int | None, ...]
    tokens: tuple[str, ...]
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class SegmentSet:
    segments: list[Segment]
    report: dict

    def __len__(self) -> int:
        return len(self.segments)

    def __iter__(self):
        return iter(self.segments)


def candidate_pairs(articles: list[Article]) -> list[tuple[int, int]]:
    """(article index, paragraph index) of every consecutive paragraph pair within one article."""
    return [(a, i) for a, art in enumerate(articles) for i in range(len(art.paragraphs) - 1)]


def make_segments(articles: list[Article], tokenizer, n: int = 1000, max_tokens: int = 128,
                  seed: int = 0, policy: str = "truncate") -> SegmentSet:
    """Sample ``n`` consecutive paragraph pairs and encode each as a text pair.

    Candidates are all pairs of consecutive paragraphs *within one article*; the two paragraphs may
    lie in different sections (section headings are skipped), since same-section pairs alone are
    too few short ones to reach 1,000 in WikiText-2 valid+test (see the data README). Each pair is
    encoded with ``tokenizer(p1, p2, ...)``, so the model's own special tokens and token-type ids
    are used. ``policy="truncate"``: ``truncation="longest_first"`` to ``max_tokens`` (as in BERT
    pre-training), pairs sampled from all candidates; ``policy="skip"``: pairs longer than
    ``max_tokens`` are dropped before sampling. ``n`` pairs are drawn without replacement with
    ``numpy.random.default_rng(seed)`` (all of them, recorded in the report, when fewer exist) and
    returned in corpus order. Same inputs and seed -> identical segments.
    """
    if policy not in ("truncate", "skip"):
        raise ValueError(f"policy must be 'truncate' or 'skip', got {policy!r}")
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError("make_segments needs a fast tokenizer (word_ids); load it with use_fast=True")
    cands = candidate_pairs(articles)
    firsts = [articles[a].paragraphs[i].text for a, i in cands]
    seconds = [articles[a].paragraphs[i + 1].text for a, i in cands]
    full_len = [len(ids) for ids in tokenizer(firsts, seconds, truncation=False, add_special_tokens=True,
                                              verbose=False)["input_ids"]] if cands else []
    too_long = [k for k, L in enumerate(full_len) if L > max_tokens]
    if policy == "skip":
        long_set = set(too_long)
        pool = [k for k in range(len(cands)) if k not in long_set]
    else:
        pool = list(range(len(cands)))
    rng = np.random.default_rng(seed)
    if len(pool) <= n:
        chosen = list(pool)
    else:
        chosen = sorted(int(x) for x in rng.choice(len(pool), size=n, replace=False))
        chosen = [pool[x] for x in chosen]
    segments: list[Segment] = []
    if chosen:
        enc = tokenizer([firsts[k] for k in chosen], [seconds[k] for k in chosen],
                        truncation="longest_first" if policy == "truncate" else False,
                        max_length=max_tokens if policy == "truncate" else None,
                        return_token_type_ids=True)
        for row, k in enumerate(chosen):
            ids = enc["input_ids"][row]
            wids = enc.word_ids(row)
            seq = enc.sequence_ids(row)
            first_words = [w for w, s in zip(wids, seq, strict=True) if s == 0 and w is not None]
            offset = max(first_words) + 1 if first_words else 0
            uniq = tuple(None if w is None else (w if s == 0 else w + offset)
                         for w, s in zip(wids, seq, strict=True))
            tt = enc.get("token_type_ids") if "token_type_ids" in tokenizer.model_input_names else None
            a, i = cands[k]
            segments.append(Segment(
                article=articles[a].title, index=i, input_ids=tuple(ids),
                token_type_ids=(tuple(tt[row]) if tt is not None
                                else tuple(segment_ids(ids, tokenizer.sep_token_id).tolist())),
                word_ids=uniq, tokens=tuple(tokenizer.convert_ids_to_tokens(ids)),
                truncated=full_len[k] > max_tokens))
    lengths = [len(s) for s in segments]
    report = {
        "policy": policy, "max_tokens": max_tokens, "seed": seed, "n_requested": n,
        "candidates": len(cands),
        "over_max_tokens": len(too_long),
        "eligible": len(pool),
        "sampled": len(segments),
        "fewer_than_requested": len(segments) < n,
        "truncated": sum(s.truncated for s in segments),
        "skipped": len(too_long) if policy == "skip" else 0,
        "mean_length": float(np.mean(lengths)) if lengths else 0.0,
        "median_length": float(statistics.median(lengths)) if lengths else 0.0,
        "max_length": max(lengths) if lengths else 0,
    }
    return SegmentSet(segments=segments, report=report)


def wikipedia_segments(tokenizer, splits: str = "valid,test", n: int = 1000,
                       max_tokens: int = 128, seed: int = 0, policy: str = "truncate",
                       data_dir=None) -> tuple[list[Article], SegmentSet]:
    """The Section 3 input set: WikiText-2 articles of ``splits`` (comma-separated) and the
    seeded sample of paragraph-pair segments drawn from them (:func:`make_segments`).

    Notebooks 01 and 05 both call this with the same arguments, so they analyse the same
    segments and share one attention cache. Missing files raise ``DataMissingError`` with the
    command that fetches them."""
    from .manifest import require

    articles: list[Article] = []
    for split in splits.split(","):
        path = require(f"wikipedia/wikitext-2-raw/wiki.{split.strip()}.raw", data_dir=data_dir)
        articles += read_wikitext(path)
    return articles, make_segments(articles, tokenizer, n=n, max_tokens=max_tokens, seed=seed,
                                   policy=policy)
