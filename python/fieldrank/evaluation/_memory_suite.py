"""The memory store's adversarial suite (issue 17): five cases of >= 40 scenarios among filler.

Scenarios (:mod:`._memory_cases`, written for this project) and their precomputed all-MiniLM-L6-v2
embeddings (``fieldrank/data/memory_adversarial.{json,npy}``, made once by
``tools/make_memory_adversarial.py``) are committed. The filler is realistic conversational
text drawn at run time from LoCoMo (``turns.jsonl`` + ``emb/minilm-l6-v2/turns.npy`` under
``../shared/data/locomo``, never committed): each conversation session becomes a memory session,
about 2 % of the filler is rated important (durable), ages spread over two years. LoCoMo has
5,882 turns; larger sizes draw turns again with a small embedding jitter (documented in the
report). Every scenario memory and every filler memory lives in one tenant, as in a real store;
case (c)'s other-tenant twins live in a second tenant.

Cases and gold labels (one relevant memory per cue):

* (a) an old (>= 1 year), durable, never-recalled constraint that shares no word with the cue,
  against two recent close distractors: relevant = protected = the constraint;
* (b) a durable rule against two recent chatter messages closer to the cue: relevant = protected
  = the rule;
* (c) the right memory (the cue's entity) against a lexical twin about another entity and a twin
  in another tenant (forbidden); the cue carries its entity;
* (d) a current fact against the stale fact it replaces and a graph neighbour sharing the entity;
  even-numbered scenarios mark the replacement (``supersedes=``), odd ones do not;
* (e) a plain relevant memory against an important, strongly valenced memory sharing words.

Metrics per case, size and mode (over the case's cues; k = 10; ``reinforce=False``):

``protected_recall@budget``  protected memories in the gated union that reaches fused scoring.
``hit@1``, ``hit@10``        the relevant memory at rank 1 / in the top 10.
``dense_hit@1``, ``dense_hit@10``  the same for plain dense top-10 (cosine over the tenant's rows).
``relevance_hit@1/@10``      the same for the relevance core alone (the ``default`` scorer).
``signal_contribution``      per generator: the share of returned hits it admitted.
``rescued_by_non_dense``     relevant hits that plain dense top-10 misses.
``false_rescue_rate``        among the hits the store's layer rescued, the share that is not
                             relevant (its count in ``false_rescues``, the rescues in
                             ``rescues_by_layer``). A rescue is a returned hit outside the relevance
                             core's own top 10 that holds a reserved slot or whose boosts (score −
                             relevance) exceed the median boost of the returned hits the core also
                             ranks in its top 10 (a hit that only moved up because a distractor was
                             demoted is not a rescue).
``false_rescue_over_relevant_rate``  the seed thread's definition (a non-dense signal pulling an
                             irrelevant memory into the top k *over a relevant one*): among the
                             same rescues, the irrelevant ones that rank above the relevant memory,
                             or that are returned while the relevant memory, in plain dense top-k,
                             is not (count in ``false_rescues_over_relevant``).
``false_rescue_rate_vs_dense``  the thread's variant: among returned hits outside the dense
                             top-50, the share that is not relevant (filler the BM25 half of the
                             relevance core likes counts here).
``stale_below_current``      case (d): share of cues whose stale fact ranks below the current one
                             (absent from the top 10 counts as below), marked and unmarked apart.
``latency_p50_ms``, ``latency_p95_ms``  wall clock of ``recall``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any, Optional, Sequence

import numpy as np

from . import _memory_cases as cases
from ..memory import MemoryStore

__all__ = [
    "CASES", "DEFAULT_LOCOMO_DIR", "Scenario", "build_store", "case_texts", "evaluate", "layer_promotions",
    "load_filler", "load_vectors", "relevance_top", "scenarios",
]

CASES = ("a", "b", "c", "d", "e")
DAY = 86400.0
#: The cues are asked at this instant (2026-01-16 10:00 UTC).
REFERENCE_TIME = 1768557600.0
MAIN_TENANT = "agent"
OTHER_TENANT = "other-agent"
K = 10
#: The dense top-n the thread's false-rescue variant compares against (the dense quota).
DENSE_QUOTA = 50
#: Share of filler rated important (durable), as in a real store.
IMPORTANT_SHARE = 0.02
#: Std of the per-dimension jitter added to re-drawn LoCoMo turns (then renormalised).
REDRAW_JITTER = 0.02
FILLER_AGE_DAYS = 730.0
SEED = 17
DEFAULT_LOCOMO_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data", "locomo")


def case_texts() -> list[str]:
    """Every text of the five cases (memories and cues), in a fixed order (duplicates possible)."""
    out: list[str] = []
    for constraint, cue, d1, d2 in cases.CONSTRAINTS:
        out += [constraint, cue, d1, d2]
    for rule, cue, c1, c2 in cases.RULES_VS_CHATTER:
        out += [rule, cue, c1, c2]
    for _, _, cue, right, wrong, other in cases.ENTITY_TWINS:
        out += [cue, right, wrong, other]
    for _, cue, stale, current, neighbour in cases.STALE_FACTS:
        out += [cue, stale, current, neighbour]
    for cue, relevant, salient in cases.SALIENT:
        out += [cue, relevant, salient]
    return out


def load_vectors(name: str = "memory_adversarial") -> dict[str, np.ndarray]:
    """text -> float32 unit embedding, from the committed files ``fieldrank/data/<name>.{json,npy}``
    (sha256 checked): the adversarial suite's by default, ``"memory_traps"`` for the agent-life
    benchmark's trap families (:mod:`._trap_cases`)."""
    data = resources.files("fieldrank").joinpath("data")
    manifest = json.loads(data.joinpath(f"{name}.json").read_text(encoding="utf-8"))
    raw = data.joinpath(f"{name}.npy").read_bytes()
    if hashlib.sha256(raw).hexdigest() != manifest["embeddings_sha256"]:
        msg = f"{name}.npy does not match its sha256 in {name}.json"
        raise ValueError(msg)
    import io

    vectors = np.load(io.BytesIO(raw), allow_pickle=False)
    return {text: vectors[i] for i, text in enumerate(manifest["texts"])}


