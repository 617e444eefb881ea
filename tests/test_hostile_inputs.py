"""Hostile inputs (issue 15): calls the API accepts must not abort the process, and hostile
files and command lines end in a clear error that names what is wrong.

Sections: worker threads that cannot be started; the CLI and its loaders; saved index
directories; memory store files (see also ``tests/retriever/test_untrusted_loading.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import fieldrank
from fieldrank import cli
from fieldrank.memory import MODES, MemoryStore, StoreFormatError
from fieldrank.memory._schema import MEMORY_ID_LIMIT, RECALL_COUNT_RANGE
from fieldrank.persistence import IndexFormatError

from tests.helpers import SEED, unit_rows
from tests.helpers import run_sql as _sql

# ----------------------------------------------------------------- threads that cannot start

_THREAD_LIMIT_SCRIPT = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import fieldrank
    from fieldrank import _core

    rng = np.random.default_rng(%(seed)d)
    E = rng.standard_normal((400, 16)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    Q = E[rng.integers(0, 400, 3000)].copy()
    probe = np.ones(1 << 16, dtype=np.float32)
    calls = {
        "prefilter_batch": lambda t: fieldrank.prefilter_batch(E, Q, 3, n_threads=t).ids,
        "cfs_batch": lambda t: fieldrank.cfs_batch(E, Q[:600], 3, p=8, n_threads=t).ids,
        "read_probe": lambda t: np.array([_core.read_probe(probe, t)]),
    }
    expected = {name: call(1) for name, call in calls.items()}
    # Address space for the interpreter plus about 200 MiB: a few dozen thread stacks, not
    # the thousands asked for, so std::thread fails part way through starting them.
    page = resource.getpagesize()
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * page
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (mapped + (200 << 20), hard))
    got = {name: call(3000) for name, call in calls.items()}
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    for name in calls:
        assert np.array_equal(got[name], expected[name]), name
    print("ok", sorted(calls))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux")
def test_batch_whose_threads_cannot_start_returns_the_same_result(tmp_path):
    """Issue 15 item 0: ``prefilter_batch(E, Q, 3, n_threads=20000)`` under a memory limit used to
    end in ``std::terminate`` (exit 134). Workers that cannot start are left out instead."""
    script = tmp_path / "threads.py"
    script.write_text(_THREAD_LIMIT_SCRIPT % {"seed": SEED})
    # One malloc arena: under the tight RLIMIT_AS each started thread's own arena (64 MiB of address
    # space) could otherwise fail glibc's lazy TLS allocation ("cannot allocate memory for
    # thread-local data", an abort outside fieldrank) on a loaded machine, where more threads are
    # alive at once. Thread stacks still run out part way, which is what this test is about.
    env = {**os.environ, "MALLOC_ARENA_MAX": "1"}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.startswith("ok")


# ----------------------------------------------------------------------------- store files


_DIM = 8


@pytest.fixture
def store_path(tmp_path):
    """A small store file: 6 memories with tags, and co-recall links after a recall."""
    rng = np.random.default_rng(SEED)
    path = tmp_path / "memory.sqlite"
    with MemoryStore(path, dim=_DIM) as store:
        store.add_many([f"memory {i} about Caroline" for i in range(6)], rng.standard_normal((6, _DIM)),
                       tags=[["a"], ["b"], [], ["a", "c"], [], ["x"]])
        store.recall("Caroline", np.ones(_DIM), k=3)
    return path


def _exercise(store):
    """Every call that reads what the file held: recall in every mode, get, add, update, forget."""
    cue = np.ones(_DIM)
    for mode in MODES:
        store.recall("Caroline memory", cue, k=4, mode=mode, required_tags=None)
    store.recall("Caroline", cue, k=4, required_tags=["a"])
    ids = [i for i in range(10) if i in store]
    for memory_id in ids:
        store.get(memory_id)
    new = store.add("one more", cue)
    store.update(new, text="one more, changed")
    store.forget(new)


# One cell of the memories table set by SQL: (column, SQL value, memory id).
_CELL_TAMPERINGS = {
    "tags nested list": ("tags", "'[[1]]'", 1),
    "tags a number": ("tags", "'5'", 1),
    "tags not JSON": ("tags", "'[a'", 2),
    "tags a JSON string": ("tags", "'\"abc\"'", 2),
    "tags with null": ("tags", "'[1, null]'", 3),
    "tags deeply nested": ("tags", "?", 3),
    "entities a dict": ("entities", "'{}'", 0),
    "embedding as TEXT": ("embedding", "'abcdefghabcdefghabcdefghabcdefgh'", 3),
    "embedding NaN": ("embedding", "?", 4),
    "text as BLOB": ("text", "CAST('hello' AS BLOB)", 1),
    "text bad UTF-8": ("text", "CAST(X'68ff' AS TEXT)", 5),
    "tenant surrogate": ("tenant", "CAST(X'eda080' AS TEXT)", 2),
    "tags bad UTF-8": ("tags", "CAST(X'5b22ff225d' AS TEXT)", 0),
    "tenant empty": ("tenant", "''", 1),
    "tier unknown": ("tier", "'root'", 2),
    "importance text": ("importance", "'high'", 0),
    "importance inf": ("importance", "9e999", 0),
    "created_at -inf": ("created_at", "-9e999", 0),
    "storage below 1": ("storage_strength", "0.5", 1),
    "valence 2": ("valence", "2", 1),
    "recall_count 2**60": ("recall_count", "1152921504606846976", 1),
    "recall_count float": ("recall_count", "1.5", 1),
    "recall_count negative": ("recall_count", "-1", 1),
    "tombstone 7": ("tombstone", "7", 1),
}
# Any other change (SQL applied to the file, table, column, memory id or None).
_OTHER_TAMPERINGS = {
    "id at int64 max": ("UPDATE memories SET id = 9223372036854775807 WHERE id = 5", "memories", "id", None),
    "link weight inf": ("UPDATE links SET weight = 9e999", "links", "weight", None),
    "link weight 1e308": ("UPDATE links SET weight = 1e308", "links", "weight", None),
    "link weight text": ("UPDATE links SET weight = 'abc'", "links", "weight", None),
    "link id negative": ("UPDATE links SET a = -5 WHERE rowid = (SELECT min(rowid) FROM links)", "links", "a", None),
    "meta dim x": ("UPDATE meta SET value = 'x' WHERE key = 'dim'", "meta", "value", None),
    "meta dim huge": ("UPDATE meta SET value = '99999999999999999999' WHERE key = 'dim'", "meta", "value", None),
    "meta next_id 1e20": ("UPDATE meta SET value = '1e20' WHERE key = 'next_id'", "meta", "value", None),
    "meta next_id past ids": ("UPDATE meta SET value = '99999999999999999999' WHERE key = 'next_id'",
        "meta", "value", None),
    "meta next_id missing": ("DELETE FROM meta WHERE key = 'next_id'", "meta", "value", None),
    "meta next_id bad UTF-8": ("UPDATE meta SET value = CAST(X'31ff' AS TEXT) WHERE key = 'next_id'",
        "meta", "value", None),
    "column dropped": ("ALTER TABLE memories DROP COLUMN valence", "memories", "valence", None),
    "links dropped": ("DROP TABLE links", "links", None, None),
}
# Every one must be refused on open.
_TAMPERINGS = {
    **{name: (f"UPDATE memories SET {column} = {value} WHERE id = {row}", "memories", column, row)
       for name, (column, value, row) in _CELL_TAMPERINGS.items()},
    **_OTHER_TAMPERINGS,
}


def _params(name):
    if name == "tags deeply nested":
        return ("[" * 100_000 + "]" * 100_000,)
    if name == "embedding NaN":
        return (np.full(_DIM, np.nan, dtype="<f4").tobytes(),)
    return ()


@pytest.mark.parametrize("name", sorted(_TAMPERINGS))
def test_tampered_store_file_is_refused_on_open_naming_where(store_path, name):
    statement, table, column, memory_id = _TAMPERINGS[name]
    _sql(store_path, statement, *_params(name))
    before = store_path.read_bytes()
    with pytest.raises(StoreFormatError) as caught:
        MemoryStore(store_path)
    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.path, error.table, error.column) == (str(store_path), table, column)
    message = str(error)
    assert str(store_path) in message and f"table {table!r}" in message
    if column is not None:
        assert f"column {column!r}" in message
    if memory_id is not None:
        assert error.row == memory_id and f"memory {memory_id}," in message
    assert store_path.read_bytes() == before  # refused before anything was written


def test_store_that_opened_never_fails_later(store_path):
    """Values at the edges of every accepted range open, and then every call works."""
    _sql(store_path, "UPDATE memories SET recall_count = ? WHERE id = 0", RECALL_COUNT_RANGE[1])
    _sql(store_path, "UPDATE memories SET storage_strength = 1e308, created_at = -1e308, last_access = 1e308"
                     " WHERE id = 1")
    _sql(store_path, "UPDATE memories SET importance = 1, valence = -1, tags = '[\"b\", \"a\"]' WHERE id = 2")
    _sql(store_path, "UPDATE links SET weight = 1")
    _sql(store_path, "UPDATE meta SET value = ? WHERE key = 'next_id'", str(MEMORY_ID_LIMIT - 5))
    with MemoryStore(store_path) as store:
        _exercise(store)
        with pytest.raises(ValueError, match="run out of memory ids"):
            store.add_many(["a"] * 10, np.ones((10, _DIM)))
    with MemoryStore(store_path) as store:  # and it reopens after the recalls wrote their bookkeeping
        assert store.get(0).recall_count == RECALL_COUNT_RANGE[1]
        _exercise(store)


@pytest.mark.parametrize("count", [2**53, 2**53 + 1, 2**60, 2**63, 2**64, 1e300, -1, 0.5])
def test_recall_counts_the_loader_would_refuse_are_refused_by_the_api(tmp_path, count):
    """Issue 15 item 0: ``add_many(..., recall_counts=2**60)`` was committed and the file then
    could not be opened; 2**64 and 1e300 wrapped to int64's minimum."""
    path = tmp_path / "memory.sqlite"
    with MemoryStore(path, dim=_DIM) as store:
        with pytest.raises(ValueError, match="recall_counts"):
            store.add_many(["x"], np.ones((1, _DIM)), recall_counts=count)
        store.add_many(["x"], np.ones((1, _DIM)), recall_counts=RECALL_COUNT_RANGE[1])
        store.recall("x", np.ones(_DIM))  # the count saturates at the top of its range
    with MemoryStore(path) as store:
        assert store.get(0).recall_count == RECALL_COUNT_RANGE[1]


