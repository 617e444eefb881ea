"""Tests of the BM25 lexical leg (``fieldrank.bm25``), held to bm25s (``_bm25s_oracle``)."""

from __future__ import annotations

import dataclasses
import json
import math

import bm25s
import numpy as np
import pytest
import Stemmer

from fieldrank.bm25 import (
    BM25_METHODS,
    DEFAULT_PARAMS,
    PARAMS_FILENAME,
    BM25Index,
    BM25Params,
)

SEED = 20240611
N_DOCS = 97  # odd corpus size
DOC_LEN_RANGE = (1, 12)
N_QUERIES = 25
QUERY_LEN_RANGE = (1, 5)
K = 10
THREAD_COUNTS = (1, 2, 0)
# Vocabulary of the synthetic corpus: content words, inflections and stop words.
WORDS = (
    "cat", "cats", "dog", "dogs", "run", "runs", "running", "ran", "paint", "painted",
    "painting", "garden", "gardens", "support", "group", "groups", "camping", "camp",
    "music", "violin", "the", "a", "of", "and", "to", "is", "was", "we", "she", "it",
)
OUT_OF_VOCABULARY = "zyzzyva"
HYPOTHESIS_EXAMPLES = 60


def _random_texts(rng: np.random.Generator, n: int, length_range: tuple[int, int]) -> list[str]:
    lo, hi = length_range
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(lo, hi + 1)))) for _ in range(n)]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return _random_texts(np.random.default_rng(SEED), N_DOCS, DOC_LEN_RANGE)


@pytest.fixture(scope="module")
def queries() -> list[str]:
    rng = np.random.default_rng(SEED + 1)
    return [*_random_texts(rng, N_QUERIES, QUERY_LEN_RANGE), "", "the of and", OUT_OF_VOCABULARY]


@pytest.fixture(scope="module")
def index(corpus: list[str]) -> BM25Index:
    return BM25Index(corpus)


Pair = tuple[np.ndarray, np.ndarray]


def _assert_ranking_equal(a: Pair, b: Pair) -> None:
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert a[0].dtype == b[0].dtype == np.int64
    assert a[1].dtype == b[1].dtype == np.float32


# ---------------------------------------------------------------- parameters
def test_default_params() -> None:
    p = BM25Params()
    assert (p.k1, p.b, p.method) == (1.5, 0.75, "lucene")
    assert (p.stopwords, p.stemmer_language, p.lowercase) == ("en", "english", True)
    assert p == DEFAULT_PARAMS
    assert BM25_METHODS == ("robertson", "atire", "bm25l", "bm25+", "lucene")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.k1 = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("k1", 0.0),
        ("k1", -1.0),
        ("k1", math.nan),
        ("k1", math.inf),
        ("b", -0.01),
        ("b", 1.01),
        ("b", math.nan),
        ("method", "bm26"),
        ("method", "Lucene"),
        ("delta", -0.5),
        ("stopwords", "klingon"),
        ("stemmer_language", "klingon"),
    ],
    ids=lambda v: str(v),
)
def test_invalid_params_raise_value_error_naming_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        BM25Params(**{field: value})


@pytest.mark.parametrize(("field", "value"), [("k1", "1.5"), ("b", True), ("lowercase", 1)])
def test_wrong_param_types_raise_type_error(field: str, value: object) -> None:
    with pytest.raises(TypeError, match=field):
        BM25Params(**{field: value})


def test_method_error_lists_every_method() -> None:
    with pytest.raises(ValueError, match="method") as info:
        BM25Params(method="okapi")
    for method in BM25_METHODS:
        assert method in str(info.value)


def test_boundary_params_are_valid() -> None:
    BM25Params(b=0.0)
    BM25Params(b=1.0)
    BM25Params(stopwords=None, stemmer_language=None, lowercase=False)


