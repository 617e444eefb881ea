"""Smoke test of a base install (``pip install .``, no extras): every runtime entry point once.

Touches each preset of ``HybridRetriever`` (``search`` and ``search_batch``), ``save``/``load``,
a file-backed ``MemoryStore`` (add, recall, keyword recall, why_not, forget, reopen) and the CLI's
``index`` and ``search``, then fails (exit 1) if any module outside the base dependencies was
imported: a base install has none of them, and nothing at run time may need one. Runs in a few
seconds; writes only under a temporary directory.

    python tools/smoke_base_install.py                   # in the venv of `pip install .` (.ci/run)
    python tools/smoke_base_install.py --block-extras    # anywhere: importing those modules fails

``--block-extras`` makes every import of the modules below raise ``ImportError`` (as in a base
install), so the check also runs in a venv that has the extras (``tests/test_base_install.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.abc
import io
import json
import sys
import tempfile
import time
from pathlib import Path

#: Top-level modules a base install does not provide (extras and test tools); none may be imported.
NOT_BASE = (
    "scipy", "matplotlib", "pandas", "torch", "sklearn", "numba", "sentence_transformers", "transformers",
    "ranx", "ray", "pyarrow", "langchain_core", "llama_index", "haystack", "qdrant_client", "lancedb",
    "pytest", "hypothesis", "asv", "mcp", "psycopg", "pgserver",
)

N_TEXTS = 120
DIM = 16
SEED = 11
WORDS = (
    "river", "garden", "deploy", "build", "friday", "peanut", "allergy", "kitchen", "cabinet", "budget",
    "violin", "camping", "painting", "support", "group", "the", "a", "of", "and", "to",
)


class _BlockExtras(importlib.abc.MetaPathFinder):
    """Importing any module of :data:`NOT_BASE` raises ImportError, as in a base install."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201 (the finder protocol)
        if name.split(".")[0] in NOT_BASE:
            msg = f"No module named {name!r} (blocked by smoke_base_install.py --block-extras)"
            raise ImportError(msg)
        return None


def _check(condition: bool, what: str) -> None:
    if not condition:
        msg = f"smoke check failed: {what}"
        raise AssertionError(msg)


def run(workdir: Path) -> None:
    import numpy as np

    from fieldrank import HybridRetriever, MemoryStore
    from fieldrank.cli import main as cli
    from fieldrank.config import PRESET_NAMES

    rng = np.random.default_rng(SEED)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 10)))) for _ in range(N_TEXTS)]
    E = rng.normal(size=(N_TEXTS, DIM)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    Q, questions = E[:3] + np.float32(0.1), ["river garden", "peanut allergy kitchen", "deploy on friday"]
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)

    for name in PRESET_NAMES:
        retriever = HybridRetriever(texts, E, name)
        text = questions[0] if retriever.config.needs_text else None
        vector = Q[0] if retriever.config.needs_vector else None
        one = retriever.search(text, vector, k=5)
        batch = retriever.search_batch(questions if text is not None else None, Q if vector is not None else None,
                                       k=5)
        _check(len(one.ids) > 0 and len(batch) == 3, f"preset {name!r} returns hits")
        _check(np.array_equal(batch[0].ids, one.ids), f"preset {name!r}: search_batch agrees with search")
        if name == "default":
            retriever.save(workdir / "index")
            loaded = HybridRetriever.load(workdir / "index")
            _check(np.array_equal(loaded.search(text, vector, k=5).ids, one.ids), "a loaded index ranks the same")

    path = workdir / "memory.sqlite"
    store = MemoryStore(str(path), dim=DIM)
    ids = store.add_many(texts[:60], E[:60], tenants="smoke", sessions="s1")
    rule = store.add("Never deploy to production on Fridays.", Q[2], tenant="smoke", importance=0.9)
    recalled = store.recall("deploy on friday", Q[2], k=5, tenant="smoke")
    _check(rule in [hit.id for hit in recalled], "recall finds the rule")
    keyword = store.recall("friday deploy", k=5, tenant="smoke", mode="keyword")
    _check(len(list(keyword)) > 0, "keyword recall")
    _check(bool(store.why_not(int(ids[0]), "river garden", Q[0], k=5, tenant="smoke").detail), "why_not explains")
    _check(store.forget(rule), "forget")
    store.close()
    reopened = MemoryStore(str(path), dim=DIM)
    _check(rule not in [hit.id for hit in reopened.recall("deploy on friday", Q[2], k=5, tenant="smoke")],
           "a forgotten memory stays forgotten after reopening")
    reopened.close()

    (workdir / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    np.save(workdir / "E.npy", E)
    np.save(workdir / "q.npy", Q[0])
    with contextlib.redirect_stdout(io.StringIO()):
        status = cli(["index", "--texts", str(workdir / "texts.json"), "--embeddings", str(workdir / "E.npy"),
                      "--out", str(workdir / "cli-index")])
    _check(status == 0, "fieldrank index")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = cli(["search", "--index", str(workdir / "cli-index"), "--text", questions[0],
                      "--vector-file", str(workdir / "q.npy"), "--json"])
    _check(status == 0 and len(json.loads(printed.getvalue())["hits"]) > 0, "fieldrank search")

    store = str(workdir / "cli-memory" / "memory.db")
    with contextlib.redirect_stdout(io.StringIO()):
        status = cli(["memory", "add", "--store", store, "Never deploy on Fridays.", "--tier", "core"])
    _check(status == 0, "fieldrank memory add")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        status = cli(["memory", "list", "--store", store, "--json"])
    _check(status == 0 and json.loads(printed.getvalue())["tier"] == "core", "fieldrank memory list")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block-extras", action="store_true", help="make importing the non-base modules fail")
    args = parser.parse_args(argv)
    if args.block_extras:
        sys.meta_path.insert(0, _BlockExtras())
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        run(Path(workdir))
    imported = sorted({name.split(".")[0] for name in sys.modules} & set(NOT_BASE))
    if imported:
        print(f"smoke: FAILED: modules outside the base install were imported: {imported}", file=sys.stderr)
        return 1
    print(f"smoke: every entry point ran, no module outside the base install imported "
          f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
