"""A committed set of text embeddings, ``python/fieldrank/data/<name>.{npy,json}``: written once
with a real model (``tools/embed_texts.py``), verified with numpy alone (``--check``).

``tools/make_memory_adversarial.py`` and ``tools/make_memory_traps.py`` each describe their set
(name, texts, where the texts come from) and run :meth:`VectorSet.main`.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np

from make_demo_data import sha256_file  # tools/ is sys.path[0] when run as a script

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA_DIR = os.path.join(REPO, "python", "fieldrank", "data")
UNIT_NORM_TOLERANCE = 1e-4


@dataclass(frozen=True)
class VectorSet:
    """One committed set: ``name`` (the files' stem), the manifest's ``description``, the
    ``generator`` tool, the ``texts`` function (unique texts in row order) and their ``source``
    module (named when the texts changed and the set must be regenerated)."""

    name: str
    description: str
    generator: str
    texts: Callable[[], list[str]]
    source: str

    @property
    def npy_path(self) -> str:
        return os.path.join(DATA_DIR, f"{self.name}.npy")

    @property
    def json_path(self) -> str:
        return os.path.join(DATA_DIR, f"{self.name}.json")

    def generate(self) -> None:
        from embed_texts import embed, model_info

        texts = self.texts()
        vectors = embed(texts).astype(np.float32)
        np.save(self.npy_path, vectors)
        manifest = {
            "description": self.description,
            "generator": self.generator,
            "embeddings_file": os.path.basename(self.npy_path),
            "embeddings_sha256": sha256_file(self.npy_path),
            "rows": len(texts),
            **model_info(),
            "texts": texts,
        }
        with open(self.json_path, "w", encoding="utf-8") as handle:
            json.dump(manifest, handle, indent=1, ensure_ascii=False)
            handle.write("\n")
        print(f"wrote {len(texts)} rows to {self.npy_path}")

    def check(self) -> int:
        with open(self.json_path, encoding="utf-8") as handle:
            manifest = json.load(handle)
        problems = []
        if sha256_file(self.npy_path) != manifest["embeddings_sha256"]:
            problems.append("sha256 of the .npy does not match the manifest")
        vectors = np.load(self.npy_path)
        if vectors.shape != (manifest["rows"], manifest["dim"]) or vectors.dtype != np.float32:
            problems.append(f"unexpected array {vectors.dtype} {vectors.shape}")
        if np.abs(np.linalg.norm(vectors, axis=1) - 1).max() > UNIT_NORM_TOLERANCE:
            problems.append("rows are not unit norm")
        if manifest["texts"] != self.texts():
            problems.append(f"the texts of {self.source} changed: regenerate")
        for problem in problems:
            print("FAIL:", problem)
        if not problems:
            print(f"ok: {manifest['rows']} rows, {manifest['model']}")
        return 1 if problems else 0

    def main(self, description: str, argv: Optional[Sequence[str]] = None) -> int:
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--check", action="store_true", help="verify the committed files (numpy only)")
        args = parser.parse_args(argv)
        if args.check:
            return self.check()
        self.generate()
        return 0
