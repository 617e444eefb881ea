"""Research script for issue 8: a default stack that beats rrf2 and the best single leg.

Composes legs directly from the operators (``fieldrank.cfsr_batch`` / ``cfsr_pool`` ...) and
``BM25Index`` over the LoCoMo loader, fuses them with a vectorised weighted RRF that follows
docs/spec.md §6 exactly (checked against ``fieldrank.rrf`` by ``--check-rrf``), and scores them with
NDCG@10 / Recall@10 (binary relevance, docs/spec.md §9).

Everything is per conversation: a question only ranks its own conversation's turns. Legs are
stored as ``(B, depth)`` arrays of turn positions *relative to the conversation start*, padded
with -1 (a lexical leg can return fewer than ``depth`` ids).

Usage (from the repository root, dev venv active)::

    python benchmarks/research_default_stack.py baselines --split tune
    python benchmarks/research_default_stack.py <experiment> --split tune [--emb minilm-l6-v2 ...]
    python benchmarks/research_default_stack.py final   # the one look at holdout

Experiments are listed in ``EXPERIMENTS`` at the bottom; each prints a table. The search was
run on ``--split tune`` (conversations 0–4) only; ``final`` evaluates the chosen stack on both
splits with paired bootstrap intervals.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
import time
from dataclasses import dataclass

import numpy as np

import fieldrank as fr
from fieldrank.bm25 import BM25Index, BM25Params
from fieldrank.evaluation import locomo, stats

EMBEDDINGS = ("minilm-l6-v2", "mpnet-base-v2")
K = 10
K0 = 60.0
CATS = {1: "multi-hop", 2: "temporal", 3: "open-dom", 4: "single-hop", 5: "adversarial"}


# ----------------------------------------------------------------------------- context
@dataclass
class Bench:
    """Everything one embedding set needs, for the questions of one split."""

    data: locomo.LocomoData
    rows: np.ndarray          # question rows (scored, in split)
    conv: np.ndarray          # (B,) conversation of each question
    start: np.ndarray         # (B,) first turn row of its conversation
    n: np.ndarray             # (B,) turns in its conversation
    nmax: int
    valid: np.ndarray         # (B, nmax) bool: position exists in the conversation
    gold: np.ndarray          # (B, nmax) bool
    n_gold: np.ndarray        # (B,)
    cos: np.ndarray           # (B, nmax) float32 cosine, -inf padded
    cat: np.ndarray           # (B,) category

    @property
    def B(self) -> int:
        return len(self.rows)


@functools.lru_cache(maxsize=None)
def load(emb: str) -> locomo.LocomoData:
    return locomo.load_locomo(None, emb, checksums=False)


@functools.lru_cache(maxsize=None)
def bench(emb: str, split: str) -> Bench:
    d = load(emb)
    rows = d.split_question_indices(split)
    conv = d.questions.conv_index[rows]
    start = np.array([d.conv_ranges[int(c)][0] for c in conv])
    stop = np.array([d.conv_ranges[int(c)][1] for c in conv])
    n = stop - start
    nmax = int(n.max())
    B = len(rows)
    valid = np.arange(nmax)[None, :] < n[:, None]
    gold = np.zeros((B, nmax), bool)
    n_gold = np.zeros(B, np.int64)
    for i, r in enumerate(rows):
        g = d.questions.gold_positions[r]
        gold[i, g] = True
        n_gold[i] = len(g)
    cos = np.full((B, nmax), -np.inf, np.float32)
    E, Qe = d.turn_embeddings, d.question_embeddings
    for c in np.unique(conv):
        sel = np.flatnonzero(conv == c)
        s, e = d.conv_ranges[int(c)]
        cos[np.ix_(sel, np.arange(e - s))] = Qe[rows[sel]] @ E[s:e].T
    return Bench(d, rows, conv, start, n, nmax, valid, gold, n_gold, cos, d.questions.category[rows])


# ----------------------------------------------------------------------------- ranking helpers
def top_from_scores(S: np.ndarray, depth: int, eligible: np.ndarray | None = None) -> np.ndarray:
    """(B, depth) positions by score desc, ties to the lower position; -1 where ineligible."""
    S = np.where(np.isfinite(S), S, -np.inf)
    if eligible is not None:
        S = np.where(eligible, S, -np.inf)
    order = np.argsort(-S, axis=1, kind="stable")[:, :depth]
    ok = np.isfinite(np.take_along_axis(S, order, 1))
    return np.where(ok, order, -1)


def rrf(legs: list[np.ndarray], weights: list[float], nmax: int, k: int = K, k0: float = K0) -> np.ndarray:
    """Weighted RRF (docs/spec.md §6) of (B, depth_i) legs; returns (B, k) positions (-1 padded)."""
    B = legs[0].shape[0]
    F = np.zeros((B, nmax + 1))
    present = np.zeros((B, nmax + 1), bool)
    rowsB = np.arange(B)[:, None]
    for L, w in zip(legs, weights):
        if L.shape[1] == 0 or w == 0:
            continue
        contrib = w / (k0 + np.arange(1, L.shape[1] + 1))
        idx = np.where(L >= 0, L, nmax)  # dump padding into the spare column
        np.add.at(F, (np.broadcast_to(rowsB, L.shape), idx), np.broadcast_to(contrib, L.shape))
        present[np.broadcast_to(rowsB, L.shape), idx] = True
    present[:, nmax] = False
    F = np.where(present, F, -np.inf)[:, :nmax]
    return top_from_scores(F, k)


def evaluate(bn: Bench, top: np.ndarray, k: int = K) -> dict[str, np.ndarray]:
    """Per-question NDCG@k, Recall@k, hit@k, NDCG@5."""
    top = top[:, :k]
    assert top.shape[1] <= k
    h = np.where(top >= 0, np.take_along_axis(bn.gold, np.maximum(top, 0), 1), False)
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    ideal = np.cumsum(disc)
    dcg = h @ disc[: h.shape[1]]
    ndcg = dcg / ideal[np.minimum(bn.n_gold, k) - 1]
    h5 = h[:, :5]
    ndcg5 = (h5 @ disc[:5]) / np.cumsum(disc[:5])[np.minimum(bn.n_gold, 5) - 1]
    return {"ndcg": ndcg, "recall": h.sum(1) / bn.n_gold, "hit": h.any(1).astype(float), "ndcg5": ndcg5}


def summary_of_scores(bn: Bench, S: np.ndarray) -> dict[str, float]:
    """:func:`summary` of the top-10 by the scores ``S`` (one row per question)."""
    return summary(bn, evaluate(bn, top_from_scores(S, 10)))


def summary(bn: Bench, m: dict[str, np.ndarray]) -> dict[str, float]:
    out = {"ndcg": m["ndcg"].mean(), "recall": m["recall"].mean()}
    for c in CATS:
        out[c] = m["ndcg"][bn.cat == c].mean()
    return out


def fmt_row(name: str, s: dict[str, float]) -> str:
    cats = " ".join(f"{s[c]:.4f}" for c in CATS)
    return f"{name:<58} {s['ndcg']:.4f} {s['recall']:.4f} | {cats}"


HEADER = f"{'method':<58} ndcg10 rec10  | " + " ".join(f"{v[:6]:>6}" for v in CATS.values())


# ----------------------------------------------------------------------------- BM25
@functools.lru_cache(maxsize=None)
def bm25_scores(emb: str, split: str, params: BM25Params = BM25Params(), per_conv: bool = False,
                field: str = "embed_text") -> np.ndarray:
    """(B, nmax) BM25 scores (0 = no overlap), -inf padded. One global index or one per conversation."""
    bn = bench(emb, split)
    d = bn.data
    texts = list(getattr(d.turns, field))
    queries = list(d.questions.question[bn.rows])
    S = np.full((bn.B, bn.nmax), -np.inf, np.float32)
    if per_conv:
        for c in np.unique(bn.conv):
            s, e = d.conv_ranges[int(c)]
            idx = BM25Index(texts[s:e], params)
            sel = np.flatnonzero(bn.conv == c)
            for i in sel:
                S[i, : e - s] = idx.scores(queries[i])
    else:
        idx = _global_bm25(tuple(texts), params)
        for i in range(bn.B):
            s = bn.start[i]
            S[i, : bn.n[i]] = idx.scores(queries[i])[s : s + bn.n[i]]
    return S


@functools.lru_cache(maxsize=None)
def _global_bm25(texts: tuple, params: BM25Params) -> BM25Index:
    return BM25Index(list(texts), params)


def bm25_leg(S: np.ndarray, depth: int) -> np.ndarray:
    """Top ``depth`` by BM25, only positive scores (the BM25Index.top rule)."""
    return top_from_scores(S, depth, eligible=S > 0)


# ----------------------------------------------------------------------------- dense-derived legs
def cos_leg(bn: Bench, depth: int) -> np.ndarray:
    return top_from_scores(bn.cos, depth)


def _conv_batches(bn: Bench):
    d = bn.data
    for c in np.unique(bn.conv):
        sel = np.flatnonzero(bn.conv == c)
        s, e = d.conv_ranges[int(c)]
        yield sel, s, e


def cfsr_dense_leg(bn: Bench, m: int = 50, p: int = 150, w: float = 0.9, lam: float = 0.005,
                   iters: int = 80) -> np.ndarray:
    d = bn.data
    out = np.full((bn.B, m), -1, np.int64)
    for sel, s, e in _conv_batches(bn):
        Q = np.ascontiguousarray(d.question_embeddings[bn.rows[sel]])
        res = fr.cfsr_batch(d.turn_embeddings, Q, m, p=p, w=w, lam=lam, iters=iters,
                            subset=np.arange(s, e, dtype=np.int64))
        out[sel, : res.ids.shape[1]] = res.ids - s
    return out


def union_pool(bn: Bench, S_bm25: np.ndarray, p_dense: int, p_lex: int) -> list[np.ndarray]:
    """Per question: dense top-p_dense ∪ BM25 top-p_lex (positions), dense order first."""
    D = cos_leg(bn, p_dense)
    L = bm25_leg(S_bm25, p_lex) if p_lex > 0 else np.full((bn.B, 0), -1)
    pools = []
    for i in range(bn.B):
        a = D[i][D[i] >= 0]
        b = L[i][L[i] >= 0]
        pools.append(np.concatenate([a, b[~np.isin(b, a)]]))
    return pools


def pool_leg(bn: Bench, pools: list[np.ndarray], m: int, rerank) -> np.ndarray:
    """Per question, ``rerank(ids, C, q, sims)`` (a pool operator) over its pool; (B, m) ids, -1 padded."""
    d = bn.data
    out = np.full((bn.B, m), -1, np.int64)
    for i in range(bn.B):
        ids = pools[i].astype(np.int64)
        C = np.ascontiguousarray(d.turn_embeddings[bn.start[i] + ids])
        q = d.question_embeddings[bn.rows[i]]
        res = rerank(ids, C, q, bn.cos[i, ids].astype(np.float32))
        out[i, : len(res.ids)] = res.ids
    return out


def cfsr_pool_leg(bn: Bench, pools: list[np.ndarray], m: int = 50, w: float = 0.9, lam: float = 0.005,
                  iters: int = 80) -> np.ndarray:
    return pool_leg(bn, pools, m, lambda ids, C, q, sims: fr.cfsr_pool(ids, C, q, m, w=w, lam=lam, iters=iters,
                                                                        sims=sims))


def cfs_pool_leg(bn: Bench, pools: list[np.ndarray], m: int = 50, sigma: float = 0.4, beta: float = 0.2) -> np.ndarray:
    return pool_leg(bn, pools, m, lambda ids, C, q, sims: fr.cfs_pool(ids, C, q, m, sigma=sigma, beta=beta, sims=sims))


def mmr_leg(bn: Bench, k: int = 10, p: int = 150, mu: float = 0.5) -> np.ndarray:
    d = bn.data
    out = np.full((bn.B, k), -1, np.int64)
    for sel, s, e in _conv_batches(bn):
        Q = np.ascontiguousarray(d.question_embeddings[bn.rows[sel]])
        res = fr.mmr_batch(d.turn_embeddings, Q, k, p=p, mu=mu, subset=np.arange(s, e, dtype=np.int64))
        out[sel, : res.ids.shape[1]] = res.ids - s
    return out


def minmax(S: np.ndarray, valid: np.ndarray) -> np.ndarray:
    X = np.where(valid, S, np.nan).astype(np.float64)
    lo, hi = np.nanmin(X, 1, keepdims=True), np.nanmax(X, 1, keepdims=True)
    span = hi - lo
    span[span == 0] = 1
    return np.where(valid, (X - lo) / span, -np.inf)


def znorm(S: np.ndarray, valid: np.ndarray) -> np.ndarray:
    X = np.where(valid, S, np.nan).astype(np.float64)
    mu = np.nanmean(X, 1, keepdims=True)
    sd = np.nanstd(X, 1, keepdims=True)
    sd[sd == 0] = 1
    return np.where(valid, (X - mu) / sd, -np.inf)


# ----------------------------------------------------------------------------- main
def log(*a):
    print(*a, flush=True)


EXPERIMENTS = {}


def experiment(fn):
    EXPERIMENTS[fn.__name__] = fn
    return fn


@experiment
def check_rrf(emb, split):
    """Vectorised RRF == fieldrank.rrf on a real stack."""
    bn = bench(emb, split)
    S = bm25_scores(emb, split)
    legs = [cos_leg(bn, 10), bm25_leg(S, 10), cfsr_dense_leg(bn)]
    w = [1.0, 1.0, 3.0]
    mine = rrf(legs, w, bn.nmax)
    for i in range(bn.B):
        ref = fr.rrf([L[i][L[i] >= 0] for L in legs], w, 10).ids
        got = mine[i][mine[i] >= 0]
        assert np.array_equal(ref, got), (i, ref, got)
    log(f"rrf check ok on {bn.B} questions")


@experiment
def baselines(emb, split):
    bn = bench(emb, split)
    S = bm25_scores(emb, split)
    log(HEADER)
    cos10, bm10 = cos_leg(bn, 10), bm25_leg(S, 10)
    rows = {
        "cosine": cos10,
        "bm25 (lucene k1=1.5 b=.75, stem, global idf)": bm10,
        "rrf2": rrf([cos10, bm10], [1, 1], bn.nmax),
        "rrf_cfsr_locked (cos10, bm25 10, cfsr50 x3)": rrf([cos10, bm10, cfsr_dense_leg(bn)], [1, 1, 3], bn.nmax),
    }
    for name, top in rows.items():
        log(fmt_row(name, summary(bn, evaluate(bn, top))))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", choices=sorted(EXPERIMENTS))
    ap.add_argument("--split", default="tune", choices=["tune", "holdout", "all"])
    ap.add_argument("--emb", nargs="*", default=list(EMBEDDINGS))
    a = ap.parse_args(argv)
    for emb in a.emb:
        t = time.time()
        log(f"\n## {a.experiment} — {emb} — split {a.split}")
        EXPERIMENTS[a.experiment](emb, a.split)
        log(f"({time.time() - t:.1f}s)")



@experiment
def bm25_variants(emb, split):
    """BM25 tokenizer / parameters / idf scope (the lexical leg alone and in rrf2)."""
    bn = bench(emb, split)
    cos10 = cos_leg(bn, 10)
    log(HEADER)
    grid = [
        ("lucene k1=1.5 b=.75 stem", BM25Params(), False),
        ("lucene k1=1.5 b=.75 stem per-conv idf", BM25Params(), True),
        ("lucene k1=1.2 b=.75 stem", BM25Params(k1=1.2), False),
        ("lucene k1=0.9 b=.4 stem", BM25Params(k1=0.9, b=0.4), False),
        ("lucene k1=1.2 b=.5 stem", BM25Params(k1=1.2, b=0.5), False),
        ("lucene k1=2.0 b=.75 stem", BM25Params(k1=2.0), False),
        ("lucene k1=1.5 b=1.0 stem", BM25Params(b=1.0), False),
        ("lucene k1=1.5 b=.75 no-stem", BM25Params(stemmer_language=None), False),
        ("lucene k1=1.2 b=.75 no-stem per-conv", BM25Params(k1=1.2, stemmer_language=None), True),
        ("lucene k1=1.5 b=.75 stem no-stopwords", BM25Params(stopwords=None), False),
        ("robertson k1=1.5 b=.75 stem", BM25Params(method="robertson"), False),
        ("atire k1=1.5 b=.75 stem", BM25Params(method="atire"), False),
        ("bm25+ k1=1.5 b=.75 stem", BM25Params(method="bm25+"), False),
    ]
    for name, p, pc in grid:
        S = bm25_scores(emb, split, p, pc)
        bm = bm25_leg(S, 10)
        log(fmt_row("bm25 " + name, summary(bn, evaluate(bn, bm))))
        log(fmt_row("  rrf2 with it", summary(bn, evaluate(bn, rrf([cos10, bm], [1, 1], bn.nmax)))))



# ----------------------------------------------------------------------------- time-aware leg
from fieldrank import reference  # noqa: E402
from fieldrank import temporal as tl  # noqa: E402


@functools.lru_cache(maxsize=None)
def timeline(emb: str) -> tl.Timeline:
    T = load(emb).turns
    return tl.Timeline.from_turns(tl.session_keys(T.conv_index, T.session), T.session_datetime, list(T.embed_text))


def temporal_leg_scores(bn: Bench, emb: str, S_lex: np.ndarray, params: tl.TemporalParams,
                        use_questions: bool = True) -> np.ndarray:
    """(B, nmax) leg scores, -inf padded, via fieldrank.temporal.temporal_scores per conversation."""
    out = np.full((bn.B, bn.nmax), -np.inf)
    tline = timeline(emb)
    qtexts = bn.data.questions.question[bn.rows]
    for sel, s, e in _conv_batches(bn):
        rows = np.arange(s, e, dtype=np.int64)
        intent, windows = tl.question_features(list(qtexts[sel]), tline, rows) if use_questions else (None, None)
        out[np.ix_(sel, np.arange(e - s))] = reference.temporal_scores(
            bn.cos[sel, : e - s], S_lex[sel, : e - s], rows, tline, params, intent=intent, windows=windows)
    return out


def log_leg_row(name: str, bn: Bench, emb: str, S_lex: np.ndarray, params: tl.TemporalParams) -> None:
    """One row of a table: the time-aware leg with ``params`` over the bench."""
    log(fmt_row(name, summary_of_scores(bn, temporal_leg_scores(bn, emb, S_lex, params))))


@experiment
def union_pool_cfsr(emb, split):
    """CFS-R over dense top-P vs dense top-P ∪ BM25 top-P' (alone and in the locked stack)."""
    bn = bench(emb, split)
    log(HEADER)
    for bname, bp in [("spec bm25", BM25Params()), ("bm25 k1=.9 b=.2", BM25Params(k1=0.9, b=0.2))]:
        S = bm25_scores(emb, split, bp)
        cos10, bm10 = cos_leg(bn, 10), bm25_leg(S, 10)
        for pd, pl in [(150, 0), (150, 10), (150, 20), (150, 50), (100, 50), (50, 50)]:
            pools = union_pool(bn, S, pd, pl)
            for w in ([0.9, 0.5] if pl else [0.9]):
                leg = cfsr_pool_leg(bn, pools, 50, w=w)
                log(fmt_row(f"[{bname}] cfsr P={pd}+{pl}lex w={w} alone", summary(bn, evaluate(bn, leg))))
                top = rrf([cos10, bm10, leg], [1, 1, 3], bn.nmax)
                log(fmt_row(f"[{bname}]   in rrf(cos10,bm10,cfsr50 x3)", summary(bn, evaluate(bn, top))))