# ---------------------------------------------------------------- parity
@pytest.mark.parametrize("method", BM25_METHODS)
@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (0.9, 0.4), (2.0, 1.0)])
def test_scores_equal_direct_bm25s(
    corpus: list[str], queries: list[str], method: str, k1: float, b: float
) -> None:
    """Our wrapper passes params and tokenizer settings through: bm25s, called directly, agrees."""
    params = BM25Params(k1=k1, b=b, method=method)
    ours = BM25Index(corpus, params)

    stemmer = Stemmer.Stemmer("english")
    peer = bm25s.BM25(k1=k1, b=b, method=method)
    settings = {"lower": True, "stopwords": "en", "stemmer": stemmer, "show_progress": False}
    peer.index(bm25s.tokenize(corpus, **settings), show_progress=False)
    for query in queries:
        tokens = bm25s.tokenize([query], return_ids=False, **settings)[0]
        known = [t for t in tokens if t in peer.vocab_dict]
        expected = peer.get_scores(known) if known else np.zeros(len(corpus), dtype=np.float32)
        got = ours.scores(query)
        assert got.dtype == np.float32
        assert got.shape == (len(corpus),)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("method", BM25_METHODS)
@pytest.mark.parametrize("context_window", [0, 2])
def test_native_score_matrix_is_bm25s_bit_for_bit(corpus: list[str], queries: list[str], method: str,
                                                  context_window: int) -> None:
    """The native scorer (one call for a batch, any thread count) adds bm25s's float32 terms in
    bm25s's order: repeated query tokens, unknown-only queries and neighbour-text expansion too."""
    index = BM25Index(corpus, BM25Params(method=method, context_window=context_window))
    token_ids = [index._token_ids(tokens) for tokens in index._tokenize([*queries, "zyzzyva", "cat cat dog cat"])]
    batches = [index._scores_matrix(token_ids, n_threads) for n_threads in THREAD_COUNTS]
    for ids, *rows in zip(token_ids, *batches):
        expected = (np.asarray(index._retriever.get_scores_from_ids(ids), dtype=np.float32) if ids.size
                    else np.zeros(len(corpus), dtype=np.float32))
        for row in rows:
            assert row.dtype == np.float32
            np.testing.assert_array_equal(row, expected)


def test_native_scores_of_a_block_of_documents_are_those_columns(corpus: list[str], queries: list[str]) -> None:
    from fieldrank._lexical.scoring import postings_sorted as _postings_sorted

    index = BM25Index(corpus, BM25Params(context_window=2))
    token_ids = [index._token_ids(tokens) for tokens in index._tokenize(queries)]
    full = index._scores_matrix(token_ids, 2)
    assert index._native_arrays()[3]  # bm25s writes sorted postings: blocks are binary-searched
    for docs in [(0, 5), (13, 61), (60, N_DOCS), (40, 40)]:
        np.testing.assert_array_equal(index._scores_matrix(token_ids, 2, docs), full[:, docs[0]:docs[1]])
    assert _postings_sorted(np.array([0, 3, 1, 2], dtype=np.int32), np.array([0, 2, 4], dtype=np.int64))
    assert not _postings_sorted(np.array([0, 3, 2, 1], dtype=np.int32), np.array([0, 2, 4], dtype=np.int64))
    assert not _postings_sorted(np.array([3, 0, 1], dtype=np.int32), np.array([0, 2, 3], dtype=np.int64))


def test_native_scorer_refuses_out_of_range_tokens(index: BM25Index) -> None:
    from fieldrank import _core

    matrix = index._retriever.scores
    n_terms = matrix["indptr"].shape[0] - 1
    with pytest.raises(IndexError, match=f"token id {n_terms} is not in"):
        _core.bm25_scores_batch(matrix["data"], matrix["indices"], matrix["indptr"], len(index),
                                np.array([0, 1], dtype=np.int64), np.array([n_terms], dtype=np.int64))
    with pytest.raises(ValueError, match="token_offsets must end"):
        _core.bm25_scores_batch(matrix["data"], matrix["indices"], matrix["indptr"], len(index),
                                np.array([0, 2], dtype=np.int64), np.array([0], dtype=np.int64))


# Tiny corpus without stop words so that lengths are easy to count: dl = number of words.
HAND_CORPUS = (
    "apple banana apple",
    "banana cherry",
    "cherry melon",
    "melon kiwi grape",
    "grape lemon",
)
HAND_QUERY = "apple"
HAND_DOC = 0
HAND_TF = 2
HAND_DF = 1


