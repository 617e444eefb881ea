"""Research script for issue 18 (quality round two): levers on top of the calibrated ``default``.

Reuses the vectorised helpers of ``research_default_stack.py`` (per-conversation blocks, docs/spec.md §6
RRF, NDCG@10 / Recall@10 / NDCG@5) and scores the time-aware leg through
``fieldrank.reference.temporal_scores``, exactly what the retriever runs.

Usage (repository root, dev venv active; tuning split only while searching)::

    python benchmarks/research_round2.py <experiment> --split tune [--emb minilm-l6-v2 ...]

Each experiment prints one row per variant: NDCG@10, Recall@10, NDCG@5, then NDCG@10 per
category, and the paired ΔNDCG@10 against the experiment's reference row with its 95 % bootstrap
interval (2,000 resamples, seed 0).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import research_default_stack as rs  # noqa: E402

from fieldrank import temporal as tl  # noqa: E402
from fieldrank.bm25 import BM25Index, BM25Params  # noqa: E402
from fieldrank.evaluation import locomo, stats  # noqa: E402

CATS = rs.CATS
EXPERIMENTS = {}
#: The shipped default's leg and BM25 parameters before this round.
LEG = tl.TemporalParams(alpha=0.5, gamma=0.5, radius=2, decay=0.5, tau=1.0, delta=1.5)
BM = dict(k1=0.9, b=0.2)


def experiment(fn):
    EXPERIMENTS[fn.__name__] = fn
    return fn


def log(*a):
    print(*a, flush=True)


HEADER = f"{'variant':<62} nd10   rec10  nd5    | " + " ".join(f"{v[:6]:>6}" for v in CATS.values()) + " | Δnd10 [95% CI] vs ref"


def row(bn, name, top, ref=None):
    m = rs.evaluate(bn, top)
    cats = " ".join(f"{m['ndcg'][bn.cat == c].mean():.4f}" for c in CATS)
    delta = ""
    if ref is not None:
        d = stats.paired_bootstrap(m["ndcg"], ref["ndcg"])
        delta = f"{100 * d.mean_diff:+.2f} [{100 * d.lo:+.2f}, {100 * d.hi:+.2f}]"
    log(f"{name:<62} {m['ndcg'].mean():.4f} {m['recall'].mean():.4f} {m['ndcg5'].mean():.4f} | {cats} | {delta}")
    return m


def _question_scores(bn, idx):
    """(B, nmax) scores of each question over its own conversation's turns (-inf past its end)."""
    S = np.full((bn.B, bn.nmax), -np.inf, np.float32)
    queries = [str(q) for q in bn.data.questions.question[bn.rows]]
    for i in range(bn.B):
        s = bn.start[i]
        S[i, : bn.n[i]] = idx.scores(queries[i])[s: s + bn.n[i]]
    return S


@functools.lru_cache(maxsize=None)
def bm25_scores(emb: str, split: str, params: BM25Params, session_key: bool = True) -> np.ndarray:
    """(B, nmax) BM25 scores of an index built with ``params`` (sessions from the LoCoMo timeline)."""
    bn = rs.bench(emb, split)
    d = bn.data
    texts = [str(t) for t in d.turns.embed_text]
    sessions = rs.timeline(emb).session if session_key else None
    idx = _index(tuple(texts), params, None if sessions is None else tuple(sessions.tolist()))
    return _question_scores(bn, idx)


@functools.lru_cache(maxsize=None)
def _index(texts, params, sessions):
    kw = {} if sessions is None else {"sessions": np.asarray(sessions, dtype=np.int64)}
    try:
        return BM25Index(list(texts), params, **kw)
    except TypeError:
        return BM25Index(list(texts), params)


def leg_top(bn, emb, S, params=LEG, k=10):
    return rs.top_from_scores(rs.temporal_leg_scores(bn, emb, S, params), k)


def joined_scores(emb, split, window, self_repeat, params, decay=1.0):
    """BM25 over turns expanded by hand (the research form, before the index option existed)."""
    bn = rs.bench(emb, split)
    d = bn.data
    texts = [str(t) for t in d.turns.embed_text]
    sess = rs.timeline(emb).session
    n = len(texts)
    docs = []
    for i in range(n):
        parts = [texts[i]] * self_repeat
        for dist in range(1, window + 1):
            for j in (i - dist, i + dist):
                if 0 <= j < n and sess[j] == sess[i]:
                    parts.extend([texts[j]] * max(1, round(decay ** (dist - 1) * 2)) if decay != 1.0 else [texts[j]])
        docs.append(" ".join(parts))
    idx = BM25Index(docs, params)
    return _question_scores(bn, idx)


