"""The committed adversarial scenario suite, synthetic filler, and the suite's metrics.

The suite (``fieldrank/data/memory_scenarios.json`` + ``.npy``, built once with a real sentence
model by ``tools/make_memory_scenarios.py``) needs only numpy to use: :func:`load_suite` checks the
sha256 of the embeddings, :func:`build_store` loads it into a :class:`MemoryStore` at its
reference time, :func:`evaluate` computes the metrics below per mode.

Metrics (over the suite's cues C, every recall with ``reinforce=False`` at the reference time;
for a cue c: ``U_c`` the gated candidate union of the mode, ``T_c`` its top-k, ``R_c`` the
relevant memories, ``P_c ⊆ R_c`` the protected ones, ``D_c`` the dense generator's admissions
at the same quota, computed for every mode):

``protected_memory_recall@budget``
    Σ_c |P_c ∩ U_c| / Σ_c |P_c|: the share of protected memories that survive candidate
    generation, i.e. reach fused scoring, with the mode's budget (the sum of its quotas).
``protected_hit@k``
    Σ_c |P_c ∩ T_c| / Σ_c |P_c|: the share that is also returned.
``recall@k``
    Σ_c |R_c ∩ T_c| / Σ_c |R_c|.
``distractor_wins``
    Number of (cue, distractor, relevant) triples where the distractor is returned above the
    relevant memory or the relevant memory is not returned at all while the distractor is.
``forbidden_returned``
    Returned memories listed as forbidden (another tenant's); must be 0.
``signal_contribution_rate[g]``
    Σ_c |{t ∈ T_c : g admitted t}| / Σ_c |T_c|: the share of returned hits that generator g
    admitted (a hit admitted by several generators counts for each; rates need not sum to 1).
``rescued_by_non_dense_signal``
    Σ_c |(T_c ∩ R_c) \\ D_c|: relevant hits that the dense top-quota alone would have missed.
``false_rescue_rate``
    Σ_c |T_c \\ R_c \\ D_c| / Σ_c |T_c \\ D_c|: among returned hits outside the dense top-quota,
    the share that is not relevant (0 when there is none). ``false_rescues`` is the numerator.
    With one relevant memory per cue and k = 5, at least four hits per cue are not relevant
    whatever the mode, so read the count together with ``rescued_by_non_dense_signal``.
``latency_p50_ms``, ``latency_p95_ms``
    Percentiles of the wall-clock time of ``MemoryStore.recall`` (``time.perf_counter``) over
    every cue, repeated ``repeats`` times, after one warm-up pass.
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any, Optional, Sequence

import numpy as np

from ..memory import DEFAULT_PARAMS, GENERATORS, MODE_GENERATORS, MODES, MemoryParams, MemoryStore
from ..memory._schema import SECONDS_PER_DAY

__all__ = [
    "SUITE_K", "SUITE_QUOTA", "ScenarioSuite", "build_store", "evaluate", "load_suite", "suite_params",
    "synthetic_filler",
]

JSON_RESOURCE = ("data", "memory_scenarios.json")
#: The suite's store holds about a hundred memories per tenant, so it is evaluated with a tight
#: budget: every generator's quota is 5 (about 5 % of the tenant, as 50 is 5 % of 1,000) and k = 5.
SUITE_QUOTA = 5
SUITE_K = 5


def suite_params(base: MemoryParams = DEFAULT_PARAMS, quota: int = SUITE_QUOTA) -> MemoryParams:
    """``base`` with every generator's quota set to ``quota``."""
    return base.replace(**{f"{g}_quota": quota for g in GENERATORS})

#: Vocabulary of synthetic filler texts (no word of any scenario memory or cue).
_FILLER_WORDS = (
    "amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp",
    "lagoon", "marble", "nectar", "opal", "pebble", "quartz", "reef", "saffron", "tundra", "umber", "violet",
    "willow", "yarrow", "zephyr", "acorn", "bramble", "cedar", "delta", "estuary", "fennel", "glacier",
    "heather", "islet", "jasper", "kestrel", "lichen", "meadow", "nimbus", "orchid", "prairie", "quill",
    "ridge", "sorrel", "thistle", "upland", "vale", "wren", "yew", "zinnia",
)


@dataclass(frozen=True)
class ScenarioSuite:
    """The committed suite: memory and cue records (JSON) and their embeddings."""

    manifest: dict[str, Any]
    embeddings: np.ndarray

    @property
    def memories(self) -> list[dict[str, Any]]:
        return self.manifest["memories"]

    @property
    def cues(self) -> list[dict[str, Any]]:
        return self.manifest["cues"]

    @property
    def reference_time(self) -> float:
        return float(self.manifest["reference_time"])

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    def cue_vector(self, cue: dict[str, Any]) -> np.ndarray:
        return self.embeddings[cue["row"]]


