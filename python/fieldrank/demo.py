"""The demo: a real multi-session conversation, then the write-ups' two kitchen scenarios.

The data ships with the package (``fieldrank/data/demo_scenarios.json`` and
``demo_embeddings.npy``, made once by ``tools/make_demo_data.py`` with all-MiniLM-L6-v2: no
torch, download or network at run time).

**Conversation** — four dated sessions between two friends (79 turns, text written for fieldrank,
MIT like the package, in LoCoMo's shape) and 21 questions with their evidence turns. Each method
of :data:`CONVERSATION_METHODS` answers every question; the report gives how many questions
have an evidence turn in the top k, the evidence recall, the measured median latency per query
(on this machine, now), and lists the questions where ``default`` finds evidence that cosine
misses *and* the ones where cosine finds what ``default`` misses. Nothing is written in advance.

**Kitchen scenarios**:

* **Paraphrase pile-up** — four rewordings of one $40k budget fact crowd the cosine top-k;
  the one new fact (cabinets take half the budget) sits below them.
* **Partial-evidence dilution** — topical kitchen turns look most like the "why" question;
  the two turns that explain the overrun each carry only part of the answer.

Each scenario becomes a small :class:`~fieldrank.hybrid.HybridRetriever`; every method of
:data:`DEMO_METHODS` answers the scenario's query, and the report marks each returned memory
as a relevant fact or a repeat of a fact already returned. The verdict line is computed from
those results (facts covered in the top 3 and top k, restatements in cosine's top 3); nothing
in it is written in advance.

A *fact* is one relevant memory, except that the interchangeable restatements listed in a
scenario's ``redundant`` group count as one fact together (any one of them serves).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Optional

import numpy as np

from ._api import public_dir
from .hybrid import HybridRetriever

__all__ = [
    "CONVERSATION_METHODS",
    "Conversation",
    "ConversationOutcome",
    "DEMO_METHODS",
    "DEMO_TOP_K",
    "DemoReport",
    "MethodOutcome",
    "Scenario",
    "ScenarioOutcome",
    "format_report",
    "load_conversation",
    "load_scenarios",
    "run_conversation",
    "run_demo",
]

__dir__ = public_dir(__all__)


#: Methods shown, in column order: single operators, then the hybrid presets (docs/spec.md §6).
DEMO_METHODS: tuple[str, ...] = (
    "cosine", "bm25", "cfs", "cfsr", "rrf2", "rrf_mmr", "rrf_cfs", "rrf_cfsr", "rrf_ring", "default",
)
#: Methods run on the conversation (each is timed on every question).
CONVERSATION_METHODS: tuple[str, ...] = ("cosine", "bm25", "rrf2", "rrf_cfsr", "default")
#: The method the conversation report is about, and the one it is compared with.
FEATURED_METHOD = "default"
#: Timed searches per question and method (the latency is the median over all of them).
LATENCY_REPEATS = 5
#: Memories shown per method.
DEMO_TOP_K = 5
#: The tight cut of the verdict (the write-ups' failure modes show in the first few slots).
VERDICT_TOP = 3
#: The method every verdict compares against.
BASELINE_METHOD = "cosine"

_DATA_PACKAGE = "fieldrank"
_DATA_DIR = "data"
_SCENARIOS_FILE = "demo_scenarios.json"

MARK_RELEVANT = "+"
MARK_REPEAT = "~"
MARK_NONE = " "
_TEXT_WIDTH = 72
_COLUMN_GAP = 2


@dataclass(frozen=True)
class Scenario:
    """One demo scenario: memories, their embeddings, the query and its relevant facts."""

    name: str
    title: str
    description: str
    query: str
    memories: tuple[str, ...]
    embeddings: np.ndarray
    query_vector: np.ndarray
    #: Each fact is a tuple of interchangeable memory ids (one id, or the redundant group).
    facts: tuple[tuple[int, ...], ...]
    redundant: tuple[int, ...]


@dataclass(frozen=True)
class MethodOutcome:
    """One method's top-k for one scenario and its markers."""

    method: str
    ids: tuple[int, ...]
    marks: tuple[str, ...]
    facts_covered: dict[int, int]  # cut -> number of facts in the top `cut`
    repeats: dict[int, int]  # cut -> memories in the top `cut` that repeat a fact already shown