def _expansion_baseline(emb, split):
    """The bench, the BM25 parameters, the unexpanded scores and the printed reference row."""
    bn = rs.bench(emb, split)
    p = BM25Params(**BM)
    S0 = bm25_scores(emb, split, p, False)
    log(HEADER)
    return bn, p, S0, row(bn, "default leg (no expansion)", leg_top(bn, emb, S0))


@experiment
def expansion_by_hand(emb, split):
    """Neighbour-text expansion built by joining texts (before the index option existed)."""
    bn, p, S0, ref = _expansion_baseline(emb, split)
    for window, rep in [(1, 1), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4)]:
        S = joined_scores(emb, split, window, rep, p)
        row(bn, f"join ±{window}, self x{rep}", leg_top(bn, emb, S), ref)
    for window in (1, 2):
        S = joined_scores(emb, split, window, 1, p)
        for beta in (0.5, 1.0):
            row(bn, f"orig + {beta}·(join ±{window}, self x1)", leg_top(bn, emb, S0 + beta * S), ref)


@experiment
def expansion_more(emb, split):
    """The summed form over windows, weights, BM25 k1/b of the context index, context without self."""
    bn, p, S0, ref = _expansion_baseline(emb, split)
    for window in (2, 3, 4):
        S = joined_scores(emb, split, window, 1, p)
        for beta in ((0.75, 1.0, 1.5) if window == 2 else (1.0,)):
            row(bn, f"orig + {beta}·(join ±{window}, self x1)", leg_top(bn, emb, S0 + beta * S), ref)
    for window in (2, 3):
        S = joined_scores(emb, split, window, 0, p)
        row(bn, f"orig + 1.0·(neighbours ±{window} only)", leg_top(bn, emb, S0 + S), ref)
    for k1, b in ((1.2, 0.4), (1.5, 0.75), (0.9, 0.5)):
        S = joined_scores(emb, split, 2, 1, BM25Params(k1=k1, b=b))
        row(bn, f"orig + 1.0·(join ±2, context k1={k1} b={b})", leg_top(bn, emb, S0 + S), ref)
    for window, rep in [(3, 4), (3, 6), (2, 6)]:
        S = joined_scores(emb, split, window, rep, p)
        row(bn, f"join ±{window}, self x{rep}", leg_top(bn, emb, S), ref)


# ----------------------------------------------------------------------------- time expressions
_RELATIVE = [  # (pattern, days back from the session date) for turns' relative time words
    (r"\byesterday\b|\blast night\b", 1), (r"\blast (?:week|weekend)\b", 7), (r"\blast month\b", 30),
    (r"\blast year\b", 365), (r"\b(?:a few|couple of) days ago\b", 3),
]
_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
        "nine": 9, "ten": 10}
_UNIT = {"day": 1, "week": 7, "month": 30, "year": 365}


def event_dates(texts, session_time):
    """Session date minus the offset a turn's relative time words give (NaT: none)."""
    import re
    out = np.full(len(texts), np.datetime64("NaT"), dtype="datetime64[D]")
    ago = re.compile(r"\b(a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+(day|week|month|year)s?\s+ago\b",
                     re.IGNORECASE)
    for i, t in enumerate(texts):
        days = None
        m = ago.search(t)
        if m:
            n = _NUM.get(m.group(1).lower()) or int(m.group(1)) if not m.group(1).isdigit() else int(m.group(1))
            days = n * _UNIT[m.group(2).lower()]
        else:
            for pat, back in _RELATIVE:
                if re.search(pat, t, re.IGNORECASE):
                    days = back
                    break
        if days is not None:
            out[i] = session_time[i] - np.timedelta64(days, "D")
    return out


#: ``git show 3bdd65a:python/fieldrank/temporal.py > /tmp/temporal_before.py`` (the regexes before this round).
BEFORE = "/tmp/temporal_before.py"


def _window_fn(name):
    """question, years -> periods, for one parser."""
    if name == "regex (this round)":
        return tl.date_windows
    if name == "regex (before)":
        import importlib.util
        spec = importlib.util.spec_from_file_location("temporal_before", BEFORE,
                                                      submodule_search_locations=None)
        mod = importlib.util.module_from_spec(spec)
        mod.__package__ = "fieldrank"
        sys.modules["temporal_before"] = mod
        spec.loader.exec_module(mod)
        return mod.date_windows
    if name == "dateparser":
        import calendar
        import re
        import warnings

        from dateparser.date import DateDataParser
        from dateparser.search import search_dates
        warnings.filterwarnings("ignore")
        ddp = DateDataParser(languages=["en"])
        year_re = re.compile(r"\b(?:19|20)\d\d\b")

        def fn(q, years):
            found = search_dates(q, languages=["en"]) or []
            out = []
            for text, when in found:
                period = ddp.get_date_data(text).period or "day"
                ys = [when.year] if year_re.search(text) else list(years)
                for y in ys:
                    if period == "year":
                        out.append((np.datetime64(f"{y:04d}-01-01"), np.datetime64(f"{y:04d}-12-31")))
                    elif period == "month":
                        st = np.datetime64(f"{y:04d}-{when.month:02d}-01")
                        out.append((st, st + np.timedelta64(calendar.monthrange(y, when.month)[1] - 1, "D")))
                    elif period in ("day", "time"):
                        try:
                            d = np.datetime64(f"{y:04d}-{when.month:02d}-{when.day:02d}")
                        except ValueError:
                            continue
                        out.append((d, d))
            return out
        return fn
    raise KeyError(name)