def _hand_tf_part(tf: float, dl: float, avgdl: float, k1: float, b: float) -> float:
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


@pytest.mark.parametrize("method", ["lucene", "robertson"])
def test_hand_computed_bm25(method: str) -> None:
    params = BM25Params(method=method)
    index = BM25Index(list(HAND_CORPUS), params)
    n = len(HAND_CORPUS)
    lengths = [len(text.split()) for text in HAND_CORPUS]
    avgdl = sum(lengths) / n
    dl = lengths[HAND_DOC]
    if method == "lucene":
        idf = math.log(1 + (n - HAND_DF + 0.5) / (HAND_DF + 0.5))
    else:  # robertson; bm25s clamps the ratio at 1 (idf >= 0), not reached here
        idf = math.log((n - HAND_DF + 0.5) / (HAND_DF + 0.5))
    classic = idf * _hand_tf_part(HAND_TF, dl, avgdl, params.k1, params.b)
    # bm25s (like Lucene >= 8, LUCENE-8563) leaves out the constant factor (k1 + 1) of the
    # numerator: the ranking is unchanged, the score is the classic value / (k1 + 1).
    expected = classic / (params.k1 + 1)
    scores = index.scores(HAND_QUERY)
    assert scores[HAND_DOC] == pytest.approx(expected, rel=1e-6)
    np.testing.assert_array_equal(np.flatnonzero(scores), [HAND_DOC])


# ---------------------------------------------------------------- tokenizer
def test_stemming_matches_inflections() -> None:
    index = BM25Index(["she runs every morning", "he paints walls", "quiet evening"])
    ids, scores = index.top("running", K)
    np.testing.assert_array_equal(ids, [0])
    assert scores[0] > 0
    assert index.tokenize("Running") == index.tokenize("runs")


def test_no_stemmer_keeps_inflections_apart() -> None:
    params = BM25Params(stemmer_language=None)
    index = BM25Index(["she runs every morning", "he paints walls"], params)
    assert index.top("running", K)[0].size == 0


def test_stop_words_ignored(index: BM25Index) -> None:
    np.testing.assert_array_equal(index.scores("the cat of a dog"), index.scores("cat dog"))
    assert index.top("the of and a", K)[0].size == 0


def test_lowercase_flag() -> None:
    texts = ["Cat sat", "dog sat"]
    assert BM25Index(texts).top("cat", K)[0].tolist() == [0]
    assert BM25Index(texts, BM25Params(lowercase=False)).top("cat", K)[0].size == 0


# ---------------------------------------------------------------- ranking rules
@pytest.mark.parametrize("query", ["", "   ", "the of and", OUT_OF_VOCABULARY, "!!! ??"])
def test_query_without_known_tokens_is_empty(index: BM25Index, query: str) -> None:
    ids, scores = index.top(query, K)
    assert ids.shape == scores.shape == (0,)
    assert ids.dtype == np.int64
    assert scores.dtype == np.float32
    assert not index.scores(query).any()
    assert [(r[0].size, r[1].size) for r in index.top_batch([query, query], K)] == [(0, 0), (0, 0)]


def test_only_overlapping_documents_are_returned(index: BM25Index, corpus: list[str]) -> None:
    ids, scores = index.top("violin", len(corpus) + 5)  # k > N is not an error
    expected = [i for i, text in enumerate(corpus) if "violin" in text.split()]
    assert sorted(ids.tolist()) == expected
    assert np.all(scores > 0)
    assert np.all(np.diff(scores) <= 0)


@pytest.mark.parametrize("method", ["bm25l", "bm25+"])
def test_nonoccurrence_methods_still_rank_only_overlap(method: str) -> None:
    texts = ["cat sat", "dog sat", "bird flew", "fish swam"]
    index = BM25Index(texts, BM25Params(method=method))
    assert np.all(index.scores("cat") > 0)  # bm25s adds the non-occurrence score everywhere
    ids, _ = index.top("cat", K)
    np.testing.assert_array_equal(ids, [0])


