"""The operators' parameters, one table per operator family: name, type, interval, default, doc.

Every rule that accepts or refuses an operator parameter derives from these tables:
:func:`fieldrank._validation.param` checks a value against its :class:`Param` (the operators,
:mod:`fieldrank.reference` and the legs of :mod:`fieldrank.config` call it), the legs' dataclass
checks are the tables' rows, and ``docs/parameters.md`` is generated from them
(``python tools/gen_param_docs.py``; a test fails while it is stale). A test draws values across
every interval and its edges and asserts that the config, the Python operator and the C++
kernel accept and refuse exactly the same ones.

The intervals are the kernel's rules (``cpp/include/fieldrank/errors.hpp``), stated once here:
counts are ``int64`` (``require_positive``), Ring's seed a ``uint64``, and a real parameter is
cast to ``float`` in the kernels, so it must be finite as a float32 (``require_float32_range``),
and a positive one must stay positive there (``require_positive_real``: at least float32's
smallest subnormal). Defaults are the native table ``fieldrank.DEFAULTS``: no number is retyped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from . import _kernels

_D = _kernels.DEFAULTS

#: Largest finite float32: the native kernels compute in float32 and cast every real parameter to float.
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: Smallest positive float32 (subnormal): a positive parameter below it would become 0 in the kernels.
FLOAT32_TRUE_MIN = float(np.finfo(np.float32).smallest_subnormal)
#: Counts are int64 (``Index``) in the kernels.
INT64_MAX = int(np.iinfo(np.int64).max)
#: Ring's seed is a ``std::uint64_t``.
UINT64_MAX = 2**64 - 1


@dataclass(frozen=True)
class Interval:
    """The values a parameter may take: its type and bounds, each end open or closed.

    ``type`` is ``"int"``, ``"real"`` or ``"bool"`` (a bool has no bounds). ``kernel_rule`` names
    the check in ``errors.hpp`` (or the binding's C++ type) that this interval restates.
    """

    type: str
    low: Any = None
    high: Any = None
    low_open: bool = False
    high_open: bool = False
    kernel_rule: str = ""

    def contains(self, value: Any) -> bool:
        """Whether ``value`` (already of this type) lies within the bounds."""
        if self.type == "bool":
            return True
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def text(self) -> str:
        """The interval as written in the docs, e.g. ``[0, 1]`` or ``[1, 2**63-1]``."""
        if self.type == "bool":
            return "{False, True}"
        return f"{'(' if self.low_open else '['}{_bound(self.low)}, {_bound(self.high)}{')' if self.high_open else ']'}"


def _bound(v: Any) -> str:
    names = {INT64_MAX: "2**63-1", UINT64_MAX: "2**64-1", FLOAT32_MAX: "float32 max",
             FLOAT32_TRUE_MIN: "float32 min subnormal"}
    for value, name in names.items():
        if v == value and type(v) is type(value):
            return name
    return f"{v:g}" if isinstance(v, float) else str(v)


# The kernel's rules, once.
POSITIVE_INT = Interval("int", 1, INT64_MAX, kernel_rule="require_positive (int64)")
UINT64 = Interval("int", 0, UINT64_MAX, kernel_rule="std::uint64_t")
UNIT = Interval("real", 0.0, 1.0, kernel_rule="require_unit_interval")
POSITIVE_REAL = Interval("real", FLOAT32_TRUE_MIN, FLOAT32_MAX, kernel_rule="require_positive_real")
NON_NEGATIVE_REAL = Interval("real", 0.0, FLOAT32_MAX, kernel_rule="require_non_negative_real")
FLAG = Interval("bool", kernel_rule="bool")
NON_NEGATIVE_INT = Interval("int", 0, INT64_MAX, kernel_rule="require_non_negative (int64)")


@dataclass(frozen=True)
class Param:
    """One operator parameter: its name, interval, default (from ``DEFAULTS``) and a one-line doc."""

    name: str
    interval: Interval
    default: Any
    doc: str
    #: The symbol the docs and the write-ups use (``σ``), if any.
    symbol: Optional[str] = None


#: family -> its parameters, in the operators' positional order (``k`` first: the ids returned).
TABLES: dict[str, tuple[Param, ...]] = {
    "prefilter": (
        Param("p", POSITIVE_INT, _D["p"], "rows kept by the cosine prefilter (pool size P)", "P"),
    ),
    "cfsr": (
        Param("k", POSITIVE_INT, _D["cfsr_k"], "ids returned (leg depth m)", "m"),
        Param("w", UNIT, _D["w"], "blend weight of the reconstruction coefficient", "w"),
        Param("lam", NON_NEGATIVE_REAL, _D["lam"], "ridge weight", "λ"),
        Param("iters", POSITIVE_INT, _D["iters"], "projected-gradient iterations", "T"),
        Param("tol", NON_NEGATIVE_REAL, _D["tol"], "early stop on the projected-gradient norm; 0: off"),
        Param("fista", FLAG, False, "accelerated (FISTA) iteration instead of the plain one"),
    ),
    "cfs": (
        Param("k", POSITIVE_INT, _D["cfs_k"], "ids returned (leg depth)"),
        Param("sigma", POSITIVE_REAL, _D["sigma"], "width of the Gaussian coverage field", "σ"),
        Param("beta", NON_NEGATIVE_REAL, _D["beta"], "weight of the field penalty", "β"),
        Param("eps", POSITIVE_REAL, _D["eps"], "floor of the log objective", "ε"),
    ),
    "mmr": (
        Param("k", POSITIVE_INT, _D["mmr_k"], "ids returned"),
        Param("mu", UNIT, _D["mu"], "relevance weight", "μ"),
    ),
    "ring": (
        Param("k", POSITIVE_INT, _D["ring_k"], "ids returned (the pool is the prefilter top-2k)"),
        Param("alpha", UNIT, _D["alpha"], "neighbour weight of a lap", "α"),
        Param("laps", POSITIVE_INT, _D["laps"], "survival laps", "L"),
        Param("seed", UINT64, _D["seed"], "seed of the tie draw"),
        Param("ablation", FLAG, False, "archived constant bump instead of the neighbour term"),
    ),
    "rrf": (
        Param("k", POSITIVE_INT, _D["k"], "ids returned"),
        Param("k0", NON_NEGATIVE_REAL, _D["k0"], "rank offset", "k₀"),
    ),
}


#: The legs' own native parameters, one table per leg family (the time-aware leg's formula,
#: ``fieldrank.temporal.TemporalParams``; docs/spec.md §6b), in the dataclass's field order.
LEG_TABLES: dict[str, tuple[Param, ...]] = {
    "temporal": (
        Param("alpha", UNIT, _D["temporal_alpha"], "lexical share of the base blend", "α"),
        Param("gamma", NON_NEGATIVE_REAL, _D["temporal_gamma"], "weight of the neighbour support; 0: none", "γ"),
        Param("radius", POSITIVE_INT, _D["temporal_radius"], "neighbours i ± 1 … i ± radius of the same session"),
        Param("decay", UNIT, _D["temporal_decay"], "support factor per extra step of distance"),
        Param("tau", NON_NEGATIVE_REAL, _D["temporal_tau"], "time-cue boost for questions with time intent", "τ"),
        Param("delta", NON_NEGATIVE_REAL, _D["temporal_delta"], "boost for turns dated in a period the question names",
              "δ"),
        Param("before_days", NON_NEGATIVE_INT, _D["temporal_before_days"], "slack before a named period (days)"),
        Param("after_days", NON_NEGATIVE_INT, _D["temporal_after_days"], "slack after a named period (days)"),
    ),
}


def operator_params(family: str) -> tuple[Param, ...]:
    """The family's parameters other than ``k`` (a leg's ``depth`` plays ``k``'s part)."""
    return tuple(p for p in TABLES[family] if p.name != "k")


def lookup(family: str, name: str) -> Param:
    """The row ``name`` of ``family``'s table."""
    for spec in TABLES[family]:
        if spec.name == name:
            return spec
    msg = f"no parameter {name!r} in the {family!r} table"
    raise KeyError(msg)
