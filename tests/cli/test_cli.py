"""End-to-end tests of the ``fieldrank`` command line (subprocesses; files in tmp_path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fieldrank import cli
from fieldrank.config import preset
from fieldrank.demo import CONVERSATION_METHODS, DEMO_METHODS, MARK_RELEVANT, MARK_REPEAT, run_conversation, run_demo
from fieldrank.hybrid import HybridRetriever

from tests.helpers import unit_rows

SEED = 20240919
N_DOCS = 45
DIM = 16
WORDS = ("kitchen", "budget", "quartz", "cabinets", "installer", "fees", "dog", "piano", "flight", "garden")
TIMEOUT_S = 120


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "error::DeprecationWarning:fieldrank"}
    return subprocess.run([sys.executable, "-m", "fieldrank.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)


def _assert_user_error(proc: subprocess.CompletedProcess, command: str, fragment: str) -> None:
    assert proc.returncode == cli.EXIT_USER_ERROR, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"fieldrank {command}: error:" in proc.stderr
    assert fragment in proc.stderr


@pytest.fixture
def data(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(SEED)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 7)))) for _ in range(N_DOCS)]
    E = unit_rows(rng, N_DOCS, DIM)
    paths = {"texts": tmp_path / "memories.jsonl", "E": tmp_path / "E.npy", "q": tmp_path / "q.npy",
             "Q": tmp_path / "Q.npy", "index": tmp_path / "index"}
    paths["texts"].write_text("".join(json.dumps({"text": t, "other": 1}) + "\n" for t in texts), encoding="utf-8")
    np.save(paths["E"], E)
    np.save(paths["q"], E[3] * 2.0)  # the CLI normalises the query vector
    np.save(paths["Q"], E[:4].astype(np.float64))
    return paths


def test_demo_runs_and_its_verdicts_follow_the_results(tmp_path: Path) -> None:
    proc = _run("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Paraphrase pile-up" in out and "Partial-evidence dilution" in out
    assert out.count("verdict: top-3:") == 2
    for method in DEMO_METHODS:
        assert method in out
    assert f" {MARK_RELEVANT}" in out and f" {MARK_REPEAT}" in out

    assert "default finds evidence that cosine misses" in out and "median latency/query" in out

    as_json = _run("demo", "--json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    conversation = report["conversation"]
    assert set(conversation["methods"]) == set(CONVERSATION_METHODS)
    for entry in conversation["methods"].values():
        assert entry["median_latency_ms"] > 0 and 0 <= entry["answered"] <= len(conversation["questions"])
    assert [s["name"] for s in report["scenarios"]] == ["paraphrase_pileup", "partial_evidence"]
    for scenario in report["scenarios"]:
        n_facts = len(scenario["facts"])
        best = max(m["facts_covered"]["3"] for m in scenario["methods"].values())
        assert f"{best}/{n_facts} facts" in scenario["verdict"]
        assert scenario["verdict"] in out
        for method in scenario["methods"].values():
            assert len(method["ids"]) == report["k"]


def test_demo_conversation_figures_follow_the_ranks() -> None:
    """The conversation's counts come from the evidence ranks; the data is the packaged text."""
    outcome = run_conversation(("cosine", "default"), k=5, repeats=1)
    c = outcome.conversation
    assert len(c.texts) == c.embeddings.shape[0] and len(c.questions) == c.question_vectors.shape[0]
    assert np.allclose(np.linalg.norm(c.embeddings, axis=1), 1.0, atol=1e-5)
    for method in ("cosine", "default"):
        ranks = outcome.evidence_ranks[method]
        assert all(0 <= r <= 5 for question in ranks for r in question)
        assert sum(outcome.answered(method)) == sum(any(question) for question in ranks)
    wins = outcome.only("default", "cosine")
    assert wins, "the demo's claim: default answers a question cosine misses"
    assert all(outcome.answered("default")[i] and not outcome.answered("cosine")[i] for i in wins)
    # every evidence turn is a real turn of the session its question names
    assert all(0 <= e < len(c.texts) for ev in c.evidence for e in ev)


def test_demo_report_in_process() -> None:
    report = run_demo(("cosine", "rrf_cfsr"), k=3)
    pileup = report.scenarios[0]
    cosine = pileup.method("cosine")
    # The marks follow the facts: a restatement after the first is a repeat.
    redundant = set(pileup.scenario.redundant)
    assert sum(i in redundant for i in cosine.ids) - cosine.repeats[3] == (1 if redundant & set(cosine.ids) else 0)
    assert pileup.cuts == (3,)
    with pytest.raises(ValueError, match="unknown preset"):
        run_demo(("cosine", "nope"))