@dataclass
class Scenario:
    """One cue with its memories (dicts of ``add`` keywords plus ``key`` and ``text``) and gold labels."""

    case: str
    key: str
    cue: str
    memories: list[dict[str, Any]]
    relevant: str
    protected: tuple[str, ...] = ()
    distractors: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    cue_entities: tuple[str, ...] = ()
    stale: Optional[str] = None
    marked: bool = False


def _memory(key: str, text: str, age_days: float, importance: float, **extra: Any) -> dict[str, Any]:
    return {"key": key, "text": text, "created_at": REFERENCE_TIME - age_days * DAY, "importance": importance,
            **extra}


def _protected_rule(case: str, key: str, cue: str, rule: dict[str, Any], chatter: list[dict[str, Any]]) -> Scenario:
    """Cases a and b: an old ``rule`` (the relevant memory, protected) against recent ``chatter``."""
    return Scenario(case, key, cue, [rule, *chatter], relevant=rule["key"], protected=(rule["key"],),
                    distractors=tuple(memory["key"] for memory in chatter))


def scenarios() -> list[Scenario]:
    """The five cases as :class:`Scenario` objects (deterministic)."""
    out: list[Scenario] = []
    for i, (constraint, cue, d1, d2) in enumerate(cases.CONSTRAINTS):
        key = f"a{i}"
        rule_memory = _memory(f"{key}_rule", constraint, 365 + 9 * i, 0.9, tier="core")
        chatter = [_memory(f"{key}_d1", d1, 1 + i % 3, 0.3), _memory(f"{key}_d2", d2, 2 + i % 4, 0.3)]
        out.append(_protected_rule("a", key, cue, rule_memory, chatter))
    for i, (rule, cue, c1, c2) in enumerate(cases.RULES_VS_CHATTER):
        key = f"b{i}"
        rule_memory = _memory(f"{key}_rule", rule, 120 + 5 * i, 0.8, tier="semantic")
        chatter = [_memory(f"{key}_c1", c1, 1 + i % 2, 0.2), _memory(f"{key}_c2", c2, 1 + i % 3, 0.2)]
        out.append(_protected_rule("b", key, cue, rule_memory, chatter))
    for i, (entity, other, cue, right, wrong, twin) in enumerate(cases.ENTITY_TWINS):
        key = f"c{i}"
        out.append(Scenario("c", key, cue, [
            _memory(f"{key}_right", right, 40 + i, 0.5, entities=[entity]),
            _memory(f"{key}_wrong", wrong, 5 + i % 5, 0.5, entities=[other]),
            _memory(f"{key}_tenant", twin, 3, 0.5, entities=[entity], tenant=OTHER_TENANT),
        ], relevant=f"{key}_right", distractors=(f"{key}_wrong",), forbidden=(f"{key}_tenant",),
            cue_entities=(entity,)))
    for i, (entity, cue, stale, current, neighbour) in enumerate(cases.STALE_FACTS):
        key = f"d{i}"
        marked = i % 2 == 0
        current_memory = _memory(f"{key}_current", current, 20 + i % 7, 0.5, entities=[entity])
        if marked:
            current_memory["supersedes_key"] = f"{key}_stale"
        out.append(Scenario("d", key, cue, [
            _memory(f"{key}_stale", stale, 300 + 3 * i, 0.5, entities=[entity]),
            _memory(f"{key}_neighbour", neighbour, 100 + i, 0.5, entities=[entity]),
            current_memory,
        ], relevant=f"{key}_current", distractors=(f"{key}_stale", f"{key}_neighbour"), cue_entities=(entity,),
            stale=f"{key}_stale", marked=marked))
    for i, (cue, relevant, salient) in enumerate(cases.SALIENT):
        key = f"e{i}"
        out.append(Scenario("e", key, cue, [
            _memory(f"{key}_right", relevant, 40 + i, 0.4),
            _memory(f"{key}_salient", salient, 60 + 2 * i, 0.95, valence=-0.9 if i % 3 else 0.9),
        ], relevant=f"{key}_right", distractors=(f"{key}_salient",)))
    return out


