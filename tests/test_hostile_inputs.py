"""Hostile inputs (issue 15): calls the API accepts must not abort the process, and hostile
files and command lines end in a clear error that names what is wrong.

Sections: worker threads that cannot be started; the CLI and its loaders; saved index
directories; memory store files (see also ``tests/test_untrusted_loading.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fieldrank

from .conftest import SEED, unit_rows

# ----------------------------------------------------------------- threads that cannot start

_THREAD_LIMIT_SCRIPT = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import fieldrank
    from fieldrank import _core

    rng = np.random.default_rng(%(seed)d)
    E = rng.standard_normal((400, 16)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    Q = E[rng.integers(0, 400, 3000)].copy()
    probe = np.ones(1 << 16, dtype=np.float32)
    calls = {
        "prefilter_batch": lambda t: fieldrank.prefilter_batch(E, Q, 3, n_threads=t).ids,
        "cfs_batch": lambda t: fieldrank.cfs_batch(E, Q[:600], 3, p=8, n_threads=t).ids,
        "read_probe": lambda t: np.array([_core.read_probe(probe, t)]),
    }
    expected = {name: call(1) for name, call in calls.items()}
    # Address space for the interpreter plus about 200 MiB: a few dozen thread stacks, not
    # the thousands asked for, so std::thread fails part way through starting them.
    page = resource.getpagesize()
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * page
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (mapped + (200 << 20), hard))
    got = {name: call(3000) for name, call in calls.items()}
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    for name in calls:
        assert np.array_equal(got[name], expected[name]), name
    print("ok", sorted(calls))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux")
def test_batch_whose_threads_cannot_start_returns_the_same_result(tmp_path):
    """Issue 15 item 0: ``prefilter_batch(E, Q, 3, n_threads=20000)`` under a memory limit used to
    end in ``std::terminate`` (exit 134). Workers that cannot start are left out instead."""
    script = tmp_path / "threads.py"
    script.write_text(_THREAD_LIMIT_SCRIPT % {"seed": SEED})
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.startswith("ok")
