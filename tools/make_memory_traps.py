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

import argparse
import json
import os
import sys

import numpy as np

from make_demo_data import sha256_file  # tools/ is sys.path[0] when run as a script

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA_DIR = os.path.join(REPO, "python", "fieldrank", "data")
JSON_NAME = "memory_traps.json"
NPY_NAME = "memory_traps.npy"
UNIT_NORM_TOLERANCE = 1e-4


def suite_texts() -> list[str]:
    """Every unique text of the trap families, in first-seen order."""
    from fieldrank.evaluation._trap_cases import trap_texts

    return trap_texts()


def generate() -> None:
    from embed_texts import embed, model_info

    texts = suite_texts()
    vectors = embed(texts).astype(np.float32)
    npy_path = os.path.join(DATA_DIR, NPY_NAME)
    np.save(npy_path, vectors)
    manifest = {
        "description": "Trap families of the agent-life benchmark (issue 38): texts written for fieldrank, "
                       "four traps of shared/seeds/003's cases (a), (b), (d), (e).",
        "generator": "tools/make_memory_traps.py",
        "embeddings_file": NPY_NAME,
        "embeddings_sha256": sha256_file(npy_path),
        "rows": len(texts),
        **model_info(),
        "texts": texts,
    }
    with open(os.path.join(DATA_DIR, JSON_NAME), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1, ensure_ascii=False)
        handle.write("\n")
    print(f"wrote {len(texts)} rows to {npy_path}")


def check() -> int:
    with open(os.path.join(DATA_DIR, JSON_NAME), encoding="utf-8") as handle:
        manifest = json.load(handle)
    npy_path = os.path.join(DATA_DIR, NPY_NAME)
    problems = []
    if sha256_file(npy_path) != manifest["embeddings_sha256"]:
        problems.append("sha256 of the .npy does not match the manifest")
    vectors = np.load(npy_path)
    if vectors.shape != (manifest["rows"], manifest["dim"]) or vectors.dtype != np.float32:
        problems.append(f"unexpected array {vectors.dtype} {vectors.shape}")
    if np.abs(np.linalg.norm(vectors, axis=1) - 1).max() > UNIT_NORM_TOLERANCE:
        problems.append("rows are not unit norm")
    if manifest["texts"] != suite_texts():
        problems.append("the texts of fieldrank.evaluation._trap_cases changed: regenerate")
    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print(f"ok: {manifest['rows']} rows, {manifest['model']}")
    return 1 if problems else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify the committed files (numpy only)")
    args = parser.parse_args(argv)
    if args.check:
        return check()
    generate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
