"""The ``default`` preset's BM25 over the whole LoCoMo log scores every question as bm25s does.

BM25 is text-only, so one comparison covers both local embedders: with every question's lexical
scores equal bit for bit to the bm25s oracle (the build this package used before it owned its
tokenizer and build: bm25s.tokenize, bm25s.BM25.index, the neighbour-text expansion as a
scipy.sparse sum), every ranking built on them is unchanged. Skipped without the data.
"""

from __future__ import annotations

import numpy as np

from fieldrank.bm25 import BM25Index
from fieldrank.config import preset
from fieldrank.evaluation import locomo
from fieldrank.evaluation.locomo import locomo_timeline
from tests.retriever._bm25s_oracle import Bm25sOracle


def test_default_bm25_scores_every_locomo_question_as_bm25s(locomo_dir):
    data = locomo.load_locomo(locomo_dir, "minilm-l6-v2", checksums=False)
    timeline = locomo_timeline(data)
    texts = [str(t) for t in data.turns.embed_text]
    params = preset("default").bm25
    assert params.context_window > 0  # the expansion is part of what is held to bm25s
    ours = BM25Index(texts, params, sessions=timeline)
    oracle = Bm25sOracle(texts, params, timeline.session)
    questions = [str(q) for q in data.questions.question]
    assert len(questions) >= 1982  # every question of the ten conversations
    token_ids = [ours._token_ids(tokens) for tokens in ours._tokenize(questions)]
    scores = ours._scores_matrix(token_ids, 0)
    differing = [i for i, q in enumerate(questions) if not np.array_equal(scores[i], oracle.scores(q))]
    assert not differing, f"{len(differing)} of {len(questions)} questions score differently, first {differing[:5]}"