# ----------------------------------------------------------------------------- final tables (product path)
def product_runs(emb: str, split: str, methods: dict) -> tuple[Bench, dict]:
    """Top-10 (B, 10) local positions of each RetrieverConfig, run by HybridRetriever per conversation."""
    from fieldrank.hybrid import HybridRetriever

    bn = bench(emb, split)
    d = bn.data
    texts = [str(t) for t in d.turns.embed_text]
    base = HybridRetriever(texts, d.turn_embeddings, "rrf2", timeline=locomo.locomo_timeline(d))
    out = {}
    for name, cfg in methods.items():
        R = base.with_config(cfg)
        top = np.full((bn.B, K), -1, np.int64)
        for sel, s, e in _conv_batches(bn):
            res = R.search_batch([str(q) for q in d.questions.question[bn.rows[sel]]],
                                 np.ascontiguousarray(d.question_embeddings[bn.rows[sel]]),
                                 subset=np.arange(s, e, dtype=np.int64))
            for j, r in zip(sel, res):
                assert len(r.ids) <= K and np.all((r.ids >= s) & (r.ids < e))
                top[j, : len(r.ids)] = r.ids - s
        out[name] = top
    return bn, out


def final_methods(default_toml: str) -> dict:
    from fieldrank.config import CFSRLeg, RetrieverConfig, TemporalLeg, preset

    default = RetrieverConfig.load_toml(default_toml).replace(name="default")
    tleg = next(leg for leg in default.legs if isinstance(leg, TemporalLeg))
    bm = default.bm25
    locked = preset("rrf_cfsr_locked")
    union_legs = tuple(CFSRLeg(weight=3.0, pool="union", union_p=50) if leg.kind == "cfsr" else leg
                       for leg in locked.legs)
    return {
        "cosine": preset("cosine"),
        "bm25": preset("bm25"),
        "bm25 (default's k1/b)": RetrieverConfig(legs=preset("bm25").legs, bm25=bm, name="bm25_tuned"),
        "rrf2": preset("rrf2"),
        "rrf_cfsr_locked": locked,
        "rrf_cfsr_locked, union pool (150 ∪ BM25 50)": RetrieverConfig(legs=union_legs, name="rrf_cfsr_union"),
        "rrf_cfsr_locked, union pool, default's k1/b": RetrieverConfig(legs=union_legs, bm25=bm, name="u2"),
        "ablation: score blend only (γ=τ=δ=0)": RetrieverConfig(
            legs=(TemporalLeg(**{**tleg.params().to_dict(), "gamma": 0.0, "tau": 0.0, "delta": 0.0}),), bm25=bm),
        "ablation: + neighbours (τ=δ=0)": RetrieverConfig(
            legs=(TemporalLeg(**{**tleg.params().to_dict(), "tau": 0.0, "delta": 0.0}),), bm25=bm),
        "ablation: + neighbours + time cues (δ=0)": RetrieverConfig(
            legs=(TemporalLeg(**{**tleg.params().to_dict(), "delta": 0.0}),), bm25=bm),
        "ablation: default leg with SPEC BM25 (k1 1.5, b .75)": default.replace(bm25=BM25Params()),
        "default": default,
    }


