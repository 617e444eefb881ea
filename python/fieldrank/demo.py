"""The two kitchen scenarios of the write-ups, run through every method side by side.

The data ships with the package (``fieldrank/data/demo_scenarios.json`` and
``demo_embeddings.npy``, made by ``tools/make_demo_data.py`` with all-MiniLM-L6-v2), so the
demo needs no download and no network:

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

from .hybrid import HybridRetriever

__all__ = [
    "DEMO_METHODS",
    "DEMO_TOP_K",
    "DemoReport",
    "MethodOutcome",
    "Scenario",
    "ScenarioOutcome",
    "format_report",
    "load_scenarios",
    "run_demo",
]


def __dir__() -> list[str]:
    return list(__all__)


#: Methods shown, in column order: single operators, then the hybrid presets (SPEC §6).
DEMO_METHODS: tuple[str, ...] = (
    "cosine", "bm25", "cfs", "cfsr", "rrf2", "rrf_mmr", "rrf_cfs", "rrf_cfsr", "rrf_ring",
)
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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (ids, markers, facts covered, verdicts)."""
        return {
            "k": self.k,
            "model": self.model,
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


def _data_bytes(name: str) -> bytes:
    return resources.files(_DATA_PACKAGE).joinpath(_DATA_DIR, name).read_bytes()


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
    import io

    manifest = json.loads(_data_bytes(_SCENARIOS_FILE).decode("utf-8"))
    raw = _data_bytes(manifest["embeddings_file"])
    digest = hashlib.sha256(raw).hexdigest()
    if digest != manifest["embeddings_sha256"]:
        msg = (f"packaged demo embeddings are corrupt: sha256 {digest} != {manifest['embeddings_sha256']} "
               "(reinstall fieldrank)")
        raise ValueError(msg)
    E = np.load(io.BytesIO(raw), allow_pickle=False)
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
        parts.append(part)
    return "; ".join(parts)


def run_demo(methods: Sequence[str] = DEMO_METHODS, k: int = DEMO_TOP_K) -> DemoReport:
    """Run every method on both scenarios.

    Parameters
    ----------
    methods : sequence of preset names, default :data:`DEMO_METHODS`
    k : int, default :data:`DEMO_TOP_K`
        Memories returned per method (the verdict also looks at the top 3 when k > 3).

    Returns
    -------
    DemoReport
    """
    if isinstance(methods, str) or not methods:
        msg = f"methods must be a non-empty sequence of preset names, got {methods!r}"
        raise ValueError(msg)
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
    return DemoReport(k, model, tuple(outcomes))


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


def format_report(report: DemoReport) -> str:
    """The report as the readable side-by-side text the CLI prints."""
    lines = [
        f"fieldrank demo: the write-ups' two kitchen scenarios, top-{report.k} of each method",
        f"embeddings: {report.model} (shipped with the package; no network)",
        f"marks: {MARK_RELEVANT} relevant fact (first time shown)   {MARK_REPEAT} repeats a fact already shown",
        "",
    ]
    for outcome in report.scenarios:
        lines.extend(_format_scenario(outcome, report.k))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:  # pragma: no cover - thin wrapper
    """Print the demo (``fieldrank demo`` is the usual way to run it)."""
    from .cli import main as cli_main

    return cli_main(["demo", *(argv or [])])
