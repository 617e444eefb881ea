"""``fieldrank mcp``: one :class:`~fieldrank.MemoryStore` file served over MCP (stdio or Streamable HTTP).

Needs the official MCP Python SDK (``pip install ".[mcp]"`` in a fieldrank checkout).

=================  ========================================================================
``remember``       store a memory (text, importance, tier, tags, entities, supersedes, session)
``recall``         the k best memories for a query; gates (tiers, required tags, minimum
                   importance) and filters (created since/until, session, entities)
``list_memories``  browse: newest first, paginated, by tier, tags and creation-time range
``get_memory``     one memory by id
``update_memory``  change a memory's text, importance, tier, tags or entities (same id)
``forget``         tombstone a memory by id
``forget_all``     tombstone every memory of the caller's tenant (``confirm`` must be true)
``why_not``        why a memory is (not) among a recall's hits
=================  ========================================================================

Also a resource, ``memory://recent`` (the caller's newest memories, as JSON), and a prompt,
``recall_before_answering``.

The tenant is never a tool argument: it is fixed by the server's configuration (``--tenant``),
or over HTTP by the request's bearer token, mapped to a tenant by a tokens file (compared in
constant time; a request without exactly one ``Authorization`` header carrying a known token
gets 401 before it reaches MCP, and the tools act for the tenant that check found).

The argument schemas are generated from the store's own tables (:data:`fieldrank.memory.TIERS`,
:data:`~fieldrank.memory.MODES`): enums and bounds cannot drift from what the store accepts. A
BM25-only server (no embedder) offers the one mode it runs, ``keyword``, as its default.

Ids are per tenant and opaque (:class:`TenantIds`): 16 hex digits, a keyed permutation of the
store's id under a key derived from a secret file and the tenant, so that an id says nothing
about how many memories anyone else holds, and one tenant's id means nothing to another.

See ``docs/mcp.md`` for the command line and client configurations.
"""

# No `from __future__ import annotations`: the tools' annotations are built per server (the
# modes a lexical server runs) and must be real objects when the SDK reads them.

import functools
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, Callable, Literal, Optional, Union

from ..memory import DEFAULT_IMPORTANCE, DEFAULT_MODE, DEFAULT_TENANT, MODES, TIERS, MemoryStore
from ..memory._schema import DEFAULT_TIER, IMPORTANCE_RANGE, KEYWORD_MODE
from ._common import (
    check_store,
    lexical_vector,
    live_memories,
    memory_add,
    memory_fields,
    memory_gates,
    memory_record,
    missing_extra,
)
from ._store_access import DEFAULT_MAX_TEXT_BYTES, Browse, open_store, parse_time

try:
    from typing import Annotated

    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import Resource
    from pydantic import Field
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("mcp_server", "the MCP SDK (mcp)", exc, extra="mcp") from exc

__all__ = ["DEFAULT_MAX_TEXT_BYTES", "SERVER_NAME", "TOKENS_ENV", "MemoryService", "TenantIds", "TokenMap",
           "build_server", "load_id_key", "load_tokens", "open_store", "serve_http"]

SERVER_NAME = "fieldrank-memory"
#: Recall size a client gets unless it asks, and the most it may ask for.
DEFAULT_RECALL_K = 5
MAX_RECALL_K = 100
#: Page size of ``list_memories`` unless asked, and the most.
DEFAULT_PAGE = 20
MAX_PAGE = 100
#: The SDK's own limit on an HTTP request body (it answers 413 above it); raised where needed so
#: that a text at the limit always fits, even with every character JSON-escaped (6 bytes).
DEFAULT_HTTP_BODY_BYTES = 4 * 1024 * 1024
#: The environment variable naming a tokens file when ``--tokens`` is not given.
TOKENS_ENV = "FIELDRANK_MCP_TOKENS"
#: Where the ASGI guard puts the tenant it authenticated; the tools read it from there only.
_SCOPE_TENANT = "fieldrank.tenant"
#: The store's argument names and the tools' (a store message that reaches a client speaks the tool's).
_ARGUMENT_NAMES = {"tier_mask": "tiers", "cue_text": "query", "cue_vector": "query", "memory_id": "id"}
#: A recall with post-filters (time, session, entities) fetches this many times k, then more.
_FETCH_FACTOR = 4


