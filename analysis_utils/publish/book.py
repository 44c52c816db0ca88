"""The book: one static site from what is committed (``make book``,
``python -m analysis_utils book``).

Jupyter Book 1's engine, installed with pip alone (the ``book`` extra: Sphinx, MyST-NB and
sphinx-book-theme), builds it with execution off, so every notebook shows its committed
outputs and nothing is recomputed. :func:`stage` lays the sources out as the site serves them,
under ``book/_build/source`` (ignored by git):

- ``book/*`` (the front page, the findings, the methods pages, ``conf.py``) at the top;
- ``notebooks/NN_*.ipynb`` and ``notebooks/<profile>/NN_*.ipynb`` at the same paths, so each
  page's Binder and Colab buttons open that notebook in the published repository;
- ``figures/**/*.png`` as extra files of the site, at the same paths (the notebooks' Markdown
  outputs link figures as ``../figures/NN_x.png``);
- every atlas page, ``figures/atlas/<model>.html`` and ``figures/<profile>/atlas/<model>.html``,
  as ``atlas/<model>.html`` (copied as they are; the findings link ``atlas/<model>.html#L-H``).
- the front page and the walkthrough with their verdicts, counts and seed numbers filled from
  the claims ledger (:mod:`.frontpage`), the verdicts' legend above the findings index, and
  each notebook page's list of its claims and verdicts under its "Verdicts" heading
  (:mod:`.notebook_claims`), all generated here, never committed;
- in each notebook's copy, an anchor at the output that shows each file its run wrote, which
  the claim pages' evidence links land on (:mod:`.evidence`).

Files are copied with their times and only when they changed, so a second build rebuilds only
what changed. :func:`build` then runs Sphinx in this process, warnings as errors, into
``book/_build/html``; :func:`broken_links` lists every link of the site that points at a
missing file or anchor. Search is Sphinx's own, an index shipped with the site (no server);
:mod:`.booksearch` adds its snippets and ranking for a site opened from files.
"""

from __future__ import annotations

import filecmp
import json
import re
import shutil
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .. import paths, profiles
from . import booksearch, claimpages, evidence, frontpage, notebook_claims
from .readme import runs

BUILD = Path("book") / "_build"