def ci_table(bn: Bench, runs: dict, ref: str, other: str) -> list[str]:
    """Markdown: per method overall NDCG@10 [CI], Recall@10 [CI], per category NDCG@10."""
    lines = ["| method | NDCG@10 [95% CI] | Recall@10 [95% CI] | " + " | ".join(CATS.values()) + " |",
             "|---|---|---|" + "---|" * len(CATS)]
    for name, top in runs.items():
        m = evaluate(bn, top)
        nd = stats.bootstrap_ci(m["ndcg"])
        rc = stats.bootstrap_ci(m["recall"])
        cats = " | ".join(f"{m['ndcg'][bn.cat == c].mean():.4f}" for c in CATS)
        lines.append(f"| {name} | {nd.mean:.4f} [{nd.lo:.4f}, {nd.hi:.4f}] | {rc.mean:.4f} [{rc.lo:.4f}, {rc.hi:.4f}] | {cats} |")
    return lines


def paired_table(bn: Bench, runs: dict, a: str, refs: list[str]) -> list[str]:
    """Markdown: a − ref per subset (overall, each category): mean diff [paired 95% CI], p; McNemar hit@10."""
    ma = evaluate(bn, runs[a])
    lines = ["| comparison | subset | n | ΔNDCG@10 [95% CI] | p | ΔRecall@10 [95% CI] | McNemar hit@10 (b/c, p) |",
             "|---|---|---|---|---|---|---|"]
    subsets = {"overall": np.ones(bn.B, bool), **{f"{c} {n}": bn.cat == c for c, n in CATS.items()}}
    for ref in refs:
        mr = evaluate(bn, runs[ref])
        for sname, mask in subsets.items():
            dn = stats.paired_bootstrap(ma["ndcg"][mask], mr["ndcg"][mask])
            dr = stats.paired_bootstrap(ma["recall"][mask], mr["recall"][mask])
            mc = stats.mcnemar(ma["hit"][mask] > 0, mr["hit"][mask] > 0)
            lines.append(f"| {a} − {ref} | {sname} | {int(mask.sum())} | {dn.mean_diff:+.4f} [{dn.lo:+.4f}, {dn.hi:+.4f}] | "
                         f"{dn.p_value:.4f} | {dr.mean_diff:+.4f} [{dr.lo:+.4f}, {dr.hi:+.4f}] | {mc.b}/{mc.c}, {mc.p_value:.3g} |")
    return lines