@experiment
def time_parsers(emb, split):
    """Named periods by the old regexes, the new ones and dateparser; turns' relative dates."""
    bn = rs.bench(emb, split)
    d = bn.data
    p = BM25Params(**BM)
    S = bm25_scores(emb, split, p, False)
    tline = rs.timeline(emb)
    qtexts = [str(q) for q in d.questions.question[bn.rows]]
    years = tuple(range(int(tline.time.astype("datetime64[Y]").astype(int).min()) + 1970,
                        int(tline.time.astype("datetime64[Y]").astype(int).max()) + 1971))
    log(HEADER)
    ref = None
    no_delta = tl.TemporalParams(**{**LEG.to_dict(), "delta": 0.0})
    base = rs.temporal_leg_scores(bn, emb, S, no_delta)
    ev = event_dates([str(t) for t in d.turns.embed_text], tline.time)
    for name in ("regex (before)", "regex (this round)", "dateparser"):
        fn = _window_fn(name)
        t0 = time.perf_counter()
        wins = [fn(q, years) for q in qtexts]
        ms = (time.perf_counter() - t0) / len(qtexts) * 1000
        for use_event in ((False, True) if name == "regex (this round)" else (False,)):
            F = base.copy()
            for i, periods in enumerate(wins):
                if not periods:
                    continue
                s0, n = bn.start[i], bn.n[i]
                t = tline.time[s0: s0 + n]
                e = ev[s0: s0 + n]
                hit = np.zeros(n, bool)
                for a, b in periods:
                    lo, hi = a - LEG.before_days * tl.DAY, b + LEG.after_days * tl.DAY
                    hit |= (t >= lo) & (t <= hi)
                    if use_event:
                        hit |= (e >= a - tl.DAY) & (e <= b + tl.DAY)  # NaT compares False
                F[i, :n] += LEG.delta * hit
            label = f"{name}{' + turn event dates' if use_event else ''}: {sum(map(bool, wins))} dated q, {ms:.3f} ms/q"
            m = row(bn, label, rs.top_from_scores(F, 10), ref)
            ref = ref or m


@experiment
def time_cue_parsers(emb, split):
    """Turns' time cues: the regular expression against 'dateparser finds a date in the turn'."""
    import warnings

    from dateparser.search import search_dates
    warnings.filterwarnings("ignore")
    bn = rs.bench(emb, split)
    d = bn.data
    S = bm25_scores(emb, split, BM25Params(**BM), False)
    full = rs.timeline(emb)
    texts = [str(t) for t in d.turns.embed_text]
    log(HEADER)
    ref = row(bn, f"regex cues: {int(full.cue.sum())} of {len(texts)} turns", leg_top(bn, emb, S))
    t0 = time.perf_counter()
    cue = np.array([bool(search_dates(t, languages=["en"])) for t in texts])
    ms = (time.perf_counter() - t0) / len(texts) * 1000
    saved = rs.timeline
    try:
        rs.timeline = lambda e, t=tl.Timeline(session=full.session, time=full.time, cue=cue): t
        row(bn, f"dateparser cues: {int(cue.sum())} turns, {ms:.2f} ms/turn", leg_top(bn, emb, S), ref)
        both = cue | full.cue
        rs.timeline = lambda e, t=tl.Timeline(session=full.session, time=full.time, cue=both): t
        row(bn, f"regex or dateparser cues: {int(both.sum())} turns", leg_top(bn, emb, S), ref)
    finally:
        rs.timeline = saved


EXPANDED = dict(BM, context_window=2, context_weight=1.0)


def field_scores(emb, split, field, params, query_fn=None):
    """BM25 over another turn field (``text``: without the speaker prefix), sessions from the timeline."""
    bn = rs.bench(emb, split)
    d = bn.data
    idx = BM25Index([str(t) for t in getattr(d.turns, field)], params, sessions=rs.timeline(emb))
    S = np.full((bn.B, bn.nmax), -np.inf, np.float32)
    queries = [str(q) for q in d.questions.question[bn.rows]]
    for i in range(bn.B):
        s = bn.start[i]
        q = queries[i] if query_fn is None else query_fn(queries[i], i)
        S[i, : bn.n[i]] = idx.scores(q)[s: s + bn.n[i]]
    return S


