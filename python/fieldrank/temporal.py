"""The time-aware leg: fused relevance, propagated to session neighbours, with time priors.

CFS-R reconstructs semantics, not chronology; the write-ups name temporal questions as its
weakest spot. This leg uses what a conversation log knows about time without asking a
language model to read dates:

1. **Base relevance** ``b_i = α·z(lex)_i + (1 − α)·z(cos)_i``: the lexical (BM25) and dense
   (cosine) scores of each candidate row, each z-normalised over the rows the query may
   see (its ``subset``; population mean and standard deviation; a constant column
   contributes 0). This is score fusion, not rank fusion: on LoCoMo with the local
   embedders, BM25 is the stronger signal, and score fusion keeps how *much* stronger a
   candidate is, which rank fusion throws away.
2. **Temporal neighbours** ``n_i = max_{1 ≤ |d| ≤ h, same session} decay^{|d|−1}·max(b_{i+d}, 0)``:
   evidence in a dialogue spans adjacent turns (a question and its answer, an announcement
   and the details), so a turn next to a strong candidate of the same session is itself
   likely to matter. Neighbours are rows ``i ± d`` of ``E`` (document order = chronological
   order) that share the session key and are inside ``subset``.
3. **Time-intent prior** ``c_i``: for a question that asks about time (``when``, ``how
   long``, ``what year`` … — :func:`time_intent`, a regular expression), turns whose text
   anchors an event in time (``yesterday``, ``last week``, ``two years ago``, a weekday, a
   month, a year — :func:`time_cues`) get ``τ``.
4. **Session-date prior** ``t_i``: when the question names a date, month or year
   (:func:`date_windows`, regular expressions only), turns whose *session date* falls in
   ``[start − before_days, end + after_days]`` of a named period get ``δ``.

Score ``s_i = b_i + γ·n_i + τ·[intent]·c_i + δ·t_i``; the leg ranks the subset by ``s``
(higher first, ties to the lower row) and returns the top ``k``. With ``γ = τ = δ = 0`` it
is the plain score fusion of the two signals.

The scoring runs in C++ (``cpp/include/fieldrank/temporal.hpp``): one read of each row per block
of queries, cosines summed in float64, z-normalisation with numpy's pairwise sums, then the
neighbour and prior terms and the top-k, per query on its own thread. Scores are float64 and a
query's scores do not depend on the batch or the thread count, so a batch equals its queries one
by one, exactly. A :class:`fieldrank.HybridRetriever` searching every document of a large corpus
passes the corpus moments instead (``run_leg(moments=)``): the cosines' mean and standard
deviation then come from them, fp32 cosines screen the rows and only those near the k-th score
are re-scored in double (docs/design.md, "Temporal leg"); this function keeps the pairwise path. :func:`fieldrank.reference.temporal_batch` is the same formula in numpy (the
oracle of the parity tests); only the question texts are read in Python (the regular expressions
below).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import asdict, dataclass
from typing import Any, Optional, Sequence

import numpy as np

from . import _kernels
from . import _param_tables as _tables
from . import _validation as _v
from ._results import Ranking

_D = _kernels.DEFAULTS  # the native core's defaults table: the leg's default formula comes from it

__all__ = [
    "TemporalParams",
    "Timeline",
    "date_windows",
    "question_features",
    "session_keys",
    "temporal",
    "temporal_batch",
    "time_cues",
    "time_intent",
]

DAY = np.timedelta64(1, "D")

# --------------------------------------------------------------------------- text rules
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_MONTH_RE = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_WEEKDAYS = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"

#: A turn that anchors something in time: relative expressions, weekdays, months, years.
TIME_CUE_PATTERN = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|"
    r"(?:last|next|this|past|coming|previous)\s+(?:\w+\s+)?(?:night|morning|evening|weekend|week|month|year|"
    r"summer|winter|spring|fall|autumn|time|" + _WEEKDAYS[3:-1] + r")|"
    + _WEEKDAYS + r"s?|"
    r"(?:january|february|march|april|june|july|august|september|october|november|december)|"
    r"(?:19|20)\d\d|"
    r"(?:a|one|two|three|four|five|six|seven|eight|nine|ten|few|couple\s+of|\d+)\s+(?:days?|weeks?|months?|years?)|"
    r"since|back\s+in|when\s+i\s+was)\b",
    re.IGNORECASE,
)

#: A question that asks about time.
TIME_INTENT_PATTERN = re.compile(
    r"^\s*(?:when|since\s+when|how\s+long|how\s+old)\b|"
    r"\b(?:what|which|in\s+which)\s+(?:year|month|date|day|week|time|season)\b|"
    r"\bhow\s+many\s+(?:years|months|weeks|days)\b",
    re.IGNORECASE,
)

_MONTH_WORD = _MONTH_RE + r"\.?"
#: Every period pattern below needs a digit or a month name: a question without either names none.
_MAY_NAME_A_PERIOD = re.compile(r"\d|" + _MONTH_RE, re.IGNORECASE)
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR_GROUP = r"((?:19|20)\d\d)"
#: "19 January 2024", "17th of January, 2024", "the 31 of December 2023", "3rd of March".
_DAY_FIRST = re.compile(r"\b(?:the\s+)?" + _ORDINAL + r"\s+(?:of\s+)?(" + _MONTH_WORD + r")(?![a-z])(?:,?\s*" + _YEAR_GROUP
                        + r"\b)?", re.IGNORECASE)
#: "May 8, 2023", "January 17th 2024", "March the 3rd".
_MONTH_FIRST = re.compile(r"\b(" + _MONTH_WORD + r")\s+(?:the\s+)?" + _ORDINAL + r"\b(?:,?\s*" + _YEAR_GROUP + r"\b)?",
                          re.IGNORECASE)
_MONTH_YEAR = re.compile(r"\b(" + _MONTH_WORD + r")(?![a-z])(?:,?\s*" + _YEAR_GROUP + r"\b)?", re.IGNORECASE)
_YEAR = re.compile(r"\b((?:19|20)\d\d)\b")
#: ISO dates: "2023-05-08", "2023/05/08".
_ISO_DATE = re.compile(r"\b((?:19|20)\d\d)([-/])(\d{1,2})\2(\d{1,2})\b")
#: Numeric day and month before a year: "19.01.2024" (dots: day first), "19/01/2024", "05/08/2023".
_NUMERIC_DATE = re.compile(r"\b(\d{1,2})([./-])(\d{1,2})\2((?:19|20)\d\d)\b")


def time_cues(texts: Sequence[str]) -> np.ndarray:
    """bool ``(n,)``: does each turn text anchor something in time (:data:`TIME_CUE_PATTERN`)?"""
    return np.fromiter((bool(TIME_CUE_PATTERN.search(t)) for t in texts), dtype=bool, count=len(texts))


def time_intent(questions: Sequence[str]) -> np.ndarray:
    """bool ``(B,)``: does each question ask about time (:data:`TIME_INTENT_PATTERN`)?"""
    return np.fromiter((bool(TIME_INTENT_PATTERN.search(q)) for q in questions), dtype=bool, count=len(questions))


def _month_number(token: str) -> int:
    token = token.lower()[:3]
    return next(i for i, name in enumerate(_MONTHS, start=1) if name.startswith(token))


def _is_month_word(match: re.Match, group: int) -> bool:
    """'May' and 'march' are also ordinary words: accept them only capitalised ("May")."""
    word = match.group(group).rstrip(".")
    if word.lower() in ("may", "march", "mar", "jan", "sep", "dec", "oct", "nov", "aug", "apr", "jun", "jul", "feb"):
        return word[0].isupper()
    return True


def date_windows(question: str, years: Sequence[int] = ()) -> list[tuple[np.datetime64, np.datetime64]]:
    """The periods a question names, as inclusive ``(start, end)`` day pairs (regular expressions).

    Recognised, as one day: ``8 May, 2023``, ``May 8, 2023``, ``17th of January, 2024``, ``the 31
    of December 2023``, ``Jan. 19th 2024``, ``2023-05-08`` (ISO), ``19.01.2024`` (dots: day
    first, the European form), ``19/01/2024`` or ``01/19/2024`` (slashes or dashes: the reading
    that is a valid date; when both are, ``05/08/2023``, both days). As a month: ``May 2023``,
    ``in July``; as a year: ``2023``. A month or day without a year (``in July``, ``on the 3rd
    of March``) names that month or day in the year(s) the question names elsewhere ("between
    August 11 and August 15 2023"), else in each of ``years`` (pass the years the corpus spans).
    Nothing is inferred from relative words ("last week"): that would need the question's own
    date, which it has not.

    The maintained parsers were measured against this (``docs/results/quality_round2.md``):
    ``dateparser.search_dates`` reads the same forms at 0.7 ms a question, drops the
    granularity (a month comes back as one day) and puts a yearless day in a year of its own
    choosing; ``ctparse`` returns one reading per text at ~10 ms. These rules cost ~0.02 ms.
    """
    if not _MAY_NAME_A_PERIOD.search(question):
        return []  # most questions: no digit and no month name, so no pattern below can match
    windows: list[tuple[np.datetime64, np.datetime64]] = []
    taken: list[tuple[int, int]] = []
    # A month or day without a year takes the year the question names elsewhere, if any.
    named_years = sorted({int(m.group(1)) for m in _YEAR.finditer(question)})
    if named_years:
        years = named_years

    def free(m: re.Match) -> bool:
        return not any(m.start() < e and s < m.end() for s, e in taken)

    def valid_day(year: int, month: int, day: int) -> bool:
        return 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]

    def add_day(year: int, month: int, day: int) -> None:
        if valid_day(year, month, day):
            d = np.datetime64(f"{year:04d}-{month:02d}-{day:02d}", "D")
            windows.append((d, d))

    def add_month(year: int, month: int) -> None:
        start = np.datetime64(f"{year:04d}-{month:02d}-01", "D")
        windows.append((start, start + (calendar.monthrange(year, month)[1] - 1) * DAY))

    for m in _ISO_DATE.finditer(question):
        add_day(int(m.group(1)), int(m.group(3)), int(m.group(4)))
        taken.append(m.span())
    for m in _NUMERIC_DATE.finditer(question):
        if not free(m):
            continue
        first, second, year = int(m.group(1)), int(m.group(3)), int(m.group(4))
        readings = [(second, first)] if m.group(2) == "." else [(second, first), (first, second)]
        for month, day in dict.fromkeys(readings):  # (month, day), day-first reading first
            add_day(year, month, day)
        taken.append(m.span())
    for pattern, month_group, day_group, year_group in ((_DAY_FIRST, 2, 1, 3), (_MONTH_FIRST, 1, 2, 3)):
        for m in pattern.finditer(question):
            if not free(m) or not _is_month_word(m, month_group):
                continue
            month, day = _month_number(m.group(month_group)), int(m.group(day_group))
            for year in ([int(m.group(year_group))] if m.group(year_group) else years):
                add_day(int(year), month, day)
            taken.append(m.span())
    for m in _MONTH_YEAR.finditer(question):
        if not free(m) or not _is_month_word(m, 1):
            continue
        month = _month_number(m.group(1))
        for year in ([int(m.group(2))] if m.group(2) else years):
            add_month(int(year), month)
        taken.append(m.span())
    for m in _YEAR.finditer(question):
        if free(m):
            year = int(m.group(1))
            windows.append((np.datetime64(f"{year:04d}-01-01", "D"), np.datetime64(f"{year:04d}-12-31", "D")))
            taken.append(m.span())
    return windows


def session_keys(*columns: np.ndarray) -> np.ndarray:
    """int64 key per row, equal exactly when all ``columns`` agree (e.g. conversation and session)."""
    stacked = np.stack([np.asarray(c) for c in columns], axis=1)
    _, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


# --------------------------------------------------------------------------- parameters
@dataclass(frozen=True)
class TemporalParams:
    """Parameters of the time-aware leg (module docstring gives the formula).

    The defaults are the values ``fieldrank calibrate`` chose on the LoCoMo tuning split for
    both local embedders in issue 8; the shipped ``python/fieldrank/data/default_config.toml``
    sets its own (since issue 18, with BM25's neighbour-text expansion: γ 0.3).

    alpha : lexical share of the base blend, in [0, 1].
    gamma : weight of the neighbour support, >= 0 (0: no propagation).
    radius : neighbours ``i ± 1 … i ± radius`` of the same session, >= 1.
    decay : factor per extra step of distance, in [0, 1].
    tau : time-cue boost for questions with time intent, >= 0.
    delta : boost for turns whose session date is in a period the question names, >= 0.
    before_days, after_days : slack around a named period, >= 0 (events are reported in
        sessions on or after the day they happen, and a little before a named deadline).
    """

    alpha: float = _D["temporal_alpha"]
    gamma: float = _D["temporal_gamma"]
    radius: int = _D["temporal_radius"]
    decay: float = _D["temporal_decay"]
    tau: float = _D["temporal_tau"]
    delta: float = _D["temporal_delta"]
    before_days: int = _D["temporal_before_days"]
    after_days: int = _D["temporal_after_days"]

    def __post_init__(self) -> None:
        # The checks are the rows of the leg's parameter table (the kernel's rules, stated once).
        for spec in _tables.LEG_TABLES["temporal"]:
            object.__setattr__(self, spec.name, _v.param(spec, getattr(self, spec.name)))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TemporalParams":
        return _v.from_fields(cls, data)


@dataclass(frozen=True)
class Timeline:
    """What the leg knows about each corpus row (row i = row i of ``E``).

    session : int64 ``(N,)`` session key; rows ``i`` and ``i + d`` are neighbours only when their
        keys are equal (use :func:`session_keys` to make keys unique across conversations).
    time : ``datetime64`` ``(N,)`` session date of each row, or None (no session-date prior).
    cue : bool ``(N,)`` from :func:`time_cues`, or None (no time-intent prior).
    """

    session: np.ndarray
    time: Optional[np.ndarray] = None
    cue: Optional[np.ndarray] = None

    def __post_init__(self) -> None:
        session = np.asarray(self.session)
        if session.ndim != 1 or session.dtype.kind not in "iu":
            msg = f"Timeline.session must be a 1-D integer array, got {session.dtype} with shape {session.shape}"
            raise ValueError(msg)
        object.__setattr__(self, "session", session.astype(np.int64, copy=False))
        n = session.shape[0]
        if self.time is not None:
            time = _as_dates(self.time)
            if time.shape != (n,) or time.dtype.kind != "M":
                msg = f"Timeline.time must be datetime64 of shape ({n},), got {time.dtype} with shape {time.shape}"
                raise ValueError(msg)
            object.__setattr__(self, "time", time.astype("datetime64[D]"))
        if self.cue is not None:
            cue = np.asarray(self.cue)
            if cue.shape != (n,) or cue.dtype != np.bool_:
                msg = f"Timeline.cue must be bool of shape ({n},), got {cue.dtype} with shape {cue.shape}"
                raise ValueError(msg)
            object.__setattr__(self, "cue", cue)

    def __len__(self) -> int:
        return self.session.shape[0]

    @classmethod
    def from_turns(cls, session: np.ndarray, time: Optional[np.ndarray] = None,
                   texts: Optional[Sequence[str]] = None) -> "Timeline":
        """Build from session keys, session dates and turn texts (for :func:`time_cues`)."""
        return cls(session=session, time=time, cue=None if texts is None else time_cues(texts))


def _as_dates(values: Any) -> np.ndarray:
    """Session dates as datetime64: datetime64 arrays as given; ISO 8601 strings ("2024-03-02",
    "2024-03-02T18:30") and ``datetime.date``/``datetime`` objects converted."""
    time = np.asarray(values)
    if time.dtype.kind == "M":
        return time
    if time.dtype.kind in "USO" and time.size:
        try:
            return np.asarray(values, dtype="datetime64[s]")
        except (ValueError, TypeError):
            flat = time.reshape(-1)
            bad = next((v for v in flat if not _is_iso_date(v)), flat[0])
            bad = str(bad) if isinstance(bad, str) else bad
            msg = (f"Timeline.time must be datetime64 or ISO 8601 dates such as '2024-03-02' or "
                   f"'2024-03-02T18:30', got {bad!r}; convert other formats first (e.g. with "
                   "datetime.strptime)")
            raise ValueError(msg) from None
    return time


def _is_iso_date(value: Any) -> bool:
    try:
        np.datetime64(value, "s")
    except (ValueError, TypeError):
        return False
    return True


# --------------------------------------------------------------------------- scoring core
# The arithmetic runs in C++ (``cpp/include/fieldrank/temporal.hpp``, float64 throughout); its
# numpy twin, the readable formula and the oracle of the parity tests, is
# :func:`fieldrank.reference.temporal_batch` (with :func:`fieldrank.reference.temporal_scores`
# and :func:`fieldrank.reference.neighbour_support`; the reference imports this module, not
# the other way round).


def years_spanned(timeline: Timeline, rows: Optional[np.ndarray]) -> tuple[int, ...]:
    """The calendar years the session dates of ``rows`` (None: every row) span (the timeline has dates)."""
    t = timeline.time if rows is None else timeline.time[rows]
    years = t.astype("datetime64[Y]").astype(int) + 1970
    return tuple(range(int(years.min()), int(years.max()) + 1))


def question_features(questions: Optional[Sequence[str]], timeline: Timeline, rows: Optional[np.ndarray], *,
                      years: Optional[Sequence[int]] = None):
    """Per query: time intent (bool ``(B,)``) and the named periods (:func:`date_windows`).

    ``rows`` are the corpus rows the queries may see (None: all); a month or day without a year is
    looked up in every year their session dates span (``years``: that span, computed already by a
    caller that holds it, e.g. for every row). ``questions=None`` gives ``(None, None)`` (no
    priors); without session dates in ``timeline`` the periods are None.
    """
    if questions is None:
        return None, None
    if isinstance(questions, str):
        msg = "questions must be a sequence of str (one per query), got a single str"
        raise ValueError(msg)
    intent = time_intent(questions)
    windows = None
    if timeline.time is not None:
        if years is None:
            years = years_spanned(timeline, rows)
        windows = [date_windows(q, years) for q in questions]
    return intent, windows


def check_leg_call(E: np.ndarray, Q: np.ndarray, lexical: Optional[np.ndarray], k: int, timeline: Timeline,
                   questions: Optional[Sequence[str]], params: TemporalParams, subset: Optional[np.ndarray],
                   n_threads: int = 0):
    """The checks of :func:`temporal_batch`, shared with :func:`fieldrank.reference.temporal_batch`.

    Returns ``(E, Q, lexical, rows, n_threads)``: ``rows`` the sorted subset (None: all rows),
    ``lexical`` the (B, N) float array (None when ``params.alpha == 0``; not yet checked finite).
    """
    E, Q, subset, n_threads = _v.batch_call(E, Q, subset, n_threads)
    k = _v.positive_int(k, "k")
    if not isinstance(timeline, Timeline) or len(timeline) != E.shape[0]:
        msg = f"timeline must be a Timeline with one entry per row of E ({E.shape[0]})"
        raise ValueError(msg)
    _v.instance_of(params, "params", TemporalParams)
    B = Q.shape[0]
    if params.alpha > 0.0:
        if lexical is None:
            msg = "lexical must be given (B, N) when params.alpha > 0"
            raise ValueError(msg)
        lexical = np.asarray(lexical)
        if lexical.shape != (B, E.shape[0]) or lexical.dtype.kind != "f":
            msg = f"lexical must be a float array of shape ({B}, {E.shape[0]}), got {lexical.dtype} {lexical.shape}"
            raise ValueError(msg)
    else:
        lexical = None
    if questions is not None and (isinstance(questions, str) or len(questions) != B):
        msg = f"questions must be a sequence of {B} str (one per query), got {type(questions).__name__}"
        raise ValueError(msg)
    rows = None if subset is None else np.sort(subset)
    return E, Q, lexical, rows, n_threads


def _window_arrays(windows: Optional[Sequence[Sequence[tuple[np.datetime64, np.datetime64]]]]):
    """Per-query day periods as (offsets (B + 1,), flat (start, end) day numbers) int64 arrays."""
    if windows is None:
        return None, None
    counts = np.fromiter((len(w) for w in windows), dtype=np.int64, count=len(windows))
    offsets = np.zeros(len(windows) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    flat = [day for periods in windows for pair in periods for day in pair]
    days = np.array(flat, dtype="datetime64[D]").astype(np.int64) if flat else np.empty(0, dtype=np.int64)
    return offsets, days


def run_leg(E: np.ndarray, Q: np.ndarray, lexical: Optional[np.ndarray], k: int, timeline: Timeline,
             intent: Optional[np.ndarray], windows, params: TemporalParams, rows: Optional[np.ndarray],
             check_rows: bool, n_threads: int, row_order: bool = False, lexical_begin: Optional[int] = None,
             moments: Optional[_kernels.NativeTemporalMoments] = None, screen: bool = True,
             native: bool = False) -> Ranking:
    """The native leg on checked arguments (no copy of ``E``; ``rows`` sorted, None: all rows).

    ``row_order=True`` returns every row's score in the order of ``rows`` (ids empty, ``k``
    unused), for a caller that wants a short top and a few chosen rows' scores (the memory store)
    without a sort of every row.

    ``lexical_begin``: ``lexical`` holds the scores of the corpus rows ``lexical_begin ..
    lexical_begin + lexical.shape[1] - 1`` only, a block that contains every row of ``rows`` (the
    retriever scores only the block a subset spans). The leg then runs on views of that block of
    ``E`` and of the timeline (no copy), with the same scores and ids.

    ``moments``: ``_kernels.temporal_moments(E)`` of this very ``E`` (the same array, refused
    otherwise; not modified since), held by the caller (the retriever computes them once per
    corpus). Over all rows (``rows`` None, no ``lexical_begin``,
    top-k) the cosines' mean and standard deviation then come from them and fp32 cosines screen
    the rows, only those near the k-th score re-scored in double (docs/design.md, "Temporal
    leg"); elsewhere they are not used. ``screen=False`` scores every row in double with the same
    statistics instead (the same result: the oracle of the tests).

    ``native=True`` returns the native result itself (with ``row_order`` it also holds the rows'
    float64 cosines, ``cosines``, for a caller that wants the dense top without a second pass; ids
    not shifted back, so only without ``lexical_begin`` or with ``row_order``).

    Layers that validated their corpus once (:class:`fieldrank.HybridRetriever`, the memory store)
    call this with ``check_rows=False``; :func:`temporal_batch` checks each row it reads once per
    call (finite, non-zero norm), in native code.
    """
    lex32 = lex64 = None
    if lexical is not None and params.alpha > 0.0:
        if lexical.dtype == np.float32:
            lex32 = np.ascontiguousarray(lexical)
        else:
            lex64 = np.ascontiguousarray(lexical, dtype=np.float64)
    cue = None if timeline.cue is None or intent is None else timeline.cue.view(np.uint8)
    day = None if timeline.time is None else timeline.time.view(np.int64)
    session = timeline.session
    if lexical_begin is not None:
        end = lexical_begin + lexical.shape[1]
        E, session = E[lexical_begin:end], session[lexical_begin:end]
        cue = None if cue is None else cue[lexical_begin:end]
        day = None if day is None else day[lexical_begin:end]
        rows = None if rows is None else rows - lexical_begin
    offsets, days = _window_arrays(windows if timeline.time is not None else None)
    r = _kernels.temporal_batch(
        E, Q, np.ascontiguousarray(session), params.alpha, params.gamma, params.radius, params.decay,
        params.tau, params.delta, params.before_days, params.after_days, k, lexical32=lex32, lexical64=lex64,
        rows=rows, cue=cue, day=day,
        intent=None if intent is None else np.ascontiguousarray(intent, dtype=bool).view(np.uint8),
        window_offsets=offsets, window_days=days, check_rows=check_rows, n_threads=n_threads,
        row_order=row_order, moments=moments if rows is None and lexical_begin is None else None, screen=screen)
    if native:
        return r
    if lexical_begin:
        return Ranking(r.ids + lexical_begin, r.scores)  # every id is a row (k is capped at the rows)
    return Ranking(r.ids, r.scores)


def temporal_batch(E: np.ndarray, Q: np.ndarray, lexical: Optional[np.ndarray], k: int = 50, *,
                   timeline: Timeline, questions: Optional[Sequence[str]] = None,
                   params: TemporalParams = TemporalParams(), subset: Optional[np.ndarray] = None,
                   n_threads: int = 0) -> Ranking:
    """The time-aware leg for a batch of queries; returns ``Ranking`` with ``(B, min(k, n))`` arrays.

    Native (C++, GIL released, one query block per pass over the rows); equal to
    :func:`fieldrank.reference.temporal_batch`, its numpy twin.

    Parameters
    ----------
    E : (N, d) float32, L2-normalised rows.
    Q : (B, d) float32 query embeddings.
    lexical : (B, N) lexical scores of every row of ``E`` for each query (e.g.
        ``BM25Index.scores``), float32 or float64, or None when ``params.alpha == 0``. Only
        ``subset`` columns are read.
    k : ids to return per query.
    timeline : per-row session keys, session dates and time cues (:class:`Timeline`).
    questions : the query texts (B,), for the time-intent and session-date priors; None
        switches both off.
    params : :class:`TemporalParams`.
    subset : optional unique row ids; only these rows are scored and returned, and only they
        count as neighbours.
    n_threads : worker threads (``<= 0``: all cores); the result does not depend on it.

    Returns
    -------
    Ranking
        int64 ids and float64 scores, higher first, ties to the lower id.
    """
    E, Q, lexical, rows, n_threads = check_leg_call(E, Q, lexical, k, timeline, questions, params, subset, n_threads)
    intent, windows = question_features(questions, timeline, rows)
    return run_leg(E, Q, lexical, k, timeline, intent, windows, params, rows, True, n_threads)


def temporal(E: np.ndarray, q: np.ndarray, lexical: Optional[np.ndarray], k: int = 50, *, timeline: Timeline,
             question: Optional[str] = None, params: TemporalParams = TemporalParams(),
             subset: Optional[np.ndarray] = None) -> Ranking:
    """:func:`temporal_batch` for one query ``q`` (d,) with lexical scores (N,); 1-D ``Ranking``.

    Runs on the calling thread, like the other single-query operators.
    """
    q = _v.float32_array(q, "q", 1)
    lex = None if lexical is None else np.asarray(lexical)[None, :]
    res = temporal_batch(E, q[None, :], lex, k, timeline=timeline,
                         questions=None if question is None else [question], params=params, subset=subset,
                         n_threads=1)
    return Ranking(res.ids[0], res.scores[0])

