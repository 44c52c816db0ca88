"""The published repository is named once (``[tool.analysis_utils]`` in pyproject.toml) and every
Binder and Colab link agrees with it (``analysis_utils/publish/links.py``, ``make links``)."""

from __future__ import annotations

import shutil

from analysis_utils import paths
from analysis_utils.publish import links


def colab_cell_requirement(source) -> str | None:
    """The requirement the Colab cell of ``source`` installs (the last argument of its pip
    command)."""
    args = links.colab_install_args(source)
    return args[-1] if args else None


def test_every_file_agrees_with_pyproject():
    changed = links.sync(check=True)
    assert not changed, (f"links differ from pyproject.toml's [tool.analysis_utils] in "
                         f"{[str(p) for p in changed]}: run `make links`")


def test_every_notebook_has_its_colab_badge_and_install_cell():
    repo, branch = links.published()
    readme = (paths.REPO_ROOT / "README.md").read_text()
    assert f"https://mybinder.org/v2/gh/{repo}/{branch}" in readme
    sources = sorted(paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.py"))
    assert len(sources) >= 8
    for source in sources:
        badge = (f"https://colab.research.google.com/github/{repo}/blob/{branch}/notebooks/"
                 f"{source.stem}.ipynb")
        assert badge in source.read_text(), f"{source.name}: no Colab badge {badge}"
        assert badge in readme, f"README.md: no Colab badge for {source.stem}"
        assert colab_cell_requirement(source) in (links.colab_requirement(repo),
                                                  links.colab_requirement(repo, models=False)), \
            source.name


def test_a_fork_rewrites_every_link_and_keeps_the_rest(tmp_path):
    (tmp_path / "notebooks").mkdir()
    shutil.copy(paths.REPO_ROOT / "README.md", tmp_path / "README.md")
    (tmp_path / "book").mkdir()
    shutil.copy(paths.REPO_ROOT / "book" / "findings.md", tmp_path / "book" / "findings.md")
    for name in ("01_surface_patterns.py", "01_surface_patterns.ipynb"):
        shutil.copy(paths.NOTEBOOKS_DIR / name, tmp_path / "notebooks" / name)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.analysis_utils]\nrepository = "someone/fork"\nbranch = "dev"\n')
    before = {p: p.read_text() for p in links.linked_files(tmp_path)}
    assert set(links.sync(tmp_path, check=True)) == set(before)
    assert set(links.sync(tmp_path)) == set(before)
    assert links.sync(tmp_path, check=True) == []
    old_repo, old_branch = links.published()
    for path, old in before.items():
        new = path.read_text()
        assert old_repo not in new, path
        # only the links changed
        assert links.rewrite(new, old_repo, old_branch, path.suffix == ".md") == old, path
    source = tmp_path / "notebooks" / "01_surface_patterns.py"
    assert colab_cell_requirement(source) == links.colab_requirement("someone/fork")
    assert "https://mybinder.org/v2/gh/someone/fork/dev" in (tmp_path / "README.md").read_text()
    assert "https://github.com/someone/fork/blob/dev/results/08_claims.md" in (
        tmp_path / "book" / "findings.md").read_text()


def test_a_malformed_repository_says_where_to_fix_it(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.analysis_utils]\nrepository = "nope"\n')
    try:
        links.published(tmp_path)
    except ValueError as err:
        assert "repository = \"OWNER/NAME\"" in str(err)
    else:
        raise AssertionError("a repository without owner/name was accepted")


def test_a_hand_edited_colab_cell_is_found_and_written_back_from_the_template(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.analysis_utils]\nrepository = "bertology-compendium/attention-heads"\n')
    for name in ("02_syntax_heads.py", "02_syntax_heads.ipynb"):
        original = (paths.NOTEBOOKS_DIR / name).read_text()
        edited = original.replace("(does nothing elsewhere).", "(edited by hand).")
        assert edited != original, name
        (tmp_path / "notebooks" / name).write_text(edited)
    paths_edited = sorted(p.name for p in links.sync(tmp_path, check=True))
    assert paths_edited == ["02_syntax_heads.ipynb", "02_syntax_heads.py"]
    links.sync(tmp_path)
    for name in ("02_syntax_heads.py", "02_syntax_heads.ipynb"):
        assert (tmp_path / "notebooks" / name).read_text() == (
            paths.NOTEBOOKS_DIR / name).read_text(), f"{name} not restored byte for byte"
    assert colab_cell_requirement(tmp_path / "notebooks" / "02_syntax_heads.py") == \
        links.colab_requirement("bertology-compendium/attention-heads")


def test_only_markdown_pages_have_their_github_file_links_rewritten():
    text = "see https://github.com/other/project/blob/master/src/x.py"
    assert links.rewrite(text, "me/fork", "dev") == text  # a notebook citing another project
    assert links.rewrite(text, "me/fork", "dev", markdown=True) == \
        "see https://github.com/me/fork/blob/dev/src/x.py"
