"""Golden recordings (issue #33): rankings that every refactoring commit must reproduce bit for bit.

Two parts, each one JSON file in ``tests/golden/``:

``locomo``
    Every preset of ``fieldrank.config.PRESET_NAMES`` on every LoCoMo question, for every
    embedding set recorded (``../shared/data/locomo/emb/<set>``), scored per conversation as the
    LoCoMo runner does it (:class:`fieldrank.evaluation._runner.Corpus` and ``iter_batches``: one
    retriever over all turns with the LoCoMo timeline, each conversation's questions one
    ``search_batch`` restricted to its turns). Recorded per question: ids and scores (dtype, shape
    and bytes), and the "extras" (each hit's confidence and the per-leg provenance
    ``SearchResult.legs``). Records per embedding set:

    - ``<preset>/batch@10`` and ``<preset>/batch@30``: ``search_batch`` at the runner's k and deeper;
    - ``<preset>/search``: ``search`` (one query) on every 10th question of a conversation;
    - ``<preset>/saved`` and ``<preset>/saved-mmap``: the retriever written with ``save()`` and read
      back with ``HybridRetriever.load`` (``mmap=False`` / ``True``), then ``search_batch``.

    A record stores a sha256 of everything and one per conversation; ``batch@10`` records also a
    short digest of each question (6 hex digits each for ids, scores and extras) to say which
    question moved and how.
    No LoCoMo text or embedding is stored.

``store``
    ``tools/record_recalls.py``'s records (recall in every mode with every gate, why_not, a
    reinforcing sequence, and a file-backed lifecycle with update, forget, compact, purge and a
    reopen; the adversarial suite on LoCoMo filler), per section and size, one 16-hex digest
    per record.

Commands (from the repository root, with ``PYTHONPATH=python``)::

    python tools/golden.py compare             # everything; exit 1 on a difference
    python tools/golden.py compare --quick     # 2 conversations per embedding set, the store at 1k
    python tools/golden.py compare --only store
    python tools/golden.py record              # rewrite tests/golden/ (only on untouched main!)

The kernel variant (``fieldrank.build_info()["kernel_variant"]``) and numpy's version are in each
file's header; compare refuses (exit 2) on another kernel variant, whose float bits may differ.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import record_recalls  # noqa: E402

import fieldrank  # noqa: E402
from fieldrank import config as fr_config  # noqa: E402
from fieldrank.evaluation import _runner, locomo  # noqa: E402
from fieldrank.hybrid import HybridRetriever  # noqa: E402

GOLDEN_DIR = ROOT / "tests" / "golden"
PARTS = ("locomo", "store")
FORMAT = 1
#: k of the runner (equal k) and a deeper one (legs deepened past their depth).
BATCH_KS = (_runner.DEFAULT_K, 30)
#: Every SEARCH_STRIDE-th question of a conversation also goes through ``search`` (one query).
SEARCH_STRIDE = 10
#: Presets also written with ``save()`` and read back with ``load``.
SAVED_PRESETS = ("default", "rrf_cfsr", "rrf_ring")
#: Conversations of ``--quick`` (and of the pytest check): the first and the last.
QUICK_CONVERSATIONS = (0, 9)
STORE_SIZES = (1_000, 10_000)
QUICK_STORE_SIZES = (1_000,)
QUESTION_DIGEST_HEX = 6
STORE_DIGEST_HEX = 16


class GoldenMismatch(Exception):
    """The recording cannot be compared here (another kernel variant or other LoCoMo data)."""


# ------------------------------------------------------------------------ canonical bytes
def _feed(h: Any, value: Any) -> None:
    """Feed ``value``'s exact bits to the hash ``h``, each item tagged with its type (arrays: dtype,
    shape, bytes; floats: hex): equal feeds exactly when the values are equal bit for bit."""
    if isinstance(value, np.ndarray):
        h.update(f"a{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, float):
        h.update(f"f{value.hex()};".encode())
    elif value is None or isinstance(value, (bool, int, str)):
        h.update(f"{type(value).__name__}{value!r};".encode())
    elif isinstance(value, (tuple, list)):
        h.update(f"t{len(value)}(".encode())
        for item in value:
            _feed(h, item)
        h.update(b")")
    elif dataclasses.is_dataclass(value):
        h.update(f"d{type(value).__name__}(".encode())
        for item in dataclasses.fields(value):
            h.update(item.name.encode())
            _feed(h, getattr(value, item.name))
        h.update(b")")
    else:
        msg = f"cannot record {type(value).__name__}"
        raise TypeError(msg)


def _sha(*values: Any) -> str:
    h = hashlib.sha256()
    _feed(h, values)
    return h.hexdigest()


def header() -> dict[str, Any]:
    """What the recording depends on besides the code: the kernel variant and numpy."""
    return {"format": FORMAT, "kernel_variant": fieldrank.build_info()["kernel_variant"],
            "numpy": np.__version__}


def _check_header(recorded: dict[str, Any], part: str) -> None:
    here = header()
    if recorded.get("kernel_variant") != here["kernel_variant"]:
        msg = (f"{part}: recorded with kernel variant {recorded.get('kernel_variant')!r}, this build runs "
               f"{here['kernel_variant']!r}: float bits may differ, nothing compared (record on the same variant, "
               "or force one with the variant switch of docs/reliability.md)")
        raise GoldenMismatch(msg)
    if recorded.get("format") != FORMAT:
        msg = f"{part}: recording format {recorded.get('format')!r}, this tool writes {FORMAT}"
        raise GoldenMismatch(msg)
    if recorded.get("numpy") != here["numpy"]:
        print(f"note: {part} recorded with numpy {recorded.get('numpy')}, running {here['numpy']}", file=sys.stderr)


# ------------------------------------------------------------------------------ LoCoMo
def _question_digests(result: Any) -> tuple[str, str]:
    """(short digest ``ids|scores|extras``, full sha256) of one SearchResult."""
    parts = (_sha(result.ids), _sha(result.scores), _sha(result.confidence, result.legs))
    short = "".join(part[:QUESTION_DIGEST_HEX] for part in parts)
    return short, hashlib.sha256("".join(parts).encode()).hexdigest()


def _conversation_entry(results: Sequence[Any], per_question: bool) -> dict[str, Any]:
    digests = [_question_digests(result) for result in results]
    entry: dict[str, Any] = {"digest": hashlib.sha256("".join(full for _, full in digests).encode()).hexdigest()}
    if per_question:
        entry["questions"] = [short for short, _ in digests]
    return entry


def _record_entry(conversations: dict[str, dict[str, Any]]) -> dict[str, Any]:
    joined = "".join(f"{key}:{entry['digest']}" for key, entry in conversations.items())
    return {"digest": hashlib.sha256(joined.encode()).hexdigest(), "conversations": conversations}


def _batches(corpus: _runner.Corpus, conversations: Optional[Iterable[int]]) -> list[_runner.QueryBatch]:
    rows = np.arange(len(corpus.data.questions.question), dtype=np.int64)
    batches = list(_runner.iter_batches(corpus, rows))
    if conversations is None:
        return batches
    wanted = set(conversations)
    return [batch for batch in batches if batch.conv_index in wanted]


def _batch_record(retriever: HybridRetriever, batches: Sequence[_runner.QueryBatch], k: int,
                  n_threads: int, per_question: bool = False) -> dict[str, Any]:
    out = {}
    for batch in batches:
        results = retriever.search_batch(list(batch.texts), batch.vectors, k, subset=batch.subset,
                                         n_threads=n_threads)
        out[str(batch.conv_index)] = _conversation_entry(results, per_question)
    return _record_entry(out)


def _search_record(retriever: HybridRetriever, batches: Sequence[_runner.QueryBatch]) -> dict[str, Any]:
    out = {}
    for batch in batches:
        results = [retriever.search(batch.texts[i], batch.vectors[i], batch.k, subset=batch.subset)
                   for i in range(0, len(batch), SEARCH_STRIDE)]
        out[str(batch.conv_index)] = _conversation_entry(results, False)
    return _record_entry(out)


def record_embedding_set(name: str, data_dir: Path, conversations: Optional[Iterable[int]] = None,
                         n_threads: int = 0) -> tuple[dict[str, str], dict[str, Any]]:
    """(data checksums, records) of one embedding set: every preset, every way it is queried."""
    data = locomo.load_locomo(data_dir, name)
    corpus = _runner.Corpus(data)
    batches = _batches(corpus, conversations)
    records: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="golden_") as folder:
        for preset in fr_config.PRESET_NAMES:
            retriever = corpus.retriever(fr_config.preset(preset))
            for k in BATCH_KS:
                records[f"{preset}/batch@{k}"] = _batch_record(retriever, batches, k, n_threads,
                                                               per_question=k == _runner.DEFAULT_K)
            records[f"{preset}/search"] = _search_record(retriever, batches)
            if preset in SAVED_PRESETS:
                path = Path(folder) / preset
                retriever.save(path)
                for mmap, label in ((False, "saved"), (True, "saved-mmap")):
                    loaded = HybridRetriever.load(path, mmap=mmap)
                    records[f"{preset}/{label}"] = _batch_record(loaded, batches, _runner.DEFAULT_K, n_threads)
    return dict(data.checksums), records


def record_locomo(data_dir: Path, sets: Sequence[str], conversations: Optional[Iterable[int]] = None,
                  n_threads: int = 0, verbose: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"header": header(), "sets": {}}
    for name in sets:
        start = time.perf_counter()
        checksums, records = record_embedding_set(name, data_dir, conversations, n_threads)
        out["sets"][name] = {"checksums": checksums, "records": records}
        if verbose:
            print(f"locomo {name}: {len(records)} records in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return out


def _locomo_differences(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs, one line per record (first differing conversation and question)."""
    lines = []
    for key, entry in now["records"].items():
        old = recorded["records"].get(key)
        if old is None:
            lines.append(f"{key}: not in the recording")
            continue
        for conversation, current in entry["conversations"].items():
            before = old["conversations"].get(conversation)
            if before is None:
                lines.append(f"{key}: conversation {conversation} not in the recording")
                break
            if before["digest"] == current["digest"]:
                continue
            lines.append(f"{key}: conversation {conversation}: " + _first_question(before, current))
            break
    return lines


