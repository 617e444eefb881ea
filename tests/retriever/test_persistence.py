"""Tests of saving and loading a hybrid index: round trips and every way loading must refuse."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

import fieldrank
from fieldrank.config import BM25Leg, CFSRLeg, RetrieverConfig, preset
from fieldrank.hybrid import HybridRetriever
from fieldrank.persistence import (
    BM25_DIR,
    CONFIG_FILE,
    EMBEDDINGS_FILE,
    FORMAT_VERSION,
    MANIFEST_FILE,
    TEXTS_FILE,
    IndexFormatError,
    load_index,
)

from tests.helpers import unit_rows

SEED = 20240918
N_DOCS = 33
DIM = 10
WORDS = ("kitchen", "budget", "quartz", "cabinets", "dog", "piano", "flight", "garden", "über", "café")


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(SEED)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 6)))) for _ in range(N_DOCS)]
    return texts, unit_rows(rng, N_DOCS, DIM)


@pytest.fixture
def saved(corpus, tmp_path: Path) -> tuple[HybridRetriever, Path]:
    texts, E = corpus
    config = RetrieverConfig(legs=(BM25Leg(depth=8), CFSRLeg(depth=12, p=20, pool="union", union_p=6, weight=2.5)),
                             k=7, name="saved")
    retriever = HybridRetriever(texts, E, config)
    directory = tmp_path / "index"
    retriever.save(directory)
    return retriever, directory


def _manifest(directory: Path) -> dict:
    return json.loads((directory / MANIFEST_FILE).read_text(encoding="utf-8"))


def _write_manifest(directory: Path, manifest: dict) -> None:
    (directory / MANIFEST_FILE).write_text(json.dumps(manifest), encoding="utf-8")


def _refresh_entry(directory: Path, name: str, **overrides) -> None:
    """Make the manifest describe ``name`` as it is now on disk (to get past the size/hash checks)."""
    manifest = _manifest(directory)
    data = (directory / name).read_bytes()
    manifest["files"][name].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest(), **overrides)
    _write_manifest(directory, manifest)


def _same_search(a: HybridRetriever, b: HybridRetriever, corpus) -> None:
    texts, E = corpus
    for i in range(0, N_DOCS, 4):
        ra, rb = a.search(texts[i], E[i]), b.search(texts[i], E[i])
        np.testing.assert_array_equal(ra.ids, rb.ids)
        np.testing.assert_array_equal(ra.scores, rb.scores)


# ------------------------------------------------------------------ round trips
@pytest.mark.parametrize("mmap", [False, True])
def test_round_trip(saved, corpus, mmap: bool) -> None:
    retriever, directory = saved
    loaded = HybridRetriever.load(directory, mmap=mmap)
    assert loaded.texts == retriever.texts
    assert loaded.config == retriever.config
    assert loaded.bm25.params == retriever.bm25.params
    assert loaded.normalize is False
    np.testing.assert_array_equal(loaded.embeddings, retriever.embeddings)
    _same_search(retriever, loaded, corpus)


def test_mmap_is_memory_mapped(saved) -> None:
    _, directory = saved
    parts = load_index(directory, mmap=True)
    assert isinstance(parts.embeddings, np.memmap)
    assert not parts.embeddings.flags.writeable


def test_load_with_another_config(saved, corpus) -> None:
    retriever, directory = saved
    loaded = HybridRetriever.load(directory, config="rrf_cfsr")
    assert loaded.config == preset("rrf_cfsr")
    _same_search(retriever.with_config("rrf_cfsr"), loaded, corpus)


def test_manifest_describes_every_file(saved) -> None:
    _, directory = saved
    manifest = _manifest(directory)
    assert manifest["format_version"] == FORMAT_VERSION
    assert manifest["fieldrank_version"] == fieldrank.__version__
    assert (manifest["n_docs"], manifest["dim"]) == (N_DOCS, DIM)
    files = manifest["files"]
    assert {EMBEDDINGS_FILE, TEXTS_FILE, CONFIG_FILE} <= set(files)
    assert sorted(name for name in files if name.startswith(f"{BM25_DIR}/")) == sorted(
        f"{BM25_DIR}/{p.name}" for p in (directory / BM25_DIR).iterdir())
    assert files[EMBEDDINGS_FILE]["shape"] == [N_DOCS, DIM]
    assert files[EMBEDDINGS_FILE]["dtype"] == "<f4"
    for name, entry in files.items():
        data = (directory / name).read_bytes()
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert json.loads((directory / TEXTS_FILE).read_text(encoding="utf-8"))[0] == saved[0].texts[0]


def test_normalize_flag_is_saved(corpus, tmp_path: Path) -> None:
    texts, E = corpus
    retriever = HybridRetriever(texts, E * 2, "rrf2", normalize=True)
    retriever.save(tmp_path / "idx")
    loaded = HybridRetriever.load(tmp_path / "idx")
    assert loaded.normalize is True
    np.testing.assert_array_equal(loaded.search(texts[0], E[0] * 3).ids, retriever.search(texts[0], E[0] * 3).ids)


def test_save_refuses_to_clobber(saved, corpus, tmp_path: Path) -> None:
    retriever, directory = saved
    with pytest.raises(FileExistsError, match="overwrite=True"):
        retriever.save(directory)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(FileExistsError, match="holds no fieldrank index"):
        retriever.save(other, overwrite=True)
    assert (other / "notes.txt").read_text(encoding="utf-8") == "mine"
    replacement = retriever.with_config("rrf2")
    replacement.save(directory, overwrite=True)
    assert HybridRetriever.load(directory).config == preset("rrf2")
    # Nothing is left behind next to the index (staging or backup folders).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "other"]


def test_save_into_empty_directory(saved, tmp_path: Path) -> None:
    retriever, _ = saved
    empty = tmp_path / "empty"
    empty.mkdir()
    retriever.save(empty)
    assert HybridRetriever.load(empty).texts == retriever.texts


# ------------------------------------------------------------------ refusals
def test_error_class_is_a_value_error() -> None:
    assert issubclass(IndexFormatError, ValueError)
    assert fieldrank.IndexFormatError is IndexFormatError


def test_missing_directory_or_manifest(tmp_path: Path, saved) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        HybridRetriever.load(tmp_path / "nowhere")
    _, directory = saved
    (directory / MANIFEST_FILE).unlink()
    with pytest.raises(IndexFormatError, match="manifest.json is missing"):
        HybridRetriever.load(directory)


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, 0, "1", None])
def test_unknown_format_version(saved, version) -> None:
    _, directory = saved
    manifest = _manifest(directory)
    manifest["format_version"] = version
    manifest["fieldrank_version"] = "9.9.9"
    _write_manifest(directory, manifest)
    with pytest.raises(IndexFormatError, match=r"format version .* is not supported; this fieldrank reads version"):
        HybridRetriever.load(directory)


def test_not_a_manifest(saved) -> None:
    _, directory = saved
    (directory / MANIFEST_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(IndexFormatError, match="not valid JSON"):
        HybridRetriever.load(directory)
    _write_manifest(directory, {"format": "something else"})
    with pytest.raises(IndexFormatError, match="does not describe"):
        HybridRetriever.load(directory)


@pytest.mark.parametrize("name", [EMBEDDINGS_FILE, TEXTS_FILE, CONFIG_FILE, f"{BM25_DIR}/data.csc.index.npy",
                                  f"{BM25_DIR}/vocab.index.json"])
def test_truncated_file(saved, name: str) -> None:
    _, directory = saved
    path = directory / name
    path.write_bytes(path.read_bytes()[:-7])
    with pytest.raises(IndexFormatError, match="truncated or modified"):
        HybridRetriever.load(directory)


def test_truncated_embeddings_behind_a_consistent_manifest(saved) -> None:
    # Even when the manifest is rewritten to match, a short .npy cannot load.
    _, directory = saved
    path = directory / EMBEDDINGS_FILE
    path.write_bytes(path.read_bytes()[:-DIM * 4])
    _refresh_entry(directory, EMBEDDINGS_FILE)
    with pytest.raises(IndexFormatError, match="embeddings.npy (cannot be read|is not a valid .npy file.*truncated)"):
        HybridRetriever.load(directory)


@pytest.mark.parametrize("name", [EMBEDDINGS_FILE, TEXTS_FILE, CONFIG_FILE, f"{BM25_DIR}/indices.csc.index.npy"])
def test_corrupted_file(saved, name: str) -> None:
    _, directory = saved
    path = directory / name
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="does not match its sha256"):
        HybridRetriever.load(directory)


def test_corrupted_contents_without_hash_check(saved) -> None:
    _, directory = saved
    original = (directory / TEXTS_FILE).read_bytes()
    (directory / TEXTS_FILE).write_text(json.dumps(["only one text"]), encoding="utf-8")
    _refresh_entry(directory, TEXTS_FILE)
    with pytest.raises(IndexFormatError, match="holds 1 texts"):
        HybridRetriever.load(directory, verify=False)
    (directory / TEXTS_FILE).write_bytes(original)
    _refresh_entry(directory, TEXTS_FILE)
    (directory / CONFIG_FILE).write_text("legs = 3\n", encoding="utf-8")
    _refresh_entry(directory, CONFIG_FILE)
    with pytest.raises(IndexFormatError, match="config.toml is not a valid configuration"):
        HybridRetriever.load(directory, verify=False)


def test_mismatched_shapes(saved, corpus) -> None:
    _, directory = saved
    texts, E = corpus
    np.save(directory / EMBEDDINGS_FILE, np.ascontiguousarray(E[:-1]), allow_pickle=False)
    _refresh_entry(directory, EMBEDDINGS_FILE)
    with pytest.raises(IndexFormatError, match=r"embeddings.npy holds shape \[32, 10\]"):
        HybridRetriever.load(directory)
    _refresh_entry(directory, EMBEDDINGS_FILE, shape=[N_DOCS - 1, DIM])
    with pytest.raises(IndexFormatError, match=r"must be C-ordered float32 \(33, 10\)"):
        HybridRetriever.load(directory)


def test_no_pickle_is_ever_loaded(saved) -> None:
    # An object array would need pickle: it is refused from its header, before np.load.
    _, directory = saved
    objects = np.array([{"a": 1}] * N_DOCS, dtype=object)
    np.save(directory / EMBEDDINGS_FILE, objects, allow_pickle=True)
    _refresh_entry(directory, EMBEDDINGS_FILE)
    with pytest.raises(IndexFormatError, match="dtype"):
        HybridRetriever.load(directory)


def test_escaping_symlink_is_refused(saved, tmp_path: Path) -> None:
    _, directory = saved
    outside = tmp_path / "outside.json"
    (directory / TEXTS_FILE).rename(outside)
    os.symlink(outside, directory / TEXTS_FILE)
    with pytest.raises(IndexFormatError, match="outside the index directory"):
        HybridRetriever.load(directory)


def test_symlink_inside_the_directory_is_fine(saved, corpus) -> None:
    retriever, directory = saved
    (directory / TEXTS_FILE).rename(directory / "texts-real.json")
    os.symlink("texts-real.json", directory / TEXTS_FILE)
    assert HybridRetriever.load(directory).texts == retriever.texts


@pytest.mark.parametrize("name", ["../escape.json", "/etc/passwd"])
def test_manifest_paths_must_stay_inside(saved, name: str) -> None:
    _, directory = saved
    manifest = _manifest(directory)
    manifest["files"][name] = {"bytes": 1, "sha256": "0" * 64}
    _write_manifest(directory, manifest)
    with pytest.raises(IndexFormatError, match="not a plain relative path"):
        HybridRetriever.load(directory)


def test_unlisted_and_missing_files(saved) -> None:
    _, directory = saved
    (directory / BM25_DIR / "extra.npy").write_bytes(b"")
    with pytest.raises(IndexFormatError, match="not listed"):
        HybridRetriever.load(directory)
    (directory / BM25_DIR / "extra.npy").unlink()
    (directory / BM25_DIR / "params.index.json").unlink()
    with pytest.raises(IndexFormatError, match="params.index.json is missing"):
        HybridRetriever.load(directory)


def test_timeline_round_trip(corpus, tmp_path: Path) -> None:
    from fieldrank.config import TemporalLeg
    from fieldrank.temporal import Timeline

    texts, E = corpus
    session = np.repeat(np.arange(3), [11, 11, 11])
    dates = np.array(["2023-05-08", "2023-06-01", "2023-07-15"], dtype="datetime64[D]")[session]
    timeline = Timeline.from_turns(session, dates, texts)
    config = RetrieverConfig(legs=(TemporalLeg(depth=8), BM25Leg()), name="timed")
    retriever = HybridRetriever(texts, E, config, timeline=timeline)
    retriever.save(tmp_path / "idx")
    assert _manifest(tmp_path / "idx")["timeline"] == ["session", "time", "cue"]
    loaded = HybridRetriever.load(tmp_path / "idx")
    for field in ("session", "time", "cue"):
        np.testing.assert_array_equal(getattr(loaded.timeline, field), getattr(timeline, field))
    _same_search(retriever, loaded, corpus)
    assert HybridRetriever.load(tmp_path / "idx", config="rrf2").timeline is not None


def test_expanded_bm25_round_trip_and_rebuild_use_the_timeline(corpus, tmp_path: Path) -> None:
    from fieldrank.bm25 import BM25Index, BM25Params
    from fieldrank.config import TemporalLeg
    from fieldrank.temporal import Timeline

    texts, E = corpus
    session = np.repeat(np.arange(3), [11, 11, 11])
    timeline = Timeline(session=session)
    expanded = BM25Params(context_window=2, context_weight=0.5)
    config = RetrieverConfig(legs=(TemporalLeg(depth=8), BM25Leg(depth=8)), bm25=expanded, name="expanded")
    retriever = HybridRetriever(texts, E, config, timeline=timeline)
    reference = BM25Index(texts, expanded, sessions=session)
    np.testing.assert_array_equal(retriever.bm25.scores("kitchen budget"), reference.scores("kitchen budget"))
    retriever.save(tmp_path / "idx")
    loaded = HybridRetriever.load(tmp_path / "idx")
    assert loaded.config.bm25 == expanded
    np.testing.assert_array_equal(loaded.bm25.scores("kitchen budget"), reference.scores("kitchen budget"))
    _same_search(retriever, loaded, corpus)
    # A config change that rebuilds the index keeps the timeline's sessions.
    rebuilt = HybridRetriever(texts, E, config.replace(bm25=BM25Params()), timeline=timeline).with_config(config)
    np.testing.assert_array_equal(rebuilt.bm25.scores("garden dog"), reference.scores("garden dog"))


@pytest.mark.parametrize("mmap", [False, True])
def test_an_index_saved_before_the_redesign_loads_and_answers_as_it_did(mmap):
    """``tests/data/index_v1`` was written by fieldrank at bfb3ce6 (before issue #33's retriever
    package), with what it answered then; this code reads it and answers the same, bit for bit."""
    from tests.data import index_v1_recipe as recipe

    retriever = HybridRetriever.load(recipe.INDEX_DIR, mmap=mmap)
    assert retriever.config == RetrieverConfig.from_dict(recipe.CONFIG)
    texts, E, session, time, Q = recipe.corpus()
    assert list(retriever.texts) == texts and retriever.embeddings.tobytes() == E.tobytes()
    assert retriever.timeline.session.tolist() == session.tolist()
    expected = json.loads(recipe.EXPECTED_FILE.read_text(encoding="utf-8"))
    assert recipe.answers(retriever, Q) == expected
