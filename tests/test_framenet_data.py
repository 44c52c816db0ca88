"""FrameNet reader and the Kovaleva et al. Section 4.2 filter (analysis_utils.data.framenet).

The fixture (tests/fixtures/framenet/framenet-1.7, NLTK's framenet_v17 XML format) holds two
frames and one LU each. Its sentences and what each one tests (token indices 0-based; the
authors' rules: at most 12 tokens, a one-token target, every element of at most 3 tokens and
with at least 2 tokens between it and the target, a linked core element):

frame Emotion_directed, LU agitated.a (core sets {Stimulus, Topic}, {State, Experiencer};
Event is Core but in no core set, State is Core-Unexpressed, Degree is Peripheral):
  1  He was becoming agitated .                Experiencer He (0), target 3: kept
  2  She got agitated .                        Experiencer at 0, target 2: too close
  3  The old man ... very agitated today .     15 tokens: too long
  4  The nervous old man was agitated .        Experiencer of 4 tokens: too long an element
  5  The news made us all agitated .           Event (0-1) only: no core-set element (broad: kept)
  6  Tom was very much agitated , so agitated . two target spans, the first is used: kept
  7  Mary got worked up again .                target "worked up" is 2 tokens
  8  Ann was agitated .                        Target label past the end of the text
  9  Nobody was agitated .                     no frame annotation
  10 Sue was very agitated .                   Degree "very" next to the target (literal: kept)
  11 " I really am agitated , " she said .     Experiencer I (1), target 4: kept; words keep '"'
  12 Their mood soon turned agitated .         State (core set, Core-Unexpressed): exact only
frame Body_movement (no core sets), LU stretch.v:
  21 He sat up and stretched .                 Agent He (0), target 4: broad only
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from analysis_utils import paths
from analysis_utils.data import framenet as fnd
from analysis_utils.data import manifest
from analysis_utils.data.treebank import CorpusFormatError

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "framenet" / "framenet-1.7"
DS = "framenet-1.7"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _pack_lus(lu_dir: Path, archive: Path) -> None:
    """lu/luN.xml -> lu.tar.xz, the layout of the data bundle (a directory entry first)."""
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(lu_dir, arcname="lu", recursive=False)
        for f in sorted(lu_dir.iterdir()):
            tar.add(f, arcname=f"lu/{f.name}")


def _write_manifest(data: Path) -> dict:
    """A manifest dict listing every file of ``data/framenet-1.7`` (what the real one does)."""
    files = []
    for p in sorted((data / DS).rglob("*")):
        if p.is_file():
            files.append({"path": p.relative_to(data).as_posix(), "sha256": _sha(p),
                          "size": p.stat().st_size, "src": None, "how": "test fixture"})
    return {"datasets": {DS: {"files": files}}}


def _lu_table(data: Path, lu_dir: Path) -> None:
    rows = ["path\tsha256\tbytes\texemplars_kept"]
    for f in sorted(lu_dir.iterdir()):
        rows.append(f"lu/{f.name}\t{_sha(f)}\t{f.stat().st_size}\t0")
    (data / DS / "lu_manifest.tsv").write_text("\n".join(rows) + "\n")


def make_data(tmp_path: Path, edit=None) -> tuple[Path, dict]:
    """A data directory built from the fixture (lu/ packed into lu.tar.xz, lu_manifest.tsv
    written) and its manifest. ``edit(folder)`` may change the unpacked fixture first."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURE, src)
    if edit is not None:
        edit(src)
    data = tmp_path / "data"
    (data / DS).mkdir(parents=True)
    for p in src.iterdir():
        if p.name != "lu":
            (shutil.copytree if p.is_dir() else shutil.copy)(p, data / DS / p.name)
    _pack_lus(src / "lu", data / DS / "lu.tar.xz")
    _lu_table(data, src / "lu")
    return data, _write_manifest(data)


@pytest.fixture
def fixture_data(tmp_path):
    data, man = make_data(tmp_path)
    return data, man, tmp_path / "cache"