def body_limit(max_text_bytes: int) -> int:
    """The HTTP request body limit for a server taking texts of ``max_text_bytes``."""
    return max(DEFAULT_HTTP_BODY_BYTES, 6 * max_text_bytes + 64 * 1024)


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


def load_tokens(path: Union[str, "os.PathLike[str]"]) -> TokenMap:
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


# ------------------------------------------------------------------------------ opaque ids
_ID_KEY_BYTES = 32
_ID_LIMIT = 1 << 64
_HALF = 0xFFFFFFFF


def load_id_key(path: Union[str, "os.PathLike[str]"]) -> bytes:
    """The secret behind the public ids: 32 random bytes in hex in ``path``, created (mode 0600) if
    missing. Keep it with the store: another key gives every memory another public id."""
    path = os.path.expanduser(os.fspath(path))
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(_ID_KEY_BYTES) + "\n")
    with open(path, encoding="ascii") as handle:
        text = handle.read().strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < _ID_KEY_BYTES:
        msg = f"id key file {path}: expected {2 * _ID_KEY_BYTES} or more hex digits"
        raise ValueError(msg)
    return key


class TenantIds:
    """Store ids <-> the opaque ids one tenant sees (16 hex digits).

    A four-round Feistel permutation of 64 bits whose round function is HMAC-SHA256 under a key
    derived from the secret and the tenant: stable across restarts (same secret), distinct per
    tenant, and an id reveals nothing of the store's counter. An id that does not decode to one of
    the tenant's memories reads as missing, like an unknown one.
    """

    ROUNDS = 4

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, bytes) or len(key) < _ID_KEY_BYTES:
            msg = f"the id key must be at least {_ID_KEY_BYTES} bytes"
            raise ValueError(msg)
        self._key = key

    @functools.lru_cache(maxsize=1024)  # noqa: B019 - one per tenant, the object lives as long as the server
    def _rounds(self, tenant: str) -> tuple[Any, ...]:
        tenant_key = hmac.new(self._key, b"fieldrank-mcp-id\x00" + tenant.encode("utf-8"), hashlib.sha256).digest()
        return tuple(hmac.new(tenant_key, bytes([i]), hashlib.sha256) for i in range(self.ROUNDS))

    @staticmethod
    def _f(mac: Any, half: int) -> int:
        h = mac.copy()
        h.update(half.to_bytes(4, "big"))
        return int.from_bytes(h.digest()[:4], "big")

    def public(self, tenant: str, memory_id: Optional[int]) -> Optional[str]:
        if memory_id is None:
            return None
        left, right = memory_id >> 32, memory_id & _HALF
        for mac in self._rounds(tenant):
            left, right = right, left ^ self._f(mac, right)
        return f"{(left << 32) | right:016x}"

    def internal(self, tenant: str, public_id: object, name: str = "id") -> int:
        if not isinstance(public_id, str) or len(public_id) != 16:
            msg = f"{name} must be a memory id as this server returns it (16 hex digits), got {public_id!r}"
            raise ValueError(msg)
        try:
            value = int(public_id, 16)
        except ValueError:
            msg = f"{name} must be a memory id as this server returns it (16 hex digits), got {public_id!r}"
            raise ValueError(msg) from None
        left, right = value >> 32, value & _HALF
        for mac in reversed(self._rounds(tenant)):
            left, right = right ^ self._f(mac, left), left
        return (left << 32) | right


# ------------------------------------------------------------------------------ the tools' logic
def _missing(name: str, public_id: str) -> KeyError:
    return KeyError(f"{name}: no memory with id {public_id}")


