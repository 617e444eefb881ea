"""The entity signal: which of the store's entities a cue names, and what they add to a recall.

:func:`mentioned_entities` finds the store's entity labels in a cue's text (used when no
``cue_entities`` are given); :func:`entity_terms` is the entity half of graph activation (see
:mod:`._graph`); :func:`rank_other_entities_below_the_cues` caps a memory about other entities
below the best one about the cue's.
"""

from __future__ import annotations

import re
from typing import Optional

import numpy as np

from .._columns import EMPTY_ROWS, Snapshot, concatenated_ranges
from .._params import MemoryParams
from .._scoring import FactorArrays, with_score

__all__ = ["entity_terms", "mentioned_entities", "rank_other_entities_below_the_cues"]


#: Words of a cue or an entity label for :func:`mentioned_entities` (a possessive stays on its word).
_WORD = re.compile(r"[0-9a-z]+(?:['’][0-9a-z]+)*")


#: Labels longer than this many words are never matched in a cue.
_MAX_LABEL_WORDS = 4


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


def _entity_vocabulary(generation) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Lower-cased words of every entity label -> the labels spelt so (built once per label count)."""
    def build() -> dict[tuple[str, ...], tuple[str, ...]]:
        vocabulary: dict[tuple[str, ...], tuple[str, ...]] = {}
        for label in list(generation.entity_code):
            words = tuple(_words(label))
            if 0 < len(words) <= _MAX_LABEL_WORDS:
                vocabulary[words] = vocabulary.get(words, ()) + (label,)
        return vocabulary

    return generation.derived.get_or_compute("entity_vocabulary", len(generation.entity_code), build)


def mentioned_entities(snapshot: Snapshot, text: Optional[str]) -> frozenset[str]:
    """The store's entity labels the cue text names, longest match first, whole words only.

    "What does Ben's brother drink?" names ``Ben's brother`` (not ``Ben``: the longer label takes
    the words); "What is Ben allergic to?" names ``Ben``, never ``Benny`` or ``Bena`` (a near-twin
    is another word). A possessive ("Ben's car") also names its word without the ``'s``.
    Matching ignores case; labels of more than four words are not looked for.
    """
    if not text:
        return frozenset()
    vocabulary = _entity_vocabulary(snapshot.generation)
    if not vocabulary:
        return frozenset()
    words = _words(text)
    found: list[str] = []
    i = 0
    while i < len(words):
        for width in range(min(_MAX_LABEL_WORDS, len(words) - i), 0, -1):
            gram = tuple(words[i:i + width])
            labels = vocabulary.get(gram)
            if labels is None and width == 1 and gram[0].endswith("'s"):
                labels = vocabulary.get((gram[0][:-2],))
            if labels is not None:
                found.extend(labels)
                i += width
                break
        else:
            i += 1
    return frozenset(found)


def entity_terms(snapshot: Snapshot, seeds: np.ndarray, seed_weight: np.ndarray, cue_entities: frozenset,
                 params: MemoryParams) -> tuple[np.ndarray, np.ndarray]:
    """The entity terms of graph activation as (target rows, weights), vectorised over the seeds.

    ``seed_weight``: each seed's spreading weight (0: spreads nothing). By the module formula a
    target T gets ``entity_weight · w_s`` for every seed s ≠ T and every entity they share, and
    ``cue_entity_weight`` per cue entity it carries, each entity reaching its ``entity_fanout``
    most recent rows. Grouped by entity, that is one weight per entity,
    ``A_e = entity_weight · Σ_{s carries e} w_s + cue_entity_weight · [e ∈ cue]``, given to every row
    of e's window, minus the target's own seed weight (s ≠ T): the work is one pass over the
    seeds' entity codes and one over the active entities' windows (CSR postings,
    :meth:`.columns.Generation.entity_postings`), with no Python loop over seeds or postings.
    """
    generation = snapshot.generation
    n = snapshot.n
    postings = generation.entity_postings(n)
    n_entities = postings.indptr.size - 1
    if n_entities == 0:
        return EMPTY_ROWS, np.empty(0)
    ew = float(params.entity_weight)
    per_entity = np.zeros(n_entities)
    own = None
    spreading = np.flatnonzero(seed_weight > 0.0) if ew > 0 else EMPTY_ROWS
    if spreading.size:
        spread_rows = seeds[spreading]
        ptr = generation.entity_ptr.buffer
        at, counts = concatenated_ranges(ptr[spread_rows], ptr[spread_rows + 1])
        if at.size:
            codes = generation.entity_codes.buffer[at]
            per_entity += np.bincount(codes, weights=np.repeat(ew * seed_weight[spreading], counts),
                                      minlength=n_entities)
            own = np.zeros(n)  # each seed's own share, taken off its own entities' terms (s ≠ T)
            own[spread_rows] = ew * seed_weight[spreading]
    if params.cue_entity_weight > 0 and cue_entities:
        code_of = generation.entity_code
        for entity in cue_entities:  # the cue's few labels
            code = code_of.get(entity)
            if code is not None and code < n_entities:
                per_entity[code] += params.cue_entity_weight
    active = np.flatnonzero(per_entity > 0.0)
    if active.size == 0:
        return EMPTY_ROWS, np.empty(0)
    ends = postings.indptr[active + 1]
    starts = np.maximum(postings.indptr[active], ends - params.entity_fanout)
    at, lengths = concatenated_ranges(starts, ends)
    targets = postings.rows[at]
    weights = np.repeat(per_entity[active], lengths)
    if own is not None:
        # a target that is itself a spreading seed carries the entity: its own term leaves the sum
        # (exact when it is the entity's only spreader: x − x = 0); never below 0 by rounding
        weights = np.maximum(weights - own[targets], 0.0)
    return targets, weights


def rank_other_entities_below_the_cues(snapshot: Snapshot, factors: FactorArrays, margin: float) -> FactorArrays:
    """Cap every candidate about other entities only at the best cue-entity candidate's score minus ``margin``.

    With cue entities, a memory about entities none of which is the cue's (the lexical twin "Sarah's
    favourite food" for "What is Sara's favourite food?") may still be returned, but never above
    the best candidate about one of the cue's entities: how much the relevance core likes the twin's
    words grows with the store (z units over more rows), a bounded additive penalty does not.
    No-op without cue entities or without a candidate about them.
    """
    about_cue = factors.entity_containment > 0
    other = snapshot.has_entities[factors.rows] & ~about_cue  # about entities, none of them the cue's
    if not about_cue.any() or not other.any():
        return factors
    ceiling = float(factors.score[about_cue].max()) - margin
    score = factors.score.copy()
    score[other] = np.minimum(score[other], ceiling)
    return with_score(factors, score)
