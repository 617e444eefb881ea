"""The CI-sized store race of issue #34 (``tools/store_race.py --adapter NAME``): two processes
putting, deleting, getting and listing 20 keys on one file through an adapter that writes. Before
the fix, each adapter object kept its own key -> memory map: a few seconds gave duplicated keys,
returned deletes and views that disagreed (LangGraph 30 s: 10, 3 and 18 of 20)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fieldrank

from tests.helpers import REPO_ROOT


@pytest.mark.parametrize(("adapter", "module", "seconds"), [
    ("langgraph", "langgraph.store.base", 10),
    ("langchain", "langchain_core.vectorstores", 5),  # the document stores' shared collection
])
def test_two_processes_through_an_adapter_never_duplicate_or_revive_a_key(tmp_path, adapter, module, seconds):
    pytest.importorskip(module, reason="needs the integrations extra")
    # The subprocess imports the fieldrank this test imported (an installed package in CI, the
    # source tree with its compiled core in development), never the uncompiled source tree.
    package_root = str(Path(fieldrank.__file__).resolve().parents[1])
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "store_race.py"), "--adapter", adapter,
                           "--seconds", str(seconds), "--seed", "34"], capture_output=True, text=True,
                          env=environment, cwd=tmp_path, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert all(counts["put"] > 0 and counts["delete"] > 0 for counts in figures["operations"])
    assert (figures["duplicates"], figures["returned_deletes"], figures["keys_seen_differently"]) == (0, 0, 0)