@experiment
def expansion_index(emb, split):
    """The index option (BM25Params.context_window) reproduces the hand-built sum; k1/b and variants."""
    bn = rs.bench(emb, split)
    log(HEADER)
    ref = row(bn, "default leg (no expansion)", leg_top(bn, emb, bm25_scores(emb, split, BM25Params(**BM), False)))
    for window, weight in [(1, 1.0), (2, 0.5), (2, 1.0), (3, 1.0)]:
        p = BM25Params(**{**BM, "context_window": window, "context_weight": weight})
        row(bn, f"context_window={window} context_weight={weight}", leg_top(bn, emb, bm25_scores(emb, split, p)), ref)
    for k1, b in [(0.5, 0.1), (1.2, 0.4), (1.5, 0.75), (0.9, 0.0)]:
        p = BM25Params(k1=k1, b=b, context_window=2)
        row(bn, f"  window 2, k1={k1} b={b}", leg_top(bn, emb, bm25_scores(emb, split, p)), ref)
    for method in ("robertson", "atire", "bm25l", "bm25+"):
        p = BM25Params(**{**EXPANDED, "method": method})
        row(bn, f"  window 2, method={method}", leg_top(bn, emb, bm25_scores(emb, split, p)), ref)


@experiment
def levers(emb, split):
    """Training-free levers on top of the expanded BM25 (window 2): fields, speakers, radius, query terms."""
    import re
    bn = rs.bench(emb, split)
    d = bn.data
    p = BM25Params(**EXPANDED)
    S = bm25_scores(emb, split, p)
    log(HEADER)
    ref = row(bn, "default leg + expansion (window 2)", leg_top(bn, emb, S))
    # Speaker-aware: index the text without the "Name: " prefix; or a prior for the named speaker.
    S_text = field_scores(emb, split, "text", p)
    row(bn, "BM25 over text without speaker prefix", leg_top(bn, emb, S_text), ref)
    speakers = np.array([str(x) for x in d.turns.speaker])
    qtexts = [str(q) for q in d.questions.question[bn.rows]]
    named = np.zeros((bn.B, bn.nmax), bool)
    for i, q in enumerate(qtexts):
        s0, n = bn.start[i], bn.n[i]
        names = {w for w in re.findall(r"[A-Z][a-z]+", q)}
        named[i, :n] = np.isin(speakers[s0: s0 + n], list(names))
    F = rs.temporal_leg_scores(bn, emb, S, LEG)
    for sigma in (0.1, 0.25, 0.5):
        row(bn, f"+ {sigma} for turns spoken by a speaker the question names", rs.top_from_scores(F + sigma * named, 10), ref)
    # Wider neighbour windows of the leg's support.
    for radius, decay in [(3, 0.5), (1, 0.5), (2, 0.75)]:
        q = tl.TemporalParams(**{**LEG.to_dict(), "radius": radius, "decay": decay})
        row(bn, f"neighbour support radius={radius} decay={decay}", leg_top(bn, emb, S, q), ref)
    for gamma in (0.3, 0.4, 0.6):
        q = tl.TemporalParams(**{**LEG.to_dict(), "gamma": gamma})
        row(bn, f"neighbour support gamma={gamma}", leg_top(bn, emb, S, q), ref)
    for alpha in (0.4, 0.6, 0.7):
        q = tl.TemporalParams(**{**LEG.to_dict(), "alpha": alpha})
        row(bn, f"alpha={alpha}", leg_top(bn, emb, S, q), ref)
    # Query term weighting: drop the question's speaker names from the BM25 query (every turn of
    # that speaker carries the name), or repeat the rarest query term.
    drop = re.compile(r"\b(?:" + "|".join(sorted(set(speakers))) + r")(?:'s)?\b")
    S_drop = field_scores(emb, split, "embed_text", p, lambda q, i: drop.sub(" ", q))
    row(bn, "BM25 query without speaker names", leg_top(bn, emb, S_drop), ref)


@experiment
def per_type(emb, split):
    """Per-question-type weights: alpha / gamma by the question's wh-word (fit on tune, both sets)."""
    import re
    bn = rs.bench(emb, split)
    d = bn.data
    S = bm25_scores(emb, split, BM25Params(**EXPANDED))
    qtexts = [str(q).lower() for q in d.questions.question[bn.rows]]
    kind = np.array([next((w for w in ("when", "where", "who", "why", "how", "which", "what") if re.search(rf"\b{w}\b", q)),
                          "other") for q in qtexts])
    log("question types: " + ", ".join(f"{k} {int((kind == k).sum())}" for k in np.unique(kind)))
    log(HEADER)
    base = rs.temporal_leg_scores(bn, emb, S, LEG)
    ref = row(bn, "default leg + expansion (one alpha, gamma)", rs.top_from_scores(base, 10))
    for name, change in [("alpha", (0.4, 0.6)), ("gamma", (0.3, 0.7))]:
        for value in change:
            alt = rs.temporal_leg_scores(bn, emb, S, tl.TemporalParams(**{**LEG.to_dict(), name: value}))
            for k in ("what", "when", "how", "where"):
                F = np.where((kind == k)[:, None], alt, base)
                row(bn, f"{name}={value} for '{k}' questions only", rs.top_from_scores(F, 10), ref)