@pytest.mark.parametrize("in_file", [False, True])
def test_text_utf8_cannot_encode_is_refused_alike_in_memory_and_on_file(tmp_path, in_file):
    """Lone surrogates used to be accepted in memory and to raise UnicodeEncodeError on a file."""
    store = MemoryStore(tmp_path / "m.sqlite" if in_file else None, dim=_DIM)
    bad = "caf\udce9"
    for kwargs in ({"text": bad}, {"tenant": bad}, {"tags": [bad]}, {"entities": ["ok", bad]}):
        arguments = {"text": "fine", **kwargs}
        with pytest.raises(ValueError, match="lone surrogate"):
            store.add(arguments.pop("text"), np.ones(_DIM), **arguments)
    assert len(store) == 0
    store.close()


# ------------------------------------------------------------------------------- the CLI


_N_DOCS, _CLI_DIM = 12, 8
_DEEP = 100_000  # far past Python's recursion limit
#: A JSON (and TOML) array nested _DEEP times: a parser that recurses per level overflows on it.
_NESTED = "[" * _DEEP + "]" * _DEEP


def _write_npy_declaring(path, shape, dtype="<f4", data=b""):
    """A .npy file whose header declares ``shape`` but holds only ``data``."""
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1, dtype=dtype))
    header["shape"] = shape
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        f.write(data)


