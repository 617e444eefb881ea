"""``fieldrank mcp``: one :class:`~fieldrank.MemoryStore` file served over MCP (stdio or Streamable HTTP).

Needs the official MCP Python SDK (``pip install ".[mcp]"`` in a fieldrank checkout). Four tools:

==============  ===========================================================================
``remember``    store a memory (text, importance, tier, tags, entities, supersedes, session)
``recall``      the k best memories for a query, with gates (tiers, required tags, minimum
                importance), each with its id, text, dates and provenance
``forget``      tombstone a memory by id
``why_not``     why a memory is (not) among a recall's hits
==============  ===========================================================================

The tenant is never a tool argument: it is fixed by the server's configuration (``--tenant``),
or over HTTP by the request's bearer token, mapped to a tenant by a tokens file (compared in
constant time; a request without a known token gets 401 before it reaches MCP). Text is
embedded by the configured embedder; without one the store is lexical (BM25 only), and the
server says so on stderr when it starts (over stdio, stdout is the protocol).

See ``docs/mcp.md`` for the command line and client configurations.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any, Optional

from ..memory import DEFAULT_TENANT, MemoryStore
from ._common import (
    LEXICAL_DIM,
    check_store,
    lexical_vector,
    memory_add,
    memory_fields,
    memory_gates,
    memory_record,
    missing_extra,
    recall_mode,
)

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("mcp_server", "the MCP SDK (mcp)", exc, extra="mcp") from exc

__all__ = ["SERVER_NAME", "TOKENS_ENV", "MemoryService", "TokenMap", "build_server", "load_tokens", "open_store", "serve_http"]

SERVER_NAME = "fieldrank-memory"
#: Recall size a client gets unless it asks, and the most it may ask for.
DEFAULT_RECALL_K = 5
MAX_RECALL_K = 100
#: The environment variable naming a tokens file when ``--tokens`` is not given.
TOKENS_ENV = "FIELDRANK_MCP_TOKENS"


class TokenMap:
    """Bearer tokens -> tenants, looked up in constant time (no early exit, digests compared)."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        if not tokens:
            msg = "the tokens map is empty: give at least one token -> tenant"
            raise ValueError(msg)
        self._entries = []
        for token, tenant in tokens.items():
            if not isinstance(token, str) or len(token) < 16:
                msg = "every token must be a string of at least 16 characters"
                raise ValueError(msg)
            if not isinstance(tenant, str) or not tenant:
                msg = f"the tenant of a token must be a non-empty string, got {tenant!r}"
                raise ValueError(msg)
            self._entries.append((hashlib.sha256(token.encode()).digest(), tenant))

    @property
    def tenants(self) -> tuple[str, ...]:
        return tuple(sorted({tenant for _, tenant in self._entries}))

    def tenant_of(self, authorization: Optional[str]) -> Optional[str]:
        """The tenant of an ``Authorization: Bearer <token>`` header value, or None."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():  # the scheme is case-insensitive (RFC 9110)
            return None
        digest = hashlib.sha256(token.strip().encode()).digest()
        found = None
        for known, tenant in self._entries:  # every entry is compared: the time says nothing
            if hmac.compare_digest(known, digest):
                found = tenant
        return found


def load_tokens(path: str | os.PathLike[str]) -> TokenMap:
    """A tokens file: a JSON object ``{"<token>": "<tenant>", ...}``."""
    with open(path, encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as exc:
            msg = f"tokens file {os.fspath(path)}: not JSON ({exc})"
            raise ValueError(msg) from None
    if not isinstance(data, dict):
        msg = f"tokens file {os.fspath(path)}: expected a JSON object {{token: tenant}}"
        raise ValueError(msg)
    return TokenMap(data)


class MemoryService:
    """The tools' logic over one store, for the tenant each call resolved (no MCP here).

    Parameters
    ----------
    store : MemoryStore
        With an embedder, or lexical (dim :data:`LEXICAL_DIM`, no embedder: memories get one
        constant vector and recall runs in ``keyword`` mode).
    """

    def __init__(self, store: MemoryStore) -> None:
        self.store = check_store(store)
        lexical_vector(store)  # a store with embeddings but no embedder is refused here
        self.lexical = store.embedder is None

    def remember(self, tenant: str, text: str, **metadata: Any) -> dict[str, Any]:
        if not isinstance(text, str) or not text.strip():
            msg = "text must be a non-empty string (the memory to store)"
            raise ValueError(msg)
        supersedes = metadata.get("supersedes")
        if supersedes is not None:
            try:  # scoped to the tenant: another tenant's id reads as missing, never as "belongs to ..."
                self.store.get(supersedes, tenant=tenant)
            except KeyError:
                msg = f"supersedes: no memory with id {supersedes}"
                raise KeyError(msg) from None
        memory_id = memory_add(self.store, text, metadata, tenant=tenant, where="remember")
        return {"id": memory_id, **memory_fields(self.store, tenant, memory_id)}

    def _options(self, k: int, mode: Optional[str], filters: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_RECALL_K:
            msg = f"k must be an integer in [1, {MAX_RECALL_K}], got {k!r}"
            raise ValueError(msg)
        return {"mode": recall_mode(self.store, mode), **memory_gates(filters, "recall")}

    def recall(self, tenant: str, query: str, *, k: int, mode: Optional[str] = None,
               **filters: Any) -> dict[str, Any]:
        options = self._options(k, mode, filters)
        result = self.store.recall(query, None, k, tenant=tenant, **options)
        return {"mode": result.mode, "hits": [memory_record(self.store, tenant, hit) for hit in result.hits]}

    def forget(self, tenant: str, memory_id: int) -> dict[str, Any]:
        try:
            self.store.forget(memory_id, tenant=tenant)
        except KeyError:
            msg = f"no memory with id {memory_id}"
            raise KeyError(msg) from None
        return {"id": memory_id, "forgotten": True}

    def why_not(self, tenant: str, memory_id: int, query: str, *, k: int, mode: Optional[str] = None,
                **filters: Any) -> dict[str, Any]:
        options = self._options(k, mode, filters)
        answer = self.store.why_not(memory_id, query, None, k, tenant=tenant, **options)
        if answer.reason in ("other_tenant", "tombstoned", "not_found"):
            # A client never learns whether an id exists (or existed) in another tenant; the
            # store checks tombstones before tenants, so a forgotten id reads the same for everyone.
            return {"id": memory_id, "reason": "not_found",
                    "detail": f"no live memory with id {memory_id} (forgotten, or never stored for you)"}
        out: dict[str, Any] = {"id": memory_id, "reason": answer.reason, "detail": answer.detail,
                               "failed_gates": list(answer.failed_gates),
                               "generator_ranks": dict(answer.generator_ranks), "quotas": dict(answer.quotas),
                               "rank": answer.rank, "score": answer.score, "cutoff_score": answer.cutoff_score}
        if answer.hit is not None:
            out["hit"] = memory_record(self.store, tenant, answer.hit)
        return out


def _tool_errors(call):
    """Run a tool body; a user mistake (bad argument, unknown id) becomes a clear tool error."""
    try:
        return call()
    except KeyError as exc:
        raise ToolError(exc.args[0] if exc.args else str(exc)) from None
    except (ValueError, TypeError) as exc:
        raise ToolError(str(exc)) from None


def build_server(service: MemoryService, *, tenant: str = DEFAULT_TENANT,
                 tokens: Optional[TokenMap] = None) -> MCPServer:
    """The MCP server over ``service``: every call acts for ``tenant``, or with ``tokens`` for the
    tenant of the request's bearer token (HTTP only; a call without one is refused)."""

    def tenant_of(ctx: Context) -> str:
        if tokens is None:
            return tenant
        headers = ctx.headers or {}
        found = tokens.tenant_of(headers.get("authorization"))
        if found is None:  # the HTTP middleware refuses these first; this is the second lock
            msg = "unauthorized: a valid bearer token is required"
            raise ToolError(msg)
        return found

    kind = "lexical (BM25 only: no embedder configured)" if service.lexical else "hybrid (dense + BM25)"
    server = MCPServer(
        SERVER_NAME,
        instructions=(f"Long-term memory ({kind}). Call `recall` with the user's question before answering "
                      "from memory; `remember` durable facts, decisions and preferences (tier 'core' for "
                      "rules that must not be lost; `supersedes` when a fact replaces an older one); "
                      "`forget` on request; `why_not` explains why a memory was not recalled."),
        log_level="WARNING",
    )

    @server.tool()
    def remember(text: str, ctx: Context, importance: float = 0.5, tier: str = "episodic",
                 tags: Optional[list[str]] = None, entities: Optional[list[str]] = None,
                 supersedes: Optional[int] = None, session: Optional[str] = None) -> dict[str, Any]:
        """Store a memory; returns its id and dates.

        importance in [0, 1]; tier one of episodic, semantic, procedural, core (core and
        procedural are durable); tags/entities are labels (recall can require tags, entities
        link memories); supersedes is the id of an older memory this one replaces; session
        groups memories said in one conversation."""
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.remember(who, text, importance=importance, tier=tier, tags=tags or (),
                                                     entities=entities or (), supersedes=supersedes,
                                                     session=session))

    @server.tool()
    def recall(query: str, ctx: Context, k: int = DEFAULT_RECALL_K, tiers: Optional[list[str]] = None,
               required_tags: Optional[list[str]] = None, min_importance: Optional[float] = None,
               mode: Optional[str] = None) -> dict[str, Any]:
        """The k best memories for a query, best first: id, text, score, dates, tier, tags and
        the provenance of the score. Gates: tiers (allowed tiers), required_tags (all of them),
        min_importance. mode: hybrid (default), vector, keyword, full or rerank."""
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.recall(who, query, k=k, mode=mode, tiers=tiers,
                                                   required_tags=required_tags, min_importance=min_importance))

    @server.tool()
    def forget(id: int, ctx: Context) -> dict[str, Any]:  # noqa: A002 - the tool's argument name
        """Forget a memory by id: no recall returns it again."""
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.forget(who, id))

    @server.tool()
    def why_not(id: int, query: str, ctx: Context, k: int = DEFAULT_RECALL_K,  # noqa: A002
                tiers: Optional[list[str]] = None, required_tags: Optional[list[str]] = None,
                min_importance: Optional[float] = None, mode: Optional[str] = None) -> dict[str, Any]:
        """Why memory `id` is (not) among the hits of the same recall: returned, not_found
        (also for a forgotten id), gated (which gates), not_admitted (its rank per generator)
        or outranked (its score, the k-th score)."""
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.why_not(who, id, query, k=k, mode=mode, tiers=tiers,
                                                    required_tags=required_tags, min_importance=min_importance))

    return server