def load_filler(n: int, locomo_dir: str = DEFAULT_LOCOMO_DIR, seed: int = SEED) -> Optional[dict[str, Any]]:
    """``n`` LoCoMo turns as filler memories (texts, vectors, ``add_many`` keywords), or None if absent.

    Turns are taken in conversation order (so sessions stay contiguous, as an agent stores them);
    beyond the 5,882 turns the conversations are drawn again, each re-drawn turn's embedding
    jittered by :data:`REDRAW_JITTER` per dimension and renormalised. About
    :data:`IMPORTANT_SHARE` of the filler is important (importance 0.7-1.0, durable), the rest
    0.05-0.6; ages are uniform over two years (sessions keep one date each).
    """
    turns_path = os.path.join(locomo_dir, "turns.jsonl")
    vectors_path = os.path.join(locomo_dir, "emb", "minilm-l6-v2", "turns.npy")
    if not (os.path.exists(turns_path) and os.path.exists(vectors_path)):
        return None
    with open(turns_path, encoding="utf-8") as handle:
        turns = [json.loads(line) for line in handle]
    vectors = np.load(vectors_path).astype(np.float32)
    rng = np.random.default_rng(seed + n)
    rows = np.arange(n) % len(turns)
    embeddings = vectors[rows].copy()
    redrawn = np.arange(n) >= len(turns)
    if redrawn.any():
        noise = rng.normal(0.0, REDRAW_JITTER, size=(int(redrawn.sum()), embeddings.shape[1])).astype(np.float32)
        jittered = embeddings[redrawn] + noise
        embeddings[redrawn] = jittered / np.linalg.norm(jittered, axis=1, keepdims=True)
    lap = np.arange(n) // len(turns)
    session_names = [f"{turns[r]['sample_id']}/s{turns[r]['session']}/lap{l}" for r, l in zip(rows.tolist(),
                                                                                             lap.tolist())]
    unique_sessions, session_index = np.unique(session_names, return_inverse=True)
    session_age = rng.uniform(0.5, FILLER_AGE_DAYS, size=unique_sessions.size)
    important = rng.random(n) < IMPORTANT_SHARE
    importance = np.where(important, rng.uniform(0.7, 1.0, n), rng.uniform(0.05, 0.6, n))
    return {
        "texts": [turns[r]["embed_text"] for r in rows.tolist()],
        "embeddings": embeddings,
        "importances": importance,
        "created_at": REFERENCE_TIME - session_age[session_index] * DAY,
        "sessions": session_names,
        "important_count": int(important.sum()),
    }


