"""Loading files someone else wrote: data formats only, and a clear error for every tampering.

A saved index and a memory store hold only data formats: ``.npy`` read with
``allow_pickle=False``, JSON (and TOML for the config), SQLite. These tests tamper with saved
files the way a corrupt download, a truncated copy or a hostile archive would, and check that
loading raises a clear error (a ``ValueError`` subclass naming the file, or for a file that is
not SQLite at all ``sqlite3.DatabaseError``) and never unpickles anything.

Covered: ``BM25Index.load`` (fieldrank.bm25), ``HybridRetriever.save/load``
(fieldrank.persistence) and the ``MemoryStore`` SQLite file, each skipped until its module
exists. Open gaps are strict xfails naming the bug (docs/reliability.md).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from fieldrank.bm25 import BM25Index

from tests.helpers import run_sql as _sql
from tests.helpers import unit_rows

TEXTS = [
    "Caroline moved to Paris for a new job in March",
    "Melanie adopted a dog named Biscuit",
    "the marathon is on the first Sunday of October",
    "Caroline is allergic to peanuts and shellfish",
    "they talked about painting and pottery classes",
    "Melanie's sister got married in a garden wedding",
]


class _Pwned:
    """Unpickling this writes a marker file: the proof that a loader ran pickle."""

    marker: Path

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "unpickled"))


def _plant_pickle(path: Path, marker: Path) -> None:
    np.save(path, np.array([_Pwned(marker)], dtype=object), allow_pickle=True)


def _patch_npy_header(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data[:256], f"{old!r} not in the header of {path.name}"
    path.write_bytes(data.replace(old, new.ljust(len(old)), 1))


# ----------------------------------------------------------------------------- BM25Index.load

@pytest.fixture
def bm25_dir(tmp_path) -> Path:
    directory = tmp_path / "bm25"
    BM25Index(TEXTS).save(directory)
    return directory


def test_bm25_round_trip(bm25_dir):
    loaded = BM25Index.load(bm25_dir)
    fresh = BM25Index(TEXTS)
    for query in ("Caroline Paris job", "dog", "wedding garden sister"):
        ids, scores = loaded.top(query, 5)
        expected_ids, expected_scores = fresh.top(query, 5)
        assert np.array_equal(ids, expected_ids) and np.array_equal(scores, expected_scores)


def test_bm25_load_never_unpickles(bm25_dir, tmp_path):
    marker = tmp_path / "marker"
    _plant_pickle(bm25_dir / "data.csc.index.npy", marker)
    with pytest.raises(ValueError, match="allow_pickle"):
        BM25Index.load(bm25_dir)
    assert not marker.exists()


def test_bm25_load_truncated_array(bm25_dir):
    path = bm25_dir / "data.csc.index.npy"
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ValueError, match="read"):
        BM25Index.load(bm25_dir)


def test_bm25_load_truncated_header(bm25_dir):
    path = bm25_dir / "indices.csc.index.npy"
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ValueError):
        BM25Index.load(bm25_dir)


@pytest.mark.parametrize("name", ["fieldrank_bm25.json", "params.index.json"])
def test_bm25_load_corrupt_json(bm25_dir, name):
    (bm25_dir / name).write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError):
        BM25Index.load(bm25_dir)


def test_bm25_load_metadata_disagrees(bm25_dir):
    meta_path = bm25_dir / "fieldrank_bm25.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["n_docs"] = len(TEXTS) - 1
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValueError, match="n_docs"):
        BM25Index.load(bm25_dir)


def test_bm25_load_missing_file(bm25_dir):
    (bm25_dir / "indptr.csc.index.npy").unlink()
    with pytest.raises(FileNotFoundError):
        BM25Index.load(bm25_dir)


def _shrink_indptr_header(d: Path) -> None:
    path = d / "indptr.csc.index.npy"
    n = np.load(path).shape[0]
    _patch_npy_header(path, f"({n},)".encode(), f"({n // 2},)".encode())


def _indptr_as_int32(d: Path) -> None:
    _patch_npy_header(d / "indptr.csc.index.npy", b"'<i8'", b"'<i4'")


def _index_out_of_range(d: Path) -> None:
    indices = np.load(d / "indices.csc.index.npy")
    indices[0] = 10**6
    np.save(d / "indices.csc.index.npy", indices)


def _data_shorter_than_indices(d: Path) -> None:
    data = np.load(d / "data.csc.index.npy")
    np.save(d / "data.csc.index.npy", data[:2])


def _vocab_id_out_of_range(d: Path) -> None:
    vocab = json.loads((d / "vocab.index.json").read_text(encoding="utf-8"))
    vocab[next(iter(vocab))] = 10**6
    (d / "vocab.index.json").write_text(json.dumps(vocab), encoding="utf-8")


def _symlink_outside(d: Path) -> None:
    outside = d.parent / "outside.npy"
    shutil.copy(d / "data.csc.index.npy", outside)
    (d / "data.csc.index.npy").unlink()
    os.symlink(outside, d / "data.csc.index.npy")


BM25_GAPS = {
    "header-shape-shrunk": _shrink_indptr_header,
    "header-dtype-changed": _indptr_as_int32,
    "index-out-of-range": _index_out_of_range,
    "arrays-of-mismatched-length": _data_shorter_than_indices,
    "vocab-id-out-of-range": _vocab_id_out_of_range,
    "symlink-escapes-directory": _symlink_outside,
}


@pytest.mark.parametrize("tamper", list(BM25_GAPS))
def test_bm25_load_rejects_inconsistent_arrays(bm25_dir, tamper):
    """Today these load, then fail at query time (IndexError, bm25s ValueError) or rank silently wrong."""
    BM25_GAPS[tamper](bm25_dir)
    with pytest.raises(ValueError):
        BM25Index.load(bm25_dir)


# ----------------------------------------------------------------------------- HybridRetriever

def _hybrid():
    hybrid = pytest.importorskip("fieldrank.hybrid")
    persistence = pytest.importorskip("fieldrank.persistence")
    if not hasattr(hybrid.HybridRetriever, "load"):
        pytest.skip("HybridRetriever.load is not there yet")
    return hybrid.HybridRetriever, persistence


@pytest.fixture
def saved_index(tmp_path):
    HybridRetriever, persistence = _hybrid()
    rng = np.random.default_rng(20261130)
    retriever = HybridRetriever(TEXTS, unit_rows(rng, len(TEXTS), 16))
    directory = tmp_path / "index"
    retriever.save(directory)
    return retriever, directory, persistence


def _manifest(directory: Path) -> dict:
    return json.loads((directory / "manifest.json").read_text(encoding="utf-8"))


def _reseal(directory: Path, persistence) -> None:
    """Recompute the manifest entries (size, sha256, .npy shape/dtype) of every listed file: an
    attacker who edits the data can edit the manifest too, so the loader must not trust it alone."""
    manifest = _manifest(directory)
    for name in manifest["files"]:
        manifest["files"][name] = persistence._describe_file(directory, name)
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_hybrid_round_trip(saved_index):
    retriever, directory, _ = saved_index
    HybridRetriever, _ = _hybrid()
    loaded = HybridRetriever.load(directory)
    q = retriever.embeddings[2]
    a, b = retriever.search(TEXTS[2], q), loaded.search(TEXTS[2], q)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.scores, b.scores)


def _load(directory, **kwargs):
    HybridRetriever, _ = _hybrid()
    return HybridRetriever.load(directory, **kwargs)


@pytest.mark.parametrize("reseal", [False, True], ids=["manifest-kept", "manifest-resealed"])
def test_hybrid_load_never_unpickles(saved_index, tmp_path, reseal):
    _, directory, persistence = saved_index
    marker = tmp_path / "marker"
    _plant_pickle(directory / "embeddings.npy", marker)
    if reseal:
        _reseal(directory, persistence)
    with pytest.raises(ValueError, match="embeddings.npy"):
        _load(directory, verify=False)
    assert not marker.exists()


@pytest.mark.parametrize("verify", [True, False])
def test_hybrid_load_tampered_npy_header(saved_index, verify):
    _, directory, _ = saved_index
    _patch_npy_header(directory / "embeddings.npy", f"({len(TEXTS)}, 16)".encode(), f"(16, {len(TEXTS)})".encode())
    with pytest.raises(ValueError, match="embeddings.npy"):
        _load(directory, verify=verify)


def test_hybrid_load_tampered_header_resealed(saved_index):
    """A consistent manifest does not make a wrong shape loadable: texts and rows must agree."""
    _, directory, persistence = saved_index
    E = np.load(directory / "embeddings.npy")
    np.save(directory / "embeddings.npy", np.ascontiguousarray(E[:-1]))
    _reseal(directory, persistence)
    with pytest.raises(ValueError, match="embeddings.npy"):
        _load(directory)


@pytest.mark.parametrize("verify", [True, False])
@pytest.mark.parametrize("name", ["embeddings.npy", "texts.json", "config.toml", "manifest.json"])
def test_hybrid_load_truncated_file(saved_index, verify, name):
    _, directory, _ = saved_index
    path = directory / name
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match=name.split(".")[0]):
        _load(directory, verify=verify)


def test_hybrid_load_truncated_bm25_array(saved_index):
    _, directory, _ = saved_index
    path = directory / "bm25" / "data.csc.index.npy"
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(ValueError, match="data.csc.index.npy"):
        _load(directory, verify=False)


def test_hybrid_load_flipped_byte_fails_verification(saved_index):
    _, directory, _ = saved_index
    path = directory / "embeddings.npy"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="sha256"):
        _load(directory)


def test_hybrid_load_mismatched_shapes_resealed(saved_index):
    _, directory, persistence = saved_index
    (directory / "texts.json").write_text(json.dumps(TEXTS[:-1]), encoding="utf-8")
    _reseal(directory, persistence)
    with pytest.raises(ValueError, match="texts.json"):
        _load(directory)


def test_hybrid_load_non_finite_rows_resealed(saved_index):
    _, directory, persistence = saved_index
    E = np.load(directory / "embeddings.npy")
    E[1, 0] = np.nan
    np.save(directory / "embeddings.npy", E)
    _reseal(directory, persistence)
    with pytest.raises(ValueError, match="embeddings.npy"):
        _load(directory)


@pytest.mark.parametrize("name", ["texts.json", "embeddings.npy", "bm25/vocab.index.json"])
def test_hybrid_load_symlink_escaping_directory(saved_index, tmp_path, name):
    _, directory, _ = saved_index
    outside = tmp_path / ("outside-" + Path(name).name)
    shutil.copy(directory / name, outside)  # identical bytes: only the link itself is wrong
    (directory / name).unlink()
    os.symlink(outside, directory / name)
    with pytest.raises(ValueError, match="outside the index directory"):
        _load(directory)


def test_hybrid_load_symlinked_bm25_directory(saved_index, tmp_path):
    _, directory, _ = saved_index
    shutil.move(str(directory / "bm25"), tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", directory / "bm25")
    with pytest.raises(ValueError, match="outside the index directory"):
        _load(directory)


@pytest.mark.parametrize("name", ["../outside.json", "/etc/hostname", "bm25/../../x", ""])
def test_hybrid_load_manifest_paths_must_stay_inside(saved_index, name):
    _, directory, _ = saved_index
    manifest = _manifest(directory)
    manifest["files"][name] = {"bytes": 1, "sha256": "0" * 64}
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ValueError, match="manifest|outside"):
        _load(directory)


def test_hybrid_load_unlisted_bm25_file(saved_index):
    _, directory, _ = saved_index
    (directory / "bm25" / "extra.npy").write_bytes(b"\x93NUMPY")
    with pytest.raises(ValueError, match="not listed"):
        _load(directory)


@pytest.mark.parametrize("change", [
    pytest.param({"format_version": 99}, id="version"),
    pytest.param({"format": "something.else"}, id="format"),
    pytest.param({"n_docs": -1}, id="n_docs"),
    pytest.param({"dim": "16"}, id="dim"),
])
def test_hybrid_load_tampered_manifest_fields(saved_index, change):
    _, directory, _ = saved_index
    manifest = _manifest(directory)
    manifest.update(change)
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ValueError, match="manifest|version|format"):
        _load(directory)


def test_hybrid_load_crafted_bm25_arrays_resealed(saved_index):
    _, directory, persistence = saved_index
    _index_out_of_range(directory / "bm25")
    _reseal(directory, persistence)
    with pytest.raises(ValueError):
        _load(directory)


# ----------------------------------------------------------------------------- MemoryStore (SQLite)

def _memory_store():
    memory = pytest.importorskip("fieldrank.memory")
    if not hasattr(memory, "MemoryStore"):
        pytest.skip("fieldrank.memory.MemoryStore is not there yet")
    return memory.MemoryStore


@pytest.fixture
def store_file(tmp_path) -> Path:
    MemoryStore = _memory_store()
    path = tmp_path / "memory.sqlite"
    rng = np.random.default_rng(7)
    with MemoryStore(path, dim=8) as store:
        for i, text in enumerate(TEXTS):
            store.add(text, rng.standard_normal(8), tags=["t"] if i % 2 else [])
    return path


def _open_and_recall(path: Path):
    MemoryStore = _memory_store()
    with MemoryStore(path) as store:
        return store.recall("Caroline", np.ones(8))


def test_store_round_trip(store_file):
    assert len(_open_and_recall(store_file).hits) > 0


@pytest.mark.parametrize("damage", ["header", "garbage", "truncated"])
def test_store_not_a_database(store_file, damage):
    data = store_file.read_bytes()
    if damage == "header":
        data = b"SQLite format 2\x00" + data[16:]
    elif damage == "garbage":
        data = os.urandom(len(data))
    else:
        data = data[: len(data) // 3]
    store_file.write_bytes(data)
    with pytest.raises((ValueError, sqlite3.DatabaseError)):
        _open_and_recall(store_file)


@pytest.mark.parametrize("sql,args,match", [
    ("UPDATE memories SET embedding = ? WHERE id = 3", (b"\0" * 12,), "memory 3, column 'embedding'.* 12-byte embedding"),
    ("UPDATE meta SET value = '4' WHERE key = 'dim'", (), "embedding"),
    ("UPDATE meta SET value = ? WHERE key = ?", ("99", "format_version"), "format"),
    ("UPDATE meta SET value = ? WHERE key = ?", ("other.app", "format"), "format"),
    ("UPDATE memories SET tier = 'root' WHERE id = 2", (), "memory 2, column 'tier'"),
], ids=["embedding-blob-of-wrong-length", "dim-disagrees-with-blobs", "format-version", "format-name", "unknown-tier"])
def test_store_tampered_file_is_refused(store_file, sql, args, match):
    # One edit of the SQLite file behind the store's back: opening it names what is wrong.
    _sql(store_file, sql, *args)
    with pytest.raises(ValueError, match=match):
        _open_and_recall(store_file)


def test_store_never_unpickles(store_file, tmp_path):
    """Nothing in the store is pickled: a pickle in a BLOB or TEXT column is just bytes."""
    import pickle

    marker = tmp_path / "marker"
    payload = pickle.dumps(_Pwned(marker))
    _sql(store_file, "UPDATE memories SET embedding = ? WHERE id = 1", payload)
    _sql(store_file, "UPDATE memories SET text = ? WHERE id = 2", payload.decode("latin-1"))
    with pytest.raises(ValueError):
        _open_and_recall(store_file)
    assert not marker.exists()


STORE_GAPS = {
    "nan-embedding": ("UPDATE memories SET embedding = ? WHERE id = 3", np.full(8, np.nan, "<f4").tobytes()),
    "zero-embedding": ("UPDATE memories SET embedding = ? WHERE id = 3", np.zeros(8, "<f4").tobytes()),
    "importance-out-of-range": ("UPDATE memories SET importance = ? WHERE id = 2", 1e300),
    "negative-recall-count": ("UPDATE memories SET recall_count = ? WHERE id = 2", -5),
}


@pytest.mark.parametrize("gap", list(STORE_GAPS))
def test_store_rejects_bad_values_on_open(store_file, gap):
    statement, value = STORE_GAPS[gap]
    _sql(store_file, statement, value)
    MemoryStore = _memory_store()
    with pytest.raises(ValueError, match="memory"):
        MemoryStore(store_file).close()


def test_store_refuses_foreign_sqlite_file_untouched(tmp_path):
    MemoryStore = _memory_store()
    path = tmp_path / "someone-else.sqlite"
    _sql(path, "CREATE TABLE users (name TEXT)")
    before = path.read_bytes()
    with pytest.raises(ValueError):
        MemoryStore(path, dim=8).close()
    assert path.read_bytes() == before