@experiment
def dense_context(emb, split):
    """The dense analogue of the expansion: cosine to the mean of a turn and its neighbours' vectors."""
    bn = rs.bench(emb, split)
    d = bn.data
    S = bm25_scores(emb, split, BM25Params(**EXPANDED))
    sess = rs.timeline(emb).session
    E = d.turn_embeddings.astype(np.float64)
    log(HEADER)
    ref = row(bn, "default leg + expansion (window 2)", leg_top(bn, emb, S))
    saved = bn.cos
    for window in (1, 2):
        C = E.copy()
        n = len(E)
        for dist in range(1, window + 1):
            for off in (dist, -dist):
                j = np.arange(n) + off
                ok = (j >= 0) & (j < n)
                ok[ok] &= sess[j[ok]] == sess[np.flatnonzero(ok)]
                C[ok] += E[j[ok]]
        C /= np.linalg.norm(C, axis=1, keepdims=True)
        cos_ctx = np.full_like(bn.cos, -np.inf)
        for sel, s0, e0 in rs._conv_batches(bn):
            cos_ctx[np.ix_(sel, np.arange(e0 - s0))] = d.question_embeddings[bn.rows[sel]] @ C[s0:e0].T.astype(np.float32)
        for beta in (0.5, 1.0):
            try:
                bn.cos = np.where(np.isfinite(saved), saved + beta * cos_ctx, -np.inf).astype(np.float32)
                row(bn, f"dense: cos + {beta}·cos(mean of ±{window} vectors)", leg_top(bn, emb, S), ref)
            finally:
                bn.cos = saved


@experiment
def operators(emb, split):
    """CFS-R / CFS / MMR as rerankers of the default leg's top-P (fused score as relevance), alone and in RRF."""
    import fieldrank as fr
    bn = rs.bench(emb, split)
    d = bn.data
    S = bm25_scores(emb, split, BM25Params(**EXPANDED))
    F = rs.temporal_leg_scores(bn, emb, S, LEG)
    top10 = rs.top_from_scores(F, 10)
    log(HEADER)
    ref = row(bn, "default leg + expansion (window 2)", top10)
    P = 100
    pool = rs.top_from_scores(F, P)
    runs = {"cfsr": np.full((bn.B, 50), -1), "cfs": np.full((bn.B, 50), -1), "mmr": np.full((bn.B, 10), -1)}
    for i in range(bn.B):
        ids = pool[i][pool[i] >= 0].astype(np.int64)
        f = F[i, ids]
        rel = ((f - f.min()) / (f.max() - f.min() or 1.0)).astype(np.float32)  # fused score in [0, 1]
        C = np.ascontiguousarray(d.turn_embeddings[bn.start[i] + ids])
        q = d.question_embeddings[bn.rows[i]]
        for name, res in (("cfsr", fr.cfsr_pool(ids, C, q, 50, w=0.9, sims=rel)),
                          ("cfs", fr.cfs_pool(ids, C, q, 50, sims=rel)),
                          ("mmr", fr.mmr_pool(ids, C, q, 10, mu=0.5, sims=rel))):
            runs[name][i, : len(res.ids)] = res.ids
    for name, leg in runs.items():
        row(bn, f"{name} over the leg's top-{P} alone", leg[:, :10], ref)
        for w_leg in (2.0, 3.0):
            row(bn, f"  rrf(leg 10 x{w_leg}, {name} x1)", rs.rrf([top10, leg], [w_leg, 1.0], bn.nmax), ref)


# ----------------------------------------------------------------------------- final tables and the report
#: The shipped ``default`` before this round (python/fieldrank/data/default_config.toml at 3bdd65a).
DEFAULT_BEFORE = {"bm25": BM, "leg": LEG.to_dict()}
DEFAULT_TOML = "python/fieldrank/data/default_config.toml"


