"""One compile per checkout: two builds from build environments at different paths (what pip's
isolated builds are) compile the core with the same command lines into object files that
scikit-build-core's cache clearing leaves alone, so ninja reuses them.

Configure only (no compile): the build requirements are copied into two folders, as pip installs
them into a new temporary environment each time (with new file times), and CMakeLists.txt is
configured from each into one build folder. Skips where CMake, ninja, pybind11 or cmeel-eigen is
missing (``pip install ".[test]"`` brings the two packages).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 300


def _site_packages_of(module: str) -> Path:
    found = pytest.importorskip(module, reason=f"needs {module} (a build requirement; in the test extra)")
    return Path(found.__path__[0]).parent


def _build_env(folder: Path, shift_s: float) -> Path:
    """pybind11, cmeel and cmeel.prefix copied into ``folder`` with file times moved by ``shift_s``."""
    site = folder / "site-packages"
    for module, names in (("pybind11", ("pybind11",)), ("cmeel", ("cmeel", "cmeel.prefix"))):
        source = _site_packages_of(module)
        for name in names:
            shutil.copytree(source / name, site / name, symlinks=True)
    for path in site.rglob("*"):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            os.utime(path, (stat.st_atime + shift_s, stat.st_mtime + shift_s))
    return site


def _configure(site: Path, build: Path) -> list[dict]:
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if cmake is None or ninja is None:
        pytest.skip("needs cmake and ninja on PATH")
    command = [cmake, "-S", str(ROOT), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
               "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", "-DSKBUILD=2", "-DSKBUILD_PROJECT_NAME=fieldrank",
               "-DSKBUILD_PROJECT_VERSION=0.1.0", f"-DPython_EXECUTABLE={sys.executable}",
               f"-DCMAKE_MAKE_PROGRAM={ninja}",
               f"-Dpybind11_DIR={site / 'pybind11' / 'share' / 'cmake' / 'pybind11'}"]
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fieldrank: the C++ core is" in done.stdout  # the progress note a pip install -v shows
    return json.loads((build / "compile_commands.json").read_text())


def test_two_isolated_build_envs_compile_the_core_with_the_same_command_lines(tmp_path):
    first_env = _build_env(tmp_path / "env-one", 0.0)
    second_env = _build_env(tmp_path / "env-two", 3600.0)
    build = tmp_path / "build"
    first = _configure(first_env, build)
    copies = sorted(build.rglob("stable-include/**/*.h*"))
    times = {path: path.stat().st_mtime_ns for path in copies}
    assert copies, "the headers are compiled from a folder of the build tree"
    # What scikit-build-core does when the isolated environment's path changed (every pip install):
    # it deletes CMakeCache.txt and CMakeFiles/. The objects must live elsewhere.
    (build / "CMakeCache.txt").unlink()
    shutil.rmtree(build / "CMakeFiles")
    for entry in first:
        assert not (Path(entry["directory"]) / entry["output"]).resolve().is_relative_to((build / "CMakeFiles").resolve()), entry["output"]
    second = _configure(second_env, build)
    assert [entry["command"] for entry in second] == [entry["command"] for entry in first]
    for entry in first:
        assert "env-one" not in entry["command"], entry["command"]
    # The copies were not rewritten (same bytes), so their times say nothing changed to ninja.
    assert {path: path.stat().st_mtime_ns for path in copies} == times
