"""The data manifest, checks, require() and the downloader (against a local http.server)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import re
import threading

import pytest

from analysis_utils import paths
from analysis_utils.data import manifest

EXPECTED_DATASETS = {"ud-english-ewt", "ontogum", "glue", "wikitext-2", "framenet-1.7"}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- local server


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def do_GET(self):  # noqa: N802 - http.server API
        self.requests.append(self.path)
        super().do_GET()

    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def server(tmp_path):
    """An http.server on 127.0.0.1 serving tmp_path/www; yields (base URL, www dir, request log)."""
    www = tmp_path / "www"
    www.mkdir()
    log: list[str] = []
    handler = type("H", (_Handler,), {"requests": log})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(handler, directory=str(www)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", www, log
    finally:
        httpd.shutdown()
        httpd.server_close()


A = b"alpha file\n"
B = b"beta file, in a subfolder\n"
C_CRLF = b"line one\r\nline two\r\n"
C = C_CRLF.replace(b"\r\n", b"\n")
SPLITS_MD = b"# Splits\n\n## dev\n\n  * GUM_a_x\n  * GUM_reddit_y\n  * GENTLE_z\n\n## train\n\n  * GUM_b_w\n"
DEV = b"GUM_a_x\n"
ONLY = b"only in the bundle\n"


def toy_manifest(base: str, a_sha: str | None = None) -> dict:
    def f(path, data, **kw):
        return {"path": path, "sha256": sha(data), "size": len(data), **kw}

    a = f("toy/a.txt", A, src="a.txt")
    if a_sha:
        a["sha256"] = a_sha
    return {"format": 1, "datasets": {
        "toy": {"base_url": base + "/src/", "files": [
            a,
            f("toy/sub/b.txt", B, src="sub/b.txt"),
            f("toy/c.txt", C, src="c_crlf.txt", transform="crlf_to_lf"),
            f("toy/splits.md", SPLITS_MD, src="splits.md"),
            f("toy/dev.txt", DEV, src=None, how="derived",
              derive={"name": "ontogum_split", "split": "dev", "inputs": ["toy/splits.md"]}),
        ]},
        "bundleonly": {"base_url": base + "/src/", "files": [
            f("bundleonly/only.txt", ONLY, src=None, how="written for the bundle"),
        ]},
    }}


def populate(www):
    (www / "src" / "sub").mkdir(parents=True)
    (www / "src" / "a.txt").write_bytes(A)
    (www / "src" / "sub" / "b.txt").write_bytes(B)
    (www / "src" / "c_crlf.txt").write_bytes(C_CRLF)
    (www / "src" / "splits.md").write_bytes(SPLITS_MD)


def leftovers(root):
    return [p for p in root.rglob("*") if p.name.endswith(".part")]


# --------------------------------------------------------------------------- fetch


def test_fetch_success_transform_and_derive(server, tmp_path):
    base, www, log = server
    populate(www)
    man = toy_manifest(base)
    data = tmp_path / "data"
    messages = []
    report = manifest.fetch_data(data, ["toy"], manifest=man, progress=messages.append)
    assert report.ok and len(report.present) == 5
    assert (data / "toy/a.txt").read_bytes() == A
    assert (data / "toy/sub/b.txt").read_bytes() == B
    assert (data / "toy/c.txt").read_bytes() == C  # CRLF -> LF before the checksum
    assert (data / "toy/dev.txt").read_bytes() == DEV  # derived, reddit and GENTLE dropped
    assert not leftovers(data)
    assert any(m.startswith("derive") for m in messages)
    assert manifest.check_data(data, ["toy"], manifest=man).ok


def test_checksum_mismatch_leaves_no_file(server, tmp_path):
    base, www, _ = server
    populate(www)
    man = toy_manifest(base, a_sha="0" * 64)
    data = tmp_path / "data"
    with pytest.raises(manifest.FetchError) as exc:
        manifest.fetch_data(data, ["toy"], manifest=man)
    assert "toy/a.txt" in exc.value.failures
    assert "ChecksumError" in exc.value.failures["toy/a.txt"]
    assert "discarded" in str(exc.value)
    assert not (data / "toy/a.txt").exists()
    assert not leftovers(data)
    assert (data / "toy/sub/b.txt").read_bytes() == B  # the other files still arrive


def test_http_error_leaves_no_file(server, tmp_path):
    base, www, _ = server
    populate(www)
    (www / "src" / "sub" / "b.txt").unlink()  # 404
    data = tmp_path / "data"
    with pytest.raises(manifest.FetchError) as exc:
        manifest.fetch_data(data, ["toy"], manifest=toy_manifest(base))
    assert list(exc.value.failures) == ["toy/sub/b.txt"]
    assert not (data / "toy/sub/b.txt").exists()
    assert not leftovers(data)


def test_resume_skips_intact_files_and_replaces_corrupt_ones(server, tmp_path):
    base, www, log = server
    populate(www)
    man = toy_manifest(base)
    data = tmp_path / "data"
    (data / "toy").mkdir(parents=True)
    (data / "toy/a.txt").write_bytes(A)  # intact: must not be downloaded again
    (data / "toy/c.txt").write_bytes(b"line one\nline 2!\n")  # right size, wrong bytes
    report = manifest.fetch_data(data, ["toy"], manifest=man)
    assert report.ok
    assert "/src/a.txt" not in log
    assert "/src/c_crlf.txt" in log
    assert (data / "toy/c.txt").read_bytes() == C
    log.clear()
    manifest.fetch_data(data, ["toy"], manifest=man)  # everything in place: no requests
    assert log == []


def test_bundle_only_file_needs_a_mirror(server, tmp_path):
    base, www, _ = server
    man = toy_manifest(base)
    data = tmp_path / "data"
    with pytest.raises(manifest.FetchError) as exc:
        manifest.fetch_data(data, ["bundleonly"], manifest=man)
    msg = exc.value.failures["bundleonly/only.txt"]
    assert "no public download" in msg and "--mirror" in msg
    assert "fetch-data --dataset bundleonly" in msg
    # a mirror laid out like the bundle serves it (http or a local folder)
    (www / "bundle" / "bundleonly").mkdir(parents=True)
    (www / "bundle" / "bundleonly" / "only.txt").write_bytes(ONLY)
    manifest.fetch_data(data, ["bundleonly"], base_url_override=base + "/bundle", manifest=man)
    assert (data / "bundleonly/only.txt").read_bytes() == ONLY
    data2 = tmp_path / "data2"
    manifest.fetch_data(data2, ["bundleonly"], base_url_override=str(www / "bundle"), manifest=man)
    assert (data2 / "bundleonly/only.txt").read_bytes() == ONLY


# --------------------------------------------------------------------------- check / require


def test_check_data_reports_missing_and_corrupt(tmp_path, server):
    base, _, _ = server
    man = toy_manifest(base)
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy/a.txt").write_bytes(A)
    (tmp_path / "toy/splits.md").write_bytes(b"short")
    r = manifest.check_data(tmp_path, ["toy"], manifest=man)
    assert not r.ok
    assert r.present == ["toy/a.txt"]
    assert set(r.missing) == {"toy/sub/b.txt", "toy/c.txt", "toy/dev.txt"}
    assert "size 5 bytes" in r.corrupt["toy/splits.md"]
    assert r.by_dataset()["toy"] == {"present": 1, "missing": 3, "corrupt": 1}
    summary = r.summary()
    assert "toy/splits.md" in summary and "fetch-data --dataset toy" in summary


def test_require_missing_names_file_dir_env_and_command(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    with pytest.raises(manifest.DataMissingError) as exc:
        manifest.require("ud-english-ewt/en_ewt-ud-dev.conllu")
    msg = str(exc.value)
    assert "ud-english-ewt/en_ewt-ud-dev.conllu" in msg
    assert str(tmp_path) in msg
    assert paths.DATA_ENV in msg
    assert "python -m analysis_utils fetch-data --dataset ud-english-ewt" in msg
    assert isinstance(exc.value, FileNotFoundError)


def test_require_corrupt_and_hash_cache(tmp_path, server, monkeypatch):
    base, _, _ = server
    man = toy_manifest(base)
    target = tmp_path / "toy/a.txt"
    target.parent.mkdir()
    target.write_bytes(A)
    calls = []
    real = manifest.sha256_file
    monkeypatch.setattr(manifest, "sha256_file", lambda p: calls.append(p) or real(p))
    assert manifest.require("toy/a.txt", tmp_path, manifest=man) == target
    assert manifest.require("toy/a.txt", tmp_path, manifest=man) == target
    assert len(calls) == 1  # hashed once per process
    target.write_bytes(b"ALPHA FILE\n")  # same size, new content and mtime
    os.utime(target, ns=(0, 10**9))
    with pytest.raises(manifest.DataCorruptError, match=r"corrupt: sha256.*fetch-data --dataset toy"):
        manifest.require("toy/a.txt", tmp_path, manifest=man)
    assert len(calls) == 2
    target.write_bytes(b"x")
    with pytest.raises(manifest.DataCorruptError, match="size 1 bytes"):
        manifest.require("toy/a.txt", tmp_path, manifest=man)


def test_hints_say_fetch_needs_network_and_name_the_mirror(tmp_path, monkeypatch):
    # "Re-fetch it with fetch-data --dataset X" alone cannot work on a machine without network
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    with pytest.raises(manifest.DataMissingError) as missing:
        manifest.require("glue/RTE/dev.tsv")
    (tmp_path / "glue" / "RTE").mkdir(parents=True)
    (tmp_path / "glue" / "RTE" / "dev.tsv").write_text("not the RTE dev set\n")
    with pytest.raises(manifest.DataCorruptError) as corrupt:
        manifest.require("glue/RTE/dev.tsv")
    summary = manifest.check_data(tmp_path, ["glue"]).summary()
    for text in (str(missing.value), str(corrupt.value), summary):
        assert "python -m analysis_utils fetch-data --dataset glue" in text
        assert "network" in text
        assert "python -m analysis_utils fetch-data --dataset glue --mirror DIR" in text


def test_offline_fix_with_a_local_mirror(tmp_path, server):
    """The hint's offline route works: a corrupt file is replaced from a local folder laid out
    like the bundle, verified and atomically; a mirror with wrong bytes changes nothing."""
    base, _, _ = server
    man = toy_manifest(base)
    data, mirror, bad_mirror = tmp_path / "data", tmp_path / "bundle", tmp_path / "bad"
    for root, payload in ((mirror, A), (bad_mirror, b"ALPHA FILE\n")):
        (root / "toy").mkdir(parents=True)
        (root / "toy/a.txt").write_bytes(payload)
    (data / "toy").mkdir(parents=True)
    (data / "toy/a.txt").write_bytes(b"alpha FILE\n")
    with pytest.raises(manifest.DataCorruptError, match="--mirror DIR"):
        manifest.require("toy/a.txt", data, manifest=man)
    one = {"format": 1, "datasets": {"toy": {"base_url": "", "files": [  # just toy/a.txt
        {"path": "toy/a.txt", "sha256": sha(A), "size": len(A), "src": "a.txt"}]}}}
    with pytest.raises(manifest.FetchError, match="ChecksumError"):
        manifest.fetch_data(data, ["toy"], base_url_override=str(bad_mirror), manifest=one)
    assert (data / "toy/a.txt").read_bytes() == b"alpha FILE\n" and not leftovers(data)
    report = manifest.fetch_data(data, ["toy"], base_url_override=str(mirror), manifest=one)
    assert report.ok and (data / "toy/a.txt").read_bytes() == A and not leftovers(data)
    assert manifest.require("toy/a.txt", data, manifest=man) == data / "toy/a.txt"


def test_cli_check_and_fetch_with_mirror(tmp_path, capsys):
    mirror = tmp_path / "mirror"
    src_files = manifest.manifest_entries("wikitext-2")
    # a fake bundle whose bytes do not match: fetch must refuse them
    for e in src_files:
        (mirror / e.path).parent.mkdir(parents=True, exist_ok=True)
        (mirror / e.path).write_bytes(b"not wikitext\n")
    data = tmp_path / "data"
    assert manifest.cli("check-data", ["--data-dir", str(data), "--dataset", "wikitext-2"]) == 1
    out = capsys.readouterr().out
    assert "missing 2" in out and "fetch-data --dataset wikitext-2" in out
    assert manifest.cli("fetch-data", ["--data-dir", str(data), "--dataset", "wikitext-2",
                                       "--mirror", str(mirror)]) == 1
    assert "ChecksumError" in capsys.readouterr().err
    assert not any(data.rglob("*.raw")) and not any(data.rglob("*.part"))


# --------------------------------------------------------------------------- the packaged manifest


def test_packaged_manifest_is_consistent():
    man = manifest.load_manifest()
    assert set(man["datasets"]) == EXPECTED_DATASETS
    entries = manifest.manifest_entries()
    paths_ = [e.path for e in entries]
    assert len(paths_) == len(set(paths_))
    for e in entries:
        assert re.fullmatch(r"[0-9a-f]{64}", e.sha256), e.path
        assert e.size > 0
        assert e.path.split("/")[0] in {"ud-english-ewt", "ontogum", "glue", "wikipedia", "framenet-1.7"}
        if e.url:
            assert e.url.startswith("https://raw.githubusercontent.com/"), e.path
            assert re.search(r"/[0-9a-f]{40}/", e.url), f"{e.path}: URL not pinned to a commit"
        if e.transform:
            assert e.transform in manifest.TRANSFORMS
        if e.derive:
            assert e.derive["name"] in manifest.DERIVATIONS
            assert all(p in paths_ for p in e.derive["inputs"])
        if not e.url and not e.derive:
            assert e.how, f"{e.path}: no source and no explanation"
    need = ["ud-english-ewt/en_ewt-ud-train.conllu", "ud-english-ewt/en_ewt-ud-dev.conllu",
            "ud-english-ewt/en_ewt-ud-test.conllu", "ontogum/splits/ontogum.train.txt",
            "ontogum/splits/ontogum.dev.txt", "ontogum/splits/ontogum.test.txt",
            "wikipedia/wikitext-2-raw/wiki.valid.raw", "wikipedia/wikitext-2-raw/wiki.test.raw",
            "glue/MRPC/train.tsv", "framenet-1.7/lu.tar.xz", "framenet-1.7/frameIndex.xml"]
    assert set(need) <= set(paths_)
    assert sum(p.startswith("ontogum/conllu/") for p in paths_) == 237
    assert sum(p.startswith("framenet-1.7/frame/") for p in paths_) == 1221
    assert manifest.dataset_of("glue/MRPC/train.tsv") == "glue"


# --------------------------------------------------------------------------- gold data


@pytest.mark.gold_data
def test_gold_data_matches_manifest(gold_data_dir):
    report = manifest.check_data(gold_data_dir)
    assert report.ok, report.summary()


@pytest.mark.gold_data
def test_derivations_reproduce_gold_bytes(gold_data_dir):
    for e in manifest.manifest_entries():
        if e.derive:
            inputs = [gold_data_dir / p for p in e.derive["inputs"]]
            data = manifest.DERIVATIONS[e.derive["name"]](inputs, e.derive)
            assert sha(data) == e.sha256, e.path
