"""The parameter tables are the one rule: the config legs, the Python operators (native wrappers
and the numpy reference) and the C++ kernel accept and refuse exactly the same values.

Values are drawn across every table's interval and its edges (0, subnormals, float32 max and
the next double above it, 2**63 - 1, 2**63, 2**64 - 1, 2**64, negatives, NaN, inf, bools and
wrong types). The Python layers must agree on the outcome and on the exception type; the kernel
is called directly (``fieldrank._core``, valid arrays) with the value in the parameter's C type
and must accept exactly the values the Python layers accept. A value of the wrong Python type is
refused with ``TypeError`` before any kernel is reached, so the kernel is not asked about it
(its binding converts types by pybind11's own rules).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fieldrank  # noqa: E402
from fieldrank import _core, reference  # noqa: E402
from fieldrank import _param_tables as tables  # noqa: E402
from fieldrank import _validation as _v  # noqa: E402
from fieldrank.config import CFSLeg, CFSRLeg, MMRLeg, RingLeg  # noqa: E402

E = np.eye(4, dtype=np.float32)
Q = np.array([1.0, 0.5, 0.25, 0.125], dtype=np.float32)
IDS = np.arange(4, dtype=np.int64)

LEGS = {"cfsr": CFSRLeg, "cfs": CFSLeg, "mmr": MMRLeg, "ring": RingLeg}
#: Parameters whose cost grows with their value: an accepted value above this is checked for
#: acceptance by the config and the validation only (a Ring of 2**63 laps would not finish).
COST_BOUND = {("ring", "laps"): 64}

F32_MAX = tables.FLOAT32_MAX
F32_TINY = tables.FLOAT32_TRUE_MIN
EDGES = [
    0, 1, 2, -1, 0.0, -0.0, 0.5, 1.0, 1.5, -0.5, 1e-6, 60.0,
    F32_TINY, F32_TINY / 2, math.nextafter(F32_TINY, 0.0), math.nextafter(F32_TINY, 1.0), 5e-324, 1e-300, -F32_TINY,
    F32_MAX, math.nextafter(F32_MAX, math.inf), -F32_MAX, 1e39, 1e300,
    math.nan, math.inf, -math.inf,
    2**31, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**400,
    True, False, np.bool_(True), np.float32(0.5), np.float64(F32_MAX), np.int64(3), np.uint64(2**64 - 1),
    np.int8(-1), "1", None, [1], 1 + 0j,
]
PARAMS = [(family, spec) for family, table in tables.TABLES.items() for spec in table]


def _outcome(call):
    try:
        call()
    except TypeError:
        return "TypeError"
    except ValueError:
        return "ValueError"
    return "accepted"


def _kwargs(family, spec, value):
    kwargs = {spec.name: value}
    if family == "cfsr" and spec.name == "iters":
        kwargs["tol"] = F32_MAX  # stop after one step: any iteration count is then cheap
    return kwargs


def _python_call(module, family, spec, value):
    kwargs = _kwargs(family, spec, value)
    if family == "prefilter":
        return lambda: module.prefilter(E, Q, **kwargs)
    if family == "rrf":
        return lambda: module.rrf([IDS, IDS[::-1].copy()], None, **kwargs)
    return lambda: getattr(module, family)(E, Q, **kwargs)


def _pool_call(family, spec, value):
    kwargs = _kwargs(family, spec, value)
    if family in ("prefilter", "rrf"):
        return None
    kwargs.pop("p", None)
    return lambda: getattr(fieldrank, f"{family}_pool")(IDS, E, Q, **kwargs)


def _kernel_call(family, spec, value):
    """``_core.<family>`` with every other parameter at its default, positionally."""
    values = {p.name: p.default for p in tables.TABLES[family]}
    values.update(_kwargs(family, spec, value))
    args = [values[p.name] for p in tables.TABLES[family]]
    if family == "rrf":
        return lambda: _core.rrf([IDS, IDS[::-1].copy()], [1.0, 1.0], *args)
    if family in ("cfsr", "cfs", "mmr"):
        args.insert(1, tables.lookup("prefilter", "p").default)  # corpus forms: k, then p
    return lambda: getattr(_core, family)(E, Q, *args, None)


def _native_value(spec, value):
    """``value`` in the parameter's C type, or None where it has none (10**400 as a double)."""
    if spec.interval.type == "int":
        return int(value)
    if spec.interval.type == "bool":
        return bool(value)
    try:
        return float(value)
    except OverflowError:
        return None


