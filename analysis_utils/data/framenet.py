"""FrameNet 1.7 exemplar sentences for Kovaleva et al. (2019), Section 4.2 (Figures 3-4).

Three layers:

- :func:`corpus_root`: the folder NLTK's ``FramenetCorpusReader`` reads. The data bundle keeps
  the lexical-unit (LU) files packed in ``framenet-1.7/lu.tar.xz`` (and the data directory may be
  read-only), so the NLTK layout is assembled in the cache, at
  ``paths.cache_dir()/framenet-1.7/nltk-<sha256 of lu.tar.xz, 12 hex>/``: the four index files
  and ``frame/*.xml`` copied, ``lu/*.xml`` unpacked. Every data file is obtained through
  ``manifest.require`` (size and sha256 checked), and every unpacked file is checked against
  ``lu_manifest.tsv`` (size always, sha256 when ``verify_hashes``). The folder is built in a
  ``.partial-*`` sibling, completed by a ``COMPLETE`` marker (JSON) and then renamed into place,
  so an interrupted unpack never reads as complete; a folder without a valid marker, or one
  that fails verification, is rebuilt.
- :func:`read_exemplars`: every exemplar sentence of every LU, read with NLTK's reader and
  tokenised with NLTK's Treebank-style ``NLTKWordTokenizer`` (no downloaded model), with its
  target and first-layer frame-element spans converted to token indices (:class:`Exemplar`).
  NLTK takes minutes over the 13,572 LU files, so the exemplars are cached beside the folder
  (``exemplars-<key>.json.gz``, keyed by the data's sha256s and NLTK's version).
- :func:`select_sentences`: the sentence filter, in one of the :data:`READINGS`: ``"exact"``,
  the authors' notebook (473 sentences on FrameNet 1.7); ``"broad"``, the same rules with every
  Core element in place of the frames' core sets; ``"literal"``, the paper's wording applied
  to the linked Core elements only. :class:`Rules` spells out each rule, :func:`keep_reason`
  says which one drops a sentence and :class:`Selection` counts what each step leaves.
- :func:`read_selections`: the named readings' selections, each cached beside the exemplars, so
  that a warm run (notebook 06) holds a few thousand kept sentences, not all 82,661 exemplars.

Malformed input raises :class:`CorpusFormatError` naming the file, with the line of an XML
syntax error or the sentence of a bad label, e.g. ``.../lu/lu8776.xml: sentence 1025376: frame
element 'Experience' is not defined by frame 'Emotion_directed'``. Labels past the end of
their sentence (a handful in FrameNet 1.7 itself) are not an error: such sentences are
counted and dropped (the ``"spans inside the text"`` step).
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import json
import os
import re
import shutil
import socket
import tarfile
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths
from ..engine import atomic
from . import manifest
from .errors import CorpusFormatError

__all__ = ["CorpusFormatError", "DATASET", "MAX_TOKENS", "MAX_FE_TOKENS", "MIN_GAP", "READINGS",
           "STEPS", "Rules", "FrameElement", "Exemplar", "LinkedSentence", "Selection",
           "corpus_root", "open_reader", "tokenize", "iter_exemplars", "read_exemplars",
           "keep_reason", "select_sentences", "read_selections", "read_framenet"]

DATASET = "framenet-1.7"
INDEX_FILES = ("frRelation.xml", "frameIndex.xml", "luIndex.xml", "semTypes.xml")
LU_ARCHIVE = f"{DATASET}/lu.tar.xz"
LU_MANIFEST = f"{DATASET}/lu_manifest.tsv"
MARKER = "COMPLETE"
# Bump when the assembled folder's layout changes: an old folder is then rebuilt, not reused.
LAYOUT_VERSION = 1

# The authors' filter (Section 4.2): sentences of at most 12 tokens, frame elements of at most
# 3 tokens, at least 2 tokens between the target and every element token.
MAX_TOKENS = 12
MAX_FE_TOKENS = 3
MIN_GAP = 2

_LU_MEMBER = re.compile(r"^lu/lu\d+\.xml$")


# --------------------------------------------------------------------------- the corpus root


def _frame_files(man=None) -> list[str]:
    """Manifest paths of the frame definitions, ``framenet-1.7/frame/<Name>.xml``."""
    return sorted(e.path for e in manifest.manifest_entries(DATASET, man)
                  if e.path.startswith(f"{DATASET}/frame/") and e.path.endswith(".xml"))


def _entries(man=None) -> dict[str, manifest.FileEntry]:
    return {e.path: e for e in manifest.manifest_entries(DATASET, man)}


def _lu_table(path: Path) -> dict[str, tuple[str, int]]:
    """``lu_manifest.tsv`` -> {``lu/luN.xml``: (sha256, size)} of the unpacked LU files."""
    out: dict[str, tuple[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh, delimiter="\t")
        header = next(rows, None)
        if not header or header[:3] != ["path", "sha256", "bytes"]:
            raise CorpusFormatError(f"{path}:1: expected the header 'path, sha256, bytes, ...', "
                                    f"found {header!r}")
        for lineno, row in enumerate(rows, start=2):
            if len(row) < 3 or not _LU_MEMBER.match(row[0]) or not row[2].isdigit():
                raise CorpusFormatError(f"{path}:{lineno}: expected 'lu/luN.xml<TAB>sha256<TAB>"
                                        f"bytes', found {row[:3]!r}")
            out[row[0]] = (row[1], int(row[2]))
    return out


def _expected_files(data_dir, man) -> tuple[dict[str, Path], dict[str, tuple[str, int]]]:
    """(files to copy: rel path in the root -> checked data path, every file of the root ->
    (sha256, size)). Requiring them here is what checks the data directory."""
    index = _entries(man)
    copies: dict[str, Path] = {}
    expected: dict[str, tuple[str, int]] = {}
    for rel in [f"{DATASET}/{name}" for name in INDEX_FILES] + _frame_files(man):
        copies[rel[len(DATASET) + 1:]] = manifest.require(rel, data_dir, manifest=man)
        expected[rel[len(DATASET) + 1:]] = (index[rel].sha256, index[rel].size)
    table = manifest.require(LU_MANIFEST, data_dir, manifest=man)
    expected.update(_lu_table(table))
    return copies, expected


def _problems(root: Path, expected: dict[str, tuple[str, int]], verify_hashes: bool) -> list[str]:
    """What is wrong with an assembled root (empty when it is complete and intact)."""
    bad = []
    for rel, (sha, size) in expected.items():
        p = root / rel
        try:
            st = p.stat()
        except FileNotFoundError:
            bad.append(f"{rel}: missing")
            continue
        if st.st_size != size:
            bad.append(f"{rel}: {st.st_size} bytes, expected {size}")
        elif verify_hashes and manifest.sha256_file(p) != sha:
            bad.append(f"{rel}: sha256 differs from the manifest")
    return bad


def _marker_content(archive_sha: str, table_sha: str, n_files: int) -> dict:
    return {"layout": LAYOUT_VERSION, "lu_archive_sha256": archive_sha,
            "lu_manifest_sha256": table_sha, "files": n_files}


def _read_marker(root: Path) -> dict | None:
    try:
        return json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(parent: Path) -> None:
    """Delete ``.partial-*`` folders of unpacks that died (their process is gone on this host)
    and ``.stale-*`` folders set aside earlier. A live unpack's folder is left alone."""
    host = socket.gethostname()
    for p in parent.glob(".partial-*"):
        parts = p.name.split("-")
        # .partial-<host>-<pid>-<hex>; hostnames may contain dashes
        try:
            pid = int(parts[-2])
        except (IndexError, ValueError):
            continue
        if "-".join(parts[1:-2]) == host and not _pid_alive(pid):
            shutil.rmtree(p, ignore_errors=True)
    for p in parent.glob(".stale-*"):
        shutil.rmtree(p, ignore_errors=True)