def _first_question(before: dict[str, Any], current: dict[str, Any]) -> str:
    if "questions" not in before:
        return "differs (batch@10 of the same preset says which question, when it differs too)"
    if len(before["questions"]) != len(current["questions"]):
        return f"{len(current['questions'])} questions now, {len(before['questions'])} recorded"
    names = ("ids", "scores", "extras (confidence / leg provenance)")
    width = QUESTION_DIGEST_HEX
    for position, (a, b) in enumerate(zip(before["questions"], current["questions"])):
        if a != b:
            moved = [name for j, name in enumerate(names) if a[j * width:(j + 1) * width] != b[j * width:(j + 1) * width]]
            return f"question {position} of the conversation (in question order) differs in {', '.join(moved)}"
    return "the per-question digests agree but the full digest differs (a change below 24 bits of one question)"


def compare_locomo(recorded: dict[str, Any], data_dir: Path, conversations: Optional[Iterable[int]] = None,
                   n_threads: int = 0, verbose: bool = True) -> list[str]:
    _check_header(recorded["header"], "locomo")
    lines = []
    available = set(locomo.available_embedding_sets(data_dir))
    for name, stored in recorded["sets"].items():
        if name not in available:
            msg = f"locomo: embedding set {name!r} is recorded but not in {data_dir / 'emb'}"
            raise GoldenMismatch(msg)
        start = time.perf_counter()
        checksums, records = record_embedding_set(name, data_dir, conversations, n_threads)
        if checksums != stored["checksums"]:
            msg = f"locomo {name}: the LoCoMo files differ from those recorded (sha256): {data_dir}"
            raise GoldenMismatch(msg)
        found = _locomo_differences(stored, {"records": records})
        missing = sorted(set(stored["records"]) - set(records))
        lines += [f"locomo {name} {line}" for line in found]
        lines += [f"locomo {name} {key}: recorded, not produced now" for key in missing]
        if verbose:
            state = f"{len(found) + len(missing)} differ" if found or missing else "identical"
            print(f"locomo {name}: {len(records)} records {state} ({time.perf_counter() - start:.1f} s)",
                  file=sys.stderr)
    return lines