@pytest.fixture
def exemplars(fixture_data):
    data, man, cache = fixture_data
    return fnd.read_exemplars(data, cache, data_manifest=man, use_cache=False)


def _by_id(exs):
    return {e.sent_id: e for e in exs}


# --------------------------------------------------------------------------- reader


def test_reader_reads_every_exemplar_with_token_spans(exemplars):
    ex = _by_id(exemplars)
    assert [e.sent_id for e in exemplars] == [21, *range(1, 13)]  # frame ID order: 10, then 46
    one = ex[1]
    assert one.words == ("He", "was", "becoming", "agitated", ".")
    assert (one.lu_name, one.frame, one.source) == ("agitated.a", "Emotion_directed",
                                                    "lu/lu8776.xml")
    assert one.target_chars == ((16, 24),) and one.targets == ((3,),)
    (exp,) = one.elements
    assert (exp.name, exp.core_type, exp.in_core_set, exp.chars, exp.tokens) == (
        "Experiencer", "Core", True, (0, 2), (0,))
    assert ex[5].elements[0].tokens == (0, 1) and not ex[5].elements[0].in_core_set
    assert ex[12].elements[0].core_type == "Core-Unexpressed" and ex[12].elements[0].in_core_set
    assert ex[6].targets == ((4,), (7,))
    assert ex[7].targets == ((2, 3),)
    assert not ex[8].spans_in_text and ex[8].annotated
    assert not ex[9].annotated and ex[9].elements == ()
    assert ex[11].words[0] == '"' and ex[11].words[6] == '"'  # not `` and ''
    assert len(ex[3]) == 15
    assert ex[21].frame == "Body_movement" and not ex[21].elements[0].in_core_set


EXACT_REASONS = {1: None, 2: "elements apart", 3: "short sentence", 4: "short elements",
                 5: "linked core element", 6: None, 7: "one-token target",
                 8: "spans inside the text", 9: "annotated", 10: "elements apart", 11: None,
                 12: None, 21: "linked core element"}


@pytest.mark.parametrize("sent_id, reason", sorted(EXACT_REASONS.items()))
def test_keep_reason_exact(exemplars, sent_id, reason):
    assert fnd.keep_reason(_by_id(exemplars)[sent_id], "exact") == reason


def test_exact_reading_hand_counted(exemplars):
    sel = fnd.select_sentences(exemplars, "exact")
    assert [s.sent_id for s in sel.sentences] == [1, 6, 11, 12]
    assert sel.funnel == {"exemplars": 13, "annotated": 12, "spans inside the text": 11,
                          "short sentence": 10, "one target span": 10, "one-token target": 9,
                          "short elements": 8, "elements apart": 6, "linked core element": 4}
    assert sel.counts() == {"sentences": 4, "frames": 1, "lexical_units": 1,
                            "linked_elements": 4, "linked_tokens": 5}
    first = sel.sentences[0]
    assert (first.target, first.linked_tokens, first.words[first.target]) == (3, (0,), "agitated")
    assert [e.name for e in sel.sentences[3].linked] == ["State"]
    table = sel.to_frame()
    assert list(table["sent_id"]) == [1, 6, 11, 12]
    assert table.loc[3, "linked_tokens"] == "0 1" and table.loc[0, "target_word"] == "agitated"


def test_broad_and_literal_readings_hand_counted(exemplars):
    broad = fnd.select_sentences(exemplars, "broad")
    assert [s.sent_id for s in broad.sentences] == [21, 1, 5, 6, 11]
    assert broad.funnel["elements apart"] == 6 and broad.funnel["linked core element"] == 5
    assert broad.counts()["frames"] == 2 and broad.counts()["lexical_units"] == 2
    five = next(s for s in broad.sentences if s.sent_id == 5)
    assert five.linked_tokens == (0, 1)

    literal = fnd.select_sentences(exemplars, "literal")
    assert [s.sent_id for s in literal.sentences] == [21, 1, 5, 6, 10, 11]
    assert literal.funnel == {"exemplars": 13, "annotated": 12, "spans inside the text": 11,
                              "short sentence": 10, "one target span": 10,
                              "one-token target": 9, "short elements": 8,
                              "elements apart": 7, "linked core element": 6}