def _unauthorized_guard(app: Any, tokens: TokenMap) -> Any:
    """ASGI wrapper: an HTTP request without a known bearer token gets 401 and never reaches MCP."""

    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers") or ()).get(b"authorization", b"").decode("latin-1")
            if tokens.tenant_of(header) is None:
                body = b'{"error": "unauthorized: a valid bearer token is required"}'
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def serve_http(server: MCPServer, *, host: str, port: int, tokens: Optional[TokenMap]) -> None:
    """Serve Streamable HTTP at ``http://host:port/mcp`` until interrupted."""
    import uvicorn

    app = server.streamable_http_app(host=host, json_response=True)
    if tokens is not None:
        app = _unauthorized_guard(app, tokens)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()


def open_store(path: str, embedder: Any) -> MemoryStore:
    """The store file with the embedder, or lexical (a new file gets dim :data:`LEXICAL_DIM`); a
    file with embeddings opened without its embedder is a clear error."""
    if embedder is not None:
        return MemoryStore(path, embedder=embedder)
    store = MemoryStore(path, None if os.path.exists(path) else LEXICAL_DIM)
    if store.dim != LEXICAL_DIM:
        dim = store.dim
        store.close()
        msg = (f"{path} holds {dim}-dimensional embeddings: start the server with the embedder that made "
               "them (--embed MODEL)")
        raise ValueError(msg)
    return store