@experiment
def final(emb, split, default_toml="python/fieldrank/data/default_config.toml"):
    """The chosen default against the baselines, product path, with intervals (run once on holdout)."""
    bn, runs = product_runs(emb, split, final_methods(default_toml))
    means = {n: evaluate(bn, t)["ndcg"].mean() for n, t in runs.items()}
    best_single = max(["cosine", "bm25", "bm25 (default's k1/b)"], key=means.get)
    log("\n".join(ci_table(bn, runs, "rrf2", best_single)))
    log("")
    refs = ["rrf2", "bm25", "bm25 (default's k1/b)", "cosine"]
    log("\n".join(paired_table(bn, runs, "default", refs)))



# ----------------------------------------------------------------------------- exploratory experiments (tune)
TUNED_BM25 = BM25Params(k1=0.9, b=0.2)
CHOSEN = tl.TemporalParams(alpha=0.5, gamma=0.5, radius=2, decay=0.5, tau=1.0, delta=1.5)


@experiment
def bm25_grid(emb, split):
    """NDCG@10 of BM25 alone over k1 x b (lucene, stemming, stop words)."""
    bn = bench(emb, split)
    bs = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75]
    log("k1 \\ b " + " ".join(f"{b:>6}" for b in bs))
    for k1 in [0.3, 0.5, 0.7, 0.9, 1.2, 1.5]:
        r = [evaluate(bn, bm25_leg(bm25_scores(emb, split, BM25Params(k1=k1, b=b)), 10))["ndcg"].mean() for b in bs]
        log(f"{k1:<6} " + " ".join(f"{x:.4f}" for x in r))


