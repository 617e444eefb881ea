"""Tests of the retriever configuration: legs, presets, validation, dict/TOML round trips."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import fieldrank
from fieldrank import config as cfg
from fieldrank.bm25 import BM25Params
from fieldrank.config import (
    LEG_KINDS,
    PRESET_NAMES,
    PRESET_WEIGHTS,
    BM25Leg,
    CFSLeg,
    CFSRLeg,
    CosineLeg,
    MMRLeg,
    RetrieverConfig,
    RingLeg,
    default_config,
    leg_from_dict,
    preset,
    resolve_config,
)

D = fieldrank.DEFAULTS


def _custom_configs() -> list[RetrieverConfig]:
    return [
        # RRF of BM25 and CFS-R only, any weights, a union pool and a non-default final k.
        RetrieverConfig(
            legs=(BM25Leg(depth=7, weight=0.5), CFSRLeg(depth=20, weight=2.25, p=40, pool="union", union_p=15)),
            k=7, k0=30.0, name="bm25_cfsr_union",
        ),
        RetrieverConfig(
            legs=(CosineLeg(depth=5, name="cos_a"), CosineLeg(depth=20, weight=0.0, name="cos_b"),
                  CFSLeg(sigma=0.3, beta=0.5, pool="union"), MMRLeg(mu=0.7, p=50),
                  RingLeg(alpha=0.1, laps=4, seed=3, ablation=True)),
            bm25=BM25Params(k1=1.2, b=0.5, stopwords=None, stemmer_language=None),
        ),
        RetrieverConfig(legs=(CFSRLeg(fista=True, tol=1e-4, iters=200, w=0.5, lam=0.0),)),
    ]


ALL_CONFIGS = [preset(name) for name in PRESET_NAMES] + _custom_configs()
CONFIG_IDS = [c.name for c in ALL_CONFIGS]


# ------------------------------------------------------------------ presets (docs/spec.md §6)
def _shape(config: RetrieverConfig) -> list[tuple[str, int, float]]:
    return [(leg.kind, leg.depth, leg.weight) for leg in config.legs]


def test_preset_table_matches_spec() -> None:
    k = D["k"]
    assert _shape(preset("cosine")) == [("cosine", k, 1.0)]
    assert _shape(preset("bm25")) == [("bm25", k, 1.0)]
    assert _shape(preset("rrf2")) == [("cosine", 10, 1.0), ("bm25", 10, 1.0)]
    assert _shape(preset("rrf_mmr")) == [("cosine", 10, 1.0), ("bm25", 10, 1.0), ("mmr", 10, 1.0)]
    assert _shape(preset("rrf_cfs")) == [("cosine", 10, 1.0), ("bm25", 10, 1.0), ("cfs", 50, 1.0)]
    assert _shape(preset("rrf_cfsr")) == [("cosine", 10, 1.0), ("bm25", 10, 1.0), ("cfsr", 50, 3.0)]
    assert _shape(preset("rrf_ring")) == [("cosine", 10, 1.0), ("bm25", 10, 1.0), ("ring", 10, 1.0)]
    for name in PRESET_NAMES:
        assert preset(name).k == 10
        assert preset(name).k0 == 60.0


def test_locked_stack_uses_the_write_up_parameters() -> None:
    locked = preset("rrf_cfsr_locked")
    assert locked.replace(name="rrf_cfsr") == preset("rrf_cfsr")
    leg = locked.legs[2]
    assert (leg.w, leg.lam, leg.p, leg.iters, leg.depth, leg.weight) == (0.9, 0.005, 150, 80, 50, 3.0)
    assert leg.pool == "dense" and leg.fista is False and leg.tol == 0.0


def test_leg_defaults_come_from_DEFAULTS() -> None:
    assert dataclasses.astuple(CFSRLeg())[:8] == (
        D["cfsr_k"], 1.0, D["p"], D["w"], D["lam"], D["iters"], D["tol"], False)
    leg = CFSLeg()
    assert (leg.depth, leg.p, leg.sigma, leg.beta, leg.eps) == (D["cfs_k"], D["p"], D["sigma"], D["beta"], D["eps"])
    assert (MMRLeg().depth, MMRLeg().mu) == (D["mmr_k"], D["mu"])
    ring = RingLeg()
    assert (ring.depth, ring.alpha, ring.laps, ring.seed) == (D["ring_k"], D["alpha"], D["laps"], D["seed"])
    assert ring.pool_depth == D["ring_k"] * D["ring_pool_factor"]
    assert PRESET_WEIGHTS["plain"] == cfg.DEFAULT_WEIGHT


def test_default_is_rrf2_or_the_shipped_file() -> None:
    shipped = Path(cfg.__file__).parent.joinpath(*cfg.DEFAULT_CONFIG_RESOURCE)
    expected = RetrieverConfig.load_toml(shipped) if shipped.is_file() else preset(cfg.DEFAULT_FALLBACK_PRESET)
    assert preset("default") == expected.replace(name="default")
    assert resolve_config(None) == preset("default")


def test_default_reads_the_package_data_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calibrated = RetrieverConfig(legs=(CosineLeg(depth=12), CFSRLeg(weight=2.0)), k=8, name="calibrated")
    data_dir = tmp_path.joinpath(*cfg.DEFAULT_CONFIG_RESOURCE[:-1])
    data_dir.mkdir(parents=True)
    calibrated.save_toml(data_dir / cfg.DEFAULT_CONFIG_RESOURCE[-1])
    monkeypatch.setattr(cfg.resources, "files", lambda package: tmp_path)
    default_config.cache_clear()
    try:
        assert preset("default") == calibrated.replace(name="default")
    finally:
        monkeypatch.undo()
        default_config.cache_clear()
    assert preset("default").name == "default"


def test_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown preset 'rrf3'") as info:
        preset("rrf3")
    for name in PRESET_NAMES:
        assert name in str(info.value)


# ------------------------------------------------------------------ round trips
@pytest.mark.parametrize("config", ALL_CONFIGS, ids=CONFIG_IDS)
def test_dict_round_trip(config: RetrieverConfig) -> None:
    assert RetrieverConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=CONFIG_IDS)
def test_toml_file_round_trip(config: RetrieverConfig, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    config.save_toml(path)
    loaded = RetrieverConfig.load_toml(path)
    assert loaded == config
    assert resolve_config(str(path)) == config
    assert resolve_config(path) == config


def test_partial_dict_takes_defaults() -> None:
    config = RetrieverConfig.from_dict({"legs": [{"kind": "bm25"}, {"kind": "cfsr", "weight": 3}]})
    assert config == RetrieverConfig(legs=(BM25Leg(), CFSRLeg(weight=3.0)))
    assert isinstance(config.legs[1].weight, float)


def test_hand_written_toml() -> None:
    text = """
    name = "mine"
    k = 5
    [bm25]
    stopwords = false
    [[legs]]
    kind = "bm25"
    depth = 20
    [[legs]]
    kind = "cfsr"
    depth = 30
    weight = 2.5
    pool = "union"
    union_p = 40
    """
    config = RetrieverConfig.from_toml(text)
    assert config.k == 5 and config.bm25.stopwords is None
    assert config.legs[1] == CFSRLeg(depth=30, weight=2.5, pool="union", union_p=40)
    assert config.needs_text and config.needs_vector


def test_needs_vector_and_text() -> None:
    assert not preset("bm25").needs_vector and preset("bm25").needs_text
    assert preset("cosine").needs_vector and not preset("cosine").needs_text
    assert not RetrieverConfig(legs=(CFSRLeg(),)).needs_text
    assert RetrieverConfig(legs=(CFSRLeg(pool="union"),)).needs_text


def test_configs_are_frozen_and_hashable() -> None:
    config = preset("rrf_cfsr")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.k = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.legs[0].depth = 5  # type: ignore[misc]
    assert hash(config) == hash(preset("rrf_cfsr"))


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: CosineLeg(weight=-1.0), "CosineLeg.weight"),
        (lambda: BM25Leg(weight=float("nan")), "BM25Leg.weight"),
        (lambda: CosineLeg(depth=0), "CosineLeg.depth"),
        (lambda: CFSRLeg(depth=0), "CFSRLeg.depth"),
        (lambda: CFSRLeg(depth=60, p=50), r"CFSRLeg.p \(pool size 50\) must be >= depth \(60\)"),
        (lambda: CFSLeg(depth=200), "CFSLeg.p"),
        (lambda: MMRLeg(depth=20, p=10), "MMRLeg.p"),
        (lambda: CFSRLeg(w=1.5), "CFSRLeg.w"),
        (lambda: CFSRLeg(lam=-0.1), "CFSRLeg.lam"),
        (lambda: CFSRLeg(iters=0), "CFSRLeg.iters"),
        (lambda: CFSLeg(sigma=0.0), "CFSLeg.sigma"),
        (lambda: CFSLeg(beta=-1.0), "CFSLeg.beta"),
        (lambda: MMRLeg(mu=2.0), "MMRLeg.mu"),
        (lambda: RingLeg(alpha=-0.5), "RingLeg.alpha"),
        (lambda: RingLeg(laps=0), "RingLeg.laps"),
        (lambda: CFSRLeg(pool="hybrid"), "CFSRLeg.pool"),
        (lambda: CFSRLeg(union_p=10), "CFSRLeg.union_p"),
        (lambda: CFSLeg(pool="union", union_p=0), "CFSLeg.union_p"),
        (lambda: CosineLeg(name=""), "CosineLeg.name"),
        (lambda: RetrieverConfig(legs=()), "RetrieverConfig.legs"),
        (lambda: RetrieverConfig(legs=(CosineLeg(), CosineLeg())), "names must be unique"),
        (lambda: RetrieverConfig(legs=(CosineLeg(weight=0.0),)), "at least one weight > 0"),
        (lambda: RetrieverConfig(legs=(CosineLeg(),), k=0), "RetrieverConfig.k"),
        (lambda: RetrieverConfig(legs=(CosineLeg(),), k0=-1.0), "RetrieverConfig.k0"),
    ],
)
def test_bad_values_name_the_field(make, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        make()


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: CosineLeg(depth=2.5), "CosineLeg.depth"),
        (lambda: CosineLeg(depth=True), "CosineLeg.depth"),
        (lambda: CFSRLeg(weight="3"), "CFSRLeg.weight"),
        (lambda: CFSRLeg(fista=1), "CFSRLeg.fista"),
        (lambda: RetrieverConfig(legs=({"kind": "cosine"},)), r"RetrieverConfig.legs\[0\]"),
        (lambda: RetrieverConfig(legs=(CosineLeg(),), bm25={"k1": 1.0}), "RetrieverConfig.bm25"),
    ],
)
def test_wrong_types_name_the_field(make, field: str) -> None:
    with pytest.raises(TypeError, match=field):
        make()


def test_unknown_leg_kind_lists_the_kinds() -> None:
    with pytest.raises(ValueError, match="kind must be one of") as info:
        RetrieverConfig.from_dict({"legs": [{"kind": "cosine"}, {"kind": "no_such_kind"}]})
    assert "legs[1]" in str(info.value)
    for kind in LEG_KINDS:
        assert kind in str(info.value)
    with pytest.raises(ValueError, match="kind must be one of"):
        leg_from_dict({"depth": 3})


def test_unknown_keys_are_errors() -> None:
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['sigma'\] for a 'cfsr' leg"):
        RetrieverConfig.from_dict({"legs": [{"kind": "cfsr", "sigma": 0.3}]})
    with pytest.raises(ValueError, match=r"unknown configuration key\(s\) \['final_k'\]"):
        RetrieverConfig.from_dict({"legs": [{"kind": "cosine"}], "final_k": 3})
    with pytest.raises(ValueError, match="unknown BM25Params field"):
        RetrieverConfig.from_dict({"legs": [{"kind": "bm25"}], "bm25": {"k2": 1.0}})
    with pytest.raises(ValueError, match="needs 'legs'"):
        RetrieverConfig.from_dict({"k": 3})


def test_bad_toml_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="invalid TOML"):
        RetrieverConfig.from_toml("legs = [")
    path = tmp_path / "bad.toml"
    path.write_text('[[legs]]\nkind = "cosine"\ndepth = -3\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.toml: CosineLeg.depth must be >= 1"):
        RetrieverConfig.load_toml(path)
    with pytest.raises(FileNotFoundError):
        RetrieverConfig.load_toml(tmp_path / "missing.toml")


def test_resolve_config_forms() -> None:
    config = preset("rrf_cfs")
    assert resolve_config(config) is config
    assert resolve_config("rrf_cfs") == config
    assert resolve_config(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown preset"):
        resolve_config("nope")
    with pytest.raises(TypeError, match="config must be"):
        resolve_config(42)  # type: ignore[arg-type]


def test_lazy_exports() -> None:
    assert fieldrank.RetrieverConfig is RetrieverConfig
    assert fieldrank.preset("rrf2") == preset("rrf2")
    assert set(fieldrank.PRESET_NAMES) >= {"cosine", "bm25", "rrf2", "rrf_mmr", "rrf_cfs", "rrf_cfsr",
                                           "rrf_cfsr_locked", "rrf_ring", "default"}
