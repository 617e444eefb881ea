"""The agent-life benchmark (issue 24): the memory store as a realistic agent fills it over a year.

A simulated agent stores memories over 12 months, one ``add()`` at a time, in time order:

* **Conversation** (70 % of the history): LoCoMo turns (``turns.jsonl`` and their
  all-MiniLM-L6-v2 vectors, ``emb/minilm-l6-v2/turns.npy`` under ``../shared/data/locomo``, never
  committed), each LoCoMo session one memory session on one day of the year; beyond the 5,882
  turns the conversations are drawn again, each re-drawn turn's vector jittered (std 0.02 per
  dimension, renormalised; as the adversarial suite does).
* **Agent notes** (30 %): standalone memories (``session=None``), a LoCoMo turn's text without
  its speaker, with that turn's vector (the same model's space: no text is embedded here).
* **Labels**: 0-3 entities each (P = 0.35, 0.35, 0.2, 0.1), drawn from a Zipf distribution
  (s = 1.1) over 320 names: people, projects and places, with near-twins (``"Ben"``, ``"Ben's
  brother"``, ``"Bena"``, ``"Benny"``) and every entity of the suite's cases (so the cases' entities
  are also carried by hundreds of unrelated memories, as in real use); 0-2 tags from a small
  vocabulary; about 2 % durable (importance 0.7-1.0, a third of them tier ``core``).
* **Churn**, interleaved with the adds (seeded): ``forget`` of an earlier memory (2 % per add),
  ``update`` (1 %: new text and vector, or new importance), an add that ``supersedes=`` an earlier
  memory sharing its entity (1 %), an unmarked near-duplicate (1 %: an earlier memory's vector
  jittered, no ``supersedes``), and a reinforcing ``recall`` (k = 5, a LoCoMo question as cue) every
  20 adds, so recall counts, idle times, retrieval strengths and co-recall links are those of use.

The **families** are the five cases of seed 003 (``shared/seeds/003_*``), 42 templates each, from
the adversarial suite (:mod:`._memory_cases`, with their committed all-MiniLM-L6-v2 vectors), and
four **trap families** of 40 templates each (issue 38, :mod:`._trap_cases`, vectors in
``fieldrank/data/memory_traps.{json,npy}``, made once by ``tools/make_memory_traps.py``) in which the
cue's words sit in the wrong memories, as in memories users produce: ``te`` (six salient or
chatty memories hold the cue's phrase, the target answers without it), ``tb`` (four recent chatter
memories restate the cue's subject beside the user's durable rule about it), ``td`` (a fact stated,
echoed months later, then restated with a new value, unmarked), ``ta`` (an old durable constraint
sharing no word with the cue against three recent distractors). Each template's memories are added
at their age among the history (case (a)'s constraints are stored at onboarding, a year or more
before the cue). Templates are split per case into a
*tuning* half (anything fitted is fitted there) and a *held-out* half (the figures that count),
stratified by a store-independent difficulty (:func:`template_splits`). Each cue is asked
**bare** (text and vector only) and **hinted** (with ``cue_entities``
for cases (c)/(d)/``td`` and ``cue_tags``: ``rule`` for (a)/(b)/``ta``/``tb``, ``fact`` for
(c)/(d)/``td``). The suite has one
cue per template: paraphrased cues would need an embedding model at run time (none is installed
for this benchmark), so they are not part of it.

A store of size ``n`` holds ``n`` history adds plus the 1,388 template memories (588 of the suite,
800 of the trap families); before issue 38 the templates counted towards ``n``.

Metrics per case, size, mode, cue variant and split (k = 10, ``reinforce=False``):

``union``       the relevant memory reached fused scoring (``RecallResult.candidate_ids``)
``hit@1/@10``   the store's top 1 / top 10
``cos@1/@10``   plain cosine top-k over the tenant's live rows (float32 ``E @ q``, ties to lower id)
``bm25@1/@10``  plain BM25 top-k over the same rows (the store's BM25: the preset's Lucene BM25 with
                neighbour-text expansion)
``false_rescue``  seed 003's definition (the adversarial suite's ``false_rescue_over_relevant``):
                among the returned hits the store's layer rescued (outside the relevance core's top
                10, holding a reserved slot or with boosts above the median boost of the hits the
                core also ranks in its top 10), the share that is irrelevant *and* ranks above the
                relevant memory (or is returned while the relevant memory, in cosine top-10, is not)
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import _memory_cases as cases
from . import _trap_cases as traps
from ._memory_suite import (DEFAULT_LOCOMO_DIR, OTHER_TENANT, Scenario, layer_promotions, load_vectors,
                            relevance_top, scenarios)
from ..memory import MemoryStore

__all__ = ["AgentLife", "CASES", "benchmark_templates", "build", "evaluate", "latency", "load_locomo"]

#: Seed 003's five cases (the adversarial suite's templates), then the trap families (issue 38,
#: :mod:`._trap_cases`): ``ta``, ``tb``, ``td``, ``te`` sharpen cases (a), (b), (d), (e).
CASES = ("a", "b", "c", "d", "e") + traps.TRAP_CASES
DAY = 86400.0
#: The cues are asked at this instant (2026-01-16 10:00 UTC), the end of the simulated year.
REFERENCE_TIME = 1768557600.0
TENANT = "agent"
K = 10
YEAR_DAYS = 365.0
NOTE_SHARE = 0.3
DURABLE_SHARE = 0.02
REDRAW_JITTER = 0.02
ENTITY_COUNT_P = (0.35, 0.35, 0.2, 0.1)
ZIPF_S = 1.1
TAGS = ("work", "family", "health", "travel", "food", "finance", "home", "plan", "chat", "fact")
P_FORGET, P_UPDATE, P_SUPERSEDE, P_DUPLICATE = 0.02, 0.01, 0.01, 0.01
RECALL_EVERY = 20
SEED = 24

_FIRST_NAMES = (
    "Ben", "Dana", "Maya", "Alex", "Sam", "Lee", "Jordan", "Priya", "Marco", "Karen", "Rosa", "Omar", "Viktor",
    "Emma", "Noah", "Liam", "Olivia", "Ava", "Sophia", "Isabella", "Lucas", "Ethan", "Mason", "Logan", "Elena",
    "Chloe", "Zoe", "Leo", "Nina", "Ivan", "Hana", "Yuki", "Ravi", "Anya", "Tom", "Tim", "Kim", "Jan", "Eva",
    "Ana", "Max", "Mila", "Sara", "Sarah", "Dan", "Mia", "Benny", "Jon", "John", "Joan", "Carl", "Carla", "Paul",
    "Paula", "Rob", "Robin", "Tess", "Tessa", "Fred", "Frida", "Gus", "Greta", "Hugo", "Iris", "Jack", "Jade",
    "Kai", "Lara", "Milo", "Nora", "Otto", "Pia", "Quinn", "Rita", "Seth", "Tara", "Uma", "Vera", "Will", "Xena",
    "Yara", "Zack", "Caroline", "Melanie", "Grandma", "Dad", "Mom", "Aunt May",
)
_PROJECTS = (
    "Atlas", "Apollo", "Orion", "Oberon", "Kestrel", "Falcon", "Helix", "Norcross", "Brightwater", "payments",
    "Phoenix", "Hermes", "Zephyr", "Nimbus", "Vega", "Lyra", "Titan", "Triton", "Mercury", "Gemini", "Polaris",
    "Andromeda", "Cobalt", "Quartz", "Onyx", "Beacon", "Harbor", "Summit", "Cascade", "Meridian",
)
_PLACES = (
    "Lisbon", "Napa", "Denver", "Boston", "Berlin", "Paris", "Tokyo", "Seattle", "Austin", "Madrid", "Oslo",
    "Prague", "Vienna", "Dublin", "Porto", "the Alps", "the lake house", "the office", "the gym", "the clinic",
)


def entity_names(seed: int = SEED) -> list[str]:
    """The entity vocabulary (320 labels, near-twins included), in Zipf rank order (seeded)."""
    names: list[str] = list(dict.fromkeys(_FIRST_NAMES + _PROJECTS + _PLACES))
    # the trap families' entities are carried by unrelated memories too (before the cut at 320)
    names += [entity for template in traps.trap_scenarios() for memory in template["memories"]
              for entity in memory.get("entities", ())]
    names = list(dict.fromkeys(names))
    twins: list[str] = []
    for name in _FIRST_NAMES[:60]:
        twins += [f"{name}'s brother", f"{name}'s sister", name + "a" if not name.endswith("a") else name[:-1]]
    for case_tuple in cases.ENTITY_TWINS:
        twins += [case_tuple[0], case_tuple[1]]
    for case_tuple in cases.STALE_FACTS:
        twins.append(case_tuple[0])
    names = list(dict.fromkeys(names + twins))[:320]
    rng = np.random.default_rng(seed)
    return [names[i] for i in rng.permutation(len(names))]


def load_locomo(locomo_dir: str = DEFAULT_LOCOMO_DIR) -> Optional[dict[str, Any]]:
    """LoCoMo turns, questions and their all-MiniLM-L6-v2 vectors, or None when absent."""
    paths = {name: os.path.join(locomo_dir, name) for name in ("turns.jsonl", "questions.jsonl")}
    vectors = {name: os.path.join(locomo_dir, "emb", "minilm-l6-v2", name) for name in ("turns.npy", "questions.npy")}
    if not all(os.path.exists(p) for p in [*paths.values(), *vectors.values()]):
        return None
    with open(paths["turns.jsonl"], encoding="utf-8") as handle:
        turns = [json.loads(line) for line in handle]
    with open(paths["questions.jsonl"], encoding="utf-8") as handle:
        questions = [json.loads(line) for line in handle]
    return {"turns": turns, "turn_vectors": np.load(vectors["turns.npy"]).astype(np.float32),
            "questions": questions, "question_vectors": np.load(vectors["questions.npy"]).astype(np.float32)}


@dataclass
class Template:
    """One template of a family: its scenario (memories, cue, gold labels), index and split."""

    scenario: Scenario
    index: int
    split: str  # "tune" or "held" (:func:`template_splits`)

    def hints(self) -> dict[str, Any]:
        case = self.scenario.case
        out: dict[str, Any] = {}
        if case in ("a", "b", "ta", "tb"):
            out["cue_tags"] = ("rule",)
        elif case in ("c", "d", "td"):
            out["cue_entities"] = self.scenario.cue_entities
            out["cue_tags"] = ("fact",)
        return out


@dataclass
class AgentLife:
    """A filled store, its templates and what the fill did."""

    store: MemoryStore
    key_to_id: dict[str, int]
    templates: list[Template]
    vectors: dict[str, np.ndarray]
    counts: dict[str, int] = field(default_factory=dict)
    fill_seconds: float = 0.0


def _scenario_labels(scenario: Scenario, memory: dict[str, Any]) -> dict[str, Any]:
    """Tags of a template memory: ``rule`` for the protected rules, ``fact`` for the entity facts,
    ``chat`` for the distractors (so a hinted cue's tags do not name the answer alone)."""
    extra = {k: v for k, v in memory.items() if k not in ("key", "text", "supersedes_key")}
    key = memory["key"]
    if scenario.case in ("a", "b", "ta", "tb"):
        extra["tags"] = ("rule",) if key == scenario.relevant else ("chat",)
    elif scenario.case in ("c", "d", "td"):
        extra["tags"] = ("fact",)
    else:
        extra["tags"] = ("chat",) if key == scenario.relevant else ("health",)
    return extra


def cue_margin(scenario: Scenario, vectors: dict[str, np.ndarray]) -> float:
    """How hard a template is before any store sees it: the cue's cosine with the relevant memory
    minus its best cosine with the template's other memories (the committed vectors only)."""
    q = vectors[scenario.cue]
    own = float(vectors[next(m["text"] for m in scenario.memories if m["key"] == scenario.relevant)] @ q)
    others = [float(vectors[m["text"]] @ q) for m in scenario.memories if m["key"] != scenario.relevant]
    return own - max(others, default=0.0)


def template_splits(suite: Sequence[Scenario], vectors: dict[str, np.ndarray]) -> dict[str, str]:
    """scenario key -> "tune" or "held": per case (and marked or unmarked update, case (d)), templates
    sorted by :func:`cue_margin` (ties: suite order) and dealt tune, held, held, tune, ... so both
    halves hold every difficulty alike.

    A split by index alone put most of case (a)'s hard templates in the tuning half (median plain
    cosine rank of the relevant memory at 10k: 100 there, 15 held out), so the halves disagreed
    for a reason no parameter had. The margin reads only the committed vectors, never a store.
    """
    deal = ("tune", "held", "held", "tune")
    out: dict[str, str] = {}
    for group in sorted({(s.case, s.marked) for s in suite}):
        members = [(cue_margin(s, vectors), i, s.key) for i, s in enumerate(suite) if (s.case, s.marked) == group]
        for j, (_, _, key) in enumerate(sorted(members)):
            out[key] = deal[j % len(deal)]
    return out


def _trap_scenario(template: dict[str, Any]) -> Scenario:
    """A trap template (:func:`._trap_cases.trap_scenarios`) as a :class:`Scenario`, ages as times."""
    memories = []
    for memory in template["memories"]:
        memory = dict(memory)
        memory["created_at"] = REFERENCE_TIME - memory.pop("age_days") * DAY
        memories.append(memory)
    fields = {k: v for k, v in template.items() if k != "memories"}
    return Scenario(memories=memories, **fields)


def benchmark_templates() -> tuple[list[Scenario], dict[str, np.ndarray]]:
    """Every template of the benchmark (the adversarial suite's five cases, then the trap
    families) and the text -> vector map of their committed all-MiniLM-L6-v2 embeddings."""
    vectors = {**load_vectors(), **load_vectors("memory_traps")}
    return scenarios() + [_trap_scenario(t) for t in traps.trap_scenarios()], vectors


def build(n: int, locomo: dict[str, Any], *, params=None, seed: int = SEED,
          progress: Optional[Callable[[str], None]] = None) -> AgentLife:
    """Fill a store the way an agent does: ``n`` history adds, and every template's memories
    (1,388: the suite's 588 and the trap families' 800) among them at their ages."""
    rng = np.random.default_rng(seed + n)
    suite, vectors = benchmark_templates()
    templates: list[Template] = []
    per_case: dict[str, int] = {}
    splits = template_splits(suite, vectors)
    for scenario in suite:
        i = per_case.get(scenario.case, 0)
        per_case[scenario.case] = i + 1
        templates.append(Template(scenario, i, splits[scenario.key]))
    history = n
    turns, turn_vectors = locomo["turns"], locomo["turn_vectors"]
    questions, question_vectors = locomo["questions"], locomo["question_vectors"]
    names = entity_names(seed)
    zipf = 1.0 / np.arange(1, len(names) + 1) ** ZIPF_S
    zipf /= zipf.sum()

    # --- the history: conversation turns (sessions on days of the year) and standalone notes
    is_note = rng.random(history) < NOTE_SHARE
    n_turns = int((~is_note).sum())
    source = np.empty(history, dtype=np.int64)
    source[~is_note] = np.arange(n_turns) % len(turns)
    source[is_note] = rng.integers(0, len(turns), int(is_note.sum()))
    lap = np.zeros(history, dtype=np.int64)
    lap[~is_note] = np.arange(n_turns) // len(turns)
    embeddings = turn_vectors[source].copy()
    jitter = lap > 0
    jitter[is_note] = rng.random(int(is_note.sum())) < 0.5  # a note re-uses a turn: half of them re-phrased
    if jitter.any():
        moved = embeddings[jitter] + rng.normal(0.0, REDRAW_JITTER, (int(jitter.sum()), embeddings.shape[1])).astype(
            np.float32)
        embeddings[jitter] = moved / np.linalg.norm(moved, axis=1, keepdims=True)
    session_names = [None if note else f"{turns[s]['sample_id']}/s{turns[s]['session']}/lap{l}"
                     for note, s, l in zip(is_note.tolist(), source.tolist(), lap.tolist())]
    unique_sessions = sorted({s for s in session_names if s is not None})
    session_day = dict(zip(unique_sessions, rng.uniform(0.0, YEAR_DAYS, len(unique_sessions)).tolist()))
    created = np.empty(history)
    position_in_session: dict[str, int] = {}
    for i, session in enumerate(session_names):
        if session is None:
            created[i] = REFERENCE_TIME - rng.uniform(0.0, YEAR_DAYS) * DAY
        else:
            j = position_in_session.get(session, 0)
            position_in_session[session] = j + 1
            created[i] = REFERENCE_TIME - session_day[session] * DAY + 60.0 * j
    created = np.minimum(created, REFERENCE_TIME - 60.0)
    texts = [turns[s]["text"] if note else turns[s]["embed_text"] for note, s in zip(is_note.tolist(), source.tolist())]
    entity_count = rng.choice(len(ENTITY_COUNT_P), size=history, p=ENTITY_COUNT_P)
    entity_lists = [tuple(dict.fromkeys(names[j] for j in rng.choice(len(names), size=c, p=zipf))) for c in
                    entity_count.tolist()]
    tag_lists = [tuple(dict.fromkeys(TAGS[j] for j in rng.integers(0, len(TAGS), rng.integers(0, 3)))) for _ in
                 range(history)]
    durable = rng.random(history) < DURABLE_SHARE
    importance = np.where(durable, rng.uniform(0.7, 1.0, history), rng.uniform(0.05, 0.6, history))
    tier = np.where(durable & (rng.random(history) < 1 / 3), "core", "episodic")

    # --- events in time order: history adds and template memories at their ages
    events: list[tuple[float, int, Any]] = [(float(created[i]), 1, i) for i in range(history)]
    for t in templates:
        for memory in t.scenario.memories:
            events.append((float(memory["created_at"]), 0, (t, memory)))
    events.sort(key=lambda e: (e[0], e[1]))
    store = MemoryStore(dim=embeddings.shape[1], **({} if params is None else {"params": params}))
    key_to_id: dict[str, int] = {}
    template_ids: set[int] = set()
    history_ids: list[int] = []
    entity_of_id: dict[int, tuple[str, ...]] = {}
    counts = {"add": 0, "forget": 0, "update": 0, "supersede": 0, "duplicate": 0, "recall": 0}
    start = time.perf_counter()
    ops = rng.random((len(events), 5))
    picks = rng.random((len(events), 3))
    for e, (at, kind, payload) in enumerate(events):
        if kind == 0:
            t, memory = payload
            extra = _scenario_labels(t.scenario, memory)
            extra.setdefault("tenant", TENANT)
            if "supersedes_key" in memory:
                extra["supersedes"] = key_to_id[memory["supersedes_key"]]
            memory_id = store.add(memory["text"], vectors[memory["text"]], **extra)
            key_to_id[memory["key"]] = memory_id
            template_ids.add(memory_id)
            counts["add"] += 1
        else:
            i = payload
            supersedes = None
            if history_ids and ops[e, 2] < P_SUPERSEDE:  # a correction of an earlier memory
                candidate = history_ids[int(picks[e, 0] * len(history_ids))]
                if candidate in store:
                    supersedes = candidate
                    entity_lists[i] = entity_of_id.get(candidate, ()) or entity_lists[i]
            memory_id = store.add(texts[i], embeddings[i], tenant=TENANT, importance=float(importance[i]),
                                  tier=str(tier[i]), tags=tag_lists[i], entities=entity_lists[i],
                                  created_at=float(created[i]), session=session_names[i], supersedes=supersedes)
            counts["add"] += 1
            counts["supersede"] += supersedes is not None
            history_ids.append(memory_id)
            entity_of_id[memory_id] = entity_lists[i]
            if ops[e, 3] < P_DUPLICATE and len(history_ids) > 1:  # an unmarked restatement of an earlier one
                earlier = history_ids[int(picks[e, 1] * (len(history_ids) - 1))]
                if earlier in store:
                    old = store.get(earlier)
                    moved = old.embedding + rng.normal(0.0, REDRAW_JITTER, old.embedding.size).astype(np.float32)
                    history_ids.append(store.add(old.text, moved / np.linalg.norm(moved), tenant=TENANT,
                                                 importance=old.importance, entities=old.entities, tags=old.tags,
                                                 created_at=float(created[i])))
                    counts["duplicate"] += 1
                    counts["add"] += 1
        if history_ids and ops[e, 0] < P_FORGET:
            victim = history_ids[int(picks[e, 2] * len(history_ids))]
            if victim in store:
                store.forget(victim)
                counts["forget"] += 1
        if history_ids and ops[e, 1] < P_UPDATE:
            target = history_ids[int(picks[e, 0] * len(history_ids))]
            if target in store:
                if ops[e, 4] < 0.5:
                    s = int(rng.integers(0, len(turns)))
                    store.update(target, text=turns[s]["text"], embedding=turn_vectors[s])
                else:
                    store.update(target, importance=float(rng.uniform(0.05, 0.6)))
                counts["update"] += 1
        if e % RECALL_EVERY == RECALL_EVERY - 1:
            q = int(rng.integers(0, len(questions)))
            store.recall(questions[q]["question"], question_vectors[q], 5, tenant=TENANT, at_time=max(at, 0.0) + 60.0)
            counts["recall"] += 1
        if progress is not None and e % 10000 == 9999:
            progress(f"  {e + 1}/{len(events)} events, {time.perf_counter() - start:.0f} s")
    return AgentLife(store, key_to_id, templates, vectors, counts, time.perf_counter() - start)


def _tenant_view(store: MemoryStore) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, ids, contiguous float32 embeddings) of the main tenant's live rows (read-only use)."""
    generation = store._generation
    n = generation.n
    mask = generation.live.buffer[:n] & (generation.tenant_codes.buffer[:n] == generation.tenant_code[TENANT])
    rows = np.flatnonzero(mask)
    return rows, generation.ids.buffer[:n][rows].copy(), np.ascontiguousarray(generation.embeddings.buffer[:n][rows])


