"""The ``fieldrank`` command line.

Subcommands
-----------
``fieldrank demo``     a conversation and the kitchen scenarios through every method (data shipped, no network)
``fieldrank index``    build a hybrid index from texts + embeddings and save it
``fieldrank search``   query a saved index
``fieldrank mcp``      serve a memory store to agents over MCP (``fieldrank[mcp]``)
``fieldrank memory``   inspect and repair a memory store: add, recall, forget, list, export, import

Output is a readable table by default and JSON with ``--json``. User mistakes (a missing
file, a bad preset, a vector of the wrong length, ...) print one line to stderr and exit
with status 1 (argparse usage errors: 2), never a traceback.

Adding a subcommand from another module
---------------------------------------
The package's own ``eval`` and ``calibrate`` are imported directly when the parser is built:
each module defines a ``CLI_SUBCOMMAND`` mapping (the arguments of :func:`register_subcommand`)
and imports :class:`CommandError` from :mod:`fieldrank._cli_errors`, never this module, so
that no import cycle forms. A third-party module calls :func:`register_subcommand` at import
time and is listed in :data:`EXTENSION_MODULES` (a listed module that does not exist is
skipped, one that fails to import is reported in one line and skipped)::

    # my_package/fieldrank_commands.py
    from fieldrank.cli import CommandError, register_subcommand

    def _add_arguments(parser):
        parser.add_argument("--preset", default="rrf_cfsr")

    def _run(args) -> int:
        ...            # print results; raise CommandError("...") for user mistakes
        return 0

    register_subcommand("eval", help="LoCoMo evaluation", add_arguments=_add_arguments, run=_run)

Keep heavy imports inside ``run`` so that ``fieldrank demo`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from ._cli_errors import CommandError

__all__ = ["EXTENSION_MODULES", "CommandError", "main", "register_subcommand"]

PROG = "fieldrank"
#: Further (third-party) modules imported when the parser is built, so that they can register
#: subcommands. The package's own subcommands are imported directly (:func:`_register_harness`).
EXTENSION_MODULES: tuple[str, ...] = ()

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_INTERRUPTED = 130
#: Characters of a text shown per row of a table.
TEXT_WIDTH = 70
TEXTS_FIELD_DEFAULT = "text"
#: Texts files understood by ``fieldrank index``.
TEXT_FILE_SUFFIXES = (".jsonl", ".json", ".txt")


@dataclass(frozen=True)
class _Subcommand:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: Optional[str]


_SUBCOMMANDS: dict[str, _Subcommand] = {}


def register_subcommand(name: str, *, help: str, add_arguments: Callable[[argparse.ArgumentParser], None],
                        run: Callable[[argparse.Namespace], int], description: Optional[str] = None) -> None:
    """Add a ``fieldrank <name>`` subcommand.

    Parameters
    ----------
    name : str
        The subcommand word.
    help : str
        One line for ``fieldrank --help``.
    add_arguments : callable
        Called with the subcommand's ``argparse`` parser to declare its options.
    run : callable
        Called with the parsed ``argparse.Namespace``; returns the exit status. Raise
        :class:`CommandError` (or ``ValueError``/``OSError``) for user mistakes.
    description : str, optional
        Longer text for ``fieldrank <name> --help``.

    Raises
    ------
    ValueError
        If another subcommand already uses ``name``.
    """
    existing = _SUBCOMMANDS.get(name)
    if existing is not None and existing.run is not run:
        msg = f"fieldrank subcommand {name!r} is already registered (by {existing.run.__module__})"
        raise ValueError(msg)
    _SUBCOMMANDS[name] = _Subcommand(name, help, add_arguments, run, description)


def _register_harness() -> None:
    """``eval`` and ``calibrate``: the evaluation harness, imported when the parser is built
    (not with this module) so that ``import fieldrank.cli`` stays light."""
    try:
        from .evaluation import _command as command
        from .evaluation import calibrate
    except Exception as exc:  # noqa: BLE001 - a broken harness must not break `fieldrank demo`
        _note(f"the evaluation subcommands are unavailable ({type(exc).__name__}: {exc})")
        return
    for spec in (command.CLI_SUBCOMMAND, calibrate.CLI_SUBCOMMAND):
        register_subcommand(**spec)
    from .integrations import _mcp_command  # the MCP SDK itself is imported when `fieldrank mcp` runs
    from .integrations import _memory_command

    register_subcommand(**_mcp_command.CLI_SUBCOMMAND)
    register_subcommand(**_memory_command.CLI_SUBCOMMAND)


def _load_extensions() -> None:
    for module in EXTENSION_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module.startswith(exc.name):
                continue  # not written yet (or its package is absent): nothing to register
            _note(f"subcommands of {module} are unavailable ({type(exc).__name__}: {exc})")
        except Exception as exc:  # noqa: BLE001 - a broken extension must not break `fieldrank demo`
            _note(f"subcommands of {module} are unavailable ({type(exc).__name__}: {exc})")


def _note(message: str) -> None:
    print(f"{PROG}: note: {message}", file=sys.stderr)


def _number(convert: Callable[[str], Any], ok: Callable[[Any], bool], expected: str) -> Callable[[str], Any]:
    """An argparse ``type``: ``convert`` the text, then require ``ok``; either failure says ``expected``."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            msg = f"expected {expected}, got {text!r}"
            raise argparse.ArgumentTypeError(msg) from None
        if not ok(value):
            msg = f"expected {expected}, got {value}"
            raise argparse.ArgumentTypeError(msg)
        return value

    return parse