def _set_aside(root: Path) -> None:
    """Move a broken root out of the way atomically, then delete it."""
    aside = root.with_name(f".stale-{root.name}-{uuid.uuid4().hex[:8]}")
    with contextlib.suppress(FileNotFoundError):
        os.rename(root, aside)
        shutil.rmtree(aside, ignore_errors=True)


def _unpack_lus(archive: Path, dest: Path, expected: dict[str, tuple[str, int]]) -> None:
    """Extract ``lu/luN.xml`` members of ``archive`` into ``dest`` (regular files only; any other
    member is an error naming the archive)."""
    with tarfile.open(archive, "r:xz") as tar:
        for member in tar:
            if member.isdir() and member.name.rstrip("/") == "lu":
                continue
            if not (member.isfile() and _LU_MEMBER.match(member.name)):
                raise CorpusFormatError(f"{archive}: unexpected member {member.name!r} (only "
                                        "regular files lu/luN.xml belong in it)")
            if member.name not in expected:
                raise CorpusFormatError(f"{archive}: member {member.name!r} is not listed in "
                                        f"{LU_MANIFEST}")
            # Names are checked above; the bytes are written by hand, so nothing but a plain
            # file under dest/lu/ can come out of the archive (no links, modes or owners).
            src = tar.extractfile(member)
            target = dest / member.name
            target.parent.mkdir(parents=True, exist_ok=True)
            with src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)