def final_methods(default_toml: str = DEFAULT_TOML) -> dict:
    from fieldrank.config import RetrieverConfig, TemporalLeg, preset

    default = RetrieverConfig.load_toml(default_toml).replace(name="default")
    leg = next(x for x in default.legs if isinstance(x, TemporalLeg))
    bm = default.bm25

    def with_leg(**changes):
        return default.replace(legs=(TemporalLeg(depth=leg.depth, **{**leg.params().to_dict(), **changes}),))

    before = RetrieverConfig(legs=(TemporalLeg(depth=10, **DEFAULT_BEFORE["leg"]),),
                             bm25=BM25Params(**DEFAULT_BEFORE["bm25"]), name="default_before")
    return {
        "cosine": preset("cosine"),
        "bm25": preset("bm25"),
        "rrf2": preset("rrf2"),
        "rrf_cfsr_locked": preset("rrf_cfsr_locked"),
        "default before (issue 8)": before,
        "without expansion (context_window 0)": default.replace(bm25=BM25Params(**{**bm.to_dict(), "context_window": 0})),
        "without neighbour support (gamma 0)": with_leg(gamma=0.0),
        "without time cues (tau 0)": with_leg(tau=0.0),
        "without session dates (delta 0)": with_leg(delta=0.0),
        "with SPEC BM25 k1 1.5, b 0.75": default.replace(bm25=BM25Params(**{**bm.to_dict(), "k1": 1.5, "b": 0.75})),
        "default": default,
    }


def _md_method_table(bn, runs) -> list[str]:
    lines = ["| method | NDCG@10 [95% CI] | Recall@10 [95% CI] | NDCG@5 | " + " | ".join(CATS.values()) + " |",
             "|---|---|---|---|" + "---|" * len(CATS)]
    for name, top in runs.items():
        m = rs.evaluate(bn, top)
        nd, rc = stats.bootstrap_ci(m["ndcg"]), stats.bootstrap_ci(m["recall"])
        cats = " | ".join(f"{m['ndcg'][bn.cat == c].mean():.4f}" for c in CATS)
        lines.append(f"| {name} | {nd.mean:.4f} [{nd.lo:.4f}, {nd.hi:.4f}] | {rc.mean:.4f} [{rc.lo:.4f}, {rc.hi:.4f}] | "
                     f"{m['ndcg5'].mean():.4f} | {cats} |")
    return lines


def _md_paired(bn, runs, refs) -> list[str]:
    ma = rs.evaluate(bn, runs["default"])
    lines = ["| default − … | ΔNDCG@10 [95% CI] (pp) | ΔRecall@10 (pp) | ΔNDCG@5 (pp) | "
             + " | ".join(f"Δ {v}" for v in CATS.values()) + " |", "|---|---|---|---|" + "---|" * len(CATS)]
    for ref in refs:
        mr = rs.evaluate(bn, runs[ref])
        dn = stats.paired_bootstrap(ma["ndcg"], mr["ndcg"])
        dr = stats.paired_bootstrap(ma["recall"], mr["recall"])
        d5 = stats.paired_bootstrap(ma["ndcg5"], mr["ndcg5"])
        cats = []
        for c in CATS:
            dc = stats.paired_bootstrap(ma["ndcg"][bn.cat == c], mr["ndcg"][bn.cat == c])
            cats.append(f"{100 * dc.mean_diff:+.1f} [{100 * dc.lo:+.1f}, {100 * dc.hi:+.1f}]")
        lines.append(f"| {ref} | {100 * dn.mean_diff:+.2f} [{100 * dn.lo:+.2f}, {100 * dn.hi:+.2f}] | "
                     f"{100 * dr.mean_diff:+.2f} [{100 * dr.lo:+.2f}, {100 * dr.hi:+.2f}] | "
                     f"{100 * d5.mean_diff:+.2f} [{100 * d5.lo:+.2f}, {100 * d5.hi:+.2f}] | " + " | ".join(cats) + " |")
    return lines


def final_tables(emb, split) -> tuple[list[str], dict]:
    """Markdown tables of the product path (HybridRetriever.search_batch per conversation) and the target figures."""
    bn, runs = rs.product_runs(emb, split, final_methods())
    ablations = [n for n in runs if n.startswith(("without", "with SPEC"))]
    lines = _md_method_table(bn, runs) + [""] + _md_paired(bn, runs, ["default before (issue 8)", "rrf2", *ablations])
    m, mb = rs.evaluate(bn, runs["default"]), rs.evaluate(bn, runs["default before (issue 8)"])
    d = stats.paired_bootstrap(m["ndcg"], mb["ndcg"])
    cat_deltas = {CATS[c]: float(m["ndcg"][bn.cat == c].mean() - mb["ndcg"][bn.cat == c].mean()) for c in CATS}
    earn = {}
    for name in ablations:
        da = stats.paired_bootstrap(m["ndcg"], rs.evaluate(bn, runs[name])["ndcg"])
        earn[name] = (da.mean_diff, da.lo, da.hi)
    return lines, {"ndcg": float(m["ndcg"].mean()), "recall": float(m["recall"].mean()),
                   "delta": (d.mean_diff, d.lo, d.hi), "cats": cat_deltas, "earn": earn}


@experiment
def final(emb, split):
    """The chosen default against the baselines and its ablations, product path (holdout: run once)."""
    lines, _ = final_tables(emb, split)
    log("\n".join(lines))