class MemoryService:
    """The tools' logic over one store, for the tenant each call resolved (no MCP here).

    Parameters
    ----------
    store : MemoryStore
        With an embedder, or lexical (dim 1, no embedder: memories get one constant vector and
        recall runs in ``keyword`` mode).
    ids : TenantIds, optional
        The public ids; default a key made for this object only (ids then change at restart).
    max_text_bytes : int
        The most UTF-8 bytes a text or a query may have.
    """

    def __init__(self, store: MemoryStore, ids: Optional[TenantIds] = None, *,
                 max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> None:
        self.store = check_store(store)
        lexical_vector(store)  # a store with embeddings but no embedder is refused here
        self.lexical = store.embedder is None
        self.modes: tuple[str, ...] = (KEYWORD_MODE,) if self.lexical else MODES
        self.default_mode = KEYWORD_MODE if self.lexical else DEFAULT_MODE
        self.ids = ids if ids is not None else TenantIds(secrets.token_bytes(_ID_KEY_BYTES))
        if isinstance(max_text_bytes, bool) or not isinstance(max_text_bytes, int) or max_text_bytes < 1:
            msg = f"max_text_bytes must be a positive integer, got {max_text_bytes!r}"
            raise ValueError(msg)
        self.max_text_bytes = max_text_bytes

    # -- checks at the boundary, in the tools' argument names
    def _text(self, value: object, name: str) -> str:
        if not isinstance(value, str):
            msg = f"{name} must be a string, got {type(value).__name__}"
            raise TypeError(msg)
        if not value.strip():
            what = "the memory to store" if name == "text" else "words to search for"
            msg = f"{name} must not be empty or only whitespace ({what})"
            raise ValueError(msg)
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > self.max_text_bytes:
            msg = (f"{name} is {size} bytes in UTF-8; this server takes at most {self.max_text_bytes} "
                   "(--max-text-bytes)")
            raise ValueError(msg)
        return value

    def _id(self, tenant: str, public_id: object, name: str = "id") -> int:
        memory_id = self.ids.internal(tenant, public_id, name)
        try:
            self.store.get(memory_id, tenant=tenant)
        except (KeyError, ValueError, TypeError):
            raise _missing(name, str(public_id)) from None
        return memory_id

    def _public_record(self, tenant: str, record: dict[str, Any]) -> dict[str, Any]:
        for key in ("id", "supersedes", "superseded_by"):
            if key in record:
                record[key] = self.ids.public(tenant, record[key])
        return record

    def _fields(self, tenant: str, memory_id: int) -> dict[str, Any]:
        return self._public_record(tenant, {"id": memory_id, **memory_fields(self.store, tenant, memory_id)})

    def _mode(self, mode: Optional[str]) -> str:
        if mode is None:
            return self.default_mode
        if mode not in self.modes:
            why = " (this server has no embedder: BM25 only)" if self.lexical else ""
            msg = f"mode must be one of {list(self.modes)}{why}, got {mode!r}"
            raise ValueError(msg)
        return mode

    # -- the tools
    def remember(self, tenant: str, text: str, **metadata: Any) -> dict[str, Any]:
        text = self._text(text, "text")
        if metadata.get("supersedes") is not None:
            metadata["supersedes"] = self._id(tenant, metadata["supersedes"], "supersedes")
        memory_id = memory_add(self.store, text, metadata, tenant=tenant, where="remember")
        return self._fields(tenant, memory_id)

    def get(self, tenant: str, memory_id: str) -> dict[str, Any]:
        internal = self._id(tenant, memory_id)
        memory = self.store.get(internal, tenant=tenant)
        return {**self._fields(tenant, internal), "text": memory.text, "recall_count": memory.recall_count}

    def update(self, tenant: str, memory_id: str, *, text: Optional[str] = None, **changes: Any) -> dict[str, Any]:
        internal = self._id(tenant, memory_id)
        if text is not None:
            changes["text"] = self._text(text, "text")
        changes = {key: value for key, value in changes.items() if value is not None}
        if not changes:
            msg = "update_memory: give at least one of text, importance, tier, tags, entities"
            raise ValueError(msg)
        try:
            memory = self.store.update(internal, tenant=tenant, **changes)
        except KeyError:  # forgotten meanwhile (another client); the store's message names its own id
            raise _missing("id", memory_id) from None
        return {**self._fields(tenant, internal), "text": memory.text}

    def forget(self, tenant: str, memory_id: str) -> dict[str, Any]:
        internal = self._id(tenant, memory_id)
        try:
            self.store.forget(internal, tenant=tenant)
        except KeyError:  # forgotten meanwhile (another client)
            raise _missing("id", memory_id) from None
        return {"id": memory_id, "forgotten": True}

    def forget_all(self, tenant: str, *, confirm: bool) -> dict[str, Any]:
        ids = [memory.id for memory in live_memories(self.store, tenant)]
        if confirm is not True:
            msg = (f"forget_all forgets all {len(ids)} memories of this tenant and cannot be undone: "
                   "call it again with confirm=true")
            raise ValueError(msg)
        forgotten = 0
        for memory_id in ids:
            try:
                forgotten += bool(self.store.forget(memory_id, tenant=tenant))
            except KeyError:  # forgotten meanwhile
                pass
        return {"forgotten": forgotten}

    def browse(self, tenant: str, *, limit: int = DEFAULT_PAGE, offset: int = 0, tiers: Optional[list[str]] = None,
             tags: Optional[list[str]] = None, since: Any = None, until: Any = None) -> dict[str, Any]:
        browse = Browse(tiers=None if tiers is None else frozenset(tiers), tags=tuple(tags or ()),
                        since=None if since is None else parse_time(since, "since"),
                        until=None if until is None else parse_time(until, "until"))
        memories = browse.newest_first(live_memories(self.store, tenant))
        page = memories[offset:offset + limit]
        rows = [{**self._fields(tenant, m.id), "text": m.text} for m in page]
        following = offset + len(page)
        return {"memories": rows, "total": len(memories),
                "next_offset": following if following < len(memories) else None}

    def _post_filter(self, since: Any, until: Any, session: Optional[str],
                     entities: Optional[list[str]]) -> Optional[Callable[[Any], bool]]:
        low = None if since is None else parse_time(since, "since")
        high = None if until is None else parse_time(until, "until")
        wanted = tuple(entities or ())
        if low is None and high is None and session is None and not wanted:
            return None

        def keeps(memory: Any) -> bool:
            return ((low is None or memory.created_at >= low) and (high is None or memory.created_at < high)
                    and (session is None or memory.session == session)
                    and all(entity in memory.entities for entity in wanted))

        return keeps

    def recall(self, tenant: str, query: str, *, k: int = DEFAULT_RECALL_K, mode: Optional[str] = None,
               since: Any = None, until: Any = None, session: Optional[str] = None,
               entities: Optional[list[str]] = None, **gates: Any) -> dict[str, Any]:
        query = self._text(query, "query")
        options = {"mode": self._mode(mode), **memory_gates(gates, "recall")}
        keeps = self._post_filter(since, until, session, entities)
        if keeps is None:
            result = self.store.recall(query, None, k, tenant=tenant, **options)
            hits = list(result.hits)
        else:
            # The store has no gate on time, session or entities: recall more, unreinforced, until
            # k hits pass (or the tenant has no more); a filtered recall reinforces nothing.
            total, fetch = len(self.store), max(_FETCH_FACTOR * k, 32)
            while True:
                fetch = min(fetch, max(total, 1))
                result = self.store.recall(query, None, fetch, tenant=tenant, reinforce=False, **options)
                hits = [hit for hit in result.hits if keeps(self.store.get(hit.id))]
                if len(hits) >= k or len(result.hits) < fetch or fetch >= total:
                    break
                fetch *= _FETCH_FACTOR
            hits = hits[:k]
        records = [self._public_record(tenant, memory_record(self.store, tenant, hit)) for hit in hits]
        for rank, record in enumerate(records, 1):
            record["rank"] = rank
        return {"mode": result.mode, "hits": records}

    def why_not(self, tenant: str, memory_id: str, query: str, *, k: int = DEFAULT_RECALL_K,
                mode: Optional[str] = None, **gates: Any) -> dict[str, Any]:
        query = self._text(query, "query")
        options = {"mode": self._mode(mode), **memory_gates(gates, "why_not")}
        try:
            internal = self._id(tenant, memory_id)
        except KeyError:
            # Forgotten, never stored, or another tenant's: the same answer for each, so that no
            # client learns whether an id exists (or existed) anywhere else.
            return {"id": memory_id, "reason": "not_found",
                    "detail": f"no live memory with id {memory_id} (forgotten, or never stored for you)"}
        answer = self.store.why_not(internal, query, None, k, tenant=tenant, **options)
        detail = answer.detail.replace(f"memory {internal} ", f"memory {memory_id} ")  # the store's id stays inside
        out: dict[str, Any] = {"id": memory_id, "reason": answer.reason, "detail": detail,
                               "failed_gates": list(answer.failed_gates),
                               "generator_ranks": dict(answer.generator_ranks), "quotas": dict(answer.quotas),
                               "rank": answer.rank, "score": answer.score, "cutoff_score": answer.cutoff_score}
        if answer.hit is not None:
            out["hit"] = self._public_record(tenant, memory_record(self.store, tenant, answer.hit))
        return out


def _in_tool_names(message: str) -> str:
    for internal, public in _ARGUMENT_NAMES.items():
        message = message.replace(internal, public)
    return message


def _tool_errors(call: Callable[[], Any]) -> Any:
    """Run a tool body; a user mistake (bad argument, unknown id) becomes a clear tool error,
    worded in the tool's argument names."""
    try:
        return call()
    except KeyError as exc:
        raise ToolError(_in_tool_names(str(exc.args[0]) if exc.args else str(exc))) from None
    except (ValueError, TypeError) as exc:
        raise ToolError(_in_tool_names(str(exc))) from None


class _MemoryServer(MCPServer):
    """MCPServer that lists ``memory://recent`` among its resources (a template with a query
    variable, so that it can read the caller's tenant; the SDK lists templates apart)."""

    async def list_resources(self) -> list[Resource]:
        recent = Resource(uri="memory://recent", name="recent_memories", mime_type="application/json",
                          description=f"Your newest memories (JSON; memory://recent?limit=N, N <= {MAX_PAGE}).")
        return [*await super().list_resources(), recent]


def build_server(service: MemoryService, *, tenant: str = DEFAULT_TENANT,
                 tokens: Optional[TokenMap] = None) -> MCPServer:
    """The MCP server over ``service``: every call acts for ``tenant``, or with ``tokens`` for the
    tenant the HTTP guard (:func:`serve_http`) authenticated; a call it did not see is refused."""
    kind = "lexical (BM25 only: no embedder configured)" if service.lexical else "hybrid (dense + BM25)"
    server = _MemoryServer(
        SERVER_NAME,
        instructions=(f"Long-term memory ({kind}). Call `recall` with the user's question before answering "
                      "from memory; `remember` durable facts, decisions and preferences (tier 'core' for "
                      "rules that must not be lost; `supersedes` when a fact replaces an older one); "
                      "`list_memories` to browse, `update_memory` to correct, `forget` on request; "
                      "`why_not` explains why a memory was not recalled."),
        log_level="WARNING",
    )
    tenant_of = functools.partial(_caller_tenant, tenant, tokens)
    types = _tool_types(service)
    _register_writes(server, service, tenant_of, types)
    _register_reads(server, service, tenant_of, types)
    return server


def _caller_tenant(tenant: str, tokens: Optional[TokenMap], ctx: Context) -> str:
    """The tenant a call acts for: ``tenant``, or with ``tokens`` the one the HTTP guard put in the request."""
    if tokens is None:
        return tenant
    request = getattr(ctx.request_context, "request", None) if ctx.request_context is not None else None
    found = None if request is None else request.scope.get(_SCOPE_TENANT)
    if found is None:  # the HTTP guard refuses these first; this is the second lock
        msg = "unauthorized: a valid bearer token is required"
        raise ToolError(msg)
    return found


def _tool_types(service: MemoryService) -> SimpleNamespace:
    """The tools' argument types, generated from the store's tables and this server's modes (the
    schemas' enums and bounds), and the phrases their descriptions share."""
    return SimpleNamespace(
        Tier=Literal[TIERS],  # type: ignore[valid-type]
        Mode=Literal[service.modes],  # type: ignore[valid-type]
        MemoryId=Annotated[str, Field(pattern="^[0-9a-f]{16}$", description="a memory id as this server returns it")],
        Text=Annotated[str, Field(min_length=1, max_length=service.max_text_bytes)],
        Importance=Annotated[float, Field(ge=IMPORTANCE_RANGE[0], le=IMPORTANCE_RANGE[1])],
        K=Annotated[int, Field(ge=1, le=MAX_RECALL_K)],
        Labels=Optional[list[Annotated[str, Field(min_length=1)]]],
        Time=Optional[Union[str, float]],
        durable="core is durable: recall reserves room for it",
        tiers_text=", ".join(TIERS),
        modes_text=", ".join(service.modes),
        filters_doc=("since/until: creation time range (ISO 8601 date or date-time, UTC unless an offset is "
                     "given, or Unix seconds; since inclusive, until exclusive)"),
    )


def _register_writes(server: MCPServer, service: MemoryService, tenant_of: Callable[[Context], str],
                     T: SimpleNamespace) -> None:  # noqa: N803 - T holds the tools' types
    """The tools that change memories: remember, update_memory, forget, forget_all."""

    @server.tool(description=(
        f"Store a memory; returns its id and dates. importance in [{IMPORTANCE_RANGE[0]:g}, "
        f"{IMPORTANCE_RANGE[1]:g}]; tier one of {T.tiers_text} ({T.durable}); tags/entities are labels (recall "
        "can require tags, entities link memories); supersedes is the id of an older memory this one "
        "replaces; session groups memories said in one conversation."))
    def remember(text: T.Text, ctx: Context, importance: T.Importance = DEFAULT_IMPORTANCE, tier: T.Tier = DEFAULT_TIER,
                 tags: T.Labels = None, entities: T.Labels = None, supersedes: Optional[T.MemoryId] = None,
                 session: Optional[str] = None) -> dict[str, Any]:
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.remember(who, text, importance=importance, tier=tier, tags=tags or (),
                                                     entities=entities or (), supersedes=supersedes,
                                                     session=session))

    @server.tool(description=(
        "Change a memory in place (same id, dates kept): any of text, importance, tier, tags, entities "
        "(tags/entities replace the old ones). Returns the memory."))
    def update_memory(id: T.MemoryId, ctx: Context, text: Optional[T.Text] = None,  # noqa: A002
                      importance: Optional[T.Importance] = None, tier: Optional[T.Tier] = None,
                      tags: T.Labels = None, entities: T.Labels = None) -> dict[str, Any]:
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.update(who, id, text=text, importance=importance, tier=tier,
                                                   tags=tags, entities=entities))

    @server.tool(description="Forget a memory by id: no recall or listing returns it again.")
    def forget(id: T.MemoryId, ctx: Context) -> dict[str, Any]:  # noqa: A002 - the tool's argument name
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.forget(who, id))

    @server.tool(description="Forget every memory you hold (cannot be undone): confirm must be true; "
                             "without it the error says how many would go. Returns how many were forgotten.")
    def forget_all(ctx: Context, confirm: bool = False) -> dict[str, Any]:
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.forget_all(who, confirm=confirm))


