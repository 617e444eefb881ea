"""A base install (no extras) runs every entry point: ``tools/smoke_base_install.py`` (which
``.ci/run`` runs in the venv of the README's first command) run here with the extras blocked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "smoke_base_install.py"


def test_every_entry_point_runs_without_the_extras() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--block-extras"], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "no module outside the base install imported" in done.stderr
