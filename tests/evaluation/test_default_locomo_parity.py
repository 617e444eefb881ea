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


def differing_rankings(locomo_dir, embedding_set: str) -> tuple[int, int]:
    """(questions whose top-k differs between the retriever and the numpy reference, questions)."""
    from fieldrank.evaluation import locomo

    data = locomo.load_locomo(locomo_dir, embedding_set, checksums=False)
    timeline = locomo_timeline(data)
    config = preset("default")
    (leg,) = config.legs
    retriever = HybridRetriever([str(t) for t in data.turns.embed_text], data.turn_embeddings, config,
                                timeline=timeline)
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