@dataclass(frozen=True)
class ScenarioOutcome:
    scenario: Scenario
    methods: tuple[MethodOutcome, ...]
    cuts: tuple[int, ...]
    verdict: str

    def method(self, name: str) -> MethodOutcome:
        for outcome in self.methods:
            if outcome.method == name:
                return outcome
        msg = f"method {name!r} was not run; ran {[m.method for m in self.methods]}"
        raise KeyError(msg)


@dataclass(frozen=True)
class DemoReport:
    k: int
    model: str
    scenarios: tuple[ScenarioOutcome, ...]
    conversation: Optional[ConversationOutcome] = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (conversation figures; scenario ids, markers, facts covered, verdicts)."""
        return {
            "k": self.k,
            "model": self.model,
            "conversation": None if self.conversation is None else self.conversation.to_dict(),
            "scenarios": [
                {
                    "name": s.scenario.name,
                    "title": s.scenario.title,
                    "query": s.scenario.query,
                    "facts": [list(f) for f in s.scenario.facts],
                    "verdict": s.verdict,
                    "methods": {
                        m.method: {
                            "ids": list(m.ids),
                            "texts": [s.scenario.memories[i] for i in m.ids],
                            "marks": list(m.marks),
                            "facts_covered": {str(c): n for c, n in m.facts_covered.items()},
                            "repeats": {str(c): n for c, n in m.repeats.items()},
                        }
                        for m in s.methods
                    },
                }
                for s in self.scenarios
            ],
        }


@dataclass(frozen=True)
class Conversation:
    """The packaged conversation: turns (row i = turn i), their timeline, questions and evidence."""

    title: str
    texts: tuple[str, ...]  # "speaker: text", as embedded
    sessions: np.ndarray  # int64 (N,) session number
    dates: np.ndarray  # datetime64[D] (N,) session date
    embeddings: np.ndarray  # (N, 384) float32 unit rows
    questions: tuple[str, ...]
    categories: tuple[str, ...]
    evidence: tuple[tuple[int, ...], ...]
    question_vectors: np.ndarray  # (Q, 384)

    def timeline(self):
        """The :class:`~fieldrank.temporal.Timeline` the ``default`` preset reads."""
        from .temporal import Timeline

        return Timeline.from_turns(self.sessions, self.dates, self.texts)


@dataclass(frozen=True)
class ConversationOutcome:
    """Every method's answers on the conversation: per question, the rank of each evidence turn."""

    conversation: Conversation
    k: int
    methods: tuple[str, ...]
    #: method -> per question, the 1-based rank of each evidence turn in the top k (0: absent)
    evidence_ranks: dict[str, tuple[tuple[int, ...], ...]]
    #: method -> median seconds per search (one query, this machine, this run)
    latency_s: dict[str, float]

    def answered(self, method: str) -> tuple[bool, ...]:
        """Per question: is an evidence turn in the method's top k?"""
        return tuple(any(r > 0 for r in ranks) for ranks in self.evidence_ranks[method])

    def recall(self, method: str) -> float:
        """Mean share of each question's evidence turns in the top k."""
        per_question = [sum(r > 0 for r in ranks) / len(ranks) for ranks in self.evidence_ranks[method]]
        return float(np.mean(per_question))

    def only(self, method: str, other: str) -> tuple[int, ...]:
        """Questions ``method`` answers (evidence in top k) and ``other`` does not."""
        mine, theirs = self.answered(method), self.answered(other)
        return tuple(i for i, (a, b) in enumerate(zip(mine, theirs)) if a and not b)

    def to_dict(self) -> dict[str, Any]:
        c = self.conversation
        return {
            "k": self.k,
            "turns": len(c.texts),
            "questions": [
                {"question": q, "category": cat, "evidence": list(ev),
                 "evidence_ranks": {m: list(self.evidence_ranks[m][i]) for m in self.methods}}
                for i, (q, cat, ev) in enumerate(zip(c.questions, c.categories, c.evidence))
            ],
            "methods": {
                m: {"answered": sum(self.answered(m)), "recall": self.recall(m), "median_latency_ms":
                    self.latency_s[m] * 1e3}
                for m in self.methods
            },
        }


def _data_bytes(name: str) -> bytes:
    return resources.files(_DATA_PACKAGE).joinpath(_DATA_DIR, name).read_bytes()


