"""Configuration of the hybrid retriever: typed legs, presets, and TOML round trips.

A :class:`RetrieverConfig` is a frozen description of a weighted-RRF stack (docs/spec.md §6): an
ordered tuple of *legs*, each a frozen dataclass naming its operator, how many ids it
contributes (``depth``), its RRF ``weight`` and its operator parameters, plus the final
``k``, the RRF offset ``k0`` and the BM25 tokenizer/scoring parameters. Every default is
read from :data:`fieldrank.DEFAULTS` (the native core's table) or from
:mod:`fieldrank.bm25`; the only numbers defined here are the preset weights, in
:data:`PRESET_WEIGHTS`.

Leg kinds (:data:`LEG_KINDS`)
-----------------------------
``cosine``  prefilter top-``depth`` (docs/spec.md §1)
``bm25``    BM25 top-``depth`` on bm25s (docs/spec.md §7)
``cfsr``    CFS-R top-``depth`` of a pool of ``p`` candidates (docs/spec.md §2)
``cfs``     CFS top-``depth`` of a pool of ``p`` candidates (docs/spec.md §3)
``mmr``     MMR top-``depth`` of the prefilter top-``p`` (docs/spec.md §4)
``ring``    Ring survivors, ``depth`` of the prefilter top-(2 ``depth``) (docs/spec.md §5)
``temporal`` the time-aware leg (:mod:`fieldrank.temporal`): z-scored BM25 + cosine blend,
            session-neighbour support and time priors, top-``depth`` of the subset

CFS-R and CFS take a ``pool`` option (:data:`POOL_MODES`): ``"dense"`` (default) reranks
the cosine prefilter top-``p``; ``"union"`` reranks the union of the dense top-``p`` and
the BM25 top-``union_p`` (``union_p`` defaults to ``p``), passed to the operator as a
caller pool with vectors gathered from the corpus.

Presets (:data:`PRESET_NAMES`)
------------------------------
``cosine``, ``bm25``, ``cfs``, ``cfsr`` (single legs), ``rrf2``, ``rrf_mmr``, ``rrf_cfs``,
``rrf_cfsr`` (the write-ups' locked stack: cosine 10, BM25 10, CFS-R 50 x3; also named
``rrf_cfsr_locked``), ``rrf_ring`` and ``default``. See :func:`default_config` for where
``default`` comes from.

Files
-----
:meth:`RetrieverConfig.save_toml` / :meth:`RetrieverConfig.load_toml` (and
:meth:`~RetrieverConfig.to_dict` / :meth:`~RetrieverConfig.from_dict`) round-trip exactly::

    name = "rrf_cfsr"
    k = 10
    k0 = 60.0

    [bm25]
    k1 = 1.5
    b = 0.75
    method = "lucene"
    stopwords = "en"          # false: no stop-word removal
    stemmer_language = "english"
    lowercase = true
    delta = 0.5
    context_window = 0        # neighbour-text expansion (fieldrank.bm25); 0: off
    context_weight = 1.0

    [[legs]]
    kind = "cosine"
    depth = 10
    weight = 1.0

    [[legs]]
    kind = "cfsr"
    depth = 50
    weight = 3.0
    p = 150
    pool = "dense"
    ...

Keys left out of a leg or of ``[bm25]`` take their defaults; unknown keys are errors.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Optional, Union

from . import _confidence as _conf
from . import _kernels
from . import _validation as _v
from ._api import public_dir
from ._retriever.legs import (
    DEFAULT_WEIGHT,
    LEG_REGISTRY,
    POOL_MODES,
    BM25Leg,
    CFSLeg,
    CFSRLeg,
    CosineLeg,
    Leg,
    MMRLeg,
    RingLeg,
    TemporalLeg,
)
from ._retriever.legs import BUILTIN_KINDS
from ._retriever.legs.base import check_name
from .bm25 import DEFAULT_PARAMS, BM25Params

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

__all__ = [
    "LEG_KINDS",
    "POOL_MODES",
    "PRESET_NAMES",
    "PRESET_WEIGHTS",
    "BM25Leg",
    "CFSLeg",
    "CFSRLeg",
    "ConfidenceParams",
    "CosineLeg",
    "Leg",
    "MMRLeg",
    "RetrieverConfig",
    "RingLeg",
    "TemporalLeg",
    "default_confidence",
    "default_config",
    "leg_from_dict",
    "preset",
    "resolve_config",
]

__dir__ = public_dir(__all__)


_D = _kernels.DEFAULTS

#: The preset weights: the only RRF weights written down in the package. ``cfsr_locked`` is
#: the write-ups' CFS-R weight in the locked stack ("CFS-R weighted 3x").
PRESET_WEIGHTS: Mapping[str, float] = {"plain": DEFAULT_WEIGHT, "cfsr_locked": 3.0}

#: Package data file that, when present, defines the ``default`` preset (see :func:`default_config`).
DEFAULT_CONFIG_RESOURCE = ("data", "default_config.toml")
#: The preset ``default`` falls back to while no calibrated file is shipped.
DEFAULT_FALLBACK_PRESET = "rrf2"
#: ``name`` of a configuration built by hand rather than from a preset.
CUSTOM_NAME = "custom"

# Encoding of ``None`` in TOML (which has no null) for the two optional BM25 fields.
_TOML_NONE = False
_BM25_OPTIONAL_FIELDS = ("stopwords", "stemmer_language")


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


#: Every built-in leg kind, in the order of docs/spec.md §1–§7 (a kind registered later, by
#: ``@register_leg``, is in :data:`fieldrank.hybrid.LEG_REGISTRY`; messages list the registry).
LEG_KINDS: tuple[str, ...] = BUILTIN_KINDS


def leg_from_dict(data: Mapping[str, Any], where: str = "leg") -> Leg:
    """Build one leg from a mapping with a ``kind`` key; missing fields take their defaults.

    Raises
    ------
    ValueError
        If ``kind`` is missing or unknown (the message lists the registered kinds), a key is
        unknown for that kind, or a value is out of range.
    TypeError
        If a value has the wrong type.
    """
    if not isinstance(data, Mapping):
        msg = f"{where} must be a table/dict, got {type(data).__name__}"
        raise ValueError(msg)
    values = dict(data)
    kind = values.pop("kind", None)
    if kind not in LEG_REGISTRY:
        msg = f"{where}.kind must be one of {tuple(LEG_REGISTRY)}, got {kind!r}"
        raise ValueError(msg)
    return LEG_REGISTRY[kind].from_dict(values, where)


# ------------------------------------------------------------------ the configuration
def _bm25_to_dict(params: BM25Params) -> dict[str, Any]:
    out = params.to_dict()
    for name in _BM25_OPTIONAL_FIELDS:
        if out[name] is None:
            out[name] = _TOML_NONE
    return out


def _bm25_from_dict(data: object) -> BM25Params:
    if not isinstance(data, Mapping):
        msg = f"bm25 must be a table/dict, got {type(data).__name__}"
        raise ValueError(msg)
    values = dict(data)
    for name in _BM25_OPTIONAL_FIELDS:
        if name in values and values[name] is _TOML_NONE:
            values[name] = None
    return BM25Params.from_dict(values)


def _weights_field(owner: str, name: str, value: object, names: tuple[str, ...]) -> tuple[float, ...]:
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        msg = f"{owner}.{name} must be a sequence of {len(names)} numbers ({', '.join(names)}), got {value!r}"
        raise TypeError(msg)
    values = tuple(value)
    if len(values) != len(names):
        msg = f"{owner}.{name} must hold {len(names)} numbers ({', '.join(names)}), got {len(values)}"
        raise ValueError(msg)
    return tuple(_v.real(v, f"{owner}.{name}[{i}] ({names[i]})") for i, v in enumerate(values))


@dataclass(frozen=True)
class ConfidenceParams:
    """The confidence model of :mod:`fieldrank._confidence` (every hit's ``confidence``).

    ``g = sigmoid(memory_intercept + memory_weights . m)``: whether the searched memory holds what
    the query asks about (``m``: :data:`fieldrank._confidence.MEMORY_FEATURES`);
    ``h = sigmoid(hit_intercept + hit_weights . x)``: whether the hit is the relevant one (``x``:
    :data:`fieldrank._confidence.HIT_FEATURES`); the confidence is
    ``sigmoid(c0 + c1 * logit(g * h) + c2 * [rank == 1])`` with ``calibration = (c0, c1, c2)``.
    The package ships coefficients fitted on LoCoMo (the ``[confidence]`` table of
    ``fieldrank/data/default_config.toml``, :func:`default_confidence`);
    ``fieldrank calibrate --confidence`` refits them on a labelled split.

    Raises
    ------
    ValueError, TypeError
        If a coefficient is not a finite number or a weight vector has the wrong length.
    """

    memory_intercept: float
    memory_weights: tuple[float, ...]
    hit_intercept: float
    hit_weights: tuple[float, ...]
    calibration: tuple[float, ...] = (0.0, 1.0, 0.0)

    _KEYS: ClassVar[tuple[str, ...]] = ("memory_intercept", "memory_weights", "hit_intercept", "hit_weights",
                                        "calibration")
    _CALIBRATION_TERMS: ClassVar[tuple[str, ...]] = ("intercept", "scale", "first_hit")

    def __post_init__(self) -> None:
        owner = "ConfidenceParams"
        _set(self, "memory_intercept", _v.real(self.memory_intercept, f"{owner}.memory_intercept"))
        _set(self, "hit_intercept", _v.real(self.hit_intercept, f"{owner}.hit_intercept"))
        _set(self, "memory_weights", _weights_field(owner, "memory_weights", self.memory_weights,
                                                    _conf.MEMORY_FEATURES))
        _set(self, "hit_weights", _weights_field(owner, "hit_weights", self.hit_weights, _conf.HIT_FEATURES))
        _set(self, "calibration", _weights_field(owner, "calibration", self.calibration, self._CALIBRATION_TERMS))

    def to_dict(self) -> dict[str, Any]:
        return {"memory_intercept": self.memory_intercept, "memory_weights": list(self.memory_weights),
                "hit_intercept": self.hit_intercept, "hit_weights": list(self.hit_weights),
                "calibration": list(self.calibration)}

    @classmethod
    def from_dict(cls, data: object) -> ConfidenceParams:
        if not isinstance(data, Mapping):
            msg = f"confidence must be a table/dict, got {type(data).__name__}"
            raise ValueError(msg)
        unknown = sorted(set(data) - set(cls._KEYS))
        missing = [key for key in cls._KEYS if key not in data]
        if unknown or missing:
            msg = f"confidence: unknown key(s) {unknown}, missing key(s) {missing}; keys: {list(cls._KEYS)}"
            raise ValueError(msg)
        return cls(**{key: data[key] for key in cls._KEYS})


@dataclass(frozen=True)
class RetrieverConfig:
    """A weighted-RRF stack: the legs, the final ``k``, ``k0`` and the BM25 parameters.

    Parameters
    ----------
    legs : tuple of legs
        At least one; leg names must be unique; at least one weight must be > 0. A list is
        accepted and stored as a tuple.
    k : int, default DEFAULTS["k"]
        Ids returned by a search (the final top-k), >= 1.
    k0 : float, default DEFAULTS["k0"]
        RRF rank offset (docs/spec.md §6), finite and >= 0.
    bm25 : BM25Params, default fieldrank.bm25.DEFAULT_PARAMS
        Tokenizer and scoring of the BM25 index (used by BM25 legs and union pools).
    name : str, default "custom"
        A label (the preset name for presets); part of equality and of the file.
    confidence : ConfidenceParams, optional
        The model of every hit's ``confidence`` (:mod:`fieldrank._confidence`). None: the
        package's fitted model (:func:`default_confidence`). The ranking never depends on it.

    Raises
    ------
    ValueError
        If a value is out of range; the message names the field.
    TypeError
        If a field has the wrong type.
    """

    legs: tuple[Leg, ...]
    k: int = _D["k"]
    k0: float = _D["k0"]
    bm25: BM25Params = DEFAULT_PARAMS
    name: str = CUSTOM_NAME
    confidence: Optional[ConfidenceParams] = None

    _TOP_LEVEL_KEYS: ClassVar[tuple[str, ...]] = ("name", "k", "k0", "bm25", "legs", "confidence")

    def __post_init__(self) -> None:
        owner = "RetrieverConfig"
        legs = self.legs
        if isinstance(legs, (str, bytes, Mapping)) or not hasattr(legs, "__iter__"):
            msg = f"{owner}.legs must be a sequence of legs, got {type(legs).__name__}"
            raise TypeError(msg)
        legs = tuple(legs)
        if not legs:
            msg = f"{owner}.legs must hold at least one leg, got none"
            raise ValueError(msg)
        for i, leg in enumerate(legs):
            if not isinstance(leg, Leg) or LEG_REGISTRY.get(leg.kind) is not type(leg):
                msg = (
                    f"{owner}.legs[{i}] must be one of {[c.__name__ for c in LEG_REGISTRY.values()]}, "
                    f"got {type(leg).__name__}"
                )
                raise TypeError(msg)
        names = [leg.name for leg in legs]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            msg = f"{owner}.legs names must be unique, got {repeated} more than once (set name= on the legs)"
            raise ValueError(msg)
        if not any(leg.weight > 0 for leg in legs):
            msg = f"{owner}.legs must have at least one weight > 0, got weights {[leg.weight for leg in legs]}"
            raise ValueError(msg)
        _set(self, "legs", legs)
        _set(self, "k", _v.integer(self.k, f"{owner}.k", low=1))
        _set(self, "k0", _v.real(self.k0, f"{owner}.k0", low=0.0))
        _v.instance_of(self.bm25, f"{owner}.bm25", BM25Params)
        _set(self, "name", check_name(owner, self.name))
        if self.confidence is not None:
            _v.instance_of(self.confidence, f"{owner}.confidence", ConfidenceParams)

    # ---------------------------------------------------------------- derived views
    @property
    def weights(self) -> tuple[float, ...]:
        """RRF weight of each leg, in leg order."""
        return tuple(leg.weight for leg in self.legs)

    @property
    def leg_names(self) -> tuple[str, ...]:
        return tuple(leg.name for leg in self.legs)

    @property
    def needs_vector(self) -> bool:
        """Whether a search needs a query vector (any dense leg)."""
        return any(leg.needs_vector for leg in self.legs)

    @property
    def needs_text(self) -> bool:
        """Whether a search needs the query text (a BM25 leg or a union pool)."""
        return any(leg.needs_text for leg in self.legs)

    @property
    def confidence_model(self) -> ConfidenceParams:
        """:attr:`confidence`, or the package's fitted model when it is None."""
        return self.confidence if self.confidence is not None else default_confidence()

    def replace(self, **changes: Any) -> RetrieverConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    # ---------------------------------------------------------------- dict / TOML
    def to_dict(self) -> dict[str, Any]:
        """A TOML/JSON-ready dict; :meth:`from_dict` of it gives an equal config."""
        out = {
            "name": self.name,
            "k": self.k,
            "k0": self.k0,
            "bm25": _bm25_to_dict(self.bm25),
            "legs": [leg.to_dict() for leg in self.legs],
        }
        if self.confidence is not None:
            out["confidence"] = self.confidence.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetrieverConfig:
        """Build a validated config from a mapping shaped like :meth:`to_dict`.

        ``legs`` is required; ``name``, ``k``, ``k0`` and ``bm25`` (or any key inside a leg or
        ``bm25``) may be left out and take their defaults.

        Raises
        ------
        ValueError
            On unknown keys (top level, leg or bm25), an unknown leg kind, or a bad value.
        TypeError
            If a value has the wrong type.
        """
        if not isinstance(data, Mapping):
            msg = f"a configuration must be a table/dict, got {type(data).__name__}"
            raise ValueError(msg)
        unknown = sorted(set(data) - set(cls._TOP_LEVEL_KEYS))
        if unknown:
            msg = f"unknown configuration key(s) {unknown}; known keys: {list(cls._TOP_LEVEL_KEYS)}"
            raise ValueError(msg)
        if "legs" not in data:
            msg = "a configuration needs 'legs' (a list of tables with a 'kind')"
            raise ValueError(msg)
        raw_legs = data["legs"]
        if isinstance(raw_legs, (str, bytes, Mapping)) or not isinstance(raw_legs, (list, tuple)):
            msg = f"legs must be a list of tables, got {type(raw_legs).__name__}"
            raise ValueError(msg)
        legs = tuple(leg_from_dict(leg, f"legs[{i}]") for i, leg in enumerate(raw_legs))
        kwargs: dict[str, Any] = {"legs": legs}
        for key in ("name", "k", "k0"):
            if key in data:
                kwargs[key] = data[key]
        if "bm25" in data:
            kwargs["bm25"] = _bm25_from_dict(data["bm25"])
        if "confidence" in data:
            kwargs["confidence"] = ConfidenceParams.from_dict(data["confidence"])
        return cls(**kwargs)

    def to_toml(self) -> str:
        """The config as TOML text (written with ``tomli_w``)."""
        import tomli_w

        return tomli_w.dumps(self.to_dict())

    @classmethod
    def from_toml(cls, text: str) -> RetrieverConfig:
        """Parse TOML text written by :meth:`to_toml` (or by hand).

        Raises
        ------
        ValueError
            If the text is not valid TOML or not a valid configuration.
        """
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            msg = f"invalid TOML: {exc}"
            raise ValueError(msg) from None
        except RecursionError:
            msg = "invalid TOML: nested too deeply to be a configuration"
            raise ValueError(msg) from None
        return cls.from_dict(data)

    def save_toml(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_toml` to ``path`` (UTF-8)."""
        Path(path).write_text(self.to_toml(), encoding="utf-8")

    @classmethod
    def load_toml(cls, path: str | os.PathLike[str]) -> RetrieverConfig:
        """Read a config file written by :meth:`save_toml`.

        Raises
        ------
        FileNotFoundError
            If ``path`` does not exist.
        ValueError
            If the file is not a valid configuration (the message names the file).
        """
        text = Path(path).read_text(encoding="utf-8")
        try:
            return cls.from_toml(text)
        except (ValueError, TypeError) as exc:
            msg = f"{path}: {exc}"
            raise type(exc)(msg) from None


# ------------------------------------------------------------------ presets
def _locked_cfsr_leg() -> CFSRLeg:
    return CFSRLeg(weight=PRESET_WEIGHTS["cfsr_locked"])


def _single(leg: Leg, name: str) -> RetrieverConfig:
    return RetrieverConfig(legs=(leg,), name=name)


def _hybrid(third: Optional[Leg], name: str) -> RetrieverConfig:
    legs: tuple[Leg, ...] = (CosineLeg(), BM25Leg())
    return RetrieverConfig(legs=legs + ((third,) if third is not None else ()), name=name)


# docs/spec.md §6 table. Depths and operator parameters are the legs' defaults (from DEFAULTS).
_PRESET_BUILDERS = {
    "cosine": lambda: _single(CosineLeg(), "cosine"),
    "bm25": lambda: _single(BM25Leg(), "bm25"),
    "cfs": lambda: _single(CFSLeg(depth=_D["k"]), "cfs"),
    "cfsr": lambda: _single(CFSRLeg(depth=_D["k"]), "cfsr"),
    "rrf2": lambda: _hybrid(None, "rrf2"),
    "rrf_mmr": lambda: _hybrid(MMRLeg(), "rrf_mmr"),
    "rrf_cfs": lambda: _hybrid(CFSLeg(), "rrf_cfs"),
    "rrf_cfsr": lambda: _hybrid(_locked_cfsr_leg(), "rrf_cfsr"),
    "rrf_cfsr_locked": lambda: _hybrid(_locked_cfsr_leg(), "rrf_cfsr_locked"),
    "rrf_ring": lambda: _hybrid(RingLeg(), "rrf_ring"),
}
DEFAULT_PRESET = "default"
#: Every preset name, in a stable order; the single list used in messages and the CLI.
PRESET_NAMES: tuple[str, ...] = (*_PRESET_BUILDERS, DEFAULT_PRESET)


# ============================================================================ CALIBRATION HOOK
# The `default` preset is the calibrated configuration shipped in
# python/fieldrank/data/default_config.toml (written by `fieldrank calibrate`, RetrieverConfig.save_toml;
# its header records the split, the search space and the command): at present one temporal leg.
# `rrf2` is only the fallback of a build without that file.
@functools.lru_cache(maxsize=1)
def default_config() -> RetrieverConfig:
    """The ``default`` preset: the package's calibrated config file (shipped), else ``rrf2``.

    Reads :data:`DEFAULT_CONFIG_RESOURCE` (``fieldrank/data/default_config.toml``) when it is
    present; otherwise returns the ``rrf2`` preset. Either way the result is named
    ``"default"``.

    Raises
    ------
    ValueError
        If the shipped file exists but is not a valid configuration.
    """
    resource = resources.files("fieldrank").joinpath(*DEFAULT_CONFIG_RESOURCE)
    if resource.is_file():
        config = RetrieverConfig.from_toml(resource.read_text(encoding="utf-8"))
    else:
        config = _PRESET_BUILDERS[DEFAULT_FALLBACK_PRESET]()
    return config.replace(name=DEFAULT_PRESET)
# ========================================================================= END CALIBRATION HOOK


@functools.lru_cache(maxsize=1)
def default_confidence() -> ConfidenceParams:
    """The package's confidence model: the ``[confidence]`` table of the shipped default
    configuration (fitted on LoCoMo, see ``docs/results/confidence.md``). Every configuration
    without its own ``confidence`` uses it.

    Raises
    ------
    ValueError
        If the shipped file has no ``[confidence]`` table.
    """
    config = default_config()
    if config.confidence is None:
        msg = "the shipped default configuration has no [confidence] table; run `fieldrank calibrate --confidence`"
        raise ValueError(msg)
    return config.confidence


def preset(name: str) -> RetrieverConfig:
    """The configuration of a named preset (docs/spec.md §6).

    Parameters
    ----------
    name : str
        One of :data:`PRESET_NAMES`.

    Raises
    ------
    ValueError
        If ``name`` is not a preset; the message lists the known ones.
    """
    if name == DEFAULT_PRESET:
        return default_config()
    if not isinstance(name, str) or name not in _PRESET_BUILDERS:
        msg = f"unknown preset {name!r}; known presets: {', '.join(PRESET_NAMES)}"
        raise ValueError(msg)
    return _PRESET_BUILDERS[name]()


ConfigLike = Union[RetrieverConfig, str, "os.PathLike[str]", Mapping[str, Any], None]


def resolve_config(config: ConfigLike) -> RetrieverConfig:
    """Turn what a user passes as ``config`` into a :class:`RetrieverConfig`.

    ``None`` is the ``default`` preset; a :class:`RetrieverConfig` is returned as is; a str
    is a preset name, or a TOML file path when it ends in ``.toml``; a path object is a TOML
    file; a mapping goes through :meth:`RetrieverConfig.from_dict`.
    """
    if config is None:
        return default_config()
    if isinstance(config, RetrieverConfig):
        return config
    if isinstance(config, Mapping):
        return RetrieverConfig.from_dict(config)
    if isinstance(config, str) and not config.endswith(".toml"):
        return preset(config)
    if isinstance(config, (str, os.PathLike)):
        return RetrieverConfig.load_toml(config)
    msg = f"config must be a RetrieverConfig, preset name, TOML path or dict, got {type(config).__name__}"
    raise TypeError(msg)