def build_store(filler: dict[str, Any], vectors: dict[str, np.ndarray], suite: Sequence[Scenario],
                params=None) -> tuple[MemoryStore, dict[str, int]]:
    """Filler first (it is the agent's history), then every scenario memory; returns store, key -> id."""
    kwargs = {} if params is None else {"params": params}
    store = MemoryStore(dim=filler["embeddings"].shape[1], **kwargs)
    filler = dict(filler)
    filler.pop("important_count", None)
    store.add_many(filler.pop("texts"), filler.pop("embeddings"), tenants=MAIN_TENANT, **filler)
    key_to_id: dict[str, int] = {}
    for scenario in suite:
        for memory in scenario.memories:
            extra = {k: v for k, v in memory.items() if k not in ("key", "text", "supersedes_key")}
            extra.setdefault("tenant", MAIN_TENANT)
            if "supersedes_key" in memory:
                extra["supersedes"] = key_to_id[memory["supersedes_key"]]
            key_to_id[memory["key"]] = store.add(memory["text"], vectors[memory["text"]], **extra)
    return store, key_to_id


def relevance_top(result: Any, k: int) -> list[int]:
    """The first ``k`` ids the relevance generator admitted (empty when it admitted none)."""
    top = result.admitted.get("relevance")
    return [] if top is None else top[:k].tolist()


def layer_promotions(result: Any, top: list[int], relevant: int, dense_top: Any) -> list[tuple[int, bool]]:
    """The hits a layer past relevance put into the result, each ``(id, over_relevant)``.

    A hit outside the relevance top ``top`` is promoted when it holds a reserved slot or its boost
    (score minus relevance) beats the median boost of the hits that are in ``top``. ``over_relevant``
    is the seed thread's sense of a costly promotion: it ranks above the relevant memory, or the
    relevant memory is missing while plain dense top-k (``dense_top``) had it.
    """
    if not top:
        return []
    kept = [h.score - h.factors.relevance for h in result if h.id in top]
    typical = float(np.median(kept)) if kept else 0.0
    ids = result.ids.tolist()
    return [(hit.id, ids.index(relevant) > ids.index(hit.id) if relevant in ids else relevant in dense_top)
            for hit in result
            if hit.id not in top and (hit.reserved_slot or hit.score - hit.factors.relevance > typical)]


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else 0.0