@experiment
def fusion_variants(emb, split):
    """Rank fusion (weighted RRF, depths) against score fusion (normalised BM25 + cosine)."""
    bn = bench(emb, split)
    log(HEADER)
    for bname, bp in [("spec", BM25Params()), ("k1=.9 b=.2", TUNED_BM25)]:
        S = bm25_scores(emb, split, bp)
        for dc, db in [(10, 10), (20, 20), (50, 50)]:
            C, L = cos_leg(bn, dc), bm25_leg(S, db)
            for wb in [1, 1.5, 2, 3, 4]:
                log(fmt_row(f"[{bname}] rrf cos{dc} x1 + bm25 {db} x{wb}",
                            summary(bn, evaluate(bn, rrf([C, L], [1, wb], bn.nmax)))))
        Sb = np.where(bn.valid, S, np.nan)
        for a in [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]:
            F = a * znorm(Sb, bn.valid) + (1 - a) * znorm(bn.cos, bn.valid)
            log(fmt_row(f"[{bname}] score blend {a}*z(bm25) + {1 - a:.1f}*z(cos)", summary_of_scores(bn, F)))
        for a in [0.5, 0.6, 0.7]:
            F = a * minmax(Sb, bn.valid) + (1 - a) * minmax(bn.cos, bn.valid)
            log(fmt_row(f"[{bname}] score blend {a}*minmax(bm25) + {1 - a:.1f}*minmax(cos)",
                        summary_of_scores(bn, F)))


