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

Files are copied with their times and only when they changed, so a second build rebuilds only
what changed. :func:`build` then runs Sphinx in this process, warnings as errors, into
``book/_build/html``; :func:`broken_links` lists every link of the site that points at a
missing file or anchor. Search is Sphinx's own, an index shipped with the site (no server).
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
    subs = ["", *sorted(set(profiles.SUBFOLDER.values()))]
    return [p.relative_to(root) for sub in subs
            for p in sorted((root / "notebooks" / sub).glob("[0-9][0-9]_*.ipynb"))]


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


def stage(root: str | Path | None = None, source: str | Path | None = None) -> Path:
    """Lay the book's sources out under ``source`` (default ``book/_build/source``) as
    described above, removing what is no longer there; returns ``source``."""
    from .links import published

    root = Path(root) if root is not None else paths.REPO_ROOT
    source = Path(source) if source is not None else root / BUILD / "source"
    wanted: dict[Path, Path] = {}
    for page in (root / "book").rglob("*"):
        rel = page.relative_to(root / "book")
        if page.is_file() and rel.parts[0] != "_build" and "__pycache__" not in rel.parts:
            wanted[rel] = page
    for rel in notebooks(root):
        wanted[rel] = root / rel
    for png in (root / "figures").rglob("*.png"):
        wanted[Path("_extra") / png.relative_to(root)] = png
    for name, page in atlas_pages(root).items():
        wanted[Path("_extra") / name] = page
    for rel, src in wanted.items():
        _copy(src, source / rel)
    repo, branch = published(root)
    settings = json.dumps({"repository": repo, "branch": branch}, indent=1) + "\n"
    if not (source / "_book.json").is_file() or (source / "_book.json").read_text() != settings:
        (source / "_book.json").write_text(settings)
    keep = set(wanted) | {Path("_book.json")}
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
    return out


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
#: ``#L-H``), not an element id; their fragments must look like a head label.
SCRIPTED_FRAGMENTS = {"atlas": re.compile(r"\d+-\d+")}


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

    out = []
    for html in sorted(site.rglob("*.html")):
        rel = html.relative_to(site)
        if rel.parts[0] in ("_static", "atlas"):  # the theme's files; the atlas pages
            continue
        for link in page(html).links:
            parts = urlsplit(link)
            target = html if not parts.path else (html.parent / unquote(parts.path))
            target = target.resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or site.resolve() not in target.parents:
                out.append(f"{rel}: {link}")
                continue
            if parts.fragment and target.suffix == ".html":
                scripted = SCRIPTED_FRAGMENTS.get(target.relative_to(site.resolve()).parts[0])
                if scripted is not None:
                    ok = scripted.fullmatch(unquote(parts.fragment))
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
