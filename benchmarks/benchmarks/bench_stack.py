"""The rrf_cfsr stack (cosine 10, BM25 10, CFS-R 50 ×3) over LoCoMo questions, native vs reference."""

from __future__ import annotations

import os

import fieldrank

from .common import SkipNotImplemented, require


class LocomoStack:
    params = [[1, 2]]
    param_names = ["threads"]
    timeout = 600

    def setup(self, threads):
        from fieldrank.evaluation.bench import locomo_stack_inputs

        # FIELDRANK_ASV_STACK_QUESTIONS limits the question set (benchmarks/check_asv.sh uses 100).
        limit = os.environ.get("FIELDRANK_ASV_STACK_QUESTIONS")
        self.inputs = locomo_stack_inputs(limit=int(limit) if limit else None)
        if self.inputs is None:
            raise NotImplementedError("LoCoMo data not found beside the repository")

    def time_rrf_cfsr_stack(self, threads):
        from fieldrank.evaluation.bench import run_stack

        run_stack(self.inputs, fieldrank, n_threads=threads)

    def time_rrf_cfsr_stack_reference(self, threads):
        if threads != 1:
            raise SkipNotImplemented("the reference is single-threaded")
        import fieldrank.reference as ref
        from fieldrank.evaluation.bench import run_stack

        run_stack(self.inputs, ref, n_threads=threads)


class RetrieverPresets:
    """``HybridRetriever`` end to end on synthetic corpora (d = 384): the shipped ``default`` preset
    (native temporal leg) beside ``rrf2``, one query per call and a batch of 32 (one thread)."""

    params = [[1_000, 20_000, 100_000], ["default", "rrf2"]]
    param_names = ["n", "preset"]
    timeout = 600

    def setup(self, n, preset):
        from fieldrank.evaluation.bench import retriever_inputs
        from fieldrank.hybrid import HybridRetriever

        require(n, 384)
        texts, E, self.q_texts, self.Q = retriever_inputs(n)
        self.retriever = HybridRetriever(texts, E, preset)
        # The corpus moments of default's temporal leg over every document (once per retriever,
        # docs/design.md): computed here, so the rounds time the steady state.
        self.retriever.prepare()
        self.retriever.search(self.q_texts[0], self.Q[0])

    def time_search(self, n, preset):
        self.retriever.search(self.q_texts[0], self.Q[0])

    def time_search_batch_32(self, n, preset):
        self.retriever.search_batch(self.q_texts, self.Q, n_threads=1)
