"""``pip install fedplan`` in a throwaway venv: the core alone works, and it lives beside the public ``planner``
and ``bounds`` distributions (other projects' top-level names) in either order, installed or uninstalled.

The wheel is built from this checkout; ``planner`` and ``bounds`` come from the package index (``--no-deps``:
only their files matter here); fedplan's core dependencies come from the index or pip's cache.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OTHERS = ("planner==0.5.1", "bounds==0.0.5")

#: Run inside the venv: every file of each named distribution is present with the hash its RECORD gives.
CHECK_RECORDS = """
import base64, hashlib, importlib.metadata as metadata, json, sys
broken = {}
for name in sys.argv[1:]:
    for item in metadata.files(name):
        if item.hash is None:
            continue
        path = item.locate()
        try:
            digest = base64.urlsafe_b64encode(hashlib.new(item.hash.mode, path.read_bytes()).digest()).rstrip(b"=")
        except FileNotFoundError:
            broken.setdefault(name, []).append(f"missing {item}")
            continue
        if digest.decode() != item.hash.value:
            broken.setdefault(name, []).append(f"changed {item}")
print(json.dumps(broken))
"""

#: Run inside the venv: where the names resolve (the public ones are located, not imported: they need packages
#: that are not installed here), and a number from the core.
CHECK_IMPORTS = """
import importlib.util, json, fedplan, fedplan.planner
report = fedplan.epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=1e-5, accountant="rdp")
print(json.dumps({"planner": importlib.util.find_spec("planner").origin,
                  "bounds": importlib.util.find_spec("bounds").origin,
                  "fedplan_planner": fedplan.planner.__file__, "epsilon": report["epsilon"]}))
"""


def _run(*argv, cwd=None) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=cwd)
    assert done.returncode == 0, f"{' '.join(map(str, argv))}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the sources (a build writes build/ and *.egg-info/ beside them)."""
    source, folder = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("fedplan", "bounds", "planner", "app_pages"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder), str(source))
    return next(folder.glob("fedplan-*.whl"))


@pytest.fixture(scope="module")
def environment(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("venv") / "env"
    venv.create(folder, with_pip=True)
    return folder


def _python(environment: Path) -> str:
    return str(environment / "bin" / "python")


def _pip(environment: Path, *argv) -> subprocess.CompletedProcess:
    return _run(_python(environment), "-m", "pip", "--disable-pip-version-check", "-q", *argv)


def _broken(environment: Path, *names) -> dict:
    return json.loads(_run(_python(environment), "-c", CHECK_RECORDS, *names).stdout)


def test_the_wheel_holds_one_top_level_package(wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"fedplan"}
    folders = {"fedplan": "fedplan", "bounds": "fedplan/bounds", "planner": "fedplan/planner",
               "app_pages": "fedplan/app_pages"}
    for folder, installed in folders.items():
        for path in (ROOT / folder).rglob("*.py"):
            assert f"{installed}/{path.relative_to(ROOT / folder).as_posix()}" in names, path


def test_fedplan_beside_the_public_planner_and_bounds_in_either_order(wheel, environment, tmp_path):
    python, fedplan_script = _python(environment), str(environment / "bin" / "fedplan")
    # the public distributions first, then fedplan (core only: no streamlit, pandas, scikit-learn, dask)
    _pip(environment, "install", "--no-deps", *OTHERS)
    _pip(environment, "install", str(wheel))
    assert _broken(environment, "fedplan", "planner", "bounds") == {}
    where = json.loads(_run(python, "-c", CHECK_IMPORTS, cwd=tmp_path).stdout)
    assert "/site-packages/planner/" in where["planner"] and where["bounds"].endswith("/site-packages/bounds.py")
    assert "/site-packages/fedplan/planner/" in where["fedplan_planner"]
    assert where["epsilon"] == pytest.approx(5.631992, abs=1e-6)
    assert "calibrate" in _run(fedplan_script, "--help", cwd=tmp_path).stdout
    app = subprocess.run([fedplan_script, "app"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert app.returncode == 2 and app.stderr == ("fedplan: error: the app needs Streamlit: pip install "
                                                  "'fedplan[app]'\n")
    simulation = subprocess.run([fedplan_script, "simulate", "fedbuff", "--dataset", "breast_cancer", "--rounds", "2",
                                 "--json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert simulation.returncode == 2 and "pip install 'fedplan[sim]'" in simulation.stderr
    assert simulation.stderr.count("\n") == 1
    # uninstalling them leaves fedplan whole; installing them after fedplan breaks nothing either
    _pip(environment, "uninstall", "-y", "planner", "bounds")
    assert _broken(environment, "fedplan") == {}
    _pip(environment, "install", "--no-deps", *OTHERS)
    assert _broken(environment, "fedplan", "planner", "bounds") == {}
    # and uninstalling fedplan leaves them whole
    _pip(environment, "uninstall", "-y", "fedplan")
    assert _broken(environment, "planner", "bounds") == {}