def test_index_then_search(data: dict[str, Path], tmp_path: Path) -> None:
    built = _run("index", "--texts", str(data["texts"]), "--embeddings", str(data["E"]), "--out", str(data["index"]),
                 "--preset", "rrf_cfsr", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert f"indexed {N_DOCS} texts" in built.stdout
    retriever = HybridRetriever.load(data["index"])
    assert retriever.config == preset("rrf_cfsr") and len(retriever) == N_DOCS

    text = "kitchen quartz fees"
    table = _run("search", "--index", str(data["index"]), "--text", text, "--vector-file", str(data["q"]),
                 "--k", "5", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "cosine" in table.stdout and "cfsr" in table.stdout and "rrf" in table.stdout

    as_json = _run("search", "--index", str(data["index"]), "--text", text, "--vector-file", str(data["q"]),
                   "--k", "5", "--json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    result = json.loads(as_json.stdout)
    q = np.load(data["q"]).astype(np.float32)
    expected = retriever.search(text, q / np.linalg.norm(q), 5)
    assert [hit["id"] for hit in result["hits"]] == expected.ids.tolist()
    assert set(result["hits"][0]["legs"]) == {"cosine", "bm25", "cfsr"}

    row = _run("search", "--index", str(data["index"]), "--text", text, "--vector-file", str(data["Q"]),
               "--vector-row", "2", "--preset", "cosine", "--json", cwd=tmp_path)
    assert row.returncode == 0, row.stderr
    assert json.loads(row.stdout)["hits"][0]["id"] == 2


def test_index_with_config_file_and_text_field(data: dict[str, Path], tmp_path: Path) -> None:
    config = preset("rrf_cfs").replace(k=4, name="mine")
    config.save_toml(tmp_path / "cfg.toml")
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(json.loads(line)["text"] for line in data["texts"].read_text().splitlines()),
                     encoding="utf-8")
    built = _run("index", "--texts", str(plain), "--embeddings", str(data["E"]), "--out", str(data["index"]),
                 "--config", str(tmp_path / "cfg.toml"), "--json", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["config"] == "mine"
    assert HybridRetriever.load(data["index"]).config == config

    again = _run("index", "--texts", str(data["texts"]), "--embeddings", str(data["E"]), "--out",
                 str(data["index"]), cwd=tmp_path)
    _assert_user_error(again, "index", "--overwrite")
    wrong_field = _run("index", "--texts", str(data["texts"]), "--text-field", "body", "--embeddings",
                       str(data["E"]), "--out", str(tmp_path / "x"), cwd=tmp_path)
    _assert_user_error(wrong_field, "index", "no string field 'body'")


def _main(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """Run the command line in-process (faster than a subprocess, same code path)."""
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _assert_main_error(result: tuple[int, str, str], command: str, fragment: str) -> None:
    code, _, err = result
    assert code == cli.EXIT_USER_ERROR, err
    assert f"fieldrank {command}: error:" in err and fragment in err


def test_search_without_a_vector(data: dict[str, Path], capsys: pytest.CaptureFixture) -> None:
    index = str(data["index"])
    code, _, err = _main(capsys, "index", "--texts", str(data["texts"]), "--embeddings", str(data["E"]), "--out", index)
    assert code == 0, err
    code, out, err = _main(capsys, "search", "--index", index, "--text", "kitchen budget")
    assert code == 0, err
    assert "only the lexical legs" in err and "bm25" in out
    _assert_main_error(_main(capsys, "search", "--index", index, "--text", "kitchen", "--preset", "rrf_cfsr"),
                       "search", "--vector-file")
    code, out, err = _main(capsys, "search", "--index", index, "--text", "kitchen", "--preset", "bm25", "--json")
    assert code == 0 and err == "" and json.loads(out)["config"] == "bm25"
    _assert_main_error(_main(capsys, "search", "--index", index, "--preset", "bm25"), "search", "needs --text")


def test_user_mistakes_give_one_line_errors(data: dict[str, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture) -> None:
    index = str(data["index"])
    _assert_main_error(_main(capsys, "search", "--index", str(tmp_path / "none"), "--text", "x"),
                       "search", "does not exist")
    _assert_main_error(_main(capsys, "index", "--texts", str(tmp_path / "missing.jsonl"), "--embeddings",
                             str(data["E"]), "--out", index), "index", "missing.jsonl")
    short = tmp_path / "short.npy"
    np.save(short, np.load(data["E"])[:5])
    _assert_main_error(_main(capsys, "index", "--texts", str(data["texts"]), "--embeddings", str(short),
                             "--out", index), "index", "one row per text")
    not_npy = tmp_path / "E.txt"
    not_npy.write_text("1 2 3", encoding="utf-8")
    _assert_main_error(_main(capsys, "index", "--texts", str(data["texts"]), "--embeddings", str(not_npy),
                             "--out", index), "index", "not a readable .npy")
    bad_lines = tmp_path / "bad.jsonl"
    bad_lines.write_text('{"text": "ok"}\n{oops\n', encoding="utf-8")
    _assert_main_error(_main(capsys, "index", "--texts", str(bad_lines), "--embeddings", str(data["E"]),
                             "--out", index), "index", "line 2: invalid JSON")
    _assert_main_error(_main(capsys, "index", "--texts", str(data["E"]), "--embeddings", str(data["E"]),
                             "--out", index), "index", "expected one of .jsonl")
    assert _main(capsys, "index", "--texts", str(data["texts"]), "--embeddings", str(data["E"]), "--out", index)[0] == 0
    _assert_main_error(_main(capsys, "search", "--index", index, "--text", "x", "--vector-file", str(data["Q"])),
                       "search", "--vector-row")
    _assert_main_error(_main(capsys, "search", "--index", index, "--text", "x", "--vector-file", str(data["Q"]),
                             "--vector-row", "9"), "search", "out of range")
    bad_vector = tmp_path / "bad.npy"
    np.save(bad_vector, np.ones(DIM + 1, dtype=np.float32))
    _assert_main_error(_main(capsys, "search", "--index", index, "--text", "x", "--vector-file", str(bad_vector)),
                       "search", "length 16")
    (data["index"] / "texts.json").write_text("[]", encoding="utf-8")
    _assert_main_error(_main(capsys, "search", "--index", index, "--text", "x", "--preset", "bm25"),
                       "search", "truncated or modified")
    with pytest.raises(SystemExit) as usage:
        cli.main(["search", "--index", index, "--preset", "rrf9"])
    assert usage.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_usage_errors_in_a_subprocess(tmp_path: Path) -> None:
    usage = _run("search", "--index", str(tmp_path), "--preset", "rrf9", cwd=tmp_path)
    assert usage.returncode == 2 and "invalid choice" in usage.stderr and "Traceback" not in usage.stderr
    missing = _run("search", "--index", str(tmp_path / "none"), "--text", "x", cwd=tmp_path)
    _assert_user_error(missing, "search", "does not exist")


def test_entry_point_and_version(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("fieldrank")
    if not script.exists():
        pytest.skip("the fieldrank console script is not installed next to this interpreter")
    proc = subprocess.run([str(script), "--version"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    assert proc.returncode == 0 and proc.stdout.startswith("fieldrank ")


# ------------------------------------------------------------------ extension subcommands
def test_register_subcommand(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(cli, "_SUBCOMMANDS", dict(cli._SUBCOMMANDS))
    seen = {}

    def add_arguments(parser):
        parser.add_argument("--who", default="world")

    def run(args) -> int:
        seen["who"] = args.who
        if args.who == "nobody":
            msg = "nobody is not allowed"
            raise cli.CommandError(msg)
        return 0

    cli.register_subcommand("hello", help="say hello", add_arguments=add_arguments, run=run)
    cli.register_subcommand("hello", help="again", add_arguments=add_arguments, run=run)  # idempotent
    with pytest.raises(ValueError, match="already registered"):
        cli.register_subcommand("hello", help="x", add_arguments=add_arguments, run=lambda args: 0)
    assert cli.main(["hello", "--who", "you"]) == 0
    assert seen["who"] == "you"
    assert cli.main(["hello", "--who", "nobody"]) == cli.EXIT_USER_ERROR
    assert "fieldrank hello: error: nobody is not allowed" in capsys.readouterr().err


def test_extension_modules_register_on_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "fr_test_extension.py").write_text(
        "from fieldrank.cli import register_subcommand\n"
        "register_subcommand('fr-test-cmd', help='test', add_arguments=lambda p: None, run=lambda a: 7)\n",
        encoding="utf-8")
    (tmp_path / "fr_broken_extension.py").write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "_SUBCOMMANDS", dict(cli._SUBCOMMANDS))
    monkeypatch.setattr(cli, "EXTENSION_MODULES",
                        ("fr_missing_extension", "fr_test_extension", "fr_broken_extension"))
    assert cli.main(["fr-test-cmd"]) == 7
    err = capsys.readouterr().err
    assert "fr_broken_extension are unavailable (RuntimeError: boom)" in err
    assert "fr_missing_extension" not in err
    monkeypatch.delitem(sys.modules, "fr_test_extension", raising=False)
