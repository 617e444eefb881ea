"""The agent-life benchmark's trap families (issue 38): each template holds the trap it claims."""

from __future__ import annotations

import numpy as np

from fieldrank.bm25 import BM25Index
from fieldrank.evaluation import _agent_life as al
from fieldrank.evaluation import _trap_cases as traps
from fieldrank.evaluation._memory_suite import load_vectors


def _shares_a_term(text: str, query: str) -> bool:
    """Whether BM25 (the store's tokenizer: stop words out, stemmed) finds a term of ``query`` in ``text``."""
    return bool(BM25Index([text, "unrelated filler words only"]).scores(query)[0] > 0)


def _by_case(case: str) -> list[dict]:
    return [t for t in traps.trap_scenarios() if t["case"] == case]


def test_every_trap_text_has_its_committed_vector():
    vectors = load_vectors("memory_traps")  # sha256 checked
    texts = traps.trap_texts()
    assert len(texts) == len(set(texts)) and set(texts) <= set(vectors)
    norms = np.linalg.norm(np.stack([vectors[t] for t in texts]), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-4)


def test_trap_templates_are_many_and_deterministic():
    assert traps.trap_scenarios() == traps.trap_scenarios()
    assert traps.trap_scenarios(1) != traps.trap_scenarios(2)  # names, months and ages are drawn
    for case in traps.TRAP_CASES:
        templates = _by_case(case)
        assert len(templates) >= 40
        assert len({t["cue"] for t in templates}) == len(templates)


def test_salient_trap_puts_the_cue_phrase_in_the_distractors_only():
    """te: the target answers without the cue's phrase; every distractor holds it, three are salient."""
    for (cue, phrase, _, _), template in zip(traps.TRAP_SALIENT, _by_case("te")):
        assert phrase.lower() in cue.lower()
        memories = {m["key"]: m for m in template["memories"]}
        target = memories.pop(template["relevant"])
        assert not _shares_a_term(target["text"], phrase), target["text"]
        assert all(phrase in m["text"] for m in memories.values())
        salient = [m for m in memories.values() if m["importance"] >= 0.7 and abs(m["valence"]) >= 0.8]
        assert len(salient) >= 3


def test_chatter_trap_restates_the_cue_beside_a_durable_rule():
    """tb: every chatter memory restates the cue's subject and is newer than the durable rule."""
    for (_, topic, _), template in zip(traps.TRAP_RULES, _by_case("tb")):
        rule, *chatter = template["memories"]
        assert rule["key"] == template["relevant"] and rule["importance"] >= 0.7
        assert len(chatter) >= 4 and all(topic in m["text"] for m in chatter)
        assert all(m["age_days"] < rule["age_days"] and m["importance"] < 0.7 for m in chatter)


def test_restatement_trap_is_unmarked_and_months_apart():
    """td: stale, echo, current in time order, months apart, no supersedes, one entity."""
    for template in _by_case("td"):
        memories = {m["key"].rsplit("_", 1)[1]: m for m in template["memories"]}
        assert template["relevant"].endswith("_current") and template["stale"].endswith("_stale")
        assert memories["stale"]["age_days"] > memories["echo"]["age_days"] > memories["current"]["age_days"]
        assert memories["stale"]["age_days"] - memories["current"]["age_days"] >= 120
        assert all("supersedes_key" not in m for m in template["memories"])
        assert {tuple(m["entities"]) for m in template["memories"]} == {template["cue_entities"]}


def test_constraint_trap_shares_no_word_with_its_cue():
    """ta: the old durable constraint shares no BM25 term with the cue; the distractors are recent."""
    for template in _by_case("ta"):
        rule, *distractors = template["memories"]
        assert not _shares_a_term(rule["text"], template["cue"]), rule["text"]
        assert rule["age_days"] >= 365 and rule["importance"] >= 0.7 and rule["tier"] == "core"
        assert all(m["age_days"] <= 10 for m in distractors)


def test_trap_scenarios_enter_the_benchmark_with_their_times():
    suite, vectors = al.benchmark_templates()
    trap_suite = [s for s in suite if s.case in traps.TRAP_CASES]
    assert len(trap_suite) == len(traps.trap_scenarios())
    for scenario in trap_suite:
        assert scenario.cue in vectors and all(m["text"] in vectors for m in scenario.memories)
        assert all(m["created_at"] < al.REFERENCE_TIME and "age_days" not in m for m in scenario.memories)
