"""The SPLADE leg (fieldrank.splade.SpladeLeg): one registered class on the leg registry. Without a
SPLADE weight it ranks as the temporal leg (no model needed); its configuration round-trips through
TOML and saved indexes; with the ``splade`` extra, a saved and loaded retriever answers the same and
the SPLADE term changes the ranking as its scores say."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fieldrank.config import RetrieverConfig, TemporalLeg
from fieldrank.hybrid import HybridRetriever
from fieldrank.splade import SpladeLeg, splade_config
from fieldrank.temporal import Timeline

from tests.helpers import SEED, unit_rows

WORDS = ("lake", "dog", "piano", "garden", "flight", "budget", "quartz", "camp", "oil", "book", "yesterday",
         "march", "monday")


def _corpus(rng, n=60, d=12):
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 8)))) for _ in range(n)]
    session = np.repeat(np.arange(n // 6), 6)
    time = np.datetime64("2023-03-01") + session.astype("timedelta64[D]") * 9
    timeline = Timeline.from_turns(session, time, texts)
    questions = ["when did the dog go to the lake?", "what about the piano in march 2023?", "budget for camp"]
    return texts, unit_rows(rng, n, d), timeline, questions, unit_rows(rng, len(questions), d)


def _has_extra() -> bool:
    try:
        from fieldrank.splade import default_model_dir

        default_model_dir()
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        return False
    return True


needs_extra = pytest.mark.skipif(not _has_extra(), reason="needs the splade extra (pip install fieldrank[splade])")


def test_without_splade_it_ranks_as_the_temporal_leg():
    rng = np.random.default_rng(SEED)
    texts, E, timeline, questions, Q = _corpus(rng)
    leg = SpladeLeg(depth=12, cosine_weight=0.5, lexical_weight=0.5, splade_weight=0.0)
    temporal = TemporalLeg(depth=12, alpha=0.5, gamma=leg.gamma, radius=leg.radius, decay=leg.decay, tau=leg.tau,
                           delta=leg.delta, before_days=leg.before_days, after_days=leg.after_days)
    ours = HybridRetriever(texts, E, RetrieverConfig(legs=(leg,), k=12), timeline=timeline)
    theirs = ours.with_config(RetrieverConfig(legs=(temporal,), k=12))
    for subset in (None, np.arange(6, 42)):
        for a, b in zip(ours.search_batch(questions, Q, subset=subset), theirs.search_batch(questions, Q, subset=subset)):
            np.testing.assert_allclose(a.leg("splade").scores, b.leg("temporal").scores, rtol=0, atol=1e-9)
            assert a.ids.tolist() == b.ids.tolist()


def test_configuration_round_trips_and_checks_its_fields():
    leg = SpladeLeg(lexical_weight=0.3, splade_window=1)
    config = RetrieverConfig(legs=(leg,))
    assert RetrieverConfig.from_toml(config.to_toml()) == config
    assert config.to_dict()["legs"][0]["kind"] == "splade"
    for field, value in (("splade_weight", -1.0), ("splade_window", -1), ("gamma", -0.5), ("cosine_weight", "x")):
        with pytest.raises((ValueError, TypeError), match=f"SpladeLeg.{field}"):
            SpladeLeg(**{field: value})
    shipped = splade_config()
    assert shipped.name == "splade" and shipped.legs == (SpladeLeg(),)
    assert dataclasses.asdict(shipped.bm25)["context_window"] == 2


def test_save_and_load_keep_the_leg(tmp_path):
    rng = np.random.default_rng(SEED + 1)
    texts, E, timeline, questions, Q = _corpus(rng)
    config = RetrieverConfig(legs=(SpladeLeg(splade_weight=0.0, lexical_weight=0.5),), k=8)
    retriever = HybridRetriever(texts, E, config, timeline=timeline)
    retriever.save(tmp_path / "index")
    loaded = HybridRetriever.load(tmp_path / "index")
    assert loaded.config == config
    for before, after in zip(retriever.search_batch(questions, Q), loaded.search_batch(questions, Q)):
        assert before.ids.tobytes() == after.ids.tobytes() and before.scores.tobytes() == after.scores.tobytes()


@needs_extra
def test_the_splade_term_enters_the_base(tmp_path):
    rng = np.random.default_rng(SEED + 2)
    texts, E, timeline, questions, Q = _corpus(rng)
    config = RetrieverConfig(legs=(SpladeLeg(depth=60, cosine_weight=0.0, lexical_weight=0.0, splade_weight=1.0,
                                             splade_window=0, gamma=0.0, tau=0.0, delta=0.0),), k=60)
    retriever = HybridRetriever(texts, E, config, timeline=timeline)
    from fieldrank.splade import SpladeEncoder
    from fieldrank.sparse import sparse_index, sparse_scores_batch

    encoder = SpladeEncoder()
    docs = encoder.encode(texts)
    q = encoder.encode(questions)
    scores = sparse_scores_batch(sparse_index(docs.indptr, docs.indices, docs.data, docs.n_terms), q.indptr,
                                 q.indices, q.data).astype(np.float64)
    for b, result in enumerate(retriever.search_batch(questions, Q)):
        # SPLADE alone: the ranking is by the SPLADE scores (z-normalisation keeps the order; ties to the lower id).
        expected = np.lexsort((np.arange(len(texts)), -scores[b]))
        assert result.ids.tolist() == expected.tolist()
    full = HybridRetriever(texts, E, splade_config(), timeline=timeline)
    full.save(tmp_path / "index")
    loaded = HybridRetriever.load(tmp_path / "index")
    for before, after in zip(full.search_batch(questions, Q), loaded.search_batch(questions, Q)):
        assert before.ids.tobytes() == after.ids.tobytes() and before.scores.tobytes() == after.scores.tobytes()