def _register_reads(server: MCPServer, service: MemoryService, tenant_of: Callable[[Context], str],
                    T: SimpleNamespace) -> None:  # noqa: N803 - T holds the tools' types
    """The tools, resource and prompt that read memories: recall, list_memories, get_memory, why_not."""

    @server.tool(description=(
        "The k best memories for a query, best first: id, text, score, dates, tier, tags and the provenance "
        f"of the score. Gates: tiers (allowed: {T.tiers_text}), required_tags (all of them), min_importance. "
        f"Filters: {T.filters_doc}; session; entities (all of them); a filtered recall does not reinforce. "
        f"mode: {T.modes_text} (default {service.default_mode})."))
    def recall(query: T.Text, ctx: Context, k: T.K = DEFAULT_RECALL_K, tiers: Optional[list[T.Tier]] = None,
               required_tags: T.Labels = None, min_importance: Optional[T.Importance] = None,
               mode: T.Mode = service.default_mode, since: T.Time = None, until: T.Time = None,
               session: Optional[str] = None, entities: T.Labels = None) -> dict[str, Any]:
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.recall(who, query, k=k, mode=mode, tiers=tiers, required_tags=required_tags,
                                                   min_importance=min_importance, since=since, until=until,
                                                   session=session, entities=entities))

    @server.tool(description=(
        "Browse your memories, newest first: a page of `limit` from `offset` (next_offset: the next page, "
        f"null at the end; total: how many match). Filters: tiers ({T.tiers_text}), tags (all of them), "
        f"{T.filters_doc}."))
    def list_memories(ctx: Context, limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = DEFAULT_PAGE,
                      offset: Annotated[int, Field(ge=0)] = 0, tiers: Optional[list[T.Tier]] = None,
                      tags: T.Labels = None, since: T.Time = None, until: T.Time = None) -> dict[str, Any]:
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.browse(who, limit=limit, offset=offset, tiers=tiers, tags=tags,
                                                 since=since, until=until))

    @server.tool(description="One memory by id: text, dates, tier, importance, tags, entities, session, "
                             "supersedes/superseded_by, recall count.")
    def get_memory(id: T.MemoryId, ctx: Context) -> dict[str, Any]:  # noqa: A002 - the tool's argument name
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.get(who, id))

    @server.tool(description=(
        "Why memory `id` is (not) among the hits of the same recall (query, k, gates, mode): returned, "
        "not_found (also for a forgotten id), gated (which gates), not_admitted (its rank per generator) or "
        "outranked (its score, the k-th score)."))
    def why_not(id: T.MemoryId, query: T.Text, ctx: Context, k: T.K = DEFAULT_RECALL_K,  # noqa: A002
                tiers: Optional[list[T.Tier]] = None, required_tags: T.Labels = None,
                min_importance: Optional[T.Importance] = None, mode: T.Mode = service.default_mode) -> dict[str, Any]:
        who = tenant_of(ctx)
        return _tool_errors(lambda: service.why_not(who, id, query, k=k, mode=mode, tiers=tiers,
                                                    required_tags=required_tags, min_importance=min_importance))

    @server.resource("memory://recent{?limit}", name="recent_memories", mime_type="application/json",
                     description="Your newest memories (JSON), newest first.")
    def recent(ctx: Context, limit: int = DEFAULT_PAGE) -> str:
        who = tenant_of(ctx)
        page = _tool_errors(lambda: service.browse(who, limit=max(1, min(int(limit), MAX_PAGE))))
        return json.dumps(page["memories"], ensure_ascii=False)

    @server.prompt(description="Answer a question after recalling what memory holds about it.")
    def recall_before_answering(question: str) -> str:
        return (f"Before answering, call the `recall` tool with query={json.dumps(question)} (and k=5). Base your "
                "answer on the memories it returns, preferring a memory that supersedes another and saying when "
                "memory holds nothing relevant. If the question or your answer states a durable fact, decision "
                "or preference that memory lacks, `remember` it.\n\nQuestion: " + question)