@experiment
def neighbour_variants(emb, split):
    """How the neighbour support is taken: previous / next / both, max or mean, radius, weight."""
    bn = bench(emb, split)
    S = bm25_scores(emb, split, TUNED_BM25)
    log(HEADER)
    base = tl.TemporalParams(alpha=0.5, gamma=0.0, tau=0.0, delta=0.0)
    B0 = temporal_leg_scores(bn, emb, S, base)
    sess = np.full((bn.B, bn.nmax), -1)
    T = load(emb).turns
    keys = tl.session_keys(T.conv_index, T.session)
    for sel, s, e in _conv_batches(bn):
        sess[np.ix_(sel, np.arange(e - s))] = keys[s:e]

    def shifted(d):
        out = np.zeros_like(B0)
        ok = np.zeros_like(B0, bool)
        if d > 0:
            out[:, :-d], ok[:, :-d] = B0[:, d:], sess[:, d:] == sess[:, :-d]
        else:
            out[:, -d:], ok[:, -d:] = B0[:, :d], sess[:, :d] == sess[:, -d:]
        return np.where(ok & np.isfinite(out), np.maximum(out, 0), 0)

    prev, nxt = shifted(-1), shifted(1)
    log(fmt_row("blend only", summary_of_scores(bn, B0)))
    for g in [0.3, 0.5, 0.7, 1.0]:
        for name, sup in [("previous turn", prev), ("next turn", nxt), ("mean(prev, next)", (prev + nxt) / 2),
                          ("max(prev, next)", np.maximum(prev, nxt))]:
            log(fmt_row(f"gamma={g} {name}", summary_of_scores(bn, B0 + g * sup)))
        log_leg_row(f"gamma={g} max(±1, 0.5·±2)  [the leg, radius 2]", bn, emb, S,
                    tl.TemporalParams(alpha=0.5, gamma=g, radius=2, decay=0.5, tau=0.0, delta=0.0))