_probability = _number(float, lambda value: 0.0 <= value <= 1.0, "a number in [0, 1]")
_positive_int = _number(int, lambda value: value > 0, "a positive integer")


def _add_config_options(parser: argparse.ArgumentParser, what: str) -> None:
    from .config import PRESET_NAMES

    group = parser.add_mutually_exclusive_group()
    group.add_argument("--preset", choices=PRESET_NAMES, metavar="PRESET",
                       help=f"{what}: one of {', '.join(PRESET_NAMES)}")
    group.add_argument("--config", type=Path, metavar="CFG.toml", help=f"{what}: a configuration TOML file")


def _chosen_config(args: argparse.Namespace):
    from .config import RetrieverConfig, preset

    if args.config is not None:
        return RetrieverConfig.load_toml(args.config)
    if args.preset is not None:
        return preset(args.preset)
    return None


def _shorten(text: str, width: int = TEXT_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


# ------------------------------------------------------------------ demo
def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    from .demo import DEMO_METHODS, DEMO_TOP_K

    parser.add_argument("--k", type=_positive_int, default=DEMO_TOP_K,
                        help=f"memories shown per method (default {DEMO_TOP_K})")
    parser.add_argument("--methods", nargs="+", metavar="PRESET", default=list(DEMO_METHODS),
                        help=f"presets to compare (default: {' '.join(DEMO_METHODS)})")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _demo_run(args: argparse.Namespace) -> int:
    from .demo import format_report, run_demo

    report = run_demo(args.methods, args.k)
    if args.json:
        _print_json(report.to_dict())
    else:
        sys.stdout.write(format_report(report))
    return EXIT_OK


# ------------------------------------------------------------------ index
def _index_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--texts", type=Path, required=True, metavar="FILE",
                        help="the documents: .jsonl (one JSON string or object per line), .json (a list), "
                             "or .txt (one per line)")
    parser.add_argument("--text-field", default=TEXTS_FIELD_DEFAULT, metavar="NAME",
                        help=f"key holding the text in JSON objects (default {TEXTS_FIELD_DEFAULT!r})")
    vectors = parser.add_mutually_exclusive_group(required=True)
    vectors.add_argument("--embeddings", type=Path, metavar="E.npy",
                         help="(N, d) embeddings, one row per text, L2-normalised unless --normalize")
    vectors.add_argument("--embed", metavar="MODEL",
                         help="embed the texts with this sentence-transformers model (hub name or local path; "
                              "needs fieldrank[embed]); 'search' then embeds text queries with it")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="directory to write the index to")
    _add_config_options(parser, "configuration saved with the index (default: the 'default' preset)")
    parser.add_argument("--normalize", action="store_true", help="L2-normalise the embedding rows (and queries)")
    parser.add_argument("--overwrite", action="store_true", help="replace an index already in --out")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a summary")