# ------------------------------------------------------------------------------- store
def _store_sections(sizes: Sequence[int], data_dir: Optional[Path]) -> dict[str, list]:
    sections: dict[str, list] = {}
    for n in sizes:
        sections[f"benchmark/{n}"] = record_recalls.record_benchmark_store(n)
        sections[f"lifecycle/{n}"] = record_recalls.record_lifecycle(n)
        if data_dir is not None:
            sections[f"adversarial/{n}"] = record_recalls.record_adversarial(n, str(data_dir))
    return sections


def _label(position: int, record: tuple) -> str:
    """A readable key: position and the record's leading plain fields (mode, gate, id...)."""
    plain = [str(v) for v in record[:-1] if isinstance(v, (str, int))] if len(record) > 1 else [str(record[0])]
    return f"{position:05d} " + " ".join(plain)


def store_digests(records: Sequence[tuple]) -> dict[str, Any]:
    digests = {_label(i, r): hashlib.sha256(repr(r).encode()).hexdigest() for i, r in enumerate(records)}
    return {"digest": hashlib.sha256("".join(digests.values()).encode()).hexdigest(),
            "records": {key: value[:STORE_DIGEST_HEX] for key, value in digests.items()}}


def record_store(sizes: Sequence[int], data_dir: Optional[Path], verbose: bool = True) -> dict[str, Any]:
    start = time.perf_counter()
    sections = {name: store_digests(records) for name, records in _store_sections(sizes, data_dir).items()}
    if verbose:
        print(f"store: {sum(len(s['records']) for s in sections.values())} records in "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    return {"header": header(), "sections": sections}


def compare_store(recorded: dict[str, Any], sizes: Sequence[int], data_dir: Optional[Path],
                  verbose: bool = True) -> list[str]:
    _check_header(recorded["header"], "store")
    start = time.perf_counter()
    lines = []
    for name, records in _store_sections(sizes, data_dir).items():
        stored = recorded["sections"].get(name)
        if stored is None:
            lines.append(f"store {name}: not in the recording")
            continue
        current = store_digests(records)
        if current["digest"] == stored["digest"]:
            continue
        if list(current["records"]) != list(stored["records"]):
            lines.append(f"store {name}: {len(records)} records now, {len(stored['records'])} recorded, "
                         "or other labels")
            continue
        different = [i for i, (a, b) in enumerate(zip(stored["records"].values(), current["records"].values()))
                     if a != b]
        key = list(current["records"])[different[0]]
        lines.append(f"store {name}: {len(different)} of {len(records)} records differ, first {key!r}: now "
                     f"{repr(records[different[0]])[:300]}")
    if data_dir is None:
        print("store: adversarial sections skipped (no LoCoMo data)", file=sys.stderr)
    if verbose:
        print(f"store: {'identical' if not lines else f'{len(lines)} sections differ'} "
              f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    return lines


# -------------------------------------------------------------------------------- main
def find_locomo(path: Optional[str]) -> Optional[Path]:
    """The LoCoMo folder (``--locomo``, ``$FIELDRANK_LOCOMO_DIR`` or ``../shared/data/locomo``), or None."""
    try:
        return locomo.resolve_data_dir(path)
    except locomo.DataNotFoundError:
        if path is not None:
            raise
        return None


def _read(folder: Path, part: str) -> dict[str, Any]:
    return json.loads((folder / f"{part}.json").read_text(encoding="utf-8"))


def _write(folder: Path, part: str, content: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(content, indent=1, sort_keys=False) + "\n"
    (folder / f"{part}.json").write_text(text, encoding="utf-8")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("command", choices=("record", "compare"))
    parser.add_argument("--only", choices=PARTS, action="append", help="one part (repeatable; default: both)")
    parser.add_argument("--quick", action="store_true",
                        help=f"LoCoMo conversations {QUICK_CONVERSATIONS} only and the store at "
                             f"{QUICK_STORE_SIZES[0]} memories (compare only)")
    parser.add_argument("--golden", default=str(GOLDEN_DIR), help="folder of the recordings (default tests/golden)")
    parser.add_argument("--locomo", help="the LoCoMo folder (default: $FIELDRANK_LOCOMO_DIR or ../shared/data/locomo)")
    parser.add_argument("--sets", nargs="+", help="embedding sets to record (default: every set found)")
    parser.add_argument("--threads", type=int, default=0, help="n_threads of search_batch (results must not depend on it)")
    args = parser.parse_args(argv)
    parts = args.only or list(PARTS)
    folder = Path(args.golden)
    data_dir = find_locomo(args.locomo)
    if args.command == "record":
        if args.quick:
            parser.error("record writes the whole recording; --quick is for compare")
        if "locomo" in parts:
            if data_dir is None:
                parser.error("no LoCoMo data found: pass --locomo or set FIELDRANK_LOCOMO_DIR")
            sets = args.sets or list(locomo.available_embedding_sets(data_dir))
            _write(folder, "locomo", record_locomo(data_dir, sets, n_threads=args.threads))
        if "store" in parts:
            if data_dir is None:
                parser.error("no LoCoMo data found (the adversarial sections need it)")
            _write(folder, "store", record_store(STORE_SIZES, data_dir))
        return 0
    lines: list[str] = []
    try:
        if "locomo" in parts:
            if data_dir is None:
                print("locomo: SKIPPED, no LoCoMo data (pass --locomo or set FIELDRANK_LOCOMO_DIR)", file=sys.stderr)
            else:
                lines += compare_locomo(_read(folder, "locomo"), data_dir,
                                        QUICK_CONVERSATIONS if args.quick else None, args.threads)
        if "store" in parts:
            lines += compare_store(_read(folder, "store"), QUICK_STORE_SIZES if args.quick else STORE_SIZES, data_dir)
    except GoldenMismatch as error:
        print(f"CANNOT COMPARE: {error}")
        return 2
    if lines:
        print(f"DIFFERENT ({len(lines)}):")
        print("\n".join(lines))
        return 1
    print("identical to the golden recordings" + (" (quick subset)" if args.quick else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