@experiment
def temporal_priors(emb, split):
    """The two time priors on top of blend + neighbours; and session-opening turns (not kept)."""
    bn = bench(emb, split)
    S = bm25_scores(emb, split, TUNED_BM25)
    log(HEADER)
    nb = tl.TemporalParams(alpha=0.5, gamma=0.5, radius=2, tau=0.0, delta=0.0)
    F = temporal_leg_scores(bn, emb, S, nb)
    intent = tl.time_intent(list(bn.data.questions.question[bn.rows]))
    log(f"questions with time intent: {intent.sum()} of {bn.B}; temporal category: {(bn.cat == 2).sum()}, "
        f"of them with intent: {(intent & (bn.cat == 2)).sum()}")
    log(fmt_row("blend + neighbours", summary_of_scores(bn, F)))
    pos = np.zeros((bn.B, bn.nmax), int)
    T = bn.data.turns
    turn_pos = np.array([int(x.split(":")[1]) for x in T.dia_id])
    for sel, s, e in _conv_batches(bn):
        pos[np.ix_(sel, np.arange(e - s))] = turn_pos[s:e]
    for v in [0.5, 1.0]:
        opening = np.where(intent[:, None] & (pos <= 2), v, 0.0)
        log(fmt_row(f"+ {v} for session-opening turns (pos<=2) of time questions [not kept]",
                    summary_of_scores(bn, F + opening)))
    for tau in [0.5, 1.0, 1.5]:
        log_leg_row(f"+ time cues tau={tau}", bn, emb, S,
                    tl.TemporalParams(alpha=0.5, gamma=0.5, radius=2, tau=tau, delta=0.0))
    for delta in [0.5, 1.0, 1.5, 2.0, 3.0]:
        log_leg_row(f"+ time cues tau=1 + session dates delta={delta}", bn, emb, S,
                    tl.TemporalParams(alpha=0.5, gamma=0.5, radius=2, tau=1.0, delta=delta))


