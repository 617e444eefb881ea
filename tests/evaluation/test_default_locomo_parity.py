"""The ``default`` preset on the native core ranks every LoCoMo question as the numpy path did.

Before the temporal leg moved to C++, ``default`` (one temporal leg) ranked with numpy: the
reference (:func:`fieldrank.reference.temporal_batch`) is that code. Over all questions of both
local embedders, the retriever's rankings must equal it exactly; skipped without the data.
"""

from __future__ import annotations

import numpy as np
import pytest

import fieldrank.reference as ref
from fieldrank.config import preset
from fieldrank.hybrid import HybridRetriever
from fieldrank.evaluation.locomo import locomo_timeline


def default_over_the_log(locomo_dir, embedding_set: str):
    """(data, timeline, config, its one temporal leg, a ``default`` retriever over every turn)."""
    from fieldrank.evaluation import locomo

    data = locomo.load_locomo(locomo_dir, embedding_set, checksums=False)
    timeline = locomo_timeline(data)
    config = preset("default")
    (leg,) = config.legs
    retriever = HybridRetriever([str(t) for t in data.turns.embed_text], data.turn_embeddings, config,
                                timeline=timeline)
    return data, timeline, config, leg, retriever


def differing_rankings(locomo_dir, embedding_set: str) -> tuple[int, int]:
    """(questions whose top-k differs between the retriever and the numpy reference, questions)."""
    data, timeline, config, leg, retriever = default_over_the_log(locomo_dir, embedding_set)
    qs = data.questions
    differing = total = 0
    for conv, (start, stop) in data.conv_ranges.items():
        rows = np.flatnonzero(qs.conv_index == conv)
        if rows.size == 0:
            continue
        texts = [str(t) for t in qs.question[rows]]
        Q = np.ascontiguousarray(data.question_embeddings[rows], dtype=np.float32)
        subset = np.arange(start, stop)
        native = retriever.search_batch(texts, Q, subset=subset)
        lexical = np.stack([retriever.bm25.scores(t) for t in texts])
        want = ref.temporal_batch(retriever.embeddings, Q, lexical, leg.depth, timeline=timeline, questions=texts,
                                  params=leg.params(), subset=subset)
        for b, result in enumerate(native):
            total += 1
            differing += not np.array_equal(result.ids, want.ids[b][: config.k])
    return differing, total


@pytest.mark.parametrize("embedding_set", ["minilm-l6-v2", "mpnet-base-v2"])
def test_default_rankings_identical_to_the_numpy_path(locomo_dir, embedding_set):
    differing, total = differing_rankings(locomo_dir, embedding_set)
    assert total >= 1982  # every question of the ten conversations
    assert differing == 0, f"{differing} of {total} rankings differ"


@pytest.mark.parametrize("embedding_set", ["minilm-l6-v2", "mpnet-base-v2"])
def test_moments_path_over_the_whole_log_ranks_as_the_numpy_path(locomo_dir, embedding_set):
    """The leg over every turn of all ten conversations with the corpus moments (the fp32 screen,
    docs/design.md) on real embeddings, whose cosines have a mean well above zero: every question
    is resolved by the screen and ranks as the numpy reference (scores within 1e-12)."""
    from fieldrank import _core
    from fieldrank import temporal as tl

    data, timeline, _, leg, retriever = default_over_the_log(locomo_dir, embedding_set)
    texts = [str(t) for t in data.questions.question]
    Q = np.ascontiguousarray(data.question_embeddings, dtype=np.float32)
    E = retriever.embeddings
    lexical = np.stack([retriever.bm25.scores(t) for t in texts])
    params = leg.params()
    intent, windows = tl.question_features(texts, timeline, None)
    moments = _core.temporal_moments(E)
    got = tl.run_leg(E, Q, lexical, leg.depth, timeline, intent, windows, params, None, False, 2, moments=moments)
    want = ref.temporal_batch(E, Q, lexical, leg.depth, timeline=timeline, questions=texts, params=params)
    assert len(texts) >= 1982
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_allclose(got.scores, want.scores, rtol=0, atol=1e-12)
    raw = _core.temporal_batch(E, Q, timeline.session, params.alpha, params.gamma, params.radius, params.decay,
                               params.tau, params.delta, params.before_days, params.after_days, leg.depth,
                               lexical32=lexical.astype(np.float32), cue=timeline.cue.view(np.uint8),
                               day=timeline.time.view(np.int64), intent=intent.view(np.uint8), check_rows=False,
                               n_threads=2, moments=moments)
    assert raw.screened == len(texts)