def _unauthorized_guard(app: Any, tokens: TokenMap) -> Any:
    """ASGI wrapper: an HTTP request must carry exactly one ``Authorization`` header with a known
    bearer token (else 401, never reaching MCP); the tenant it names goes into the request's scope,
    the one place the tools read it from."""

    async def refuse(send: Any, message: bytes) -> None:
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": b'{"error": "' + message + b'"}'})

    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            values = [value for name, value in scope.get("headers") or () if name.lower() == b"authorization"]
            if len(values) > 1:  # which one counts would differ between layers: refuse, never guess
                await refuse(send, b"unauthorized: more than one Authorization header")
                return
            tenant = tokens.tenant_of(values[0].decode("latin-1")) if values else None
            if tenant is None:
                await refuse(send, b"unauthorized: a valid bearer token is required")
                return
            scope = {**scope, _SCOPE_TENANT: tenant}
        await app(scope, receive, send)

    return guarded


def serve_http(server: MCPServer, *, host: str, port: int, tokens: Optional[TokenMap],
               max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> None:
    """Serve Streamable HTTP at ``http://host:port/mcp`` until interrupted."""
    import uvicorn

    app = server.streamable_http_app(host=host, json_response=True, max_request_body_size=body_limit(max_text_bytes))
    if tokens is not None:
        app = _unauthorized_guard(app, tokens)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()
