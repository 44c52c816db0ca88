"""The Colab cell's install command works: built from notebook 01's Colab cell as written, with
only its ``git+https://github.com/OWNER/NAME`` source swapped for a wheel built here from this
checkout, and run offline in a fresh virtual environment; that environment then imports the
package it installed (not this checkout) and loads the packaged model.

Offline, the dependencies come from what this test's interpreter already has installed (a view
of its site-packages without this package, put on the new environment's path by a ``.pth``
file) plus the wheelhouse ``<cache>/wheelhouse/``, which ``make wheelhouse`` (run by ``make
test``) fills with the one dependency of the ``models`` extra that ``make install`` leaves out
(sentence-transformers, required by the packaged model's package). pip runs with no index
and no configuration file, so nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from analysis_utils import paths
from analysis_utils.publish import links

pytestmark = pytest.mark.packaged_model

LOAD = """
import analysis_utils, sys
from analysis_utils.engine.models import load_model
lm = load_model("minilm", device="cpu")
print(analysis_utils.__file__)
print(lm.model.config.num_hidden_layers, lm.model.config.num_attention_heads)
"""


def _build_wheel(out: Path) -> Path:
    """A wheel of this checkout's package, built from a copy (the checkout gets no build/ or
    egg-info folder), without build isolation so no build tool is downloaded."""
    src = out / "src"
    shutil.copytree(paths.PACKAGE_DIR, src / "analysis_utils",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(paths.REPO_ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "-w", str(out / "wheels"), str(src)],
                   check=True, env=_pip_env(), capture_output=True, text=True)
    (wheel,) = (out / "wheels").glob("analysis_utils-*.whl")
    return wheel


def _pip_env(**extra: str) -> dict[str, str]:
    """This environment less pip's configuration and any path to this checkout."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") and k not in ("PYTHONPATH", "BERTOLOGY_PACKAGE_ROOT")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", **extra}


def _installed_view(out: Path) -> Path:
    """Links to every entry of this interpreter's site-packages but this package (its files,
    editable finder, metadata) and ``.pth`` files."""
    view = out / "installed"
    view.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        name = entry.name.lower()
        if name.startswith(("analysis_utils", "__editable__")) or name.endswith(".pth"):
            continue
        (view / entry.name).symlink_to(entry)
    return view


def test_colab_command_installs_the_wheel_offline_and_loads_the_model(tmp_path):
    wheelhouse = paths.cache_dir() / "wheelhouse"
    extra_wheels = sorted(wheelhouse.glob("*.whl"))
    assert extra_wheels, (f"no wheels in {wheelhouse}: run `make wheelhouse` (it downloads the "
                          "models extra's dependency that `make install` leaves out)")
    args = links.colab_install_args(paths.NOTEBOOKS_DIR / "01_surface_patterns.py")
    repo, _ = links.published()
    wheel = _build_wheel(tmp_path)
    remote = f"git+https://github.com/{repo}"
    assert args and args[-1].endswith(remote), args
    args[-1] = args[-1].replace(remote, wheel.as_uri())  # the one change to the command

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)  # pip comes from the view
    python = env_dir / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True)
    Path(site.stdout.strip(), "installed.pth").write_text(f"{_installed_view(tmp_path)}\n")
    env = _pip_env(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheelhouse))
    done = subprocess.run([python, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{[str(python), *args]} failed:\n{done.stdout}{done.stderr}"

    run = subprocess.run([python, "-c", LOAD], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    where, shape = run.stdout.strip().splitlines()[-2:]
    assert Path(where).is_relative_to(env_dir), f"imported {where}, not the installed wheel"
    assert shape == "6 12"  # all-MiniLM-L6-v2
