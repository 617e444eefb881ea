"""A leg kind is one class (issue #33): a toy kind defined here, and nowhere else, runs through
``search``, ``search_batch``, ``save``/``load`` and ``calibrate``.

The toy ``stride`` leg returns every ``stride``-th id of the cosine top-(``depth`` x ``stride``): it
reads only the ``QueryContext`` (the shared prefilter), validates ``stride`` from a parameter-table
row, and is registered by ``register_leg`` (by a fixture, so that the rest of the session does not
see it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import fieldrank
from fieldrank import _param_tables as tables
from fieldrank._retriever.context import LegOutput, QueryContext
from fieldrank._retriever.legs import LEG_REGISTRY, Leg, register_leg
from fieldrank.config import CosineLeg, RetrieverConfig, TemporalLeg
from fieldrank.hybrid import HybridRetriever

from tests.evaluation.test_locomo_loader import toy_question, toy_turn, write_dataset
from tests.helpers import unit_rows

SEED = 3303
STRIDE = tables.Param("stride", tables.POSITIVE_INT, 2, "every stride-th id of the cosine top")


@dataclass(frozen=True)
class StrideLeg(Leg):
    """Every ``stride``-th id of the cosine top-(``depth`` x ``stride``)."""

    kind: ClassVar[str] = "stride"
    depth: int = 10
    weight: float = 1.0
    stride: int = 2
    name: str = "stride"

    field_checks: ClassVar[tuple[tables.Param, ...]] = (STRIDE,)

    def dense_depth(self, batched: bool) -> int:
        return self.depth * self.stride

    def coverage(self) -> int:
        return 0  # fewer than depth ids when the subset is small

    def run(self, ctx: QueryContext) -> list[LegOutput]:
        tops = ctx.dense_tops(self.depth * self.stride)
        return [LegOutput(top.ids[:: self.stride][: self.depth], top.scores[:: self.stride][: self.depth], None)
                for top in tops]


@pytest.fixture()
def stride_kind():
    assert register_leg(StrideLeg) is StrideLeg
    yield StrideLeg
    del LEG_REGISTRY["stride"]


WORDS = ("lake", "dog", "piano", "garden", "flight", "budget", "quartz", "camp", "oil", "book")


def _texts(rng, n):
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 7)))) for _ in range(n)]


def _expected(E, q, depth, stride, subset=None):
    """The toy leg by hand: cosines in float64, ties to the lower id (the kernels' fp32 ranks agree
    on these well-separated random rows)."""
    ids = np.arange(E.shape[0]) if subset is None else np.sort(subset)
    cos = E[ids].astype(np.float64) @ q.astype(np.float64)
    order = ids[np.lexsort((ids, -cos))]
    return order[: depth * stride][::stride][:depth]


def test_the_kind_is_one_class_its_checks_come_from_its_table(stride_kind):
    assert StrideLeg(stride=3).operator_kwargs() == {"stride": 3}
    with pytest.raises(ValueError, match="StrideLeg.stride"):
        StrideLeg(stride=0)
    with pytest.raises(TypeError, match="StrideLeg.stride"):
        StrideLeg(stride=1.5)
    config = RetrieverConfig(legs=(CosineLeg(depth=5), StrideLeg(depth=4, stride=3, weight=0.5)))
    assert config.to_dict()["legs"][1] == {"kind": "stride", "depth": 4, "weight": 0.5, "stride": 3, "name": "stride"}
    assert RetrieverConfig.from_toml(config.to_toml()) == config
    with pytest.raises(ValueError, match="unknown field"):
        RetrieverConfig.from_dict({"legs": [{"kind": "stride", "strides": 2}]})


def test_an_unregistered_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        RetrieverConfig.from_dict({"legs": [{"kind": "stride"}]})
    with pytest.raises(TypeError, match="legs\\[0\\]"):
        RetrieverConfig(legs=(StrideLeg(),))


def test_search_and_search_batch_run_the_toy_leg(stride_kind):
    rng = np.random.default_rng(SEED)
    n, d = 80, 16
    texts, E, Q = _texts(rng, n), unit_rows(rng, n, d), unit_rows(rng, 6, d)
    alone = HybridRetriever(texts, E, RetrieverConfig(legs=(StrideLeg(depth=7, stride=3),), k=7))
    stack = alone.with_config(RetrieverConfig(legs=(CosineLeg(depth=10), StrideLeg(depth=7, stride=3)), k=8))
    subset = np.arange(5, n, 2)
    for sub in (None, subset):
        batch = alone.search_batch(None, Q, subset=sub)
        stacked = stack.search_batch(None, Q, subset=sub, n_threads=2)
        for b, q in enumerate(Q):
            want = _expected(E, q, 7, 3, sub)
            one = alone.search(vector=q, subset=sub)
            assert one.ids.tolist() == want.tolist() == batch[b].ids.tolist()
            assert one.scores.tobytes() == batch[b].scores.tobytes()  # a one-leg plan: the leg's own scores
            assert one.leg("stride").ids.tolist() == want.tolist()
            fused = fieldrank.rrf([leg.ids for leg in stacked[b].legs], [1.0, 1.0], 8)
            assert stacked[b].ids.tolist() == fused.ids.tolist() == stack.search(vector=q, subset=sub).ids.tolist()
            assert stacked[b].legs[1].kind == "stride"


def test_save_and_load_keep_the_toy_leg(stride_kind, tmp_path):
    rng = np.random.default_rng(SEED + 1)
    n, d = 50, 8
    texts, E, Q = _texts(rng, n), unit_rows(rng, n, d), unit_rows(rng, 4, d)
    config = RetrieverConfig(legs=(CosineLeg(depth=6), StrideLeg(depth=5, stride=2, weight=2.0)), k=6)
    retriever = HybridRetriever(texts, E, config)
    retriever.save(tmp_path / "index")
    assert 'kind = "stride"' in (tmp_path / "index" / "config.toml").read_text(encoding="utf-8")
    loaded = HybridRetriever.load(tmp_path / "index")
    assert loaded.config == config
    for before, after in zip(retriever.search_batch(None, Q), loaded.search_batch(None, Q)):
        assert before.ids.tobytes() == after.ids.tobytes() and before.scores.tobytes() == after.scores.tobytes()


# --------------------------------------------------------------------------- calibrate
def _locomo_folder(root, rng, n_conv=2, turns=30, questions=6, dim=8):
    """A LoCoMo-shaped folder (conversations 0 and 1: the tune split) with word texts."""
    turn_rows, question_rows = [], []
    for conv in range(n_conv):
        for t in range(turns):
            row = toy_turn(conv, f"D{1 + t // 10}:{1 + t % 10}")
            text = " ".join(rng.choice(WORDS, size=5))
            row.update(text=text, embed_text=f"A: {text}")
            turn_rows.append(row)
        for qid in range(questions):
            evidence = sorted({f"D{1 + t // 10}:{1 + t % 10}" for t in rng.choice(turns, size=2, replace=False)})
            row = toy_question(conv, qid, evidence)
            row["question"] = "what about the " + " ".join(rng.choice(WORDS, size=2)) + "?"
            question_rows.append(row)
    write_dataset(root, turn_rows, question_rows, dim=dim)


def test_calibrate_takes_a_registered_kind_as_an_extra_leg(stride_kind, tmp_path):
    from fieldrank.evaluation import calibrate as cal
    from fieldrank.evaluation import locomo, metrics

    _locomo_folder(tmp_path, np.random.default_rng(SEED + 2))
    space = cal.SearchSpace(bm25=((0.9, 0.2),), context=((0, 1.0),), alpha=(0.5,), gamma=(0.3,), radius=(1,),
                            tau=(1.0,), delta=(1.0,), temporal_depth=(10,), extra_weights=(0.5,),
                            extra_legs=(StrideLeg(depth=10, stride=2),))
    result = cal.calibrate(tmp_path, ["toy"], "tune", space)
    assert [desc for desc, _, _ in result.stage2] == ["temporal 10 x1 + stride x0.5"]
    assert "stride" in space.describe()
    kinds = [leg.kind for leg in result.config.legs]
    assert kinds == ["temporal", "stride"] and isinstance(result.config.legs[0], TemporalLeg)
    assert RetrieverConfig.from_toml(result.config.to_toml()) == result.config
    # The score calibrate reports is what the retriever built from the winning config scores.
    data = locomo.load_locomo(tmp_path, "toy", checksums=False)
    retriever = HybridRetriever([str(t) for t in data.turns.embed_text], data.turn_embeddings, result.config,
                                timeline=locomo.locomo_timeline(data))
    rows = data.split_question_indices("tune")
    runs, gold = [], []
    for conv in np.unique(data.questions.conv_index[rows]).tolist():
        q = np.sort(rows[data.questions.conv_index[rows] == conv])
        start, stop = data.conv_ranges[conv]
        res = retriever.search_batch([str(t) for t in data.questions.question[q]],
                                     np.ascontiguousarray(data.question_embeddings[q]), subset=np.arange(start, stop))
        runs += [r.ids for r in res]
        gold += [data.questions.gold_positions_absolute[r] for r in q]
    assert float(metrics.per_question(runs, gold, 10, "ndcg").mean()) == pytest.approx(
        result.per_set["toy"]["ndcg"], abs=1e-12)