def bm25_latency() -> list[str]:
    """Median BM25 ``scores`` time per LoCoMo question, plain against expanded (same run, interleaved)."""
    from fieldrank.config import RetrieverConfig
    d = rs.load("minilm-l6-v2")
    texts = [str(t) for t in d.turns.embed_text]
    shipped = RetrieverConfig.load_toml(DEFAULT_TOML).bm25
    indexes = {"without expansion": BM25Index(texts, BM25Params(**{**shipped.to_dict(), "context_window": 0})),
               "shipped (expansion)": BM25Index(texts, shipped, sessions=rs.timeline("minilm-l6-v2"))}
    queries = [str(q) for q in d.questions.question[:400]]
    times = {n: [] for n in indexes}
    for q in queries:
        for name, idx in indexes.items():
            t0 = time.perf_counter()
            idx.scores(q)
            times[name].append(time.perf_counter() - t0)
    nnz = {n: int(np.asarray(i._retriever.scores["data"]).size) for n, i in indexes.items()}
    return [f"| {n} | {1e3 * float(np.median(t)):.3f} ms | {nnz[n]:,} |" for n, t in times.items()]


@experiment
def latency(emb, split):
    """Median HybridRetriever.search time, shipped default against the default before, interleaved."""
    from fieldrank.config import RetrieverConfig, TemporalLeg
    from fieldrank.hybrid import HybridRetriever
    d = rs.load(emb)
    new = HybridRetriever([str(t) for t in d.turns.embed_text], d.turn_embeddings, "default",
                          timeline=locomo.locomo_timeline(d))
    before = new.with_config(RetrieverConfig(legs=(TemporalLeg(depth=10, **DEFAULT_BEFORE["leg"]),),
                                             bm25=BM25Params(**DEFAULT_BEFORE["bm25"])))
    Q = d.questions
    for label, per_conv in (("conversation subset", True), ("all turns", False)):
        times = {"shipped default": [], "default before": []}
        for i in range(300 if per_conv else 200):
            s0, e0 = d.conv_ranges[int(Q.conv_index[i])]
            sub = np.arange(s0, e0) if per_conv else None
            for name, R in (("shipped default", new), ("default before", before)):
                t0 = time.perf_counter()
                R.search(str(Q.question[i]), d.question_embeddings[i], subset=sub)
                times[name].append(time.perf_counter() - t0)
        log(", ".join(f"{n} {1e3 * float(np.median(v)):.3f} ms" for n, v in times.items()) + f" (median, {label})")


REPORT_EXPERIMENTS = ("expansion_by_hand", "expansion_more", "expansion_index", "levers", "per_type", "dense_context",
                      "operators", "time_parsers", "time_cue_parsers")


def write_report(out: str, sections: dict) -> None:
    Path(out).write_text(REPORT_TEMPLATE.format(**sections), encoding="utf-8")


def _captured(fn, *args) -> str:
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args)
    return buf.getvalue().rstrip()


def _pp(x) -> str:
    return f"{100 * x[0]:+.2f} [{100 * x[1]:+.2f}, {100 * x[2]:+.2f}]"