def _manifest_and_embeddings() -> tuple[dict[str, Any], np.ndarray]:
    import io

    manifest = json.loads(_data_bytes(_SCENARIOS_FILE).decode("utf-8"))
    raw = _data_bytes(manifest["embeddings_file"])
    digest = hashlib.sha256(raw).hexdigest()
    if digest != manifest["embeddings_sha256"]:
        msg = (f"packaged demo embeddings are corrupt: sha256 {digest} != {manifest['embeddings_sha256']} "
               "(reinstall fieldrank)")
        raise ValueError(msg)
    return manifest, np.load(io.BytesIO(raw), allow_pickle=False)


def load_conversation() -> Conversation:
    """The packaged conversation with its embeddings (sha256 checked as in :func:`load_scenarios`)."""
    manifest, E = _manifest_and_embeddings()
    c = manifest["conversation"]
    start, stop = c["turn_rows"]
    q_start, q_stop = c["question_rows"]
    turns = c["turns"]
    return Conversation(
        title=c["title"],
        texts=tuple(f"{t['speaker']}: {t['text']}" for t in turns),
        sessions=np.array([t["session"] for t in turns], dtype=np.int64),
        dates=np.array([t["date"] for t in turns], dtype="datetime64[D]"),
        embeddings=np.ascontiguousarray(E[start:stop]),
        questions=tuple(q["question"] for q in c["questions"]),
        categories=tuple(q["category"] for q in c["questions"]),
        evidence=tuple(tuple(q["evidence"]) for q in c["questions"]),
        question_vectors=np.ascontiguousarray(E[q_start:q_stop]),
    )


def run_conversation(methods: Sequence[str] = CONVERSATION_METHODS, k: int = DEMO_TOP_K,
                     repeats: int = LATENCY_REPEATS) -> ConversationOutcome:
    """Answer every question of the conversation with every method, timing each search."""
    import time

    conversation = load_conversation()
    base = HybridRetriever(conversation.texts, conversation.embeddings, methods[0],
                           timeline=conversation.timeline())
    ranks: dict[str, tuple[tuple[int, ...], ...]] = {}
    latency: dict[str, float] = {}
    for method in methods:
        retriever = base.with_config(method)
        per_question, times = [], []
        for question, vector, evidence in zip(conversation.questions, conversation.question_vectors,
                                              conversation.evidence):
            for _ in range(repeats):
                started = time.perf_counter()
                result = retriever.search(question, vector, k)
                times.append(time.perf_counter() - started)
            ids = result.ids.tolist()
            per_question.append(tuple(ids.index(e) + 1 if e in ids else 0 for e in evidence))
        ranks[method] = tuple(per_question)
        latency[method] = float(np.median(times))
    return ConversationOutcome(conversation, k, tuple(methods), ranks, latency)


def load_scenarios() -> tuple[tuple[Scenario, ...], str]:
    """Read the packaged scenarios and embeddings (checking the embeddings' sha256).

    Returns
    -------
    scenarios : tuple of Scenario
    model : str
        The embedding model that made the vectors.

    Raises
    ------
    ValueError
        If the packaged embeddings do not match the sha256 recorded next to them.
    """
    manifest, E = _manifest_and_embeddings()
    scenarios = []
    for s in manifest["scenarios"]:
        start, stop = s["memory_rows"]
        redundant = tuple(s.get("redundant", ()))
        facts: list[tuple[int, ...]] = []
        if redundant:
            facts.append(redundant)
        facts.extend((i,) for i in s["relevant"] if i not in redundant)
        scenarios.append(Scenario(
            name=s["name"], title=s["title"], description=s["description"], query=s["query"],
            memories=tuple(s["memories"]), embeddings=np.ascontiguousarray(E[start:stop]),
            query_vector=np.ascontiguousarray(E[s["query_row"]]), facts=tuple(facts), redundant=redundant,
        ))
    return tuple(scenarios), manifest["model"]


def _mark(method: str, ids: Sequence[int], facts: Sequence[tuple[int, ...]], cuts: Sequence[int]) -> MethodOutcome:
    fact_of = {doc: j for j, fact in enumerate(facts) for doc in fact}
    seen: set[int] = set()
    marks = []
    covered_at, repeats_at = [], []
    repeats = 0
    for doc in ids:
        fact = fact_of.get(doc)
        if fact is None:
            marks.append(MARK_NONE)
        elif fact in seen:
            marks.append(MARK_REPEAT)
            repeats += 1
        else:
            marks.append(MARK_RELEVANT)
            seen.add(fact)
        covered_at.append(len(seen))
        repeats_at.append(repeats)

    def at(values: list[int], cut: int) -> int:
        return values[min(cut, len(values)) - 1] if values else 0

    return MethodOutcome(method, tuple(ids), tuple(marks),
                         {c: at(covered_at, c) for c in cuts}, {c: at(repeats_at, c) for c in cuts})