def load_suite() -> ScenarioSuite:
    """Read the committed suite and verify its embeddings (sha256, shape, unit rows).

    Raises
    ------
    ValueError
        If the embeddings do not match the manifest.
    """
    package = resources.files("fieldrank")
    manifest = json.loads(package.joinpath(*JSON_RESOURCE).read_text(encoding="utf-8"))
    raw = package.joinpath("data", manifest["embeddings_file"]).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != manifest["embeddings_sha256"]:
        msg = f"{manifest['embeddings_file']} has sha256 {digest}, the manifest says {manifest['embeddings_sha256']}"
        raise ValueError(msg)
    embeddings = np.load(io.BytesIO(raw), allow_pickle=False)
    if embeddings.dtype != np.float32 or embeddings.shape != (manifest["rows"], manifest["dim"]):
        expected = (manifest["rows"], manifest["dim"])
        msg = f"embeddings must be float32 {expected}, got {embeddings.dtype} {embeddings.shape}"
        raise ValueError(msg)
    return ScenarioSuite(manifest=manifest, embeddings=embeddings)


def memory_columns(suite: ScenarioSuite, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``add_many`` keyword arguments for ``records`` (at the suite's reference time)."""
    ref = suite.reference_time
    return {
        "tenants": [x["tenant"] for x in records],
        "importances": [x["importance"] for x in records],
        "valences": [x["valence"] for x in records],
        "tiers": [x["tier"] for x in records],
        "tags": [x["tags"] for x in records],
        "entities": [x["entities"] for x in records],
        "storage_strengths": [x["storage_strength"] for x in records],
        "created_at": [ref - x["age_days"] * SECONDS_PER_DAY for x in records],
        "last_access": [ref - x["idle_days"] * SECONDS_PER_DAY for x in records],
        "recall_counts": [x["recall_count"] for x in records],
    }


def build_store(
    suite: ScenarioSuite,
    params: MemoryParams = DEFAULT_PARAMS,
    *,
    filler: Optional[dict[str, Any]] = None,
    store: Optional[MemoryStore] = None,
) -> tuple[MemoryStore, dict[str, int]]:
    """A store holding the suite's memories (plus optional ``filler`` from :func:`synthetic_filler`).

    Filler goes in first (older rows), then the suite. Returns the store and memory key -> id.
    """
    if store is None:
        store = MemoryStore(dim=suite.dim, params=params)
    if filler is not None:
        texts = filler.pop("texts")
        vectors = filler.pop("embeddings")
        store.add_many(texts, vectors, **filler)
    records = suite.memories
    ids = store.add_many(
        [x["text"] for x in records], suite.embeddings[[x["row"] for x in records]], **memory_columns(suite, records)
    )
    return store, {x["key"]: int(i) for x, i in zip(records, ids)}


def synthetic_filler(
    rng: np.random.Generator,
    n: int,
    dim: int,
    *,
    tenant: str,
    reference_time: float,
    near_vector: Optional[np.ndarray] = None,
    near_count: int = 0,
    near_cosine: tuple[float, float] = (0.45, 0.70),
    near_words: Sequence[str] = (),
) -> dict[str, Any]:
    """``n`` synthetic memories as ``add_many`` arguments (``texts``, ``embeddings`` included).

    Rows are random unit vectors with texts of 6-10 words from a neutral vocabulary, ages uniform
    in [0, 365] days and importance uniform in [0, 0.9]. The first ``near_count`` rows form a
    *crowd* around ``near_vector``: cosine to it drawn from ``near_cosine``, two of
    ``near_words`` in each text, ages within the last 30 days, so that they outscore an old
    memory on both the dense and the BM25 signal.
    """
    vectors = rng.standard_normal((n, dim), dtype=np.float32)
    vectors /= np.sqrt(np.einsum("ij,ij->i", vectors, vectors))[:, None]
    word_ids = rng.integers(0, len(_FILLER_WORDS), size=(n, 10)).tolist()
    lengths = rng.integers(6, 11, size=n).tolist()
    texts = [" ".join([_FILLER_WORDS[j] for j in ids[:length]]) for ids, length in zip(word_ids, lengths)]
    ages = rng.uniform(0.0, 365.0, size=n)
    if near_count:
        if near_vector is None:
            msg = "near_vector is required when near_count > 0"
            raise ValueError(msg)
        centre = np.asarray(near_vector, dtype=np.float64)
        centre /= np.linalg.norm(centre)
        noise = vectors[:near_count].astype(np.float64)
        noise -= np.outer(noise @ centre, centre)
        noise /= np.linalg.norm(noise, axis=1, keepdims=True)
        cosine = rng.uniform(*near_cosine, size=near_count)
        crowd = cosine[:, None] * centre[None, :] + np.sqrt(1.0 - cosine**2)[:, None] * noise
        vectors[:near_count] = crowd.astype(np.float32)
        if near_words:
            picks = rng.integers(0, len(near_words), size=(near_count, 2))
            for i in range(near_count):
                texts[i] = f"{near_words[picks[i, 0]]} {near_words[picks[i, 1]]} {texts[i]}"
        ages[:near_count] = rng.uniform(0.0, 30.0, size=near_count)
    return {
        "texts": texts,
        "embeddings": vectors,
        "tenants": tenant,
        "importances": rng.uniform(0.0, 0.9, size=n),
        "created_at": reference_time - ages * SECONDS_PER_DAY,
    }


def recall_cue(store: MemoryStore, suite: ScenarioSuite, cue: dict[str, Any], mode: str, k: int):
    return store.recall(
        cue["text"], suite.cue_vector(cue), k, tenant=cue["tenant"], mode=mode, at_time=suite.reference_time,
        cue_tags=cue["cue_tags"] or None, cue_entities=cue["cue_entities"] or None,
        cue_valence=cue["cue_valence"], reinforce=False,
    )


def evaluate(
    store: MemoryStore,
    key_to_id: dict[str, int],
    suite: ScenarioSuite,
    *,
    modes: Sequence[str] = MODES,
    k: int = SUITE_K,
    repeats: int = 5,
) -> dict[str, dict[str, Any]]:
    """Metrics of the module docstring, per mode."""
    cues = suite.cues
    dense_sets = {c["key"]: set(recall_cue(store, suite, c, "vector", k).admitted["dense"].tolist()) for c in cues}
    out: dict[str, dict[str, Any]] = {}
    for mode in modes:
        protected_total = protected_admitted = protected_returned = 0
        relevant_total = relevant_returned = 0
        hits_total = rescued = outside_dense = false_rescued = forbidden_returned = distractor_wins = 0
        contribution: dict[str, int] = {}
        for c in cues:
            result = recall_cue(store, suite, c, mode, k)
            returned = result.ids.tolist()
            union = set(result.candidate_ids.tolist())
            relevant = {key_to_id[x] for x in c["relevant"]}
            protected = {key_to_id[x] for x in c["protected"]}
            dense = dense_sets[c["key"]]
            protected_total += len(protected)
            protected_admitted += len(protected & union)
            protected_returned += len(protected & set(returned))
            relevant_total += len(relevant)
            relevant_returned += len(relevant & set(returned))
            forbidden_returned += len({key_to_id[x] for x in c["forbidden"]} & set(returned))
            for distractor in (key_to_id[x] for x in c["distractors"]):
                if distractor not in returned:
                    continue
                for good in relevant:
                    if good not in returned or returned.index(distractor) < returned.index(good):
                        distractor_wins += 1
            for hit in result.hits:
                hits_total += 1
                for generator in hit.admitted_by:
                    contribution[generator] = contribution.get(generator, 0) + 1
                if hit.id not in dense:
                    outside_dense += 1
                    if hit.id in relevant:
                        rescued += 1
                    else:
                        false_rescued += 1
        latencies = []
        for _ in range(repeats + 1):
            for c in cues:
                start = time.perf_counter()
                recall_cue(store, suite, c, mode, k)
                latencies.append(time.perf_counter() - start)
        latencies = np.asarray(latencies[len(cues):]) * 1e3  # drop the warm-up pass
        out[mode] = {
            "protected_memory_recall@budget": protected_admitted / protected_total if protected_total else float("nan"),
            "protected_hit@k": protected_returned / protected_total if protected_total else float("nan"),
            "recall@k": relevant_returned / relevant_total if relevant_total else float("nan"),
            "distractor_wins": distractor_wins,
            "forbidden_returned": forbidden_returned,
            "signal_contribution_rate": {g: contribution[g] / hits_total for g in sorted(contribution)},
            "rescued_by_non_dense_signal": rescued,
            "false_rescue_rate": false_rescued / outside_dense if outside_dense else 0.0,
            "false_rescues": false_rescued,
            "latency_p50_ms": float(np.percentile(latencies, 50)),
            "latency_p95_ms": float(np.percentile(latencies, 95)),
            "budget": int(sum(store.params.quota(g) for g in _mode_generators(mode))),
            "k": k,
            "cues": len(cues),
        }
    return out


def _mode_generators(mode: str) -> tuple[str, ...]:
    return MODE_GENERATORS[mode]