def test_requiring_one_target_span_drops_discontinuous_targets(exemplars):
    sel = fnd.select_sentences(exemplars, fnd.Rules(single_target_span=True))
    assert [s.sent_id for s in sel.sentences] == [1, 11, 12]
    assert sel.funnel["one target span"] == 9
    assert sel.reading == "custom"


def test_rules_are_checked():
    with pytest.raises(ValueError, match="core must be"):
        fnd.Rules(core="Core")
    with pytest.raises(ValueError, match="unknown reading"):
        fnd.select_sentences([], "paper")


# --------------------------------------------------------------------------- exemplar cache


def test_exemplar_cache_is_reused_and_rebuilt_when_unreadable(fixture_data, exemplars,
                                                              monkeypatch):
    data, man, cache = fixture_data
    first = fnd.read_exemplars(data, cache, data_manifest=man)
    assert first == exemplars
    (cached,) = (cache / DS).glob("exemplars-*.json.gz")

    def no_nltk(*a, **k):
        raise AssertionError("the cached exemplars should have been used")

    monkeypatch.setattr(fnd, "open_reader", no_nltk)
    assert fnd.read_exemplars(data, cache, data_manifest=man) == exemplars
    monkeypatch.undo()
    cached.write_bytes(b"not gzip")
    assert fnd.read_exemplars(data, cache, data_manifest=man) == exemplars
    assert fnd._read_json_gz(cached) is not None  # rewritten


def test_exemplar_cache_key_follows_the_data(fixture_data):
    _, man, _ = fixture_data
    other = json.loads(json.dumps(man))
    other["datasets"][DS]["files"][0]["sha256"] = "0" * 64
    assert fnd._exemplar_cache_key(man) != fnd._exemplar_cache_key(other)


# --------------------------------------------------------------------------- the unpack


def _root_of(cache: Path) -> Path:
    (root,) = (cache / DS).glob("nltk-*")
    return root


def test_corpus_root_is_assembled_in_the_cache_and_reused(fixture_data):
    data, man, cache = fixture_data
    root = fnd.corpus_root(data, cache, data_manifest=man)
    assert root.parent == cache / DS
    assert sorted(p.name for p in (root / "lu").iterdir()) == ["lu8776.xml", "lu98.xml"]
    assert (root / "frame" / "Emotion_directed.xml").read_bytes() == \
        (FIXTURE / "frame" / "Emotion_directed.xml").read_bytes()
    marker = json.loads((root / fnd.MARKER).read_text())
    assert marker["lu_archive_sha256"] == _sha(data / DS / "lu.tar.xz")
    stamp = (root / fnd.MARKER).stat().st_mtime_ns
    assert fnd.corpus_root(data, cache, data_manifest=man) == root
    assert (root / fnd.MARKER).stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert not list((cache / DS).glob(".partial-*"))


def test_corpus_root_goes_to_the_cache_dir_never_the_data_dir(fixture_data, monkeypatch):
    data, man, cache = fixture_data
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    monkeypatch.setenv(paths.CACHE_ENV, str(cache / "from-env"))
    root = fnd.corpus_root(data, data_manifest=man)
    assert root.parent == cache / "from-env" / DS
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before


def test_interrupted_unpack_leaves_nothing_that_reads_as_complete(fixture_data, monkeypatch):
    data, man, cache = fixture_data
    real = tarfile.TarFile.extractfile
    calls = []

    def fail_on_second_member(self, member):
        calls.append(member)
        if len(calls) > 1:  # the first LU file is written by now
            raise KeyboardInterrupt("simulated interruption")
        return real(self, member)

    monkeypatch.setattr(tarfile.TarFile, "extractfile", fail_on_second_member)
    with pytest.raises(KeyboardInterrupt):
        fnd.corpus_root(data, cache, data_manifest=man)
    assert len(calls) == 2  # it did start unpacking
    assert not list((cache / DS).glob("nltk-*")) and not list((cache / DS).glob(".partial-*"))
    monkeypatch.undo()
    root = fnd.corpus_root(data, cache, data_manifest=man)
    assert (root / fnd.MARKER).is_file() and len(list((root / "lu").iterdir())) == 2