def corpus_root(data_dir=None, cache_dir=None, verify_hashes: bool = True, data_manifest=None,
                rebuild: bool = False) -> Path:
    """The NLTK ``framenet_v17`` folder assembled in the cache (built on first use, then reused).

    Every data file is checked through ``manifest.require`` on each call (sha256 once per
    process). A folder is reused only when its ``COMPLETE`` marker names the same ``lu.tar.xz``
    and ``lu_manifest.tsv`` (sha256) and every expected file is there with its size; with
    ``verify_hashes`` the sha256 of every file is checked too (about 320 MB). Otherwise the
    folder is set aside and rebuilt. Building unpacks into ``.partial-<host>-<pid>-<hex>`` beside
    it, verifies every file (sha256), writes the marker and renames the folder into place;
    an interrupted build leaves only a ``.partial-*`` folder, never read and removed by a later
    call once its process is gone. Returns the folder's path.

    ``data_manifest``: the manifest the files are checked against (default: the packaged
    ``data_manifest.json``; a path or an already-loaded dict also work, as in the tests).
    """
    man = data_manifest  # None (the packaged manifest), a path or a dict; require() caches by path
    archive = manifest.require(LU_ARCHIVE, data_dir, manifest=man)
    table = manifest.require(LU_MANIFEST, data_dir, manifest=man)
    index = _entries(man)
    archive_sha = index[LU_ARCHIVE].sha256
    copies, expected = _expected_files(data_dir, man)
    want = _marker_content(archive_sha, index[LU_MANIFEST].sha256, len(expected))

    parent = paths.cache_dir(cache_dir) / DATASET
    root = parent / f"nltk-{archive_sha[:12]}"
    if root.exists() and not rebuild:
        if _read_marker(root) == want and not _problems(root, expected, verify_hashes):
            return root
    parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(parent)
    if root.exists():
        _set_aside(root)

    tmp = parent / f".partial-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        for rel, src in copies.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, tmp / rel)
        _unpack_lus(archive, tmp, expected)
        bad = _problems(tmp, expected, verify_hashes=True)
        if bad:
            raise manifest.DataCorruptError(
                f"{archive} unpacked to files that do not match {table}: {bad[:5]}"
                + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
                + f". Re-fetch the dataset: {manifest.fix_hint(DATASET)}")
        (tmp / MARKER).write_text(json.dumps(want, indent=1) + "\n", encoding="utf-8")
        try:
            os.rename(tmp, root)
        except OSError:
            # another process finished first: use its folder if it is complete
            if _read_marker(root) == want and not _problems(root, expected, False):
                shutil.rmtree(tmp, ignore_errors=True)
                return root
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return root


def open_reader(data_dir=None, cache_dir=None, verify_hashes: bool = True, data_manifest=None):
    """NLTK's ``FramenetCorpusReader`` over :func:`corpus_root` (which it builds or reuses).

    NLTK 3.10+ reads only under ``nltk.data.path``, so the assembled folder is appended to it
    (once). Index files that do not parse raise :class:`CorpusFormatError` naming the file.
    """
    import nltk
    from nltk.corpus.reader.framenet import FramenetCorpusReader

    root = corpus_root(data_dir, cache_dir, verify_hashes=verify_hashes,
                       data_manifest=data_manifest)
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))
    fn = FramenetCorpusReader(str(root), list(INDEX_FILES))
    # Build the indexes now, so that a malformed index file is reported by name.
    for name, build in (("frameIndex.xml", fn.frame_ids_and_names),
                        ("luIndex.xml", fn.lu_ids_and_names),
                        ("frRelation.xml", fn.frame_relation_types),
                        ("semTypes.xml", fn.semtypes)):
        with _names_file(root / name, root):
            build()
    return fn