@experiment
def cfsr_with_leg(emb, split):
    """CFS-R next to the chosen leg: as an RRF leg (dense or union pool) and as a score term."""
    bn = bench(emb, split)
    S = bm25_scores(emb, split, TUNED_BM25)
    d = bn.data
    log(HEADER)
    F = temporal_leg_scores(bn, emb, S, CHOSEN)
    T10 = top_from_scores(F, 10)
    log(fmt_row("chosen leg alone", summary(bn, evaluate(bn, T10))))
    for pd, pl in [(150, 0), (150, 50)]:
        pools = union_pool(bn, S, pd, pl)
        R = cfsr_pool_leg(bn, pools, 50)
        for w in [0.25, 0.5, 1.0]:
            log(fmt_row(f"rrf(leg 10 x1, cfsr P={pd}+{pl}lex 50 x{w})", summary(bn, evaluate(bn, rrf([T10, R], [1, w], bn.nmax)))))
        A = np.zeros((bn.B, bn.nmax))
        for i in range(bn.B):
            ids = pools[i].astype(np.int64)
            res = fr.cfsr_pool(ids, np.ascontiguousarray(d.turn_embeddings[bn.start[i] + ids]),
                               d.question_embeddings[bn.rows[i]], len(ids), w=1.0, sims=bn.cos[i, ids].astype(np.float32))
            A[i, res.ids] = res.scores
        for rho in [0.25, 0.5, 1.0, 2.0]:
            log(fmt_row(f"leg score + {rho}·ã (CFS-R coefficient, P={pd}+{pl}lex)",
                        summary_of_scores(bn, F + rho * A)))


@experiment
def no_timeline(emb, split):
    """What the leg loses without session keys / dates (a retriever built without a timeline)."""
    bn = bench(emb, split)
    S = bm25_scores(emb, split, TUNED_BM25)
    T = load(emb).turns
    cue = tl.time_cues(list(T.embed_text))
    global timeline
    full = timeline(emb)
    variants = {
        "full timeline (sessions, dates, cues)": full,
        "sessions + cues, no dates": tl.Timeline(session=full.session, cue=cue),
        "corpus order as one session + cues (retriever default)": tl.Timeline(session=np.zeros(len(T), np.int64), cue=cue),
        "no neighbours, cues only": tl.Timeline(session=np.arange(len(T), dtype=np.int64), cue=cue),
    }
    log(HEADER)
    saved = timeline
    try:
        for name, tline in variants.items():
            timeline = lambda e, t=tline: t  # noqa: E731
            log_leg_row(name, bn, emb, S, CHOSEN)
    finally:
        timeline = saved


if __name__ == "__main__":
    main()
