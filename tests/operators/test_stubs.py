"""``python/fieldrank/_core.pyi`` is generated from the binary (``tools/gen_stubs.py``, pybind11-stubgen).

The committed stub must equal what the generator writes for the module this interpreter imports:
the test regenerates it into ``tmp_path`` and diffs, failing with the command that fixes it.
``mypy.stubtest`` checks the stub against the binary too.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from fieldrank import _core

REPOSITORY = Path(__file__).resolve().parents[2]
TOOL = REPOSITORY / "tools" / "gen_stubs.py"
COMMITTED = REPOSITORY / "python" / "fieldrank" / "_core.pyi"


def load_tool():
    spec = importlib.util.spec_from_file_location("gen_stubs", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_stub_is_the_generated_one(tmp_path):
    result = subprocess.run([sys.executable, str(TOOL), "--output", str(tmp_path)], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    generated = (tmp_path / "_core.pyi").read_text(encoding="utf-8")
    committed = COMMITTED.read_text(encoding="utf-8")
    assert generated == committed, (
        f"{COMMITTED} differs from the stub generated from the binary; run `python tools/gen_stubs.py` "
        "(after rebuilding: pip install -e '.[test]' --no-build-isolation) and commit the result"
    )


def test_check_mode_reports_a_stale_stub(tmp_path):
    tool = load_tool()
    stale = tmp_path / "_core.pyi"
    stale.write_text(COMMITTED.read_text(encoding="utf-8").replace("def tie_key(", "def tie_keys("), encoding="utf-8")
    diff = "".join(tool.stale_diff(stale))
    assert "-def tie_keys(" in diff and "+def tie_key(" in diff
    assert tool.stale_diff(COMMITTED) == []


def test_every_binary_function_has_a_signature_line():
    """pybind11 writes ``name(arg: type, ...) -> return`` first in ``__doc__``: the generator reads it."""
    for name in dir(_core):
        value = getattr(_core, name)
        if callable(value) and not isinstance(value, type) and not name.startswith("_"):
            first_line = (value.__doc__ or "").splitlines()[0]
            assert first_line.startswith(f"{name}(") and ") -> " in first_line, (name, first_line)


def test_every_argument_is_named():
    """No ``arg0``: every binding names its arguments (``"name"_a``), so the stub and errors do too."""
    for name in dir(_core):
        value = getattr(_core, name)
        if callable(value) and not isinstance(value, type) and not name.startswith("_"):
            assert "arg0" not in (value.__doc__ or "").splitlines()[0], name


def test_constants_have_the_stubbed_types():
    assert isinstance(_core.DEFAULTS, dict) and _core.DEFAULTS
    for key, value in _core.DEFAULTS.items():
        assert isinstance(key, str) and type(value) in (int, float), (key, value)
    info = _core.build_info()
    assert isinstance(info, dict) and info
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in info.items())


def test_stubtest(tmp_path):
    """mypy's own stub checker against the binary."""
    pytest.importorskip("mypy.stubtest")
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\ncache_dir = {tmp_path / 'cache'}\n", encoding="utf-8")
    # pybind11 classes have the pybind11_type metaclass and a constructor that only raises
    # ("No constructor defined"); the generated stub states neither. The generator also writes
    # the public names as __all__, which the compiled module does not define.
    allowlist = tmp_path / "allowlist.txt"
    entries = [r"fieldrank\._core\.Native\w+", r"fieldrank\._core\.Native\w+\.__init__", r"fieldrank\._core\.__all__"]
    allowlist.write_text("\n".join(entries) + "\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "fieldrank._core", "--mypy-config-file", str(config),
         "--allowlist", str(allowlist)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
