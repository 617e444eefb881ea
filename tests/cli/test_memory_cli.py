"""``fieldrank memory``: add, recall, forget, list, export and import over a store file.

In process through :func:`fieldrank.cli.main` (the parser and the error handling a user gets),
plus one subprocess for the installed entry point. Files in tmp_path.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from fieldrank import MemoryStore, cli

TIMEOUT_S = 120


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["memory", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _seed(capsys, store: str) -> dict[str, int]:
    ids = {}
    for name, extra in (("rule", ["--tier", "core", "--tag", "ops", "--importance", "1"]),
                        ("old", []), ("new", ["--supersedes", "1"]), ("bob", ["--tenant", "bob"])):
        text = {"rule": "Never deploy to production on Fridays.", "old": "Orion uses MySQL 5.7.",
                "new": "Orion now uses Postgres 16.", "bob": "Bob's locker code is 4512."}[name]
        code, out, err = _cli(capsys, "add", "--store", store, text, *extra)
        assert code == 0, err
        ids[name] = int(out)
    return ids


def test_add_list_recall_forget(tmp_path, capsys):
    store = str(tmp_path / "new-folder" / "memory.db")
    ids = _seed(capsys, store)
    assert list(ids.values()) == [0, 1, 2, 3]

    code, out, err = _cli(capsys, "list", "--store", store)
    assert code == 0 and "4 of 4 memories" in err
    assert [int(line.split()[0]) for line in out.splitlines()] == [3, 2, 1, 0]  # newest first
    code, out, _ = _cli(capsys, "list", "--store", store, "--tenant", "default", "--tag", "ops", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in rows] == [ids["rule"]] and rows[0]["tier"] == "core"
    code, out, _ = _cli(capsys, "list", "--store", store, "--tier", "core", "--tier", "episodic", "--limit", "1")
    assert len(out.splitlines()) == 1
    code, out, _ = _cli(capsys, "list", "--store", store, "--until", "2000-01-01")
    assert out == ""

    code, out, _ = _cli(capsys, "recall", "--store", store, "Orion database", "--json")
    hits = [json.loads(line) for line in out.splitlines()]
    assert [h["id"] for h in hits] == [ids["new"], ids["old"]]  # the replacement first; bob's not seen
    with MemoryStore(store) as opened:  # looking did not reinforce
        assert opened.get(ids["new"]).recall_count == 0
    _cli(capsys, "recall", "--store", store, "Orion database", "--reinforce")
    with MemoryStore(store) as opened:
        assert opened.get(ids["new"]).recall_count == 1

    code, _, err = _cli(capsys, "forget", "--store", store, str(ids["rule"]), "999")
    assert code == cli.EXIT_USER_ERROR and "no memory with id 999" in err
    code, _, err = _cli(capsys, "forget", "--store", store, str(ids["bob"]), "--tenant", "default")
    assert code == cli.EXIT_USER_ERROR
    with MemoryStore(store) as opened:  # nothing was forgotten by the refused calls
        assert len(opened) == 4
    code, out, _ = _cli(capsys, "forget", "--store", store, str(ids["rule"]))
    assert code == 0 and out.strip() == f"forgot {ids['rule']}"
    code, out, _ = _cli(capsys, "list", "--store", store, "--json")
    assert ids["rule"] not in [json.loads(line)["id"] for line in out.splitlines()]


def test_export_import_round_trip(tmp_path, capsys):
    store, copy, dump = str(tmp_path / "a.db"), str(tmp_path / "b.db"), tmp_path / "dump.jsonl"
    ids = _seed(capsys, store)
    code, _, err = _cli(capsys, "export", "--store", store, "-o", str(dump))
    assert code == 0 and "exported 4 memories" in err
    code, out, err = _cli(capsys, "import", "--store", copy, str(dump))
    assert code == 0, err
    with MemoryStore(store) as a, MemoryStore(copy) as b:
        for memory_id in ids.values():
            old, new = a.get(memory_id), b.get(memory_id)  # a new store: the same ids in the same order
            for field in ("tenant", "text", "created_at", "tier", "importance", "tags", "entities", "supersedes",
                          "superseded_by"):
                assert getattr(new, field) == getattr(old, field), field
    code, out, _ = _cli(capsys, "export", "--store", copy, "--tenant", "bob")
    assert [json.loads(line)["text"] for line in out.splitlines()] == ["Bob's locker code is 4512."]


def test_import_refuses_bad_lines_before_adding_anything(tmp_path, capsys):
    store = str(tmp_path / "m.db")
    cases = [
        ('{"text": "ok"}\nnot json\n', "line 2: not JSON"),
        ('{"text": "ok"}\n{"txt": "typo"}\n', "line 2: expected a JSON object with a 'text' string"),
        ('{"text": "ok", "colour": "red"}\n', "unknown field(s) ['colour']"),
        ('{"id": 5, "text": "new", "supersedes": 4}\n', "supersedes 4, which is not an earlier line"),
        ('{"text": "ok"}\n{"text": "bad", "tier": "procedural"}\n', "line 2"),
        ('{"text": "ok"}\n{"text": "bad", "created_at": "someday"}\n', "line 2: created_at must be an ISO 8601"),
    ]
    for text, needle in cases:
        dump = tmp_path / "in.jsonl"
        dump.write_text(text)
        code, _, err = _cli(capsys, "import", "--store", store, str(dump))
        assert code == cli.EXIT_USER_ERROR and needle in err, (text, err)
    with MemoryStore(store) as opened:
        assert len(opened) <= 1  # the tier check is the store's: the one line before it may be in


def test_dense_store_needs_its_embedder_or_exported_embeddings(tmp_path, capsys, rng):
    store, copy = str(tmp_path / "dense.db"), str(tmp_path / "copy.db")
    vectors = rng.standard_normal((2, 8)).astype(np.float32)
    with MemoryStore(store, 8) as opened:
        for i, vector in enumerate(vectors):
            opened.add(f"memory {i}", vector)
    code, _, err = _cli(capsys, "add", "--store", store, "text alone")
    assert code == cli.EXIT_USER_ERROR and "--embed" in err
    code, _, err = _cli(capsys, "recall", "--store", store, "memory")
    assert code == cli.EXIT_USER_ERROR and "--embed" in err
    dump = tmp_path / "dense.jsonl"
    assert _cli(capsys, "export", "--store", store, "--embeddings", "-o", str(dump))[0] == 0
    with MemoryStore(copy, 8):
        pass
    code, _, err = _cli(capsys, "import", "--store", copy, str(dump))
    assert code == 0, err
    with MemoryStore(store) as a, MemoryStore(copy) as b:
        assert np.allclose(a.get(1).embedding, b.get(1).embedding)


def test_entry_point_runs_as_a_subprocess(tmp_path):
    store = str(tmp_path / "m.db")
    done = subprocess.run([sys.executable, "-m", "fieldrank.cli", "memory", "add", "--store", store, "hello"],
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "0", done.stderr
    done = subprocess.run([sys.executable, "-m", "fieldrank.cli", "memory", "list", "--store", store, "--since", "x"],
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == cli.EXIT_USER_ERROR and "--since must be an ISO 8601" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("action", ["add", "recall", "forget", "list", "export", "import"])
def test_every_action_has_help(action, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["memory", action, "--help"])
    assert done.value.code == 0 and "--store" in capsys.readouterr().out
