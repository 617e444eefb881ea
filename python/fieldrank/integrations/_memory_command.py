"""``fieldrank memory``: inspect and repair a memory store file (what an agent remembers).

``add | recall | forget | list | export | import`` over ``--store FILE``. Ids are the store's own
(the MCP server shows each tenant opaque ids instead). A recall from here does not reinforce what
it returns unless ``--reinforce`` is given: looking must not change what the agent will recall.
Export writes JSON Lines (one memory per line, oldest id first); import reads them back into any
store (a new one included), keeping texts, dates, tiers, tags, entities, sessions, importance,
valence, strength and supersedes links; ids are new.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from typing import Any, Optional, TextIO

import numpy as np

from ..memory import DEFAULT_IMPORTANCE, DEFAULT_TENANT, MODES, TIERS, MemoryStore
from ._common import LEXICAL_DIM, lexical_vector, live_memories
from ._store_access import (
    PACKAGED_MINILM,
    Browse,
    load_embedder,
    memory_json,
    open_store,
    parse_time,
)

#: Characters of a text shown per row of a table.
TEXT_WIDTH = 70
DEFAULT_K = 5
#: Fields an import line may carry (``id``, ``superseded_by`` and the derived fields are read
#: only to link supersedes; anything else is refused so that a typo is not silently dropped).
_IMPORT_FIELDS = frozenset({
    "id", "tenant", "text", "created_at", "created_at_unix", "last_access", "tier", "importance", "tags", "entities",
    "session", "valence", "storage_strength", "recall_count", "supersedes", "superseded_by", "embedding"})


def _action(actions: Any, name: str, help: str, *, tenant: Optional[str] = None,  # noqa: A002 - argparse's name
            tenant_help: Optional[str] = None) -> argparse.ArgumentParser:
    """An action's parser with the options every action takes (the store, its embedder) and, where the
    action takes one, ``--tenant`` (default ``tenant``)."""
    parser = actions.add_parser(name, help=help)
    parser.add_argument("--store", required=True, metavar="FILE", help="the memory store (SQLite)")
    parser.add_argument("--embed", metavar="MODEL",
                        help=f"the embedder the store was made with (sentence-transformers name or folder, or "
                             f"'{PACKAGED_MINILM}'); none: a BM25-only store")
    if tenant_help is not None or tenant is not None:
        parser.add_argument("--tenant", default=tenant, help=tenant_help)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    add = _action(actions, "add", "store one memory; prints its id", tenant=DEFAULT_TENANT)
    add.add_argument("text")
    add.add_argument("--importance", type=float, default=DEFAULT_IMPORTANCE)
    add.add_argument("--tier", choices=TIERS, default=None, help="default: the store's (episodic)")
    add.add_argument("--tag", action="append", default=[], dest="tags", help="a tag (repeat for more)")
    add.add_argument("--entity", action="append", default=[], dest="entities", help="an entity (repeat for more)")
    add.add_argument("--session")
    add.add_argument("--supersedes", type=int, metavar="ID", help="the id of the memory this one replaces")

    recall = _action(actions, "recall", "the k best memories for a query (no reinforcement unless asked)",
                     tenant=DEFAULT_TENANT)
    recall.add_argument("query")
    recall.add_argument("-k", type=int, default=DEFAULT_K)
    recall.add_argument("--mode", choices=MODES, default=None, help="default: hybrid, or keyword without --embed")
    recall.add_argument("--tier", action="append", choices=TIERS, dest="tiers", help="allowed tier (repeat)")
    recall.add_argument("--tag", action="append", dest="tags", help="required tag (repeat)")
    recall.add_argument("--reinforce", action="store_true", help="apply the recall dynamics, as an agent's recall")
    recall.add_argument("--json", action="store_true", help="one JSON object per hit")

    forget = _action(actions, "forget", "forget memories by id", tenant_help="refuse ids of any other tenant")
    forget.add_argument("ids", nargs="+", type=int, metavar="ID")

    listing = _action(actions, "list", "memories newest first, by tenant, tier, tag and time")
    _selection(listing)
    listing.add_argument("--limit", type=int, default=None, help="at most this many (default: all)")
    listing.add_argument("--json", action="store_true", help="JSON Lines (as export writes)")

    export = _action(actions, "export", "write memories as JSON Lines (stdout or --output)")
    _selection(export)
    export.add_argument("--output", "-o", metavar="FILE", help="default: stdout")
    export.add_argument("--embeddings", action="store_true",
                        help="include each memory's embedding (import then needs no embedder)")

    load = _action(actions, "import", "add the memories of a JSON Lines file (as export writes)",
                   tenant_help="import every line into this tenant (default: each line's)")
    load.add_argument("input", metavar="FILE", help="JSON Lines; '-' for stdin")


def _selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", default=None, help="only this tenant (default: every tenant)")
    parser.add_argument("--tier", action="append", choices=TIERS, dest="tiers", help="only this tier (repeat)")
    parser.add_argument("--tag", action="append", default=[], dest="tags", help="only with this tag (repeat: all)")
    parser.add_argument("--since", help="created at or after (ISO 8601 date/time, UTC unless an offset is given)")
    parser.add_argument("--until", help="created before (ISO 8601)")


def _open(args: argparse.Namespace) -> MemoryStore:
    """The store; without --embed an existing file opens whatever its dimension (listing, export,
    forget and import with embeddings need no embedder; add and recall say so), a new one is lexical."""
    embedder = None if args.embed is None else load_embedder(args.embed)
    if embedder is None and os.path.exists(os.path.expanduser(args.store)):
        return MemoryStore(os.path.expanduser(args.store))
    return open_store(args.store, embedder)


def _line(memory: dict[str, Any]) -> str:
    text = memory["text"].replace("\n", " ")
    if len(text) > TEXT_WIDTH:
        text = text[: TEXT_WIDTH - 1] + "…"
    tags = ",".join(memory["tags"]) or "-"
    return (f"{memory['id']:>6}  {memory['tenant']:<10} {memory['created_at'][:19]}  {memory['tier']:<8} "
            f"{memory['importance']:.2f}  {tags:<14} {text}")


def _browse(args: argparse.Namespace) -> Browse:
    return Browse(tiers=None if not args.tiers else frozenset(args.tiers), tags=tuple(args.tags),
                  since=None if args.since is None else parse_time(args.since, "--since"),
                  until=None if args.until is None else parse_time(args.until, "--until"))


def _add(store: MemoryStore, args: argparse.Namespace, out: TextIO) -> None:
    options: dict[str, Any] = {"tenant": args.tenant, "importance": args.importance, "tags": args.tags,
                               "entities": args.entities, "session": args.session, "supersedes": args.supersedes}
    if args.tier is not None:
        options["tier"] = args.tier
    memory_id = store.add(args.text, _vector(store), **options)
    print(memory_id, file=out)


def _vector(store: MemoryStore) -> Optional[np.ndarray]:
    if store.embedder is None and store.dim != LEXICAL_DIM:
        msg = f"{store.path} holds {store.dim}-dimensional embeddings: pass --embed MODEL (the store's embedder)"
        raise ValueError(msg)
    return lexical_vector(store)


def _recall(store: MemoryStore, args: argparse.Namespace, out: TextIO) -> None:
    _vector(store)
    mode = args.mode or ("keyword" if store.embedder is None else None)
    options: dict[str, Any] = {"tenant": args.tenant, "reinforce": args.reinforce}
    if mode is not None:
        options["mode"] = mode
    if args.tiers:
        options["tier_mask"] = args.tiers
    if args.tags:
        options["required_tags"] = args.tags
    result = store.recall(args.query, None, args.k, **options)
    for hit in result.hits:
        record = {**memory_json(store.get(hit.id)), "rank": hit.rank, "score": hit.score}
        if args.json:
            print(json.dumps(record, ensure_ascii=False), file=out)
        else:
            print(f"{hit.rank:>3}. {hit.score:7.4f} {_line(record)}", file=out)
    if not result.hits and not args.json:
        print(f"no memory of tenant {args.tenant!r} matches", file=sys.stderr)


def _forget(store: MemoryStore, args: argparse.Namespace, out: TextIO) -> None:
    for memory_id in args.ids:  # every id is checked before any is forgotten
        store.get(memory_id, tenant=args.tenant)
    for memory_id in args.ids:
        store.forget(memory_id, tenant=args.tenant)
        print(f"forgot {memory_id}", file=out)


def _selected(store: MemoryStore, args: argparse.Namespace) -> list[Any]:
    return _browse(args).newest_first(live_memories(store, args.tenant))


def _list(store: MemoryStore, args: argparse.Namespace, out: TextIO) -> None:
    memories = _selected(store, args)
    shown = memories if args.limit is None else memories[: max(args.limit, 0)]
    for memory in shown:
        record = memory_json(memory)
        print(json.dumps(record, ensure_ascii=False) if args.json else _line(record), file=out)
    if not args.json:
        print(f"{len(shown)} of {len(memories)} memories", file=sys.stderr)


def _export(store: MemoryStore, args: argparse.Namespace, out: TextIO) -> None:
    memories = sorted(_selected(store, args), key=lambda m: m.id)
    target = out if args.output in (None, "-") else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
    try:
        for memory in memories:
            target.write(json.dumps(memory_json(memory, embedding=args.embeddings), ensure_ascii=False) + "\n")
    finally:
        if target is not out:
            target.close()
    print(f"exported {len(memories)} memories", file=sys.stderr)


def _rows(handle: TextIO, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(handle, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            msg = f"{name} line {number}: not JSON ({exc.msg})"
            raise ValueError(msg) from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            msg = f"{name} line {number}: expected a JSON object with a 'text' string"
            raise ValueError(msg)
        unknown = sorted(set(row) - _IMPORT_FIELDS)
        if unknown:
            msg = f"{name} line {number}: unknown field(s) {unknown}"
            raise ValueError(msg)
        yield number, row


def _import(store: MemoryStore, args: argparse.Namespace, out: TextIO) -> None:
    name = "stdin" if args.input == "-" else args.input
    handle = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")  # noqa: SIM115
    try:
        rows = list(_rows(handle, name))
    finally:
        if handle is not sys.stdin:
            handle.close()
    lexical = store.embedder is None and store.dim == LEXICAL_DIM
    plans, earlier = [], set()
    for number, row in rows:  # every line is checked before any memory is added
        where = f"{name} line {number}"
        if row.get("supersedes") is not None and row["supersedes"] not in earlier:
            msg = f"{where}: supersedes {row['supersedes']}, which is not an earlier line of this file"
            raise ValueError(msg)
        earlier.add(row.get("id"))
        vector = None
        if lexical:
            vector = np.ones(LEXICAL_DIM, dtype=np.float32)
        elif row.get("embedding") is not None and len(row["embedding"]) == store.dim:
            vector = np.asarray(row["embedding"], dtype=np.float32)
        elif store.embedder is None:
            msg = (f"{where}: no {store.dim}-dimensional embedding; pass --embed MODEL (the store's embedder) "
                   "or export with --embeddings")
            raise ValueError(msg)
        created = row.get("created_at_unix", row.get("created_at"))
        options = {
            "tenant": args.tenant or row.get("tenant") or DEFAULT_TENANT,
            "created_at": None if created is None else parse_time(created, f"{where}: created_at"),
            **{key: row[key] for key in ("importance", "tier", "tags", "entities", "session", "valence",
                                         "storage_strength") if row.get(key) is not None},
        }
        plans.append((where, row, vector, options))
    new_ids: dict[int, int] = {}
    for where, row, vector, options in plans:
        if row.get("supersedes") is not None:
            options["supersedes"] = new_ids[row["supersedes"]]
        try:
            memory_id = store.add(row["text"], vector, **options)
        except (ValueError, TypeError) as exc:
            msg = f"{where}: {exc}"
            raise ValueError(msg) from None
        if row.get("id") is not None:
            new_ids[row["id"]] = memory_id
    print(f"imported {len(plans)} memories into {store.path}", file=out)


_ACTIONS = {"add": _add, "recall": _recall, "forget": _forget, "list": _list, "export": _export, "import": _import}


def run(args: argparse.Namespace) -> int:
    with _open(args) as store:
        _ACTIONS[args.memory_command](store, args, sys.stdout)
    return 0


CLI_SUBCOMMAND = {
    "name": "memory",
    "help": "inspect and repair a memory store: add, recall, forget, list, export, import (JSON Lines)",
    "add_arguments": add_arguments,
    "run": run,
    "description": "Work on a MemoryStore file by hand: see what an agent remembers (list, recall without "
                   "reinforcing), correct it (add, forget) and move it (export/import JSON Lines). Ids are the "
                   "store's own. --embed names the store's embedder; without it the store must be BM25-only.",
}