def _copy(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` with its times, unless ``dst`` already holds the same bytes."""
    if dst.is_file() and filecmp.cmp(src, dst, shallow=False):
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def notebooks(root: Path) -> list[Path]:
    """The rendered notebooks the book shows, relative to ``root``: ``notebooks/NN_*.ipynb``,
    then each profile subfolder's (:data:`analysis_utils.profiles.SUBFOLDER`)."""
    return evidence.rendered(root)


def atlas_pages(root: Path) -> dict[str, Path]:
    """``{name in the site (atlas/<model>.html): the committed page}``; two runs of one model
    name would collide, and are refused."""
    out: dict[str, Path] = {}
    subs = ["", *sorted(set(profiles.SUBFOLDER.values()))]
    for sub in subs:
        for page in sorted((root / "figures" / sub / "atlas").glob("*.html")):
            name = f"atlas/{page.name}"
            if name in out:
                raise ValueError(f"two atlas pages are both {name}: {out[name]} and {page}")
            out[name] = page
    return out


def _write(dst: Path, text: str) -> None:
    """Write ``text`` to ``dst`` unless it already holds it (its time then stays)."""
    if dst.is_file() and dst.read_text() == text:
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(text)


#: The Colab badge every notebook's first cell carries: its image is fetched from Colab's
#: site, so the book shows a text link instead (no request off the machine).
_COLAB_BADGE = re.compile(r"\[!\[Open in Colab\]\([^)]*\)\]\((https://colab\.research\.google"
                          r"\.com/github/[^)]*?/)notebooks/([^)/]+\.ipynb)\)")


def _model_of(root: Path, sub: str) -> str | None:
    """The model a run folder's notebooks ran (``results/<sub>/NN_provenance.json``)."""
    for prov in sorted((root / "results" / sub).glob("[0-9][0-9]_provenance.json")):
        try:
            name = json.loads(prov.read_text()).get("models", {}).get("model", {}).get("name")
        except (OSError, json.JSONDecodeError):
            continue
        if name:
            return name
    return None


def notebook_for_book(nb: dict, rel: Path, model: str | None,
                      claims: str | None = None) -> dict:
    """The rendered notebook ``nb`` (at ``rel``, e.g. ``notebooks/base/02_x.ipynb``) as the
    book shows it; the committed file is never changed. Its first heading names the model
    (the two profiles' pages would otherwise share one title), its Colab badge becomes a
    text link to this very notebook (a profile subfolder's render opened the default
    notebook: the badge comes from the shared .py source), and its Markdown outputs' links
    to figures become HTML links (:data:`_FIGURE_LINK`). At the next re-render the
    notebooks' own first cell should do the first two (``publish/pipeline.py`` writing the
    profile's path into the badge, the title naming the model) and this can go. The page's
    keywords are the words of the notebook's file name (``<meta name="keywords">``), which
    the book's search counts with its title (:mod:`.booksearch`). ``claims``: the list of
    this page's claims and verdicts (:func:`.notebook_claims.block`), put right below the
    heading the claim pages' evidence links land on (the "Verdicts" section, which the
    rendered notebook leaves without rows); ValueError when the notebook has no such
    heading."""
    meta = nb.setdefault("metadata", {})
    meta.setdefault("myst", {}).setdefault("html_meta", {})["keywords"] = (
        booksearch.notebook_keywords(rel))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        new = _COLAB_BADGE.sub(lambda m: f"[Open this notebook in Colab]({m.group(1)}"
                                         f"{rel.as_posix()})", text)
        if model and re.match(r"# ", new) and model not in new.split("\n", 1)[0]:
            head, _, rest = new.partition("\n")
            new = f"{head} ({model})\n{rest}" if rest or _ else f"{head} ({model})"
        if new != text:
            cell["source"] = new
        break
    if claims is not None and not notebook_claims.insert(nb, rel.name[:2], claims):
        raise ValueError(f"{rel} has no heading #{notebook_claims.row_anchor(rel.name[:2])}, "
                         "where the book lists its claims")
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data:
                data["image/png"] = _fit_png(data["image/png"])
            if "text/markdown" in data:
                md = data["text/markdown"]
                md = "".join(md) if isinstance(md, list) else md
                data["text/markdown"] = _FIGURE_LINK.sub(r'<a href="\2">\1</a>', md)
    return nb


#: The widest figure the book shows (issue 42): 06's drift heatmaps are 2,042 px.
MAX_FIGURE_PX = 2000


def _fit_png(b64) -> str:
    """A notebook's base64 PNG output, scaled down to :data:`MAX_FIGURE_PX` wide where it is
    wider (the committed notebook keeps its figure; the plot's dpi should fit at the next
    re-render)."""
    import base64
    import io
    import struct

    b64 = "".join(b64) if isinstance(b64, list) else b64
    raw = base64.b64decode(b64)
    width = struct.unpack(">I", raw[16:20])[0] if raw[:8] == b"\x89PNG\r\n\x1a\n" else 0
    if width <= MAX_FIGURE_PX:
        return b64
    from PIL import Image

    img = Image.open(io.BytesIO(raw))
    height = round(img.height * MAX_FIGURE_PX / img.width)
    out = io.BytesIO()
    img.resize((MAX_FIGURE_PX, height), Image.LANCZOS).save(out, format="PNG", optimize=True)
    return base64.b64encode(out.getvalue()).decode("ascii")


#: A Markdown output's link to a figure (``[maps #0-#29](../figures/05_x.png)``): the book
#: parses Markdown outputs as MyST (tables render), which reads such a link as a reference
#: to a document; as HTML it stays a plain link to the file the site serves.
_FIGURE_LINK = re.compile(r"\[([^\]]+)\]\(((?:\.\./)+figures/[^)\s]+)\)")


#: MathJax 2.7, as the ``jupyter-server-mathjax`` wheel ships it (the ``book`` extra), minus
#: what the book never loads (other locales, the accessibility extensions, SVG output).
_MATHJAX_SKIP = ("localization", "extensions/a11y", "jax/output/SVG")


def mathjax_files() -> dict[Path, Path]:
    """``{path under _static/mathjax/: the wheel's file}``; ImportError naming the install
    command when the wheel is missing (it is found without importing it, which would need a
    Jupyter server)."""
    import importlib.util

    spec = importlib.util.find_spec("jupyter_server_mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the book renders math with a local MathJax: pip install "
                          "'jupyter-server-mathjax' (the book extra: pip install -e '.[book]')")
    static = Path(next(iter(spec.submodule_search_locations))) / "static"
    out = {}
    for f in static.rglob("*"):
        rel = f.relative_to(static)
        if f.is_file() and not any(rel.as_posix().startswith(s) for s in _MATHJAX_SKIP):
            out[Path("_static") / "mathjax" / rel] = f
    return out


def atlas_for_book(text: str, pages: dict[str, Path]) -> str:
    """An atlas page as the book serves it: every atlas page sits in ``atlas/``, so its links
    to the other model's page (``"href":"../base/atlas/<model>.html"`` in its data, relative
    to ``figures/atlas/``) name the file beside it."""
    names = {Path(name).name for name in pages}

    def local(m: re.Match) -> str:
        name = Path(m.group(1)).name
        return f'"href":"{name}"' if name in names else m.group(0)

    text = re.sub(r'"href":"((?:\.\./)+[^"]*atlas/[^"/]+\.html)"', local, text)
    # its claim cards link the claim's page and the notebook's page in the book
    text = re.sub(r'"book":\{"root":"[^"]*"', '"book":{"root":"../"', text, count=1)
    return text.replace('"claims":null,"html":false}', '"claims":"../claims/","html":true}', 1)


def atlas_data(text: str) -> dict:
    """The data an atlas page's script reads (its ``application/json`` block)."""
    block = text.split('type="application/json">', 1)[1].split("</script>", 1)[0]
    return json.loads(block.replace("<\\!--", "<!--"))


def _atlas_links(text: str) -> list[str]:
    """The local links an atlas page's script builds from its data: the other model's page,
    each claim card's page and notebook, and each family's figures."""
    try:
        data = atlas_data(text)
    except (IndexError, json.JSONDecodeError):
        return []
    out = [o["href"] for o in data.get("others", []) if o.get("href")]
    b = data.get("book") or {}
    for r in data.get("claims", {}).get("rows", []):
        if b.get("claims") and r.get("id"):
            out.append(f"{b['claims']}{r['id']}.html")
        path = (b.get("notebooks") or {}).get(r.get("notebook"))
        if path:
            if b.get("html"):
                path = re.sub(r"\.ipynb(#|$)", r".html\1", path)
                if r.get("id"):  # the card opens the claim's row (atlas.js, claimCard)
                    path = path.split("#", 1)[0] + f"#claim-{r['id']}"
            out.append(b["root"] + path)
    for f in data.get("families", []):
        out.extend(b.get("root", "") + g["path"] for g in f.get("figures", []))
    return sorted(set(out))


def stage(root: str | Path | None = None, source: str | Path | None = None) -> Path:
    """Lay the book's sources out under ``source`` (default ``book/_build/source``) as
    described above, removing what is no longer there; returns ``source``."""
    from .links import published

    root = Path(root) if root is not None else paths.REPO_ROOT
    source = Path(source) if source is not None else root / BUILD / "source"
    wanted: dict[Path, Path] = {}
    generated: dict[Path, str] = {}
    for page in (root / "book").rglob("*"):
        rel = page.relative_to(root / "book")
        if page.is_file() and rel.parts[0] != "_build" and "__pycache__" not in rel.parts:
            wanted[rel] = page
    models = {sub: _model_of(root, sub)
              for sub in ["", *sorted(set(profiles.SUBFOLDER.values()))]}
    df = claimpages.ledger(root)
    listed = notebook_claims.rows_by_page(df, runs(root / "results"), root)
    anchors = {}
    for rel in notebooks(root):
        sub = rel.parent.relative_to("notebooks").as_posix()
        nb = json.loads((root / rel).read_text())
        rows = listed.get(rel.as_posix())
        anchors[rel.as_posix()] = placed = evidence.page(root, rel, nb)
        nb = notebook_for_book(nb, rel, models.get("" if sub == "." else sub),
                               notebook_claims.block(rows, rel) if rows else None)
        generated[rel] = json.dumps(evidence.insert(nb, placed.anchors), indent=1,
                                    ensure_ascii=False) + "\n"
    generated.update(claimpages.write(source, root, anchors))
    # the front page and the walkthrough, their numbers filled from the ledger; the legend
    # of the verdicts just above the findings index
    for name in ("index.md", "walkthrough.md"):
        if (root / "book" / name).is_file():
            generated[Path(name)] = frontpage.fill((root / "book" / name).read_text(), df, root)
    generated[Path("findings.md")] = frontpage.findings_with_legend(
        generated[Path("findings.md")])
    wanted.update(mathjax_files())
    for png in (root / "figures").rglob("*.png"):
        wanted[Path("_extra") / png.relative_to(root)] = png
    pages = atlas_pages(root)
    for name, page in pages.items():
        generated[Path("_extra") / name] = atlas_for_book(page.read_text(), pages)
    for rel in generated:
        wanted.pop(rel, None)
    for rel, src in wanted.items():
        _copy(src, source / rel)
    for rel, text in generated.items():
        _write(source / rel, text)
    repo, branch = published(root)
    settings = json.dumps({"repository": repo, "branch": branch}, indent=1) + "\n"
    if not (source / "_book.json").is_file() or (source / "_book.json").read_text() != settings:
        (source / "_book.json").write_text(settings)
    keep = set(wanted) | set(generated) | {Path("_book.json")}
    for path in sorted(source.rglob("*"), reverse=True):
        rel = path.relative_to(source)
        if path.is_file() and rel not in keep:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    return source


def build(root: str | Path | None = None, out: str | Path | None = None,
          quiet: bool = True, source: str | Path | None = None) -> Path:
    """Stage the sources (into ``source``, default ``book/_build/source``) and build the site
    with Sphinx (warnings are errors) into ``out`` (default ``book/_build/html``; Sphinx's
    caches beside it); returns the folder of ``index.html``. Raises
    ``RuntimeError`` naming the log when Sphinx fails, ``ImportError`` naming the install
    command when the book's packages are missing."""
    try:
        from sphinx.cmd.build import build_main
    except ImportError:
        raise ImportError("the book needs Sphinx, MyST-NB and sphinx-book-theme: "
                          "pip install -e '.[book]' (make install)") from None
    root = Path(root) if root is not None else paths.REPO_ROOT
    out = Path(out) if out is not None else root / BUILD / "html"
    source = stage(root, source)
    doctrees = out.parent / (out.name + ".doctrees")
    args = ["-b", "html", "-W", "--keep-going", "-d", str(doctrees), str(source), str(out)]
    status = build_main((["-q"] if quiet else []) + args)
    if status != 0:
        raise RuntimeError(f"Sphinx failed (exit {status}) building {source} into {out}; "
                           "its warnings are above")
    remove_orphans(source, out)
    return out


#: Pages Sphinx writes itself, with no source of their own.
SPHINX_PAGES = {"search.html", "genindex.html", "py-modindex.html"}


def remove_orphans(source: Path, out: Path) -> list[Path]:
    """Delete the HTML pages of ``out`` that no source of ``source`` makes any more: Sphinx
    builds incrementally and never removes the page of a deleted source, so a claim renamed in
    the ledger would leave its old page behind, linking to an anchor that is gone. A page is
    kept when its source (``.md``, ``.ipynb`` or ``.rst``) or its copied file under
    ``_extra`` exists, or when Sphinx makes it itself. Returns the pages removed."""
    gone = []
    for page in sorted(out.rglob("*.html")):
        rel = page.relative_to(out)
        if rel.parts[0].startswith("_") or rel.as_posix() in SPHINX_PAGES:
            continue
        stem = source / rel.with_suffix("")
        if any(stem.with_suffix(x).is_file() for x in (".md", ".ipynb", ".rst")):
            continue
        if (source / "_extra" / rel).is_file():
            continue
        page.unlink()
        gone.append(rel)
    return gone


class _Links(HTMLParser):
    """The ids and local link targets of one HTML page."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for key in ("href", "src"):
            value = a.get(key)
            if value and not re.match(r"^[a-z][a-z0-9+.-]*:", value):  # no scheme: local
                self.links.append(value)


#: Pages whose ``#fragment`` is read by their own script (the atlas selects the head
#: ``#L-H``, and the property ``&p=<id>``), not an element id; their fragments must look like
#: a head label, and a property they name must be one the page holds.
SCRIPTED_FRAGMENTS = {"atlas": re.compile(r"(\d+)-(\d+)(?:&p=([^&]+))?")}


def _atlas_ok(fragment: str, text: str) -> bool:
    """Whether an atlas page (its HTML ``text``) can open at ``fragment``: a head of its
    grid and, where named, a property it holds."""
    m = SCRIPTED_FRAGMENTS["atlas"].fullmatch(fragment)
    if not m:
        return False
    grid = re.search(r'"num_layers":(\d+),"num_heads":(\d+)', text)
    if grid and not (1 <= int(m.group(1)) <= int(grid.group(1))
                     and 1 <= int(m.group(2)) <= int(grid.group(2))):
        return False
    return m.group(3) is None or f'"id":{json.dumps(m.group(3))}' in text


def broken_links(site: str | Path) -> list[str]:
    """Every local ``href``/``src`` of the site's HTML pages that names a missing file, or an
    anchor its page lacks, as ``page: link``. External links (with a scheme) are not
    followed."""
    site = Path(site)
    parsed: dict[Path, _Links] = {}

    def page(path: Path) -> _Links:
        if path not in parsed:
            p = _Links()
            p.feed(path.read_text(errors="replace"))
            parsed[path] = p
        return parsed[path]

    texts: dict[Path, str] = {}

    def _text(path: Path) -> str:
        if path not in texts:
            texts[path] = path.read_text(errors="replace")
        return texts[path]

    out = []
    for html in sorted(site.rglob("*.html")):
        rel = html.relative_to(site)
        if rel.parts[0] == "_static":  # the theme's files
            continue
        links = list(page(html).links)
        if rel.parts[0] == "atlas":  # its script builds links from its data: check those too
            links += [h for h in _atlas_links(_text(html))
                      if not re.match(r"^[a-z][a-z0-9+.-]*:", h)]
        for link in links:
            parts = urlsplit(link)
            target = html if not parts.path else (html.parent / unquote(parts.path))
            target = target.resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or site.resolve() not in target.parents:
                out.append(f"{rel}: {link}")
                continue
            if parts.fragment and target.suffix == ".html":
                top = target.relative_to(site.resolve()).parts[0]
                if top == "atlas":
                    ok = (unquote(parts.fragment) in page(target).ids
                          or _atlas_ok(unquote(parts.fragment), _text(target)))
                else:
                    ok = unquote(parts.fragment) in page(target).ids
                if not ok:
                    out.append(f"{rel}: {link}")
    return out


def cli(argv: list[str] | None = None) -> int:
    """``python -m analysis_utils book``; returns the exit status."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m analysis_utils book",
        description="Build the book, a static site of the committed notebooks, findings, "
                    "atlas pages and methods, into book/_build/html (no notebook is run).")
    ap.add_argument("--out", default=None, metavar="DIR", help="default: book/_build/html")
    ap.add_argument("--verbose", action="store_true", help="show Sphinx's progress")
    args = ap.parse_args(argv)
    started = time.time()
    try:
        out = build(out=args.out, quiet=not args.verbose)
    except (ImportError, RuntimeError, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    broken = broken_links(out)
    for line in broken:
        print(f"broken link: {line}", file=sys.stderr)
    print(f"book: {out / 'index.html'} ({time.time() - started:.0f} s)")
    return 1 if broken else 0