def test_killed_unpack_is_not_reused_and_is_cleaned_up(fixture_data, tmp_path):
    """A process killed mid-unpack (no cleanup at all) leaves a .partial folder: the next call
    builds a fresh root and removes the dead process's folder."""
    data, man, cache = fixture_data
    man_path = tmp_path / "manifest.json"
    man_path.write_text(json.dumps(man))
    script = textwrap.dedent(f"""
        import os, tarfile
        from analysis_utils.data import framenet as fnd
        real = tarfile.TarFile.extractfile
        calls = []
        def die_on_second_member(self, member):
            calls.append(member)
            if len(calls) > 1:  # the first LU file is written by now
                os._exit(9)
            return real(self, member)
        tarfile.TarFile.extractfile = die_on_second_member
        fnd.corpus_root({str(data)!r}, {str(cache)!r}, data_manifest={str(man_path)!r})
    """)
    env = {**os.environ, "PYTHONPATH": str(paths.REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    (partial,) = (cache / DS).glob(".partial-*")
    assert len(list((partial / "lu").iterdir())) == 1  # half unpacked
    assert partial.name.startswith(f".partial-{socket.gethostname()}-")
    assert not list((cache / DS).glob("nltk-*"))
    root = fnd.corpus_root(data, cache, data_manifest=man)
    assert root.name.startswith("nltk-") and (root / fnd.MARKER).is_file()
    assert not partial.exists()


@pytest.mark.parametrize("damage", ["no marker", "stale marker", "missing file", "edited file"])
def test_a_damaged_root_is_rebuilt(fixture_data, damage):
    data, man, cache = fixture_data
    root = fnd.corpus_root(data, cache, data_manifest=man)
    lu = root / "lu" / "lu8776.xml"
    if damage == "no marker":
        (root / fnd.MARKER).unlink()
    elif damage == "stale marker":
        m = json.loads((root / fnd.MARKER).read_text())
        m["layout"] = -1
        (root / fnd.MARKER).write_text(json.dumps(m))
    elif damage == "missing file":
        lu.unlink()
    else:  # same size, other bytes: only the sha256 check sees it
        b = bytearray(lu.read_bytes())
        b[-3] = ord("X")
        lu.write_bytes(bytes(b))
        assert fnd.corpus_root(data, cache, data_manifest=man, verify_hashes=False) == root
        assert lu.read_bytes() == bytes(b)  # size-only checks reuse it, as documented
    again = fnd.corpus_root(data, cache, data_manifest=man)
    assert again == root and (root / fnd.MARKER).is_file()
    assert lu.read_bytes() == (FIXTURE / "lu" / "lu8776.xml").read_bytes()
    assert not list((cache / DS).glob(".stale-*"))


# --------------------------------------------------------------------------- data errors


def test_missing_file_gives_the_manifest_error(fixture_data):
    data, man, cache = fixture_data
    (data / DS / "frame" / "Body_movement.xml").unlink()
    with pytest.raises(manifest.DataMissingError) as err:
        fnd.read_exemplars(data, cache, data_manifest=man)
    assert "framenet-1.7/frame/Body_movement.xml" in str(err.value)
    assert "fetch-data --dataset framenet-1.7" in str(err.value)
    assert not isinstance(err.value, manifest.DataCorruptError)


def test_corrupt_archive_gives_the_manifest_error(fixture_data):
    data, man, cache = fixture_data
    archive = data / DS / "lu.tar.xz"
    b = bytearray(archive.read_bytes())
    b[100] ^= 0xFF
    archive.write_bytes(bytes(b))
    with pytest.raises(manifest.DataCorruptError, match="lu.tar.xz.*corrupt.*sha256"):
        fnd.corpus_root(data, cache, data_manifest=man)
    assert not (cache / DS).exists() or not list((cache / DS).glob("nltk-*"))


def _edit(path: str, old: str, new: str):
    def edit(folder: Path):
        p = folder / path
        text = p.read_text()
        assert old in text
        p.write_text(text.replace(old, new, 1))
    return edit


@pytest.mark.parametrize("path, old, new, match", [
    ("frame/Emotion_directed.xml", "</frame>", "</frme>",
     r"frame/Emotion_directed\.xml:\d+: mismatched tag \(a copy of the data directory's "
     r"framenet-1\.7/frame/Emotion_directed\.xml\)"),
    ("lu/lu8776.xml", "</lexUnit>", "<lexUnit>",
     r"lu/lu8776\.xml:\d+: no element found \(unpacked from the data directory's "
     r"framenet-1\.7/lu\.tar\.xz\)"),
    ("lu/lu8776.xml", 'start="0" name="Experiencer"/>', 'start="0" name="Experience"/>',
     r"lu/lu8776\.xml: sentence 1: frame element 'Experience' is not defined by frame "
     r"'Emotion_directed'"),
    ("frameIndex.xml", 'name="Body_movement"/>', 'name="Body_movement">',
     r"frameIndex\.xml:6: mismatched tag"),
])
def test_malformed_input_names_the_file(tmp_path, path, old, new, match):
    data, man = make_data(tmp_path, _edit(path, old, new))
    with pytest.raises(CorpusFormatError, match=match):
        fnd.read_exemplars(data, tmp_path / "cache", data_manifest=man, use_cache=False)


def test_malformed_lu_table_names_file_and_line(tmp_path):
    data, _ = make_data(tmp_path)
    table = data / DS / "lu_manifest.tsv"
    table.write_text(table.read_text() + "lu/notes.txt\tabc\t12\t0\n")
    man = _write_manifest(data)
    with pytest.raises(CorpusFormatError, match=r"lu_manifest\.tsv:4: expected"):
        fnd.corpus_root(data, tmp_path / "cache", data_manifest=man)


@pytest.mark.parametrize("name, kind", [("lu/../../evil.xml", tarfile.REGTYPE),
                                        ("lu/notes.txt", tarfile.REGTYPE),
                                        ("lu/lu5.xml", tarfile.REGTYPE),  # not in the table
                                        ("lu/lu77.xml", tarfile.SYMTYPE)])
def test_archive_with_an_unexpected_member_is_refused(tmp_path, name, kind):
    data, _ = make_data(tmp_path)
    archive = data / DS / "lu.tar.xz"
    with tarfile.open(archive, "r:xz") as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar]
    with tarfile.open(archive, "w:xz") as tar:
        for m, content in members:
            tar.addfile(m, io.BytesIO(content) if content is not None else None)
        extra = tarfile.TarInfo(name)
        extra.type = kind
        if kind == tarfile.SYMTYPE:
            extra.linkname = "/etc/passwd"
            tar.addfile(extra)
        else:
            extra.size = 3
            tar.addfile(extra, io.BytesIO(b"bad"))
    man = _write_manifest(data)
    with pytest.raises(CorpusFormatError, match=r"lu\.tar\.xz: .*member"):
        fnd.corpus_root(data, tmp_path / "cache", data_manifest=man)
    assert not (tmp_path / "evil.xml").exists()
    assert not list((tmp_path / "cache" / DS).glob("nltk-*"))


def test_the_packaged_manifest_lists_the_framenet_files():
    entries = {e.path for e in manifest.manifest_entries(DS)}
    for name in ("lu.tar.xz", "lu_manifest.tsv", *fnd.INDEX_FILES):
        assert f"{DS}/{name}" in entries
    assert len([p for p in entries if p.startswith(f"{DS}/frame/")]) == 1221


# --------------------------------------------------------------------------- gold data


@pytest.fixture
def framenet_gold(gold_data_dir):
    if not (gold_data_dir / DS).is_dir():
        pytest.skip(f"{DS} not found in {gold_data_dir}: run "
                    f"`python -m analysis_utils fetch-data --dataset {DS} --mirror DIR`")
    return gold_data_dir


@pytest.mark.gold_data
def test_real_framenet_gives_the_papers_473_sentences(framenet_gold):
    """Cold: a few minutes (NLTK reads 13,572 LU files); warm: seconds (cached exemplars).
    Under `make test`'s workers this file runs first on the worker that then runs goldens 07
    and 06 (tests/conftest.py, SHARED_SCOPES), so the LU files are read once and the golden
    notebooks read the cached selections."""
    exemplars = fnd.read_exemplars(framenet_gold)
    assert len(exemplars) == 82661
    exact = fnd.select_sentences(exemplars, "exact")
    assert len(exact) == 473
    assert exact.counts()["frames"] == 87 and exact.counts()["lexical_units"] == 357
    # the paper's Figure 4 example is among them
    assert any(s.exemplar.text.strip() == "He was becoming agitated ." and
               s.frame == "Emotion_directed" for s in exact.sentences)
    assert len(fnd.select_sentences(exemplars, fnd.Rules(single_target_span=True))) == 470
    assert len(fnd.select_sentences(exemplars, "broad")) == 961
    assert len(fnd.select_sentences(exemplars, "literal")) == 2110


# --------------------------------------------------------------------------- selection cache


def test_read_selections_equal_the_filter_and_a_warm_call_reads_no_exemplar(fixture_data,
                                                                          monkeypatch):
    data, man, cache = fixture_data
    exemplars = fnd.read_exemplars(data, cache, data_manifest=man)
    cold = fnd.read_selections(data_dir=data, cache_dir=cache, data_manifest=man)
    assert set(cold) == set(fnd.READINGS)
    for name, sel in cold.items():
        direct = fnd.select_sentences(exemplars, name)
        assert sel.funnel == direct.funnel
        assert sel.sentences == direct.sentences
    assert sorted(p.name.split("-")[1] for p in (cache / DS).glob("selection-*.json.gz")) \
        == sorted(fnd.READINGS)

    def no_exemplars(*a, **k):
        raise AssertionError("a warm call should read the cached selections only")

    monkeypatch.setattr(fnd, "read_exemplars", no_exemplars)
    warm = fnd.read_selections(data_dir=data, cache_dir=cache, data_manifest=man)
    for name in fnd.READINGS:
        assert warm[name].sentences == cold[name].sentences
        assert warm[name].funnel == cold[name].funnel
        assert warm[name].rules == fnd.READINGS[name]


def test_read_selections_rebuilds_an_unreadable_or_tampered_cache(fixture_data):
    data, man, cache = fixture_data
    first = fnd.read_selections(["exact", "broad"], data, cache, data_manifest=man)
    (exact_file,) = (cache / DS).glob("selection-exact-*.json.gz")
    (broad_file,) = (cache / DS).glob("selection-broad-*.json.gz")
    exact_file.write_bytes(b"not gzip")
    payload = fnd._read_json_gz(broad_file)
    payload["funnel"]["exemplars"] += 1  # still readable, but not what the filter gave
    payload["funnel"]["linked core element"] += 1
    fnd._write_json_gz(broad_file, payload)
    again = fnd.read_selections(["exact", "broad"], data, cache, data_manifest=man)
    assert again["exact"].sentences == first["exact"].sentences
    assert again["broad"].funnel == first["broad"].funnel  # rebuilt from the exemplars
    assert fnd._read_json_gz(exact_file)["funnel"] == first["exact"].funnel
    with pytest.raises(ValueError, match="unknown reading"):
        fnd.read_selections(["paper"], data, cache, data_manifest=man)