@pytest.fixture
def cli_files(tmp_path):
    rng = np.random.default_rng(SEED)
    texts = [f"text number {i} about the garden" for i in range(_N_DOCS)]
    paths = {"texts": tmp_path / "texts.jsonl", "E": tmp_path / "E.npy", "index": tmp_path / "index",
             "q": tmp_path / "q.npy"}
    paths["texts"].write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    np.save(paths["E"], unit_rows(rng, _N_DOCS, _CLI_DIM))
    np.save(paths["q"], unit_rows(rng, 1, _CLI_DIM)[0])
    assert cli.main(["index", "--texts", str(paths["texts"]), "--embeddings", str(paths["E"]),
                     "--out", str(paths["index"]), "--preset", "rrf2"]) == 0
    return paths


def _user_error(capsys, argv, fragment):
    capsys.readouterr()
    assert cli.main(argv) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error:" in err, err
    assert fragment in err, err


def _hostile_cli_case(name, tmp_path, paths):
    """(argv, fragment of the expected error) for one hostile CLI input."""
    index = ["index", "--embeddings", str(paths["E"]), "--out", str(tmp_path / "out")]
    search = ["search", "--index", str(paths["index"]), "--text", "garden"]

    def index_embeddings(embeddings):
        return ["index", "--texts", str(paths["texts"]), "--embeddings", str(embeddings), "--out",
                str(tmp_path / "out")]

    def text_file(file_name, text):
        path = tmp_path / file_name
        path.write_text(text, encoding="utf-8")
        return str(path)

    if name == "nested jsonl line":
        texts = text_file("nested.jsonl", '{"text": "a"}\n' + _NESTED + "\n")
        return index + ["--texts", texts], "line 2: the JSON is nested too deeply"
    if name == "nested json":
        return index + ["--texts", text_file("nested.json", _NESTED)], "nested too deeply"
    if name == "nested toml config":
        return search + ["--config", text_file("deep.toml", "x = " + _NESTED + "\n")], "nested too deeply"
    if name == "npy declaring 1e11 rows":
        embeddings = tmp_path / "huge.npy"
        _write_npy_declaring(embeddings, (10**11, 16), data=b"\0" * 64)
        return index_embeddings(embeddings), "header declares shape (100000000000, 16)"
    if name == "query npy declaring 1e11 values":
        query = tmp_path / "q_huge.npy"
        _write_npy_declaring(query, (10**11,))
        return search + ["--vector-file", str(query)], "header declares"
    if name == "vector-row with a 1-D vector":
        return search + ["--vector-file", str(paths["q"]), "--vector-row", "0"], "holds one vector"
    if name == "texts symlink loop":
        loop = tmp_path / "loop.json"
        loop.symlink_to(loop)
        return index + ["--texts", str(loop)], "loop.json"
    if name == "object npy":
        embeddings = tmp_path / "objects.npy"
        np.save(embeddings, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        return index_embeddings(embeddings), "Python objects"
    raise AssertionError(name)


_CLI_CASES = ["nested jsonl line", "nested json", "nested toml config", "npy declaring 1e11 rows",
              "query npy declaring 1e11 values", "vector-row with a 1-D vector", "texts symlink loop",
              "object npy"]


@pytest.mark.parametrize("name", _CLI_CASES)
def test_cli_hostile_input_is_a_clear_user_error(cli_files, tmp_path, capsys, name):
    argv, fragment = _hostile_cli_case(name, tmp_path, cli_files)
    _user_error(capsys, argv, fragment)


@pytest.mark.parametrize("scale", [1e-30, 1e19, 3e38])
def test_cli_query_of_huge_or_tiny_finite_float32_is_accepted(cli_files, tmp_path, capsys, scale):
    """A finite float32 query is valid elsewhere (the API normalises in float64); the CLI used to
    refuse 3e38-sized entries because their float32 norm overflowed."""
    base = np.load(cli_files["q"])
    query = tmp_path / "q_scaled.npy"
    np.save(query, (base * np.float32(scale)).astype(np.float32))
    argv = ["search", "--index", str(cli_files["index"]), "--text", "garden", "--json"]
    assert cli.main([*argv, "--vector-file", str(cli_files["q"])]) == 0
    want = json.loads(capsys.readouterr().out)
    assert cli.main([*argv, "--vector-file", str(query)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [h["id"] for h in got["hits"]] == [h["id"] for h in want["hits"]]


# -------------------------------------------------------------------------- index dirs


def _reseal(directory, name):
    """Rewrite the manifest entry of ``name`` to match the file, as an attacker could."""
    from fieldrank.persistence import MANIFEST_FILE, _describe_file

    manifest_path = directory / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    manifest["files"][name] = _describe_file(directory, name)
    manifest_path.write_text(json.dumps(manifest))


def test_index_embeddings_header_declaring_1e11_rows_resealed(cli_files):
    directory = cli_files["index"]
    _write_npy_declaring(directory / "embeddings.npy", (10**11, _CLI_DIM), data=b"\0" * 64)
    _reseal(directory, "embeddings.npy")
    for verify in (True, False):
        with pytest.raises(IndexFormatError, match="embeddings.npy.*header declares shape"):
            fieldrank.HybridRetriever.load(directory, verify=verify)


@pytest.mark.parametrize("name", ["manifest.json", "texts.json"])
def test_index_nested_json_is_an_index_format_error(cli_files, name):
    directory = cli_files["index"]
    (directory / name).write_text(_NESTED)
    if name != "manifest.json":
        _reseal(directory, name)
    with pytest.raises(IndexFormatError, match=f"{name} is nested too deeply"):
        fieldrank.HybridRetriever.load(directory)


@pytest.mark.parametrize("name", ["texts.json", "bm25/params.index.json"])
def test_index_symlink_loop_is_an_index_format_error(cli_files, name):
    """Issue 15 item 4: a symlink loop (texts.json -> texts.json) raised RuntimeError."""
    path = cli_files["index"] / name
    path.unlink()
    path.symlink_to(path.name)
    with pytest.raises(IndexFormatError, match="cannot be resolved|loop"):
        fieldrank.HybridRetriever.load(cli_files["index"])


@pytest.mark.parametrize("in_file", [False, True])
def test_accepted_extremes_give_no_warning_and_work(tmp_path, in_file):
    """Issue 15 item 3: at_time=-1e308, storage_strength=1e308 and a float64 embedding of 1e300
    are accepted; they used to emit RuntimeWarnings (overflow in multiply, in cast)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store = MemoryStore(tmp_path / "m.sqlite" if in_file else None, dim=4)
        big = store.add("a huge float64 row", np.array([1e300, 1.0, 0.0, 0.0]), storage_strength=1e308)
        small = store.add("a tiny float64 row", np.array([0.0, 1e-300, 0.0, 0.0]), created_at=-1e308)
        np.testing.assert_allclose(store.get(big).embedding, [1.0, 0.0, 0.0, 0.0])
        np.testing.assert_allclose(store.get(small).embedding, [0.0, 1.0, 0.0, 0.0])
        for at_time in (-1e308, 1e308, 0.0):
            for mode in MODES:
                hits = store.recall("row", np.array([1.0, 1e-300, 0.0, 0.0]), k=2, mode=mode, at_time=at_time).hits
                assert len(hits) >= 1
        store.close()
    if in_file:
        MemoryStore(tmp_path / "m.sqlite").close()  # and the file reopens


# ------------------------------------------------------------------- mmap'd index replaced

_MMAP_READER = textwrap.dedent("""
    import sys
    import numpy as np
    import fieldrank

    retriever = fieldrank.HybridRetriever.load(sys.argv[1], mmap=True)
    assert isinstance(retriever.embeddings, np.memmap) or isinstance(retriever.embeddings.base, np.memmap)
    print("ready", flush=True)
    sys.stdin.readline()  # the parent replaces (or truncates) the index meanwhile
    total = float(np.asarray(retriever.embeddings, dtype=np.float64).sum())  # touches every page
    hits = retriever.search("garden", retriever.embeddings[0].copy(), 3)
    print("sum", repr(total), "top", int(hits.ids[0]), flush=True)
""")


def _mmap_reader(tmp_path, index):
    script = tmp_path / "reader.py"
    script.write_text(_MMAP_READER)
    reader = subprocess.Popen([sys.executable, str(script), str(index)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert reader.stdout.readline().strip() == "ready", reader.stderr.read()
    return reader


def _big_index(seed):
    rng = np.random.default_rng(seed)
    n = 4096  # 4096 x 64 float32 = 1 MiB of embeddings: many pages
    texts = [f"text {i} about the garden" for i in range(n)]
    return fieldrank.HybridRetriever(texts, unit_rows(rng, n, 64), "rrf2")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mmap semantics checked on Linux")
def test_save_overwrite_while_a_reader_has_the_index_mmapped(tmp_path):
    """save(overwrite=True) moves a complete new directory into place and removes the old files
    by name: a reader that mapped them keeps reading the old, intact data (no SIGBUS)."""
    index = tmp_path / "index"
    old = _big_index(SEED)
    old.save(index)
    expected = float(np.asarray(old.embeddings, dtype=np.float64).sum())
    reader = _mmap_reader(tmp_path, index)
    _big_index(SEED + 1).save(index, overwrite=True)
    out, err = reader.communicate("go\n", timeout=120)
    assert reader.returncode == 0, (reader.returncode, err[-2000:])
    assert out.split()[:2] == ["sum", repr(expected)]  # the old index, as mapped
    assert int(out.split()[3]) == 0
    reloaded = fieldrank.HybridRetriever.load(index)
    assert float(np.asarray(reloaded.embeddings, dtype=np.float64).sum()) != expected  # the new one


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mmap semantics checked on Linux")
def test_truncating_an_mmapped_index_in_place_is_what_kills_a_reader(tmp_path):
    """The unsafe way, documented in docs/reliability.md: writing over embeddings.npy in place
    (here: truncating it) while a reader has it mapped ends the reader with SIGBUS. This is
    the control for the test above."""
    index = tmp_path / "index"
    _big_index(SEED).save(index)
    reader = _mmap_reader(tmp_path, index)
    with open(index / "embeddings.npy", "r+b") as f:
        f.truncate(0)
    _, err = reader.communicate("go\n", timeout=120)
    assert reader.returncode == -signal.SIGBUS, (reader.returncode, err[-2000:])