def _decode_json(decode: Callable[[Any], Any], source: Any, where: str) -> Any:
    """``decode(source)``, with malformed or too deeply nested JSON as a one-line user error."""
    try:
        return decode(source)
    except json.JSONDecodeError as exc:
        msg = f"{where}: invalid JSON ({exc})"
        raise CommandError(msg) from None
    except RecursionError:
        msg = f"{where}: the JSON is nested too deeply"
        raise CommandError(msg) from None


def _read_texts(path: Path, field: str, progress) -> list[str]:
    suffix = path.suffix.lower()
    if suffix not in TEXT_FILE_SUFFIXES:
        msg = f"--texts {path}: expected one of {', '.join(TEXT_FILE_SUFFIXES)}, got {suffix or 'no suffix'!r}"
        raise CommandError(msg)
    with open(path, encoding="utf-8") as f:
        if suffix == ".txt":
            return [line.rstrip("\n") for line in progress(f, desc="reading texts", unit=" texts")]
        if suffix == ".json":
            items = _decode_json(json.load, f, f"--texts {path}")
            if not isinstance(items, list):
                msg = f"--texts {path}: expected a JSON list, got {type(items).__name__}"
                raise CommandError(msg)
            numbered = enumerate(items, 1)
        else:
            numbered = ((n, line) for n, line in enumerate(progress(f, desc="reading texts", unit=" texts"), 1)
                        if line.strip())
        texts = []
        for number, item in numbered:
            if suffix == ".jsonl":
                item = _decode_json(json.loads, item, f"--texts {path}, line {number}")
            texts.append(_text_of(item, field, f"--texts {path}, item {number}"))
    return texts


def _text_of(item: object, field: str, where: str) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        value = item.get(field)
        if isinstance(value, str):
            return value
        msg = f"{where}: no string field {field!r} (fields: {sorted(item)}); choose one with --text-field"
        raise CommandError(msg)
    msg = f"{where}: expected a string or an object, got {type(item).__name__}"
    raise CommandError(msg)


def _load_npy(path: Path, option: str):
    import numpy as np

    from .persistence import read_npy_header

    try:
        # The header is checked against the file's size first: a header declaring 10**11 rows
        # would otherwise make numpy try to allocate them.
        read_npy_header(path)
        array = np.load(path, allow_pickle=False)
    except ValueError as exc:
        msg = f"{option} {path}: not a readable .npy array ({exc})"
        raise CommandError(msg) from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "fiu":
        msg = f"{option} {path}: expected a numeric array, got dtype {getattr(array, 'dtype', '?')}"
        raise CommandError(msg)
    return array