def _xml_problem(path: Path) -> tuple[int, str] | None:
    """(line, message) of the first XML syntax error in ``path`` (None when it parses)."""
    import xml.etree.ElementTree as ET

    try:
        ET.parse(path)
    except ET.ParseError as exc:
        return exc.position[0], str(exc).split(":")[0]
    except OSError:
        return None
    return None


@contextlib.contextmanager
def _names_file(path: Path, root: Path):
    """Re-raise any failure of the NLTK call inside the block as ``CorpusFormatError`` naming
    ``path`` (and its line, for an XML syntax error) and where the file came from. NLTK reports
    malformed FrameNet XML as assertion, key, value, type or parse errors."""
    try:
        yield
    except (CorpusFormatError, manifest.DataMissingError):
        raise
    except Exception as exc:  # NLTK's errors for a malformed file have no common base class
        rel = path.relative_to(root).as_posix()
        origin = (f"unpacked from the data directory's {LU_ARCHIVE}" if rel.startswith("lu/")
                  else f"a copy of the data directory's {DATASET}/{rel}")
        where = _xml_problem(path)
        if where is not None:
            msg = f"{path}:{where[0]}: {where[1]} ({origin})"
        else:
            msg = f"{path}: {type(exc).__name__}: {exc} ({origin})"
        raise CorpusFormatError(msg) from exc


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class FrameElement:
    """One overt label of a sentence's first frame-element layer.

    ``chars``: ``[start, end)`` character span in the sentence text; ``tokens``: indices of the
    tokens it overlaps (a label may cover part of a token, e.g. ``Mr`` of ``Mr.``);
    ``core_type``: the frame's ``coreType`` for it (``Core``, ``Core-Unexpressed``,
    ``Peripheral``, ``Extra-Thematic``); ``in_core_set``: it belongs to one of the frame's
    ``FEcoreSets`` (groups of interchangeable core elements, which many frames do not define).
    """

    name: str
    core_type: str
    in_core_set: bool
    chars: tuple[int, int]
    tokens: tuple[int, ...]


@dataclass(frozen=True)
class Exemplar:
    """One LU exemplar sentence, tokenised with NLTK's Treebank-style word tokenizer.

    ``words``: the tokens as substrings of ``text`` (``token_chars`` their ``[start, end)``
    spans; quotes stay ``"``, where ``NLTKWordTokenizer.tokenize`` would write ````/''``).
    ``target_chars``: the Target layer's spans, in order; ``targets``: the token indices each
    overlaps. ``elements``: the overt labels of the first FE layer (null instantiations have no
    span and are left out). ``annotated``: the sentence has a frame annotation (a Target and an
    FE layer). ``spans_in_text``: every Target and FE span lies inside ``text`` (a handful of
    FrameNet 1.7 sentences have a label past the end of their text). ``source``: the LU file,
    relative to the corpus root.
    """

    sent_id: int
    lu_id: int
    lu_name: str
    frame: str
    text: str
    words: tuple[str, ...]
    token_chars: tuple[tuple[int, int], ...]
    target_chars: tuple[tuple[int, int], ...]
    targets: tuple[tuple[int, ...], ...]
    elements: tuple[FrameElement, ...]
    annotated: bool
    spans_in_text: bool
    source: str

    def __len__(self) -> int:
        return len(self.words)


_TOKENIZER = None


