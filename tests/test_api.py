"""The native module and the reference expose the same operators with the same signatures."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import fieldrank
import fieldrank.reference
from fieldrank import _core, operators

from tests.helpers import unit_rows

OPERATORS = operators.__all__


@pytest.mark.parametrize("name", OPERATORS)
def test_same_signature_in_both_modules(name):
    native = getattr(fieldrank, name)
    reference = getattr(fieldrank.reference, name)
    assert inspect.signature(native) == inspect.signature(reference)


def test_defaults_come_from_core():
    assert fieldrank.DEFAULTS == dict(_core.DEFAULTS)
    locked = {"w": 0.90, "lam": 0.005, "p": 150, "iters": 80, "cfsr_k": 50, "sigma": 0.40, "beta": 0.20,
              "eps": 1e-6, "k0": 60.0}
    for key, value in locked.items():
        assert fieldrank.DEFAULTS[key] == value, key
    assert inspect.signature(fieldrank.cfsr).parameters["w"].default == _core.DEFAULTS["w"]


SCRIPT = """
rng = np.random.default_rng(7)
E = rng.standard_normal((200, 32)).astype(np.float32)
E /= np.linalg.norm(E, axis=1, keepdims=True)
q = E[3].copy()
pool = fr.prefilter(E, q, 40)
rec = fr.cfsr(E, q, 10, p=40)
legs = [pool.ids[:10], rec.ids, fr.cfs(E, q, 10).ids, fr.mmr(E, q, 10).ids, fr.ring(E, q, 10).ids]
fused = fr.rrf(legs, [1, 1, 3, 1, 1], 10)
result = (pool.ids[:10].tolist(), rec.ids.tolist(), fused.ids.tolist())
"""


def test_one_script_runs_against_both_modules():
    outputs = []
    for module in (fieldrank, fieldrank.reference):
        namespace = {"np": np, "fr": module}
        exec(SCRIPT, namespace)  # noqa: S102 - the swap test runs the same user code twice
        outputs.append(namespace["result"])
    assert outputs[0] == outputs[1]


def test_native_rejects_float64_and_f_order_directly(rng):
    E = unit_rows(rng, 10, 4)
    q = E[0].copy()
    with pytest.raises(TypeError):
        _core.prefilter(E.astype(np.float64), q, 3)
    with pytest.raises(TypeError):
        _core.prefilter(np.asfortranarray(E), q, 3)