def _check_agreement(family, spec, value):
    validation = _outcome(lambda: _v.param(spec, value))
    outcomes = {"validation": validation}
    if family in LEGS and spec.name != "k":
        outcomes["config"] = _outcome(lambda: LEGS[family](**{spec.name: value}))
    if family in LEGS and spec.name == "p":
        outcomes["config"] = _outcome(lambda: LEGS[family](p=value, depth=1))
    bound = COST_BOUND.get((family, spec.name))
    cheap = validation != "accepted" or bound is None or _v.param(spec, value) <= bound
    if cheap:
        outcomes["native"] = _outcome(_python_call(fieldrank, family, spec, value))
        outcomes["reference"] = _outcome(_python_call(reference, family, spec, value))
        pool = _pool_call(family, spec, value)
        if pool is not None and spec.name != "p":
            outcomes["native pool"] = _outcome(pool)
    assert len(set(outcomes.values())) == 1, (family, spec.name, value, outcomes)
    if validation == "TypeError" or not cheap:
        return
    native = _native_value(spec, value)
    if native is None:
        return
    kernel = _outcome(_kernel_call(family, spec, native))
    assert (kernel == "accepted") == (validation == "accepted"), (family, spec.name, value, native, kernel)


@pytest.mark.parametrize(("family", "spec"), PARAMS, ids=[f"{f}.{s.name}" for f, s in PARAMS])
@pytest.mark.parametrize("value", EDGES, ids=repr)
def test_every_edge_is_accepted_or_refused_alike(family, spec, value):
    _check_agreement(family, spec, value)


def _values(interval):
    """Values inside, at and just beyond ``interval``'s ends, and anything else."""
    near = []
    for end in (interval.low, interval.high):
        if end is None:
            continue
        if interval.type == "int":
            near.append(st.integers(end - 2, end + 2))
        else:
            near.append(st.sampled_from([end, math.nextafter(end, -math.inf), math.nextafter(end, math.inf)]))
    inside = ([st.integers(interval.low, interval.high)] if interval.type == "int" else
              [st.floats(interval.low, interval.high)] if interval.type == "real" else [st.booleans()])
    anything = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**65), 2**65),
                         st.booleans(), st.sampled_from(EDGES))
    return st.one_of(*near, *inside, anything)


@pytest.mark.parametrize(("family", "spec"), PARAMS, ids=[f"{f}.{s.name}" for f, s in PARAMS])
@settings(max_examples=60)
@given(data=st.data())
def test_drawn_values_are_accepted_or_refused_alike(family, spec, data):
    _check_agreement(family, spec, data.draw(_values(spec.interval)))


def test_the_tables_defaults_are_the_native_table_and_are_accepted():
    for family, spec in PARAMS:
        assert _v.param(spec, spec.default) == spec.default, (family, spec.name)
    for family, leg in LEGS.items():
        made = leg()
        for spec in tables.operator_params(family):
            assert getattr(made, spec.name) == spec.default, (family, spec.name)
    assert tables.lookup("cfs", "sigma").default == _core.DEFAULTS["sigma"]


def test_the_legs_check_exactly_their_familys_parameters():
    for family, leg in LEGS.items():
        assert tuple(s.name for s in leg.field_checks) == tuple(s.name for s in tables.operator_params(family))


def test_the_named_disagreements_are_gone():
    """fixed: the config took sigma=1e-300 and seed=2**64, which the kernel refused at the first search."""
    with pytest.raises(ValueError, match=r"CFSLeg.sigma must stay positive as a float32"):
        CFSLeg(sigma=1e-300)
    with pytest.raises(ValueError, match=r"RingLeg.seed must be an integer below 2\*\*64"):
        RingLeg(seed=2**64)
    with pytest.raises(ValueError, match=r"CFSRLeg.lam must be finite as a float32"):
        CFSRLeg(lam=1e39)
    with pytest.raises(ValueError, match=r"MMRLeg.p must be a positive integer that fits int64"):
        MMRLeg(p=2**63)
    assert RingLeg(seed=2**64 - 1).seed == 2**64 - 1


LEG_PARAMS = [(family, spec) for family, table in tables.LEG_TABLES.items() for spec in table]


@pytest.mark.parametrize(("family", "spec"), LEG_PARAMS, ids=[f"{f}.{s.name}" for f, s in LEG_PARAMS])
def test_the_leg_tables_describe_the_legs(family, spec):
    # The time-aware leg's parameters accept and refuse exactly what their rows do, with the rows'
    # defaults and in the rows' order: the table may replace the dataclass's own checks.
    from fieldrank.temporal import TemporalParams

    assert family == "temporal"
    assert tuple(f.name for f in dataclasses.fields(TemporalParams)) == tuple(s.name for s in tables.LEG_TABLES[family])
    assert getattr(TemporalParams(), spec.name) == spec.default == _v.param(spec, spec.default)
    for value in EDGES:
        row = _outcome(lambda: _v.param(spec, value))
        leg = _outcome(lambda: TemporalParams(**{spec.name: value}))
        assert row == leg, (spec.name, value, row, leg)