def _names(methods: Sequence[str]) -> str:
    return ", ".join(methods)


def _verdict(outcomes: Sequence[MethodOutcome], n_facts: int, cuts: Sequence[int]) -> str:
    """One line from the results: who covers the most facts at each cut, against cosine."""
    parts = []
    for cut in cuts:
        best = max(o.facts_covered[cut] for o in outcomes)
        winners = [o.method for o in outcomes if o.facts_covered[cut] == best]
        if len(winners) == len(outcomes) > 1:
            part = f"top-{cut}: every method covers {best}/{n_facts} facts"
        else:
            part = f"top-{cut}: {_names(winners)} cover{'s' if len(winners) == 1 else ''} {best}/{n_facts} facts"
        baseline = next((o for o in outcomes if o.method == BASELINE_METHOD), None)
        if baseline is not None and BASELINE_METHOD not in winners:
            part += f" vs {BASELINE_METHOD} {baseline.facts_covered[cut]}/{n_facts}"
            if baseline.repeats[cut]:
                part += f" (its top {cut} repeats a fact {baseline.repeats[cut]}x)"
        if baseline is not None:
            behind = [o for o in outcomes if o.facts_covered[cut] < baseline.facts_covered[cut]]
            if behind:
                part += (f"; below {BASELINE_METHOD}: "
                         + ", ".join(f"{o.method} {o.facts_covered[cut]}/{n_facts}" for o in behind))
        parts.append(part)
    return "; ".join(parts)


def run_demo(methods: Sequence[str] = DEMO_METHODS, k: int = DEMO_TOP_K, *,
             conversation_methods: Optional[Sequence[str]] = CONVERSATION_METHODS) -> DemoReport:
    """Run the conversation and both kitchen scenarios.

    Parameters
    ----------
    methods : sequence of preset names, default :data:`DEMO_METHODS`
        Methods of the kitchen scenarios.
    k : int, default :data:`DEMO_TOP_K`
        Memories returned per method (the verdict also looks at the top 3 when k > 3).
    conversation_methods : sequence of preset names or None, default :data:`CONVERSATION_METHODS`
        Methods run (and timed) on the conversation; None skips it.

    Returns
    -------
    DemoReport
    """
    for name, value in (("methods", methods), ("conversation_methods", conversation_methods)):
        if value is not None and (isinstance(value, str) or not value):
            msg = f"{name} must be a non-empty sequence of preset names, got {value!r}"
            raise ValueError(msg)
    conversation = None if conversation_methods is None else run_conversation(conversation_methods, k)
    scenarios, model = load_scenarios()
    cuts = tuple(sorted({min(VERDICT_TOP, k), k}))
    outcomes = []
    for scenario in scenarios:
        base = HybridRetriever(scenario.memories, scenario.embeddings, methods[0])
        per_method = []
        for method in methods:
            result = base.with_config(method).search(scenario.query, scenario.query_vector, k)
            per_method.append(_mark(method, result.ids.tolist(), scenario.facts, cuts))
        verdict = _verdict(per_method, len(scenario.facts), cuts)
        outcomes.append(ScenarioOutcome(scenario, tuple(per_method), cuts, verdict))
    return DemoReport(k, model, tuple(outcomes), conversation)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _format_scenario(outcome: ScenarioOutcome, k: int) -> list[str]:
    s = outcome.scenario
    methods = outcome.methods
    id_width = len(str(len(s.memories) - 1))
    widths = [max(len(m.method), id_width + 2) for m in methods]
    gap = " " * _COLUMN_GAP
    labels = [f"facts@{cut}" for cut in outcome.cuts]
    first = max(len("rank"), *(len(label) for label in labels))
    lines = [f"== {s.title} ==", f"query: {s.query!r}", f"   {s.description}", ""]
    lines.append("rank".ljust(first) + gap + gap.join(m.method.ljust(w) for m, w in zip(methods, widths)).rstrip())
    for r in range(k):
        cells = []
        for m, w in zip(methods, widths):
            cell = f"{m.ids[r]:>{id_width}} {m.marks[r]}" if r < len(m.ids) else "-"
            cells.append(cell.ljust(w))
        lines.append(f"{r + 1:>{first}}" + gap + gap.join(cells).rstrip())
    n_facts = len(s.facts)
    for cut, label in zip(outcome.cuts, labels):
        cells = [f"{m.facts_covered[cut]}/{n_facts}".ljust(w) for m, w in zip(methods, widths)]
        lines.append(label.ljust(first) + gap + gap.join(cells).rstrip())
    lines.append("")
    shown = sorted({i for m in methods for i in m.ids})
    fact_of = {doc: j for j, fact in enumerate(s.facts) for doc in fact}
    for i in shown:
        tag = ""
        if i in fact_of:
            fact = s.facts[fact_of[i]]
            tag = "  [relevant]" if len(fact) == 1 else f"  [fact {fact_of[i] + 1}, one of {len(fact)} restatements]"
        lines.append(f"  {i:>{id_width}}  {_shorten(s.memories[i], _TEXT_WIDTH)}{tag}")
    lines.append("")
    lines.append(f"verdict: {outcome.verdict}")
    return lines