def _index_run(args: argparse.Namespace) -> int:
    import numpy as np
    from tqdm import tqdm

    from .hybrid import HybridRetriever

    config = _chosen_config(args)
    if args.out.exists() and not args.overwrite and (not args.out.is_dir() or any(args.out.iterdir())):
        msg = f"--out {args.out} exists and is not empty; pass --overwrite to replace the index in it"
        raise CommandError(msg)
    embedder = None if args.embed is None else _embedder(args.embed, "--embed")
    steps = ("read texts", "embed texts" if embedder else "read embeddings", "build BM25 index", "save")
    with tqdm(total=len(steps), desc="index", unit=" steps", disable=None, file=sys.stderr) as bar:
        def progress(iterable, **kwargs):
            return tqdm(iterable, disable=None, leave=False, file=sys.stderr, **kwargs)

        bar.set_postfix_str(steps[0])
        texts = _read_texts(args.texts, args.text_field, progress)
        bar.update()
        bar.set_postfix_str(steps[1])
        if embedder is None:
            E = _load_npy(args.embeddings, "--embeddings")
            if E.dtype.kind != "f":
                E = E.astype(np.float32)
        else:
            from .embed import embed_documents

            E = embed_documents(embedder, texts)
        bar.update()
        bar.set_postfix_str(steps[2])
        retriever = HybridRetriever(texts, E, config, normalize=args.normalize)
        bar.update()
        bar.set_postfix_str(steps[3])
        retriever.save(args.out, overwrite=args.overwrite)
        if embedder is not None:
            from .embed import save_embedder_spec

            save_embedder_spec(args.out, embedder)
        bar.update()
    summary = {
        "out": str(args.out),
        "n_docs": len(retriever),
        "dim": retriever.dim,
        "config": retriever.config.name,
        "legs": list(retriever.config.leg_names),
        "embedder": None if embedder is None else embedder.model_name,
        "bytes": sum(p.stat().st_size for p in Path(args.out).rglob("*") if p.is_file()),
    }
    if args.json:
        _print_json(summary)
    else:
        print(f"indexed {summary['n_docs']} texts (d = {summary['dim']}) with config {summary['config']!r} "
              f"(legs: {', '.join(summary['legs'])}) into {summary['out']} ({summary['bytes']:,} bytes)")
    return EXIT_OK


# ------------------------------------------------------------------ search
def _search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", type=Path, required=True, metavar="DIR",
                        help="an index written by 'fieldrank index'")
    parser.add_argument("--text", metavar="TEXT", help="the query text (BM25 legs)")
    parser.add_argument("--vector-file", type=Path, metavar="Q.npy",
                        help="the query embedding (.npy, shape (d,) or (n, d) with --vector-row); it is L2-normalised")
    parser.add_argument("--vector-row", type=int, metavar="I", help="row of a 2-D --vector-file to use")
    parser.add_argument("--embed", metavar="MODEL",
                        help="embed --text with this sentence-transformers model (default: the model the index "
                             "was built with by 'index --embed', if any)")
    _add_config_options(parser, "configuration to search with (default: the one saved with the index)")
    parser.add_argument("--k", type=_positive_int, help="hits to return (default: the configuration's k)")
    parser.add_argument("--min-confidence", type=_probability, metavar="P",
                        help="only hits whose confidence (calibrated probability of being relevant) is at least P: "
                             "fewer than k, possibly none; needs --text and a query vector")
    parser.add_argument("--mmap", action="store_true", help="memory-map the embeddings instead of reading them")
    parser.add_argument("--json", action="store_true", help="print JSON (hits with per-leg provenance)")


def _query_vector(args: argparse.Namespace):
    import numpy as np

    if args.vector_file is None:
        if args.vector_row is not None:
            msg = "--vector-row needs --vector-file"
            raise CommandError(msg)
        return None
    array = _load_npy(args.vector_file, "--vector-file")
    if array.ndim == 1 and args.vector_row is not None:
        msg = f"--vector-row given, but --vector-file {args.vector_file} holds one vector of shape {array.shape}"
        raise CommandError(msg)
    if array.ndim == 2:
        if args.vector_row is None:
            if array.shape[0] != 1:
                msg = f"--vector-file {args.vector_file} holds {array.shape[0]} vectors; pick one with --vector-row"
                raise CommandError(msg)
            array = array[0]
        else:
            if not -array.shape[0] <= args.vector_row < array.shape[0]:
                msg = f"--vector-row {args.vector_row} is out of range for {array.shape[0]} vectors"
                raise CommandError(msg)
            array = array[args.vector_row]
    elif array.ndim != 1:
        msg = f"--vector-file {args.vector_file}: expected shape (d,) or (n, d), got {array.shape}"
        raise CommandError(msg)
    # In float64: the norm of a finite float32 vector of large (or tiny) entries overflows (or
    # underflows) float32, yet the unit vector is well defined.
    array = array.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        norm = float(np.linalg.norm(array))
    if not np.isfinite(array).all() or not np.isfinite(norm) or norm == 0.0:
        msg = f"--vector-file {args.vector_file}: the vector must be finite and non-zero"
        raise CommandError(msg)
    return np.ascontiguousarray(array / norm, dtype=np.float32)