def evaluate(life: AgentLife, modes: Sequence[str] = ("hybrid",), k: int = K) -> list[dict[str, Any]]:
    """One record per (mode, variant, split, case) with every metric (see the module notes)."""
    store = life.store
    generation = store._generation
    rows, tenant_ids, E = _tenant_view(store)
    n = generation.n
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    records: list[dict[str, Any]] = []
    baselines: dict[str, tuple[list[int], list[int]]] = {}
    for t in life.templates:
        cue = t.scenario.cue
        if cue in baselines:
            continue
        q = life.vectors[cue]
        cos = E @ q
        dense = tenant_ids[np.lexsort((tenant_ids, -cos))[:k]].tolist()
        lexical = generation.lexical.scores_of_rows(generation.texts, cue, mask)[rows]
        order = np.lexsort((tenant_ids, -lexical))[:k]
        bm25 = tenant_ids[order[lexical[order] > 0]].tolist()
        baselines[cue] = (dense, bm25)
    for mode in modes:
        for variant in ("bare", "hinted"):
            acc: dict[tuple[str, str], dict[str, float]] = {}
            for t in life.templates:
                s = t.scenario
                hints = t.hints() if variant == "hinted" else {}
                result = store.recall(s.cue, life.vectors[s.cue], k, tenant=TENANT, mode=mode, at_time=REFERENCE_TIME,
                                      reinforce=False, **hints)
                ids = result.ids.tolist()
                relevant = life.key_to_id[s.relevant]
                dense, bm25 = baselines[s.cue]
                a = acc.setdefault((t.split, s.case), {
                    "n": 0, "union": 0, "hit@1": 0, "hit@10": 0, "cos@1": 0, "cos@10": 0, "bm25@1": 0, "bm25@10": 0,
                    "rescues": 0, "false_rescues": 0, "stale_above": 0})
                a["n"] += 1
                a["union"] += relevant in set(result.candidate_ids.tolist())
                a["hit@1"] += bool(ids) and ids[0] == relevant
                a["hit@10"] += relevant in ids
                a["cos@1"] += bool(dense) and dense[0] == relevant
                a["cos@10"] += relevant in dense
                a["bm25@1"] += bool(bm25) and bm25[0] == relevant
                a["bm25@10"] += relevant in bm25
                for hit_id, over in layer_promotions(result, relevance_top(result, k), relevant, dense):
                    a["rescues"] += 1
                    a["false_rescues"] += hit_id != relevant and over
                if s.stale is not None:
                    stale = life.key_to_id[s.stale]
                    a["stale_above"] += stale in ids and (relevant not in ids or ids.index(stale) < ids.index(relevant))
            for (split, case), a in sorted(acc.items()):
                count = max(a["n"], 1)
                record = {"mode": mode, "variant": variant, "split": split, "case": case, "cues": a["n"]}
                for key in ("union", "hit@1", "hit@10", "cos@1", "cos@10", "bm25@1", "bm25@10", "stale_above"):
                    record[key] = a[key] / count
                record["rescues"] = a["rescues"]
                record["false_rescue"] = a["false_rescues"] / a["rescues"] if a["rescues"] else 0.0
                records.append(record)
    return records