def evaluate(store: MemoryStore, key_to_id: dict[str, int], vectors: dict[str, np.ndarray],
             suite: Sequence[Scenario], modes: Sequence[str] = ("hybrid",), k: int = K) -> dict[str, dict[str, Any]]:
    """Metrics per mode and case (see the module notes)."""
    generation = store._generation  # read-only use: the tenant's embeddings for plain dense top-k
    n = generation.n
    live = generation.live.buffer[:n]
    code = generation.tenant_code[MAIN_TENANT]
    tenant_mask = live & (generation.tenant_codes.buffer[:n] == code)
    tenant_rows = np.flatnonzero(tenant_mask)
    E = generation.embeddings.buffer[:n][tenant_rows]
    tenant_ids = generation.ids.buffer[:n][tenant_rows]
    out: dict[str, dict[str, Any]] = {}
    for mode in modes:
        per_case: dict[str, dict[str, Any]] = {}
        for case in [c for c in CASES if any(s.case == c for s in suite)]:
            selected = [s for s in suite if s.case == case]
            acc = {"protected": 0, "protected_in_union": 0, "hit1": 0, "hit10": 0, "dense_hit1": 0, "dense_hit10": 0,
                   "relevance_hit1": 0, "relevance_hit10": 0, "rescued": 0, "layer_hits": 0, "false_rescues": 0,
                   "false_over_relevant": 0,
                   "outside_dense": 0, "false_vs_dense": 0, "returned": 0, "forbidden": 0,
                   "stale_below_marked": 0, "marked": 0, "stale_below_unmarked": 0, "unmarked": 0}
            contribution: dict[str, int] = {}
            latencies: list[float] = []
            for scenario in selected:
                q = vectors[scenario.cue]
                start = time.perf_counter()
                result = store.recall(scenario.cue, q, k, tenant=MAIN_TENANT, mode=mode, at_time=REFERENCE_TIME,
                                      cue_entities=scenario.cue_entities or None, reinforce=False)
                latencies.append((time.perf_counter() - start) * 1000.0)
                ids = result.ids.tolist()
                relevant = key_to_id[scenario.relevant]
                cos = E @ q
                dense_order = tenant_ids[np.lexsort((tenant_ids, -cos))]
                dense_top, dense_quota = set(dense_order[:k].tolist()), set(dense_order[:DENSE_QUOTA].tolist())
                top = relevance_top(result, k)
                union = set(result.candidate_ids.tolist())
                for key in scenario.protected:
                    acc["protected"] += 1
                    acc["protected_in_union"] += key_to_id[key] in union
                acc["hit1"] += bool(ids) and ids[0] == relevant
                acc["hit10"] += relevant in ids
                acc["dense_hit1"] += int(dense_order[0]) == relevant
                acc["dense_hit10"] += relevant in dense_top
                acc["relevance_hit1"] += bool(top) and top[0] == relevant
                acc["relevance_hit10"] += relevant in top
                acc["rescued"] += relevant in ids and relevant not in dense_top
                for hit_id, over_relevant in layer_promotions(result, top, relevant, dense_top):
                    acc["layer_hits"] += 1
                    acc["false_rescues"] += hit_id != relevant
                    acc["false_over_relevant"] += hit_id != relevant and over_relevant
                for memory_id in ids:
                    if memory_id not in dense_quota:
                        acc["outside_dense"] += 1
                        acc["false_vs_dense"] += memory_id != relevant
                acc["returned"] += len(ids)
                acc["forbidden"] += sum(key_to_id[f] in ids for f in scenario.forbidden)
                for hit in result:
                    for generator in hit.admitted_by:
                        contribution[generator] = contribution.get(generator, 0) + 1
                if scenario.stale is not None:
                    stale = key_to_id[scenario.stale]
                    below = relevant in ids and (stale not in ids or ids.index(stale) > ids.index(relevant))
                    below = below or (stale not in ids)
                    tag = "marked" if scenario.marked else "unmarked"
                    acc[tag] += 1
                    acc[f"stale_below_{tag}"] += below
            count = max(len(selected), 1)
            per_case[case] = {
                "scenarios": len(selected),
                "protected_recall@budget": acc["protected_in_union"] / acc["protected"] if acc["protected"] else None,
                "hit@1": acc["hit1"] / count, "hit@10": acc["hit10"] / count,
                "dense_hit@1": acc["dense_hit1"] / count, "dense_hit@10": acc["dense_hit10"] / count,
                "relevance_hit@1": acc["relevance_hit1"] / count, "relevance_hit@10": acc["relevance_hit10"] / count,
                "signal_contribution": {g: c / max(acc["returned"], 1) for g, c in sorted(contribution.items())},
                "rescued_by_non_dense": acc["rescued"],
                "false_rescues": acc["false_rescues"], "rescues_by_layer": acc["layer_hits"],
                "false_rescue_rate": acc["false_rescues"] / acc["layer_hits"] if acc["layer_hits"] else 0.0,
                "false_rescues_over_relevant": acc["false_over_relevant"],
                "false_rescue_over_relevant_rate": (acc["false_over_relevant"] / acc["layer_hits"]
                                                    if acc["layer_hits"] else 0.0),
                "false_rescue_rate_vs_dense": acc["false_vs_dense"] / acc["outside_dense"] if acc["outside_dense"]
                else 0.0,
                "forbidden_returned": acc["forbidden"],
                "stale_below_current_marked": acc["stale_below_marked"] / acc["marked"] if acc["marked"] else None,
                "stale_below_current_unmarked": (acc["stale_below_unmarked"] / acc["unmarked"] if acc["unmarked"]
                                                 else None),
                "latency_p50_ms": _percentile(latencies, 50), "latency_p95_ms": _percentile(latencies, 95),
            }
        out[mode] = per_case
    return out