def test_ties_break_by_lower_id() -> None:
    filler = "violin music"
    texts = [filler] * 9
    tied = (7, 1, 4, 8)
    for i in tied:
        texts[i] = "garden camp"
    index = BM25Index(texts)
    ids, scores = index.top("garden", K)
    np.testing.assert_array_equal(ids, sorted(tied))
    assert np.unique(scores).size == 1
    ids_k2, _ = index.top("garden", 2)
    np.testing.assert_array_equal(ids_k2, sorted(tied)[:2])


def test_higher_score_first_then_id() -> None:
    texts = ["garden music", "garden garden garden", "garden music", "music"]
    ids, scores = BM25Index(texts).top("garden", K)
    assert ids[0] == 1
    np.testing.assert_array_equal(ids[1:], [0, 2])
    assert scores[0] > scores[1] == scores[2]


# ---------------------------------------------------------------- subsets
def _filtered_reference(index: BM25Index, query: str, k: int, allowed: np.ndarray) -> Pair:
    """The full ranking, restricted to ``allowed`` afterwards and cut at k."""
    ids, scores = index.top(query, len(index))
    keep = allowed[ids]
    return ids[keep][:k], scores[keep][:k]


def test_subset_never_leaks(index: BM25Index, queries: list[str]) -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")
    n = len(index)

    @hypothesis.settings(
        max_examples=HYPOTHESIS_EXAMPLES, deadline=None, derandomize=True, database=None
    )
    @hypothesis.given(
        members=st.lists(st.integers(0, n - 1), unique=True, min_size=1, max_size=n),  # empty: refused
        query=st.sampled_from(queries),
        k=st.integers(1, n + 1),
        as_mask=st.booleans(),
    )
    def check(members: list[int], query: str, k: int, as_mask: bool) -> None:
        allowed = np.zeros(n, dtype=bool)
        allowed[members] = True
        subset = allowed if as_mask else np.asarray(members, dtype=np.int64)
        got = index.top(query, k, subset=subset)
        assert allowed[got[0]].all()
        _assert_ranking_equal(got, _filtered_reference(index, query, k, allowed))

    check()


def test_empty_subset_is_refused(index: BM25Index) -> None:
    """One policy with the operators and the retriever (_validation.subset): an empty subset is a
    caller's bug, refused with ValueError (it used to return an empty ranking here)."""
    with pytest.raises(ValueError, match="subset must hold at least one id"):
        index.top("cat", K, subset=np.empty(0, dtype=np.int64))
    with pytest.raises(ValueError, match="subset as a boolean mask selects no rows"):
        index.top("cat", K, subset=np.zeros(len(index), dtype=bool))
    with pytest.raises(ValueError, match=r"subsets\[0\] must hold at least one id"):
        index.top_batch(["cat"], K, subsets=[[]])


@pytest.mark.parametrize(
    ("subset", "error"),
    [
        (np.array([0, N_DOCS]), ValueError),
        (np.array([-1, 2]), ValueError),
        (np.array([3, 3]), ValueError),
        (np.zeros(N_DOCS - 1, dtype=bool), ValueError),
        (np.array([[0, 1]]), ValueError),
        (np.array([0.0, 1.0]), TypeError),
    ],
    ids=["too-high", "negative", "duplicate", "short-mask", "2-d", "float"],
)
def test_invalid_subset_raises(
    index: BM25Index, subset: np.ndarray, error: type[Exception]
) -> None:
    with pytest.raises(error, match="subset"):
        index.top("cat", K, subset=subset)


# ---------------------------------------------------------------- batch
@pytest.mark.parametrize("n_threads", THREAD_COUNTS)
@pytest.mark.parametrize("k", [1, K, N_DOCS + 1])
def test_batch_equals_single(index: BM25Index, queries: list[str], n_threads: int, k: int) -> None:
    batch = index.top_batch(queries, k, n_threads=n_threads)
    assert len(batch) == len(queries)
    for query, got in zip(queries, batch):
        _assert_ranking_equal(got, index.top(query, k))