def latency(life: AgentLife, repeats: int = 5, cues: int = 40, k: int = K) -> dict[str, float]:
    """Recall (default mode, bare held-out cues, ``reinforce=False``) and one fp32 scan
    (``fieldrank.prefilter`` over the tenant's live rows, contiguous) timed side by side: each cue's
    recall then its scan, ``repeats`` rounds; medians in ms and their ratio."""
    from .. import prefilter

    store = life.store
    _, _, E = _tenant_view(store)
    chosen = [t.scenario for t in life.templates if t.split == "held"][:cues]
    recall_ms: list[float] = []
    scan_ms: list[float] = []
    for s in chosen:  # warm-up: the per-generation caches
        store.recall(s.cue, life.vectors[s.cue], k, tenant=TENANT, at_time=REFERENCE_TIME, reinforce=False)
    for _ in range(repeats):
        for s in chosen:
            q = life.vectors[s.cue]
            begin = time.perf_counter()
            store.recall(s.cue, q, k, tenant=TENANT, at_time=REFERENCE_TIME, reinforce=False)
            middle = time.perf_counter()
            prefilter(E, q, k)
            end = time.perf_counter()
            recall_ms.append((middle - begin) * 1000.0)
            scan_ms.append((end - middle) * 1000.0)
    recall_p50, scan_p50 = float(np.median(recall_ms)), float(np.median(scan_ms))
    return {"rows": int(E.shape[0]), "recall_p50_ms": recall_p50, "recall_p95_ms": float(np.percentile(recall_ms, 95)),
            "scan_p50_ms": scan_p50, "ratio": recall_p50 / scan_p50, "samples": len(recall_ms)}