def _embedder(model: str, option: str):
    """A SentenceTransformerEmbedder for ``model`` (a local path is made absolute, to be recorded)."""
    from .integrations._store_access import load_embedder

    path = Path(model)
    try:
        return load_embedder(str(path.resolve()) if path.exists() else model, option)
    except ValueError as exc:
        raise CommandError(str(exc)) from None


def _query_embedder(args: argparse.Namespace):
    """The embedder for a text-only query: --embed, else the one recorded with the index, else None."""
    if args.vector_file is not None:
        if args.embed is not None:
            msg = "pass either --vector-file or --embed, not both"
            raise CommandError(msg)
        return None
    if args.embed is not None:
        return _embedder(args.embed, "--embed")
    from .embed import load_embedder_spec

    spec = load_embedder_spec(args.index)
    if spec is None:
        return None
    _note(f"embedding the query with {spec['model']} (the model the index was built with)")
    return _embedder(spec["model"], f"the index's embedder ({args.index}/embedder.json)")


def _lexical_only(config):
    """The lexical legs of ``config`` (or the ``bm25`` preset with its BM25 parameters)."""
    from .config import BM25Leg, preset

    legs = tuple(leg for leg in config.legs if isinstance(leg, BM25Leg))
    if not legs:
        return preset("bm25").replace(bm25=config.bm25, k=config.k)
    return config.replace(legs=legs, name=f"{config.name}, lexical legs only")


def _dense_only(config):
    """The legs of ``config`` that need no query text (or the ``cosine`` preset)."""
    from .config import preset

    legs = tuple(leg for leg in config.legs if not leg.needs_text)
    if not legs:
        return preset("cosine").replace(k=config.k)
    return config.replace(legs=legs, name=f"{config.name}, dense legs only")


def _search_run(args: argparse.Namespace) -> int:
    from .hybrid import HybridRetriever

    chosen = _chosen_config(args)
    vector = _query_vector(args)
    retriever = HybridRetriever.load(args.index, mmap=args.mmap, config=chosen)
    config = retriever.config
    embedder = _query_embedder(args) if args.text is not None and config.needs_vector else None
    if embedder is not None:
        retriever = retriever.with_embedder(embedder)
        from .embed import embed_query

        vector = embed_query(embedder, args.text)
    if vector is None and config.needs_vector:
        dense = [leg.name for leg in config.legs if leg.needs_vector]
        if chosen is not None:
            msg = (f"configuration {config.name!r} has dense legs ({', '.join(dense)}) and needs a query "
                   "embedding: pass --vector-file Q.npy, or use --preset bm25 for a lexical search")
            raise CommandError(msg)
        config = _lexical_only(config)
        retriever = retriever.with_config(config)
        _note(f"no --vector-file: running only the lexical legs (config {config.name!r}); dense legs "
              f"{', '.join(dense)} need a query embedding")
    if args.text is None and config.needs_text:
        lexical = [leg.name for leg in config.legs if leg.needs_text]
        if chosen is not None or vector is None:
            msg = (f"configuration {config.name!r} has legs that read the query text ({', '.join(lexical)}) and "
                   "needs --text" + ("" if vector is None else ", or use --preset cosine for a dense search"))
            raise CommandError(msg)
        config = _dense_only(config)
        retriever = retriever.with_config(config)
        _note(f"no --text: running only the dense legs (config {config.name!r}); legs "
              f"{', '.join(lexical)} need the query text")
    if args.min_confidence is not None and (args.text is None or vector is None):
        msg = "--min-confidence needs --text and a query vector (--vector-file or --embed): confidence reads both"
        raise CommandError(msg)
    result = retriever.search(args.text, vector, args.k, min_confidence=args.min_confidence)
    if args.json:
        _print_json({"index": str(args.index), "n_docs": len(retriever), **result.to_dict()})
    else:
        sys.stdout.write(_format_hits(result, len(retriever)))
    return EXIT_OK


