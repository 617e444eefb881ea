"""Embed the agent-life benchmark's trap families (issue 38) once, with all-MiniLM-L6-v2.

Reads every text of :mod:`fieldrank.evaluation._trap_cases` (written for this project; no LoCoMo
text), embeds the unique ones and writes (small, committed, like the adversarial suite's):

* ``python/fieldrank/data/memory_traps.npy``: float32 (n, 384), L2-normalised;
* ``python/fieldrank/data/memory_traps.json``: the texts in row order, the model and the versions
  that produced the vectors, and the sha256 of the ``.npy``.

Run (from the repository root; CPU, about a minute; the environment of ``tools/embed_texts.py``)::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH=python /tmp/embedvenv/bin/python tools/make_memory_traps.py

``--check`` verifies the committed files with numpy only (sha256, shape, unit norms, texts).
"""

from __future__ import annotations

import sys

from vector_set import VectorSet  # tools/ is sys.path[0] when run as a script


def suite_texts() -> list[str]:
    """Every unique text of the trap families, in first-seen order."""
    from fieldrank.evaluation._trap_cases import trap_texts

    return trap_texts()


TRAPS = VectorSet(
    "memory_traps",
    "Trap families of the agent-life benchmark (issue 38): texts written for fieldrank, four traps of "
    "shared/seeds/003's cases (a), (b), (d), (e).",
    "tools/make_memory_traps.py", suite_texts, "fieldrank.evaluation._trap_cases")

if __name__ == "__main__":
    sys.exit(TRAPS.main(__doc__.splitlines()[0]))