@pytest.mark.parametrize("n_threads", THREAD_COUNTS)
def test_batch_with_subsets_equals_single(
    index: BM25Index, queries: list[str], n_threads: int
) -> None:
    rng = np.random.default_rng(SEED + 2)
    shared = np.sort(rng.choice(len(index), size=len(index) // 2, replace=False)).astype(np.int64)
    for got, query in zip(index.top_batch(queries, K, subset=shared, n_threads=n_threads), queries):
        _assert_ranking_equal(got, index.top(query, K, subset=shared))

    per_query = [rng.random(len(index)) < rng.random() for _ in queries]
    for mask in per_query:
        mask[rng.integers(len(index))] = True  # an empty subset is refused (_validation.subset)
    per_query[0] = None
    batch = index.top_batch(queries, K, subsets=per_query, n_threads=n_threads)
    for got, query, subset in zip(batch, queries, per_query):
        _assert_ranking_equal(got, index.top(query, K, subset=subset))


def test_batch_argument_errors(index: BM25Index, queries: list[str]) -> None:
    mask = np.ones(len(index), dtype=bool)
    with pytest.raises(ValueError, match="subsets"):
        index.top_batch(queries, K, subsets=[mask])
    with pytest.raises(ValueError, match="subset"):
        index.top_batch(queries, K, subset=mask, subsets=[mask] * len(queries))
    with pytest.raises(TypeError, match="queries"):
        index.top_batch("cat dog", K)
    assert index.top_batch([], K) == []


# ---------------------------------------------------------------- input checks
@pytest.mark.parametrize(
    ("k", "error"), [(0, ValueError), (-3, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_invalid_k(index: BM25Index, k: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="k"):
        index.top("cat", k)  # type: ignore[arg-type]
    with pytest.raises(error, match="k"):
        index.top_batch(["cat"], k)  # type: ignore[arg-type]


def test_invalid_texts() -> None:
    with pytest.raises(ValueError, match="texts"):
        BM25Index([])
    with pytest.raises(ValueError, match="texts"):
        BM25Index(["the", "of a"])
    with pytest.raises(TypeError, match="texts"):
        BM25Index("a single string")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        BM25Index(["cat", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="params"):
        BM25Index(["cat"], params={"k1": 1.2})  # type: ignore[arg-type]


def test_len_and_params(index: BM25Index, corpus: list[str]) -> None:
    assert len(index) == len(corpus)
    assert index.params == DEFAULT_PARAMS
    custom = BM25Params(k1=1.2, b=0.5, method="atire")
    assert BM25Index(corpus, custom).params is custom


# ---------------------------------------------------------------- persistence
@pytest.mark.parametrize(
    "params",
    [DEFAULT_PARAMS, BM25Params(k1=1.2, b=0.3, method="bm25+", stemmer_language=None)],
    ids=["default", "bm25+"],
)
def test_save_load_round_trip(
    tmp_path, corpus: list[str], queries: list[str], params: BM25Params
) -> None:
    original = BM25Index(corpus, params)
    original.save(tmp_path / "idx")
    loaded = BM25Index.load(tmp_path / "idx")
    assert loaded.params == params
    assert len(loaded) == len(original)
    for query in queries:
        np.testing.assert_array_equal(loaded.scores(query), original.scores(query))
        _assert_ranking_equal(loaded.top(query, K), original.top(query, K))
    # Every array is a plain numeric .npy, readable without pickle.
    arrays = sorted((tmp_path / "idx").glob("*.npy"))
    assert arrays
    for path in arrays:
        assert np.load(path, allow_pickle=False).dtype != object


def test_load_refuses_pickled_arrays(tmp_path, corpus: list[str]) -> None:
    BM25Index(corpus).save(tmp_path)
    data_file = next(tmp_path.glob("data*.npy"))
    np.save(data_file, np.array([{"payload": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="pickle"):
        BM25Index.load(tmp_path)


def _rewrite_meta(directory, **changes) -> None:
    path = directory / PARAMS_FILENAME
    meta = json.loads(path.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if key == "params":
            meta["params"].update(value)
        else:
            meta[key] = value
    path.write_text(json.dumps(meta), encoding="utf-8")


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"params": {"k1": -1.0}}, "k1"),
        ({"params": {"method": "bm26"}}, "method"),
        ({"params": {"b": 0.5}}, "b"),  # valid, but disagrees with the bm25s files
        ({"params": {"extra": 1}}, "extra"),
        ({"format_version": 99}, "format_version"),
        ({"n_docs": 3}, "n_docs"),
        ({"format": "other"}, "fieldrank.bm25"),
    ],
    ids=["k1", "method", "b-mismatch", "unknown-field", "version", "n_docs", "format"],
)
def test_load_validates_params(tmp_path, corpus: list[str], changes: dict, match: str) -> None:
    BM25Index(corpus).save(tmp_path)
    _rewrite_meta(tmp_path, **changes)
    with pytest.raises(ValueError, match=match):
        BM25Index.load(tmp_path)


def test_load_missing_directory(tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        BM25Index.load(tmp_path / "absent")


# ---------------------------------------------------------------------- neighbour-text expansion
def _context_texts(texts: list[str], sessions: np.ndarray, window: int) -> list[str]:
    """Context documents written out by hand: the text, then its same-session neighbours."""
    out = []
    for i, text in enumerate(texts):
        parts = [text]
        for distance in range(1, window + 1):
            parts += [texts[j] for j in (i - distance, i + distance)
                      if 0 <= j < len(texts) and sessions[j] == sessions[i]]
        out.append(" ".join(parts))
    return out


@pytest.mark.parametrize("method", BM25_METHODS)
@pytest.mark.parametrize(("window", "weight"), [(1, 1.0), (2, 0.5)])
def test_expansion_scores_are_plain_plus_weighted_context(corpus: list[str], queries: list[str], method: str,
                                                          window: int, weight: float) -> None:
    rng = np.random.default_rng(SEED)
    sessions = np.sort(rng.integers(0, 9, size=len(corpus)))
    params = BM25Params(method=method)
    plain = BM25Index(corpus, params)
    context = BM25Index(_context_texts(corpus, sessions, window), params)
    expanded = BM25Index(corpus, dataclasses.replace(params, context_window=window, context_weight=weight),
                         sessions=sessions)
    for query in queries:
        np.testing.assert_allclose(expanded.scores(query), plain.scores(query) + weight * context.scores(query),
                                   rtol=1e-5, atol=1e-6)


def test_expansion_neighbours_stay_in_their_session() -> None:
    texts = ["violin lesson today", "how was it", "great", "garden party", "nice"]
    params = BM25Params(context_window=1)
    split = BM25Index(texts, params, sessions=np.array([0, 0, 0, 1, 1]))
    ids, _ = split.top("violin", 5)
    assert ids.tolist() == [0, 1]          # turn 2 is two steps away, turn 3 in another session
    one_session = BM25Index(texts, params)  # no keys: corpus order is one session
    ids, _ = one_session.top("garden", 5)
    assert ids[0] == 3 and sorted(ids.tolist()) == [2, 3, 4]


def test_expansion_takes_a_timeline_and_survives_save_load(tmp_path, corpus: list[str], queries: list[str]) -> None:
    from fieldrank.temporal import Timeline

    sessions = np.repeat(np.arange(len(corpus) // 4 + 1), 4)[: len(corpus)]
    params = BM25Params(context_window=2, context_weight=0.75)
    by_keys = BM25Index(corpus, params, sessions=sessions)
    by_timeline = BM25Index(corpus, params, sessions=Timeline(session=sessions))
    by_keys.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert loaded.params == params
    for query in queries:
        np.testing.assert_array_equal(by_keys.scores(query), by_timeline.scores(query))
        np.testing.assert_array_equal(by_keys.scores(query), loaded.scores(query))
        for a, b in zip(by_keys.top(query, K), loaded.top(query, K)):
            np.testing.assert_array_equal(a, b)


def test_expansion_off_ignores_sessions(corpus: list[str], queries: list[str]) -> None:
    keyed = BM25Index(corpus, DEFAULT_PARAMS, sessions=np.arange(len(corpus)))
    plain = BM25Index(corpus, DEFAULT_PARAMS)
    for query in queries:
        np.testing.assert_array_equal(keyed.scores(query), plain.scores(query))


@pytest.mark.parametrize(("changes", "error", "match"), [
    ({"context_window": -1}, ValueError, "context_window"),
    ({"context_window": 1.5}, TypeError, "context_window"),
    ({"context_window": True}, TypeError, "context_window"),
    ({"context_weight": 0.0}, ValueError, "context_weight"),
    ({"context_weight": math.inf}, ValueError, "context_weight"),
    ({"context_weight": "1"}, TypeError, "context_weight"),
])
def test_expansion_params_validation(changes: dict, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        BM25Params(**changes)


def test_expansion_sessions_validation(corpus: list[str]) -> None:
    params = BM25Params(context_window=1)
    with pytest.raises(ValueError, match="one key per text"):
        BM25Index(corpus, params, sessions=np.zeros(len(corpus) - 1, dtype=np.int64))
    with pytest.raises(ValueError, match="integer array"):
        BM25Index(corpus, params, sessions=np.zeros(len(corpus)))


@pytest.mark.parametrize("params", [
    BM25Params(),
    BM25Params(stopwords=None),
    BM25Params(stemmer_language=None),
    BM25Params(lowercase=False, stopwords=None, stemmer_language=None),
])
def test_query_tokens_equal_bm25s_tokenize(params):
    """The query tokenizer replays bm25s.tokenize's rules (no per-call progress bars): same tokens."""
    import bm25s

    rng = np.random.default_rng(5)
    words = ["Running", "runs", "the", "A", "I", "x", "Élan", "naïve", "caf\u00e9s", "2023", "it's", "don't",
             "_under_", "CamelCase", "über", "ran", "and", "THE", "Went", "going", "e-mail", "x1", "  ", "\t", "!!"]
    queries = ["", "a", "the and of", *(" ".join(rng.choice(words, size=rng.integers(1, 12))) for _ in range(200))]
    index = BM25Index(["running the cafés in 2023", "going to the e-mail"], params)
    stemmer = Stemmer.Stemmer(params.stemmer_language) if params.stemmer_language else None
    expected = bm25s.tokenize(queries, lower=params.lowercase, stopwords=params.stopwords,
                              stemmer=stemmer, return_ids=False, show_progress=False)
    assert index._tokenize(queries) == expected
    for q, want in zip(queries[:20], expected):
        assert index.tokenize(q) == want


@pytest.mark.parametrize("window", [0, 2])
def test_from_token_ids_equals_the_text_index(corpus: list[str], queries: list[str], window: int) -> None:
    """An index built from kept token ids (the memory store's rebuild) scores like one built from texts."""
    from fieldrank._lexical import context_token_ids as _context_token_ids

    params = dataclasses.replace(DEFAULT_PARAMS, context_window=window)
    sessions = np.repeat(np.arange(len(corpus) // 5 + 1), 5)[: len(corpus)]
    tokenized = bm25s.tokenize(corpus, stopwords=params.stopwords, stemmer=Stemmer.Stemmer("english"),
                               show_progress=False)
    contexts = _context_token_ids(tokenized.ids, sessions, window) if window else None
    # a vocabulary holding a token no document has (a forgotten memory's) changes nothing
    vocab = {**tokenized.vocab, "zzzforgotten": len(tokenized.vocab)}
    kept = BM25Index.from_token_ids(tokenized.ids, vocab, params, context_token_ids=contexts)
    texts = BM25Index(corpus, params, sessions=sessions)
    for query in queries:
        np.testing.assert_array_equal(kept.scores(query), texts.scores(query))
    with pytest.raises(ValueError, match="context_token_ids"):
        BM25Index.from_token_ids(tokenized.ids, vocab, params, context_token_ids=None if window else tokenized.ids)


# ---------------------------------------------------------------- held to bm25s (the oracle)
ORACLE_PARAMS = [
    BM25Params(),
    BM25Params(context_window=2),
    BM25Params(context_window=1, context_weight=0.35, k1=0.9, b=0.4),
    BM25Params(stopwords=None, stemmer_language=None, lowercase=False, context_window=2),
    BM25Params(stopwords="en_plus", k1=2.0, b=1.0),
    *(BM25Params(method=m, context_window=w) for m in BM25_METHODS if m != "lucene" for w in (0, 2)),
]


@pytest.mark.parametrize("params", ORACLE_PARAMS, ids=repr)
def test_scores_and_matrix_equal_the_bm25s_oracle(corpus: list[str], queries: list[str], params: BM25Params) -> None:
    """Tokenizer, build (expansion included) and scorer: every entry and every score is bm25s's."""
    from tests.retriever._bm25s_oracle import Bm25sOracle, matrix_entries

    sessions = np.repeat(np.arange(N_DOCS // 7 + 1), 7)[:N_DOCS]
    ours = BM25Index(corpus, params, sessions=sessions)
    oracle = Bm25sOracle(corpus, params, sessions)
    m = ours._retriever.scores
    vocab = {t: i for t, i in ours._retriever.vocab_dict.items() if t != ""}
    assert matrix_entries(m["data"], m["indices"], m["indptr"], vocab) == oracle.entries()
    if oracle.retriever.nonoccurrence_array is not None:
        for term, i in vocab.items():
            assert ours._retriever.nonoccurrence_array[i] == oracle.retriever.nonoccurrence_array[oracle.vocab[term]]
    for query in [*queries, "cat cat dog cat", "Running GARDENS of the cats"]:
        np.testing.assert_array_equal(ours.scores(query), oracle.scores(query))
        assert ours.tokenize(query) == oracle.tokens([query])[0]


def test_build_is_deterministic_and_numbers_terms_by_first_occurrence(corpus: list[str]) -> None:
    """Term ids do not depend on the string hash seed (bm25s numbers stems by iterating a set)."""
    index = BM25Index(["dogs run", "the cats ran", "dog painting"], DEFAULT_PARAMS)
    assert {t: i for t, i in index._retriever.vocab_dict.items() if t} == {"dog": 0, "run": 1, "cat": 2, "ran": 3,
                                                                            "paint": 4}
    a, b = BM25Index(corpus, BM25Params(context_window=2)), BM25Index(corpus, BM25Params(context_window=2))
    for key in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(a._retriever.scores[key], b._retriever.scores[key])


def test_stop_word_lists_are_bm25s_lists() -> None:
    """Every list name selects the words bm25s.tokenize drops for it; an unknown name is refused."""
    from fieldrank._lexical.tokenizer import STOPWORD_LISTS, Tokenizer, stopword_list

    for name in STOPWORD_LISTS:
        words = sorted(stopword_list(name))
        assert words, name
        # bm25s drops exactly the list's words (those of two or more word characters; the split keeps no others)
        kept = bm25s.tokenize([" ".join(words)], stopwords=name, return_ids=False, show_progress=False)[0]
        assert kept == [], name
        assert Tokenizer(True, name, None).tokens([" ".join(words)]) == [[]]
    assert stopword_list(None) == frozenset()
    with pytest.raises(ValueError, match="stop-word list 'klingon' is unknown"):
        stopword_list("klingon")
    with pytest.raises(ValueError, match="BM25Params.stopwords must be one of"):
        BM25Params(stopwords="klingon")


def test_tokenizer_ids_grow_one_vocabulary() -> None:
    """The memory store's path: texts tokenized in several calls share one growing vocabulary."""
    from fieldrank._lexical.tokenizer import Tokenizer

    tokenizer = Tokenizer.of(DEFAULT_PARAMS)
    vocab: dict[str, int] = {}
    first = tokenizer.ids(["Dogs run", "the", ""], vocab)
    second = tokenizer.ids(["running dogs PAINT"], vocab)
    assert [a.tolist() for a in first] == [[0, 1], [], []]
    assert [a.tolist() for a in second] == [[1, 0, 2]]
    assert all(a.dtype == np.int64 for a in first + second)
    assert vocab == {"dog": 0, "run": 1, "paint": 2}


def test_no_scipy_at_run_time() -> None:
    """The lexical leg, expansion included, imports no scipy (a base install has none): checked
    in a fresh interpreter where importing scipy fails."""
    import subprocess
    import sys

    code = (
        "import sys, importlib.abc\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'scipy':\n"
        "            raise ImportError('scipy is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from fieldrank.bm25 import BM25Index, BM25Params\n"
        "index = BM25Index(['a dog runs', 'cats paint', 'the dog paints'], BM25Params(context_window=2))\n"
        "assert index.top('dog', 2)[0].tolist() == [0, 2]\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'scipy']\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