def _format_hits(result, n_docs: int) -> str:
    legs = result.legs
    header = ["#", "id", "score", "conf", *(leg.name for leg in legs), "text"]
    rows = []
    confidence = result.confidence
    for j, doc_id in enumerate(result.ids.tolist()):
        cells = [str(j + 1), str(doc_id), f"{result.scores[j]:.4f}",
                 "-" if confidence[j] != confidence[j] else f"{confidence[j]:.2f}"]
        for leg in legs:
            rank = int(leg.hit_rank[j])
            cell = "-" if rank == 0 else str(rank)
            if leg.hit_coef is not None and rank:
                cell += f" (a={leg.hit_coef[j]:.3g})"
            cells.append(cell)
        cells.append(_shorten(result.texts[j]))
        rows.append(cells)
    widths = [max(len(row[c]) for row in [header, *rows]) for c in range(len(header) - 1)]
    numeric = set(range(4))

    def line(cells: Sequence[str]) -> str:
        parts = [cell.rjust(w) if c in numeric else cell.ljust(w) for c, (cell, w) in enumerate(zip(cells, widths))]
        return "  ".join([*parts, cells[-1]]).rstrip()

    legs_text = ", ".join(f"{leg.name} ({leg.kind}) x{leg.weight:g}" for leg in legs)
    out = [f"config {result.config.name!r}: {len(result)} hits of {n_docs} documents; legs: {legs_text}",
           "leg columns: the hit's rank in that leg ('-': not returned by it)", "", line(header)]
    out.extend(line(row) for row in rows)
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ parser and entry point
register_subcommand(
    "demo", help="a multi-session conversation and the write-ups' kitchen scenarios through every method (data shipped, no network)",
    add_arguments=_demo_arguments, run=_demo_run,
    description="Runs the paraphrase pile-up and partial-evidence scenarios (shipped with the package) through "
                "cosine, BM25, CFS, CFS-R and the hybrid presets, and shows what each returns side by side.",
)
register_subcommand(
    "index", help="build and save a hybrid index from texts and embeddings",
    add_arguments=_index_arguments, run=_index_run,
)
register_subcommand(
    "search", help="search a saved index",
    add_arguments=_search_arguments, run=_search_run,
    description="The query vector comes from --vector-file, or from --embed MODEL, or from the model the index "
                "was built with ('index --embed'). Without any, only the lexical (BM25) legs can run: with the "
                "saved configuration the search falls back to them and says so; with an explicit dense "
                "--preset/--config it is an error.",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand (extensions included)."""
    from . import __version__

    _register_harness()
    _load_extensions()
    parser = argparse.ArgumentParser(
        prog=PROG, description="Fast in-process retrieval over long conversational memory.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in _SUBCOMMANDS.values():
        child = sub.add_parser(command.name, help=command.help, description=command.description or command.help)
        command.add_arguments(child)
        child.set_defaults(_run=command.run)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status.

    User mistakes (:class:`CommandError`, ``ValueError``, ``TypeError``, ``OSError``,
    ``KeyError`` from the library) print ``fieldrank <command>: error: ...`` on stderr and
    return 1.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except (CommandError, ValueError, TypeError, OSError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    # Run the canonical module, so that extensions registering with `fieldrank.cli` (not
    # `__main__`) are seen under `python -m fieldrank.cli` too.
    from fieldrank.cli import main as _main

    sys.exit(_main())