def tokenize(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` character spans of NLTK's ``NLTKWordTokenizer`` tokens of ``text``
    (the Treebank-style tokenizer of ``nltk.word_tokenize``, without its sentence splitter,
    which needs a downloaded model)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        from nltk.tokenize import NLTKWordTokenizer

        _TOKENIZER = NLTKWordTokenizer()
    return list(_TOKENIZER.span_tokenize(text))


def _overlapping(spans: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, ...]:
    return tuple(i for i, (a, b) in enumerate(spans) if a < end and start < b)


def _make_exemplar(sent_id: int, lu_id: int, lu_name: str, frame: str, text: str,
                   target_chars: Sequence[tuple[int, int]], labels: Sequence[tuple],
                   annotated: bool, source: str,
                   spans: Sequence[Sequence[int]] | None = None) -> Exemplar:
    """The one constructor of :class:`Exemplar` (from NLTK and from the disk cache alike).
    ``labels``: ``(start, end, name, core_type, in_core_set)`` of the first FE layer;
    ``spans``: the token spans when already known (the cache), else :func:`tokenize`."""
    spans = tokenize(text) if spans is None else [(int(a), int(b)) for a, b in spans]
    target_chars = tuple((int(a), int(b)) for a, b in target_chars)
    elements = tuple(FrameElement(name=name, core_type=core_type, in_core_set=bool(in_set),
                                  chars=(int(a), int(b)), tokens=_overlapping(spans, a, b))
                     for a, b, name, core_type, in_set in labels)
    in_text = all(0 <= a < b <= len(text) for a, b in [*target_chars, *(e.chars for e in elements)])
    return Exemplar(sent_id=int(sent_id), lu_id=int(lu_id), lu_name=lu_name, frame=frame,
                    text=text, words=tuple(text[a:b] for a, b in spans), token_chars=tuple(spans),
                    target_chars=target_chars,
                    targets=tuple(_overlapping(spans, a, b) for a, b in target_chars),
                    elements=elements, annotated=annotated, spans_in_text=in_text, source=source)


def _from_nltk(ex, lu, frame_fes: dict, core_set: set[str], path: Path, source: str) -> Exemplar:
    """An NLTK exemplar sentence (AttrDict) -> :class:`Exemplar`. A sentence without text or
    with an element its frame does not define raises CorpusFormatError naming ``path``."""
    text = ex.get("text")
    if not isinstance(text, str):
        raise CorpusFormatError(f"{path}: sentence {ex.get('ID')}: no <text> element")
    annotated = "Target" in ex and "FE" in ex
    labels = []
    for a, b, name in (ex.FE[0] if annotated else ()):
        fe = frame_fes.get(name)
        if fe is None:
            raise CorpusFormatError(f"{path}: sentence {ex.ID}: frame element {name!r} is not "
                                    f"defined by frame {lu.frame.name!r}")
        labels.append((a, b, name, fe.coreType, name in core_set))
    return _make_exemplar(ex.ID, lu.ID, lu.name, lu.frame.name, text,
                          ex.Target if annotated else (), labels, annotated, source)


def iter_exemplars(fn) -> Iterator[Exemplar]:
    """Every exemplar sentence of every LU of an open reader (:func:`open_reader`): frames in
    ID order, their LUs in ID order, sentences in file order. A frame or LU file NLTK cannot
    read raises :class:`CorpusFormatError` naming it."""
    root = Path(str(fn.root))
    for fid, fname in sorted(fn.frame_ids_and_names().items()):
        with _names_file(root / "frame" / f"{fname}.xml", root):
            frame = fn.frame_by_id(fid)
            core_set = {fe.name for group in frame.FEcoreSets for fe in group}
            lus = sorted(frame.lexUnit.values(), key=lambda lu: lu.ID)
        for lu in lus:
            source = f"lu/lu{lu.ID}.xml"
            with _names_file(root / source, root):
                exemplars = list(lu.exemplars)
            for ex in exemplars:
                yield _from_nltk(ex, lu, frame.FE, core_set, root / source, source)


# Bump when Exemplar or its construction changes: older cached exemplar files are then ignored.
EXEMPLAR_FORMAT = 2


def _exemplar_cache_key(man) -> str:
    """sha256 over what the exemplars depend on: every file of the dataset (manifest sha256),
    NLTK's version (reader and tokenizer) and :data:`EXEMPLAR_FORMAT`. The version is read
    from the installed package's metadata: importing NLTK costs about 190 MB of memory, which a
    warm :func:`read_selections` would otherwise pay for nothing."""
    from importlib import metadata

    files = sorted((e.path, e.sha256) for e in manifest.manifest_entries(DATASET, man))
    blob = json.dumps({"format": EXEMPLAR_FORMAT, "nltk": metadata.version("nltk"),
                       "files": files})
    return hashlib.sha256(blob.encode()).hexdigest()


def _to_json(ex: Exemplar) -> list:
    return [ex.sent_id, ex.lu_id, ex.lu_name, ex.frame, ex.text, ex.target_chars,
            [(*e.chars, e.name, e.core_type, e.in_core_set) for e in ex.elements],
            ex.annotated, ex.source, ex.token_chars]


def _write_json_gz(path: Path, payload) -> None:
    """Write gzipped JSON atomically: a temp file beside ``path``, then ``os.replace``."""
    with atomic.replacing(path) as tmp, open(tmp, "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(json.dumps(payload, separators=(",", ":")).encode("utf-8"))


def _read_json_gz(path: Path):
    try:
        with gzip.open(path, "rb") as gz:
            return json.loads(gz.read().decode("utf-8"))
    except (OSError, EOFError, ValueError):
        return None


def read_exemplars(data_dir=None, cache_dir=None, use_cache: bool = True,
                   verify_hashes: bool = True, data_manifest=None) -> list[Exemplar]:
    """All LU exemplar sentences of FrameNet 1.7 (82,661 in the data bundle, whose LU files keep
    only sentences of at most 20 whitespace tokens), as :class:`Exemplar`, in
    :func:`iter_exemplars` order.

    Reading them through NLTK takes minutes (and about 2 GB of memory), so the result is cached
    as ``exemplars-<key>.json.gz`` beside the assembled corpus, keyed by the dataset's manifest
    sha256s, NLTK's version and :data:`EXEMPLAR_FORMAT`; written atomically, and an unreadable
    cache file is rebuilt. The data files are checked through ``manifest.require`` on every call,
    cache hit or not. ``use_cache=False`` reads through NLTK and writes nothing.
    """
    cached = None
    if use_cache:
        for e in manifest.manifest_entries(DATASET, data_manifest):
            manifest.require(e.path, data_dir, manifest=data_manifest)
        cached = (paths.cache_dir(cache_dir) / DATASET
                  / f"exemplars-{_exemplar_cache_key(data_manifest)[:16]}.json.gz")
        rows = _read_json_gz(cached) if cached.is_file() else None
        if isinstance(rows, list):
            try:
                return [_make_exemplar(*row) for row in rows]
            except (TypeError, ValueError):
                pass  # written by other code: rebuild it below
    fn = open_reader(data_dir, cache_dir, verify_hashes=verify_hashes,
                     data_manifest=data_manifest)
    exemplars = list(iter_exemplars(fn))
    if cached is not None:
        _write_json_gz(cached, [_to_json(ex) for ex in exemplars])
    return exemplars


# --------------------------------------------------------------------------- the filter


@dataclass(frozen=True)
class Rules:
    """One reading of Kovaleva et al.'s sentence filter (Section 4.2).

    - ``max_tokens``: at most this many tokens in the sentence (12);
    - ``single_target_span``: drop sentences whose Target layer has several spans
      (discontinuous targets such as *hush ... up*). The authors' count (473) is reached only
      when such sentences are kept and their first span is the target (3 sentences in
      FrameNet 1.7); requiring one span gives 470;
    - the target (the first Target span) must be exactly one token;
    - ``max_fe_tokens``: every constrained frame element has at most this many tokens (3);
    - ``min_gap``: at least this many tokens lie between the target and every token of every
      constrained frame element (2: "the linked objects are [not] less than two tokens
      apart"; the paper's example *He was becoming agitated* has exactly two);
    - ``core``: which elements are the linked *core* elements: ``"core_sets"`` (members of the
      frame's ``FEcoreSets``, the authors' notebook) or ``"core"`` (every element whose
      ``coreType`` is ``Core``); a sentence needs at least one;
    - ``constrain``: which elements the length and gap rules apply to: ``"all"`` (every label of
      the first FE layer, core or not, as the authors did) or ``"linked"`` (the linked core
      elements only, the paper's wording read literally).
    """

    core: str = "core_sets"
    constrain: str = "all"
    max_tokens: int = MAX_TOKENS
    max_fe_tokens: int = MAX_FE_TOKENS
    min_gap: int = MIN_GAP
    single_target_span: bool = False

    def __post_init__(self):
        if self.core not in ("core_sets", "core"):
            raise ValueError(f"core must be 'core_sets' or 'core', not {self.core!r}")
        if self.constrain not in ("all", "linked"):
            raise ValueError(f"constrain must be 'all' or 'linked', not {self.constrain!r}")

    def linked(self, ex: Exemplar) -> tuple[FrameElement, ...]:
        """The elements of ``ex`` that count as linked core elements under this reading."""
        if self.core == "core_sets":
            return tuple(e for e in ex.elements if e.in_core_set)
        return tuple(e for e in ex.elements if e.core_type == "Core")


READINGS: dict[str, Rules] = {
    # The authors' notebook: 473 sentences of FrameNet 1.7.
    "exact": Rules(),
    # The same rules with every Core element as a linked element instead of the core sets.
    "broad": Rules(core="core"),
    # The paper's sentences taken at their word: only the linked Core elements must be short
    # and apart from the target; other elements may be long or adjacent.
    "literal": Rules(core="core", constrain="linked"),
}

# The steps of the filter, in the order they are applied (Selection.funnel counts them).
STEPS = ("exemplars", "annotated", "spans inside the text", "short sentence",
         "one target span", "one-token target", "short elements", "elements apart",
         "linked core element")


def _rules(reading: str | Rules) -> Rules:
    if isinstance(reading, Rules):
        return reading
    if reading not in READINGS:
        raise ValueError(f"unknown reading {reading!r}: one of {sorted(READINGS)} or a Rules")
    return READINGS[reading]


def keep_reason(ex: Exemplar, reading: str | Rules = "exact") -> str | None:
    """None when ``ex`` passes the filter, else the name of the first step of :data:`STEPS`
    that drops it. See :class:`Rules` for the steps."""
    r = _rules(reading)
    if not ex.annotated or not ex.target_chars:
        return "annotated"
    if not ex.spans_in_text:
        return "spans inside the text"
    if len(ex.words) > r.max_tokens:
        return "short sentence"
    if r.single_target_span and len(ex.target_chars) != 1:
        return "one target span"
    if len(ex.targets[0]) != 1:
        return "one-token target"
    target = ex.targets[0][0]
    linked = r.linked(ex)
    constrained = ex.elements if r.constrain == "all" else linked
    if any(len(e.tokens) > r.max_fe_tokens for e in constrained):
        return "short elements"
    if any(abs(i - target) <= r.min_gap for e in constrained for i in e.tokens):
        return "elements apart"
    if not linked:
        return "linked core element"
    return None


@dataclass(frozen=True)
class LinkedSentence:
    """A kept sentence: the exemplar, its target token and its linked core elements.

    ``target``: index of the target token in ``words``; ``linked``: the linked core elements
    (each with its ``tokens``); ``linked_tokens``: their tokens, sorted, without repeats.
    """

    exemplar: Exemplar
    target: int
    linked: tuple[FrameElement, ...]

    @property
    def words(self) -> tuple[str, ...]:
        return self.exemplar.words

    @property
    def linked_tokens(self) -> tuple[int, ...]:
        return tuple(sorted({i for e in self.linked for i in e.tokens}))

    @property
    def sent_id(self) -> int:
        return self.exemplar.sent_id

    @property
    def frame(self) -> str:
        return self.exemplar.frame

    @property
    def lu_name(self) -> str:
        return self.exemplar.lu_name


@dataclass
class Selection:
    """The sentences one reading keeps, and how many each step of the filter left.

    ``funnel``: {step: sentences left after it}, steps as in :data:`STEPS` (``exemplars`` is the
    number read). ``counts()``: sentences, frames, LUs, linked elements and target-token pairs.
    """

    reading: str
    rules: Rules
    sentences: list[LinkedSentence]
    funnel: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.sentences)

    def counts(self) -> dict[str, int]:
        s = self.sentences
        return {"sentences": len(s),
                "frames": len({x.frame for x in s}),
                "lexical_units": len({x.exemplar.lu_id for x in s}),
                "linked_elements": sum(len(x.linked) for x in s),
                "linked_tokens": sum(len(x.linked_tokens) for x in s)}

    def to_frame(self):
        """One row per sentence: sent_id, lu, frame, text, words, target (index and word),
        linked elements (names) and linked token indices."""
        import pandas as pd

        return pd.DataFrame([{
            "sent_id": x.sent_id, "lu_id": x.exemplar.lu_id, "lu": x.lu_name, "frame": x.frame,
            "text": x.exemplar.text.strip(), "n_words": len(x.words), "target": x.target,
            "target_word": x.words[x.target],
            "linked": ", ".join(e.name for e in x.linked),
            "linked_tokens": " ".join(map(str, x.linked_tokens))} for x in self.sentences])


def select_sentences(exemplars: Iterable[Exemplar], reading: str | Rules = "exact") -> Selection:
    """The exemplars a reading keeps (``"exact"``, ``"broad"``, ``"literal"`` or a
    :class:`Rules`), in input order, with the filter's funnel counts."""
    r = _rules(reading)
    name = reading if isinstance(reading, str) else "custom"
    dropped: Counter[str] = Counter()
    kept = []
    n = 0
    for ex in exemplars:
        n += 1
        why = keep_reason(ex, r)
        if why is not None:
            dropped[why] += 1
            continue
        kept.append(LinkedSentence(ex, ex.targets[0][0], r.linked(ex)))
    funnel = {"exemplars": n}
    left = n
    for step in STEPS[1:]:
        left -= dropped[step]
        funnel[step] = left
    return Selection(name, r, kept, funnel)


#: Version of the cached selections' layout (a change rebuilds them).
SELECTION_FORMAT = 1


def _selection_path(reading: str, man, cache_dir) -> Path:
    """Where one named reading's kept sentences are cached: keyed by the exemplars' key
    (data files, NLTK, :data:`EXEMPLAR_FORMAT`), the reading's rules and
    :data:`SELECTION_FORMAT`."""
    blob = json.dumps({"exemplars": _exemplar_cache_key(man), "reading": reading,
                       "rules": repr(READINGS[reading]), "format": SELECTION_FORMAT})
    key = hashlib.sha256(blob.encode()).hexdigest()[:16]
    return paths.cache_dir(cache_dir) / DATASET / f"selection-{reading}-{key}.json.gz"


def _load_selection(reading: str, path: Path) -> Selection | None:
    """A cached selection, or None when it is missing, unreadable or no longer passes its
    reading's filter (then it is rebuilt)."""
    payload = _read_json_gz(path) if path.is_file() else None
    if not isinstance(payload, dict):
        return None
    r = READINGS[reading]
    try:
        kept = [_make_exemplar(*row) for row in payload["sentences"]]
        funnel = {str(k): int(v) for k, v in payload["funnel"].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if list(funnel) != list(STEPS) or funnel[STEPS[-1]] != len(kept) or any(
            keep_reason(ex, r) is not None for ex in kept):
        return None
    return Selection(reading, r, [LinkedSentence(ex, ex.targets[0][0], r.linked(ex))
                                  for ex in kept], funnel)


def read_selections(readings: Sequence[str] = tuple(READINGS), data_dir=None, cache_dir=None,
                    data_manifest=None) -> dict[str, Selection]:
    """:func:`select_sentences` for each named reading, cached per reading beside the
    exemplars (``selection-<reading>-<key>.json.gz``, written atomically): a warm call reads
    only the kept sentences (a few thousand) instead of all 82,661 exemplars, which hold about
    650 MB in memory and keep most of it resident after they are dropped (Python's allocator
    cannot return the memory pages the kept sentences still share). When any reading is
    missing or unreadable, :func:`read_exemplars` runs once for all of them. The data files are
    checked through ``manifest.require`` on every call. Returns {reading: Selection}."""
    for name in readings:
        _rules(name)  # an unknown reading fails here, before anything is read
    for e in manifest.manifest_entries(DATASET, data_manifest):
        manifest.require(e.path, data_dir, manifest=data_manifest)
    where = {name: _selection_path(name, data_manifest, cache_dir) for name in readings}
    out = {name: _load_selection(name, path) for name, path in where.items()}
    missing = [name for name, sel in out.items() if sel is None]
    if missing:
        exemplars = read_exemplars(data_dir, cache_dir, data_manifest=data_manifest)
        for name in missing:
            sel = out[name] = select_sentences(exemplars, name)
            _write_json_gz(where[name], {
                "funnel": sel.funnel,
                "sentences": [_to_json(ls.exemplar) for ls in sel.sentences]})
    return out


def read_framenet(reading: str | Rules = "exact", data_dir=None, cache_dir=None) -> Selection:
    """:func:`read_exemplars` then :func:`select_sentences`: the 473 sentences of the paper for
    ``reading="exact"`` on FrameNet 1.7."""
    return select_sentences(read_exemplars(data_dir, cache_dir), reading)