def report(out: str, holdout: bool) -> None:
    """Every tune experiment, then the final tables on tune and (once) on holdout, into one markdown file."""
    import subprocess
    if not Path(BEFORE).exists():
        Path(BEFORE).write_text(subprocess.run(["git", "show", "3bdd65a:python/fieldrank/temporal.py"], check=True,
                                               capture_output=True, text=True).stdout, encoding="utf-8")
    t0 = time.time()
    research = []
    for name in REPORT_EXPERIMENTS:
        for emb in rs.EMBEDDINGS:
            research.append(f"#### `{name}` — {emb}\n\n{EXPERIMENTS[name].__doc__.strip()}\n\n```text\n"
                            f"{_captured(EXPERIMENTS[name], emb, 'tune')}\n```\n")
    finals, figures = [], {}
    for split in (("tune", "holdout") if holdout else ("tune",)):
        for emb in rs.EMBEDDINGS:
            lines, figures[(split, emb)] = final_tables(emb, split)
            finals.append(f"#### {split} — {emb}\n\n" + "\n".join(lines) + "\n")
    split = "holdout" if holdout else "tune"
    targets = ["| target | " + " | ".join(rs.EMBEDDINGS) + " |", "|---|---|---|"]
    goal = {"minilm-l6-v2": (0.577, 0.78), "mpnet-base-v2": (0.602, 0.80)}

    def cell(fn):
        return " | ".join(fn(figures[(split, e)], e) for e in rs.EMBEDDINGS)

    targets.append("| NDCG@10 ≥ 0.577 / 0.602 | " + cell(
        lambda f, e: f"{f['ndcg']:.4f} ({'met' if f['ndcg'] >= goal[e][0] else 'missed'})") + " |")
    targets.append("| ΔNDCG@10 over the default before, paired CI above 0 (pp) | " + cell(
        lambda f, e: f"{_pp(f['delta'])} ({'met' if f['delta'][1] > 0 else 'missed'})") + " |")
    targets.append("| ... and ≥ +2 pt | " + cell(
        lambda f, e: "met" if f["delta"][0] >= 0.02 else f"missed ({100 * f['delta'][0]:+.2f})") + " |")
    targets.append("| Recall@10 ≥ 0.78 / 0.80 | " + cell(
        lambda f, e: f"{f['recall']:.4f} ({'met' if f['recall'] >= goal[e][1] else 'missed'})") + " |")
    targets.append("| no category −1 pt vs the default before (worst, pp) | " + cell(
        lambda f, e: (lambda k: f"{k} {100 * f['cats'][k]:+.2f} ({'met' if f['cats'][k] > -0.01 else 'missed'})")(
            min(f["cats"], key=f["cats"].get))) + " |")
    for name in figures[(split, rs.EMBEDDINGS[0])]["earn"]:
        targets.append(f"| component earns ≥ +1 pt, CI above 0: default − ({name}) | " + cell(
            lambda f, e, n=name: f"{_pp(f['earn'][n])} ({'met' if f['earn'][n][0] >= 0.01 and f['earn'][n][1] > 0 else 'missed'})")
            + " |")
    write_report(out, {
        "split": split, "targets": "\n".join(targets), "finals": "\n".join(finals), "research": "\n".join(research),
        "latency": "\n".join(bm25_latency()), "seconds": f"{time.time() - t0:.0f}",
        "config": Path(DEFAULT_TOML).read_text(encoding="utf-8").strip()})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", choices=sorted(EXPERIMENTS) + ["report"])
    ap.add_argument("--split", default="tune", choices=["tune", "holdout", "all"])
    ap.add_argument("--emb", nargs="*", default=list(rs.EMBEDDINGS))
    ap.add_argument("--out", default="docs/results/quality_round2.md", help="report: the markdown file to write")
    ap.add_argument("--holdout", action="store_true", help="report: include the holdout (the one look)")
    a = ap.parse_args(argv)
    if a.experiment == "report":
        report(a.out, a.holdout)
        return
    for emb in a.emb:
        t = time.time()
        log(f"\n## {a.experiment} — {emb} — split {a.split}")
        EXPERIMENTS[a.experiment](emb, a.split)
        log(f"({time.time() - t:.1f}s)")


REPORT_TEMPLATE = """\
# Quality round two (issue 18): neighbour-text expansion, time expressions, the operators

Generated by `python benchmarks/research_round2.py report --holdout --out docs/results/quality_round2.md`
({seconds} s on 2 cores, dev venv with `dateparser` and `ctparse` installed for the comparison; CPU only).
Do not edit by hand.

**Protocol.** LoCoMo turn retrieval, each question ranked against its own conversation; NDCG@10
(binary relevance over evidence turns), Recall@10, NDCG@5, NDCG@10 per category. Intervals: 95 %
percentile bootstrap, 2,000 resamples, seed 0; Δ are paired (bootstrap of the per-question
difference), in percentage points. **Everything was searched and fitted on the tuning split
(conversations 0–4, 997 questions)**; the holdout (conversations 5–9, 985 questions) is evaluated
once, for the chosen configuration, its ablations and the baselines, with nothing changed after.
The final tables run every method through `HybridRetriever.search_batch`, one batch per
conversation, with the LoCoMo timeline (the product path).

## Targets ({split})

{targets}

## The shipped default

`python/fieldrank/data/default_config.toml`, written by `fieldrank calibrate --embeddings
minilm-l6-v2 mpnet-base-v2 --split tune --out python/fieldrank/data/default_config.toml` (the grid
now includes BM25's neighbour-text expansion: off, window 2 × 0.5, window 2 × 1.0):

```toml
{config}
```

New against the default before: `[bm25] context_window = 2, context_weight = 1.0` (every turn is
also scored as the text of itself and its same-session neighbours ±1, ±2, and that score is added to
its own BM25 score), and γ 0.3 instead of 0.5 (the neighbour support has less left to do; 0.5 is
within 0.01 pt on tune).

## Final tables (product path)

{finals}

## BM25 query cost (LoCoMo, 5,882 turns, 400 questions, median of `BM25Index.scores`)

| index | median per query | stored non-zeros |
|---|---|---|
{latency}

## What was measured on tune (research tables)

Columns: NDCG@10, Recall@10, NDCG@5, NDCG@10 per category (multi-hop, temporal, open-domain,
single-hop, adversarial), and the paired ΔNDCG@10 against the first row of the table (pp, 95 % CI).

{research}
"""


if __name__ == "__main__":
    main()
