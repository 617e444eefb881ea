"""The leg base class and the registry of leg kinds.

A leg kind is one class: a frozen dataclass deriving from :class:`Leg` whose fields are its
configuration (``depth``, ``weight``, ``name`` and its operator's parameters), validated from its
parameter table (:attr:`Leg.field_checks`), written and read as a dict (:meth:`Leg.to_dict`,
:meth:`Leg.from_dict`), with the rules the plan reads (what it takes from the shared inputs, how
many ids it guarantees, how it deepens) and its :meth:`Leg.run`, which reads only the
:class:`~fieldrank._retriever.context.QueryContext`. ``@register_leg`` in the class's module makes
the kind known to the configuration files, the plan, saved indexes and ``fieldrank calibrate``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Optional, TypeVar

from ... import _param_tables as _tables
from ... import _validation as _v
from ..context import LegOutput, QueryContext
from ..corpus import Corpus

__all__ = ["DEFAULT_WEIGHT", "LEG_REGISTRY", "Leg", "LegOutput", "register_leg"]

#: Weight of a leg that does not say otherwise (plain, unweighted RRF).
DEFAULT_WEIGHT = 1.0


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


def check_name(owner: str, value: object) -> str:
    """A leg's or configuration's ``name``: a non-empty str."""
    if not isinstance(value, str) or not value.strip():
        msg = f"{owner}.name must be a non-empty str, got {value!r}"
        raise ValueError(msg)
    return value


class Leg:
    """Base of the leg kinds: validation, dict form, the plan's rules and ``run``.

    A subclass is a ``@dataclass(frozen=True)`` with at least the fields ``depth``, ``weight`` and
    ``name``, a ``kind`` class attribute, and a :meth:`run`; it overrides the plan rules it needs
    (the defaults: no shared input, ``depth`` ids guaranteed).
    """

    kind: ClassVar[str]
    depth: int
    weight: float
    name: str
    #: Whether the leg needs a query vector / the query text / the corpus timeline.
    needs_vector: ClassVar[bool] = True
    needs_text: ClassVar[bool] = False
    needs_timeline: ClassVar[bool] = False
    #: The kind's operator parameters, in order: rows of its family's table in
    #: :mod:`fieldrank._param_tables`, checked by :func:`fieldrank._validation.param`.
    field_checks: ClassVar[tuple[_tables.Param, ...]] = ()

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _set(self, "depth", _v.integer(self.depth, f"{owner}.depth", low=1))
        _set(self, "weight", _v.real(self.weight, f"{owner}.weight", low=0.0))
        _set(self, "name", check_name(owner, self.name))
        self.check_fields(owner)
        for spec in self.field_checks:
            _set(self, spec.name, _v.param(spec, getattr(self, spec.name), f"{owner}.{spec.name}"))

    def check_fields(self, owner: str) -> None:
        """The kind's own checks beyond depth, weight, name and :attr:`field_checks` (run between them)."""

    def set_field(self, name: str, value: object) -> None:
        """Store a checked value on the frozen leg (for :meth:`check_fields` only)."""
        _set(self, name, value)

    def operator_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the leg's operator besides ``k``: the fields of :attr:`field_checks`."""
        return {spec.name: getattr(self, spec.name) for spec in self.field_checks}

    # ---------------------------------------------------------------- dict form
    def to_dict(self) -> dict[str, Any]:
        """The leg as a TOML/JSON-ready dict: ``kind`` first, ``None`` fields left out."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, values: dict[str, Any], where: str = "leg") -> Leg:
        """The leg of ``values`` (without ``kind``); missing fields take their defaults."""
        known = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        unknown = sorted(set(values) - set(known))
        if unknown:
            msg = f"{where}: unknown field(s) {unknown} for a {cls.kind!r} leg; known fields: {known}"
            raise ValueError(msg)
        return cls(**values)

    # ---------------------------------------------------------------- the plan's rules
    def dense_depth(self, batched: bool) -> int:
        """Depth taken from the shared cosine prefilter (0: none); ``batched``: for a batch."""
        return 0

    def lexical_depth(self) -> int:
        """Depth taken from the shared BM25 top lists (0: none)."""
        return 0

    def lexical_scores(self) -> bool:
        """Whether the leg reads every document's BM25 score."""
        return False

    def coverage(self) -> int:
        """Ids the leg returns at least (capped by the documents a query may see)."""
        return self.depth

    def deepened(self, k: int, n_docs: Optional[int] = None) -> Leg:
        """The leg returning at least ``k`` ids where it can (its pool, if any, at least as deep).

        With ``n_docs``, depths past the corpus are capped at it (at least the leg's own): a leg, its
        pool or an operator cannot return more than every document, so the outputs are the same.
        """
        if self.depth >= k:
            return self
        depth = k if n_docs is None else max(self.depth, min(k, n_docs))
        changes: dict[str, Any] = {"depth": depth}
        if hasattr(self, "p"):
            changes["p"] = max(self.p, depth)
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def prepare(self, corpus: Corpus) -> None:
        """Compute now what the leg's first search over ``corpus`` would (nothing by default)."""

    def run(self, ctx: QueryContext) -> list[LegOutput]:
        """The leg's ranking of each query of ``ctx`` (a single query is a context of one)."""
        raise NotImplementedError(f"{type(self).__name__} does not define run()")


#: The leg registry: kind name -> its :class:`Leg` class, in registration order (docs/spec.md's
#: order for the built-in kinds). The configuration, the plan, saved indexes and calibration read
#: nothing else.
LEG_REGISTRY: dict[str, type[Leg]] = {}

LegType = TypeVar("LegType", bound=type)


def register_leg(cls: LegType) -> LegType:
    """Class decorator: make ``cls`` (a :class:`Leg` dataclass) the leg of kind ``cls.kind``."""
    if not (isinstance(cls, type) and issubclass(cls, Leg) and dataclasses.is_dataclass(cls)):
        msg = f"register_leg takes a Leg dataclass, got {cls!r}"
        raise TypeError(msg)
    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind:
        msg = f"{cls.__name__}.kind must be a non-empty str, got {kind!r}"
        raise ValueError(msg)
    if LEG_REGISTRY.get(kind, cls) is not cls:
        msg = f"leg kind {kind!r} is registered already ({LEG_REGISTRY[kind].__name__})"
        raise ValueError(msg)
    LEG_REGISTRY[kind] = cls
    return cls