def _format_question(c: Conversation, outcome: ConversationOutcome, i: int, methods: Sequence[str]) -> list[str]:
    ranks = "  ".join(f"{m}: {_ranks_text(outcome.evidence_ranks[m][i])}" for m in methods)
    lines = [f"  Q: {c.questions[i]}  [{c.categories[i]}]", f"     evidence rank  {ranks}"]
    lines.extend(f"     turn {e} ({c.dates[e]}): {_shorten(c.texts[e], _TEXT_WIDTH)}" for e in c.evidence[i])
    return lines


def _ranks_text(ranks: Sequence[int]) -> str:
    return ",".join(str(r) if r else "-" for r in ranks)


def _format_conversation(outcome: ConversationOutcome) -> list[str]:
    c = outcome.conversation
    n = len(c.questions)
    first, last = str(c.dates.min()), str(c.dates.max())
    lines = [f"== Conversation: {c.title} ==",
             f"   {len(c.texts)} turns in {len(set(c.sessions.tolist()))} sessions ({first} .. {last}), "
             f"{n} questions with their evidence turns; the retriever gets the session dates (Timeline)", ""]
    width = max(len(m) for m in outcome.methods)
    lines.append(f"{'method'.ljust(width)}  answered@{outcome.k}  evidence recall@{outcome.k}  median latency/query")
    for m in outcome.methods:
        lines.append(f"{m.ljust(width)}  {sum(outcome.answered(m)):>4}/{n:<5}  {outcome.recall(m):>17.2f}  "
                     f"{outcome.latency_s[m] * 1e3:>10.3f} ms")
    lines.append(f"   (answered: an evidence turn in the top {outcome.k}; latency: measured now, "
                 f"{LATENCY_REPEATS} searches per question, {len(c.texts)} turns)")
    featured, baseline = FEATURED_METHOD, BASELINE_METHOD
    if featured in outcome.methods and baseline in outcome.methods:
        pair = (baseline, featured)
        wins, losses = outcome.only(featured, baseline), outcome.only(baseline, featured)
        for finder, misser, found in ((featured, baseline, wins), (baseline, featured, losses)):
            lines += ["", f"{finder} finds evidence that {misser} misses ({len(found)} question"
                      f"{'' if len(found) == 1 else 's'}):"]
            for i in found:
                lines.extend(_format_question(c, outcome, i, pair))
            if not found:
                lines.append("  (none)")
        missed = [i for i in range(n) if not any(outcome.answered(m)[i] for m in outcome.methods)]
        lines += ["", f"no method finds the evidence of {len(missed)} question{'' if len(missed) == 1 else 's'}"
                  + (": " + "; ".join(c.questions[i] for i in missed) if missed else "")]
    return lines


def format_report(report: DemoReport) -> str:
    """The report as the readable side-by-side text the CLI prints."""
    lines = [
        f"fieldrank demo: a multi-session conversation, then the write-ups' two kitchen scenarios "
        f"(top-{report.k} of each method)",
        f"embeddings: {report.model} (computed once by tools/make_demo_data.py, shipped with the package; "
        "no model or network at run time)",
        "",
    ]
    if report.conversation is not None:
        lines.extend(_format_conversation(report.conversation))
        lines.append("")
    lines += [f"marks: {MARK_RELEVANT} relevant fact (first time shown)   {MARK_REPEAT} repeats a fact already shown",
              ""]
    for outcome in report.scenarios:
        lines.extend(_format_scenario(outcome, report.k))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"

