"""A :class:`~fieldrank.MemoryStore` as LangGraph's long-term memory store (``BaseStore``).

:class:`FieldrankStore` is a ``langgraph.store.base.BaseStore``: compile a graph with
``store=FieldrankStore(MemoryStore(...))`` and its nodes ``put``/``get``/``search``/``delete``
items as with ``InMemoryStore``, while recall runs the store's fused ranking (hybrid with the
store's embedder, BM25 alone on a lexical store) and every item is a memory that persists with
the store's file.

How an item lives in the store (docs/ecosystem.md, "LangGraph"):

* the namespace's **first label is the tenant**, the others are positional tags
  (``lg:ns1=<label>``, ``lg:ns2=...``) with the depth (``lg:depth=<n>``): a search under a prefix
  recalls from the prefix's tenant with the prefix's tags as gates, so it can never return an item
  of another namespace (gates are strict); an empty prefix searches every tenant that holds items;
* the **key** is a tag (``lg:key=<key>``), the **value** is kept as JSON in a tag
  (``lg:value=<json>``, keys in the order they were put) and its top-level strings also as
  ``lg:f:<field>=<string>``, so an equality ``filter=`` on them is a gate too (other filters,
  LangGraph's operators and nested matches, are checked on the values); every item carries
  ``lg:item``, so a LangGraph search never sees memories the tenant got from another adapter;
* the **text recalled** is ``value[field]`` for each of the ``index`` fields (LangGraph's path
  syntax: ``"text"``, ``"a.b"``, ``"items[*].name"``), or every string in the value when no fields
  are configured; an item with no such text (``put(..., index=False)``, or a value without the
  index fields) is never embedded (it gets a fixed placeholder vector): ``get``, listings and
  filters find it, and a query search lists it after every ranked item with ``score=None``, as
  LangGraph's ``InMemoryStore`` does;
* a ``filter=`` key is a value key, or a dotted path into nested values (``{"user.level": 3}``,
  as LangGraph's SQLite and Postgres stores read it) when the value has no such top-level key;
* a put on an existing key **updates** the memory in place (``MemoryStore.update``: new text and
  embedding, the old text is never recalled again), keeping its id and ``created_at``; a put with
  ``value=None`` (``delete``) forgets it.

Which memory holds which (namespace, key) lives in the store (issue #34): the memory carries the
store key ``json([namespace[1:], key])`` in its tenant ``namespace[0]``, unique among the live
memories of the tenant and enforced by the store's file, and a put is ``MemoryStore.put`` (replace
in place or add), a delete ``MemoryStore.forget_by_key``. So several ``FieldrankStore`` objects,
in one process or several, on one file agree on every key: a put never duplicates one, a delete
stays deleted. This object keeps a view of the items (for listings and to map recalled ids back)
that it rebuilds from the store whenever the store's ``revision`` moved by another writer's
change (every live memory read once). An item written before keys existed (a tag but no store
key) is forgotten and written again with its key when it is next put or deleted.
Operations of a ``batch`` run in order, under one lock; the async API runs them in a worker
thread. TTLs are not supported (``supports_ttl = False``).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

from .. import _validation as _v
from . import _common

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        get_text_at_path,
        tokenize_path,
    )
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise _common.missing_extra("langgraph", "langgraph", exc) from exc

__all__ = ["FieldrankSearchItem", "FieldrankStore"]

#: Every tag this adapter writes starts with it; ``lg:item`` marks an item of a FieldrankStore.
TAG_PREFIX = "lg:"
_ITEM = TAG_PREFIX + "item"
_UNINDEXED = TAG_PREFIX + "unindexed"
_KEY = TAG_PREFIX + "key="
_VALUE = TAG_PREFIX + "value="
_DEPTH = TAG_PREFIX + "depth="
_UPDATED = TAG_PREFIX + "updated="
_FIELD = TAG_PREFIX + "f:"
_NS = TAG_PREFIX + "ns"
_FILTER_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


@dataclass
class _Entry:
    memory_id: int
    value: dict[str, Any]
    created_at: float
    updated_at: float
    indexed: bool


def _utc(seconds: float) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(seconds, tz=_dt.timezone.utc)


def _check_namespace(namespace: object, name: str, *, allow_empty: bool = False) -> tuple[str, ...]:
    if isinstance(namespace, list):  # LangGraph's SQL stores take a list as well (its tests pass one)
        namespace = tuple(namespace)
    if not isinstance(namespace, tuple):
        msg = f"{name} must be a tuple of non-empty str, got {type(namespace).__name__}"
        raise TypeError(msg)
    if not all(isinstance(label, str) and label for label in namespace):
        msg = f"{name} must be a tuple of non-empty str, got {namespace!r}"
        raise ValueError(msg)
    if not namespace and not allow_empty:
        msg = f"{name} must not be empty"
        raise ValueError(msg)
    return namespace


def _strings(value: Any) -> list[str]:
    """Every string leaf of a JSON value, in document order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _strings(item)]
    return []


def _matches(item_value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: operators (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``,
    ``$lte``), nested dicts match as subsets, lists element-wise, anything else by ``==``."""
    if isinstance(wanted, Mapping):
        if any(isinstance(key, str) and key.startswith("$") for key in wanted):
            return all(_operator(item_value, op, operand) for op, operand in wanted.items())
        return isinstance(item_value, Mapping) and all(_matches(item_value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(item_value, (list, tuple)) and len(item_value) == len(wanted)
                and all(_matches(a, b) for a, b in zip(item_value, wanted)))
    return bool(item_value == wanted)


def _value_at(value: Mapping[str, Any], key: str) -> Any:
    """The value a filter key names: the top-level key, else a dotted path into nested dicts
    (``"user.level"``, as LangGraph's SQL stores read it); None where the path ends."""
    if key in value or "." not in key:
        return value.get(key)
    current: Any = value
    for part in key.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
    return current


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field fails an order comparison
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[op]


def _check_filter(filter: Optional[Mapping[str, Any]]) -> dict[str, Any]:  # noqa: A002 - LangGraph's name
    if filter is None:
        return {}
    if not isinstance(filter, Mapping):
        msg = f"filter must be a dict of value keys to values, got {type(filter).__name__}"
        raise TypeError(msg)

    def walk(wanted: Any) -> None:
        if isinstance(wanted, Mapping):
            for key, inner in wanted.items():
                if isinstance(key, str) and key.startswith("$") and key not in _FILTER_OPERATORS:
                    msg = f"filter: unsupported operator {key!r}; LangGraph filters take {_FILTER_OPERATORS}"
                    raise ValueError(msg)
                walk(inner)

    walk(dict(filter))
    return dict(filter)


class FieldrankSearchItem(SearchItem):
    """A ``SearchItem`` with the hit's calibrated ``confidence`` in [0, 1] (None for an unscored
    listing); ``dict()`` includes it."""

    __slots__ = ("confidence",)

    def __init__(self, namespace: tuple[str, ...], key: str, value: dict[str, Any], created_at: _dt.datetime,
                 updated_at: _dt.datetime, score: Optional[float] = None, confidence: Optional[float] = None) -> None:
        super().__init__(namespace, key, value, created_at, updated_at, score)
        self.confidence = confidence

    def dict(self) -> dict:
        return {**super().dict(), "confidence": self.confidence}


class FieldrankStore(_common.PicklableLock, BaseStore):
    """LangGraph's ``BaseStore`` over a :class:`~fieldrank.MemoryStore` (see the module docstring).

    Parameters
    ----------
    store : MemoryStore
        With an embedder (``search(query=...)`` recalls in ``mode``, default hybrid), or lexical
        (``MemoryStore(path, dim=1)``: BM25 only).
    index : dict, optional
        LangGraph's index configuration; only ``"fields"`` (the paths whose text is recalled;
        default: every string in the value) and ``"dims"`` (checked against the store) are read.
        Embeddings come from the store's embedder: an ``"embed"`` here is refused, saying so.
    mode : str, optional
        The recall mode (``MemoryStore.recall``); default hybrid, or keyword without an embedder.
    reinforce : bool, default True
        Whether a search applies the store's recall dynamics to the items it returns.
    """

    supports_ttl = False
    #: LangGraph's index configuration as given (``None`` without one), as ``InMemoryStore`` keeps it.
    index_config: Optional[dict[str, Any]]

    def __init__(self, store: Any, *, index: Optional[Mapping[str, Any]] = None, mode: Optional[str] = None,
                 reinforce: bool = True) -> None:
        self._store = _common.check_store(store)
        self._mode = _common.recall_mode(self._store, mode)
        self._fields = self._index_fields(index)
        self.index_config = None if index is None else dict(index)
        self._reinforce = _v.flag(reinforce, "reinforce")
        self._lock = threading.RLock()
        #: namespace -> key -> item, and memory id -> (namespace, key): a search reads only the
        #: namespaces under its prefix, and maps the recalled ids back.
        self._items: dict[tuple[str, ...], dict[str, _Entry]] = {}
        self._by_id: dict[int, tuple[tuple[str, ...], str]] = {}
        self._unindexed: set[int] = set()  # ids of the items put with index=False
        #: The store's ``revision`` the view above reflects (None: rebuild before the next op).
        self._seen: Optional[int] = None
        self._catch_up()

    @property
    def store(self) -> Any:
        """The wrapped :class:`~fieldrank.MemoryStore`."""
        return self._store

    def __repr__(self) -> str:
        return f"FieldrankStore({self._store!r}, items={len(self._by_id)}, mode={self._mode!r})"

    # ------------------------------------------------------------------ configuration
    def _index_fields(self, index: Optional[Mapping[str, Any]]) -> Optional[list[tuple[str, Any]]]:
        if index is None:
            return None
        if not isinstance(index, Mapping):
            msg = f"index must be a dict like {{'fields': ['text']}}, got {type(index).__name__}"
            raise TypeError(msg)
        unknown = sorted(set(index) - {"fields", "dims", "embed"})
        if unknown:
            msg = f"index: unknown key(s) {unknown}; FieldrankStore reads 'fields' (and checks 'dims')"
            raise ValueError(msg)
        if index.get("embed") is not None:
            msg = ("index: 'embed' is not used: the MemoryStore embeds (MemoryStore(..., embedder=...), e.g. "
                   "fieldrank.integrations.langchain.LangChainEmbedder(embeddings))")
            raise ValueError(msg)
        if index.get("dims") is not None and index["dims"] != self._store.dim:
            msg = f"index: dims {index['dims']} differs from the store's dimension {self._store.dim}"
            raise ValueError(msg)
        fields = index.get("fields")
        if fields is None:
            return None
        return self._tokenized(fields, "index['fields']")

    @staticmethod
    def _tokenized(fields: object, name: str) -> list[tuple[str, Any]]:
        if isinstance(fields, str) or not isinstance(fields, Sequence) or not fields or \
                not all(isinstance(field, str) and field for field in fields):
            msg = f"{name} must be a non-empty list of field paths (str), got {fields!r}"
            raise TypeError(msg)
        return [(field, field if field in ("$", "__root__") else tokenize_path(field)) for field in fields]

    def _text(self, value: dict[str, Any], index: Union[None, bool, Sequence[str]]) -> str:
        fields = self._fields if index is None or index is True else self._tokenized(index, "index")
        if fields is None:
            return "\n".join(_strings(value))
        texts: list[str] = []
        for _, path in fields:
            texts.extend(get_text_at_path(value, path))
        return "\n".join(texts)

    # ------------------------------------------------------------------ tags
    @staticmethod
    def _tags(namespace: tuple[str, ...], key: str, value: dict[str, Any], updated_at: float,
              indexed: bool) -> list[str]:
        tags = [_ITEM, _KEY + key, _VALUE + _common.json_text(value, "value"), _DEPTH + str(len(namespace)),
                _UPDATED + repr(updated_at)]
        tags += [f"{_NS}{depth}={label}" for depth, label in enumerate(namespace) if depth > 0]
        tags += [f"{_FIELD}{field}={text}" for field, text in value.items() if isinstance(text, str) and text]
        if not indexed:
            tags.append(_UNINDEXED)
        return tags

    @staticmethod
    def _prefix_gates(prefix: tuple[str, ...]) -> list[str]:
        return [_ITEM] + [f"{_NS}{depth}={label}" for depth, label in enumerate(prefix) if depth > 0]

    def _catch_up(self) -> None:
        """Rebuild the view of the items when the store changed other than by this object's writes."""
        revision = self._store.revision
        if revision != self._seen:
            self._rebuild()
            self._seen = revision  # read before the rebuild: a write meanwhile moves it again

    def _wrote(self, before: int, writes: int) -> None:
        """After this object's own write(s), already applied to the view: keep the view only if the
        store moved by exactly them (else another writer committed too: rebuild at the next op)."""
        revision = self._store.revision
        self._seen = revision if revision == before + writes else None

    def _rebuild(self) -> None:
        """The view of the items from the store's tags (every live memory is read once)."""
        self._items.clear()
        self._by_id.clear()
        self._unindexed.clear()
        for memory in _common.live_memories(self._store):
            self._adopt(memory)

    def _adopt(self, memory: Any) -> None:
        tags = memory.tags
        if _ITEM not in tags:
            return
        one = {prefix: tag[len(prefix):] for tag in tags for prefix in (_KEY, _VALUE, _DEPTH, _UPDATED)
               if tag.startswith(prefix)}
        depth = int(one[_DEPTH])
        labels = {}
        for tag in tags:
            if tag.startswith(_NS):
                position, _, label = tag[len(_NS):].partition("=")
                labels[int(position)] = label
        namespace = (memory.tenant, *(labels[i] for i in range(1, depth)))
        self._set(namespace, one[_KEY], _Entry(memory.id, json.loads(one[_VALUE]), memory.created_at,
                                               float(one[_UPDATED]), _UNINDEXED not in tags))

    def _set(self, namespace: tuple[str, ...], key: str, entry: _Entry) -> None:
        self._items.setdefault(namespace, {})[key] = entry
        self._by_id[entry.memory_id] = (namespace, key)
        if entry.indexed:
            self._unindexed.discard(entry.memory_id)
        else:
            self._unindexed.add(entry.memory_id)

    def _pop(self, namespace: tuple[str, ...], key: str) -> None:
        entries = self._items[namespace]
        memory_id = entries.pop(key).memory_id
        del self._by_id[memory_id]
        self._unindexed.discard(memory_id)
        if not entries:
            del self._items[namespace]

    def _entry(self, namespace: tuple[str, ...], key: str) -> Optional[_Entry]:
        return self._items.get(namespace, {}).get(key)

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order (a read sees the writes before it, and every write any other
        writer committed before it started); one result per op."""
        with self._lock:
            results = []
            for op in ops:
                self._catch_up()
                results.append(self._run(op))
            return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the store's I/O never blocks the event loop)."""
        ops = list(ops)
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, ops)

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        msg = f"unknown operation {type(op).__name__}"
        raise ValueError(msg)

    def _item(self, namespace: tuple[str, ...], key: str, entry: _Entry) -> Item:
        return Item(value=entry.value, key=key, namespace=namespace, created_at=_utc(entry.created_at),
                    updated_at=_utc(entry.updated_at))

    def _get(self, op: GetOp) -> Optional[Item]:
        namespace = _check_namespace(op.namespace, "namespace")
        entry = self._entry(namespace, op.key)
        return None if entry is None else self._item(namespace, op.key, entry)

    def _put(self, op: PutOp) -> None:
        namespace = _check_namespace(op.namespace, "namespace")
        if not isinstance(op.key, str):
            msg = f"key must be a str, got {type(op.key).__name__}"
            raise TypeError(msg)
        if getattr(op, "ttl", None) is not None:
            msg = "FieldrankStore does not support ttl (forget items with delete)"
            raise NotImplementedError(msg)
        entry = self._entry(namespace, op.key)
        store_key, tenant = _store_key(namespace, op.key), namespace[0]
        before = self._seen
        if op.value is None:
            forgot = self._store.forget_by_key(store_key, tenant=tenant)
            if entry is not None and not forgot:
                forgot = self._forget_unkeyed(entry, store_key, tenant)
            if entry is not None:
                self._pop(namespace, op.key)
            if before is not None:
                self._wrote(before, int(forgot))
            return
        if not isinstance(op.value, Mapping):
            msg = f"value must be a dict, got {type(op.value).__name__}"
            raise TypeError(msg)
        value = json.loads(_common.json_text(op.value, "value"))  # the item holds what a reopened store reads
        text = self._text(value, op.index) if op.index is not False else ""
        indexed = bool(text.strip())
        # An item with nothing to index is never embedded: a fixed placeholder vector (and the
        # unindexed tag keeps it out of every ranking); an indexed one is embedded by the store.
        vector = _common.lexical_vector(self._store) if indexed else _common.placeholder_vector(self._store)
        now = time.time()
        tags = self._tags(namespace, op.key, value, now, indexed)
        writes = 1
        if entry is not None and self._forget_unkeyed(entry, store_key, tenant):
            writes += 1
        memory_id = self._store.put(store_key, text, vector, tenant=tenant, tags=tags, created_at=now)
        created = entry.created_at if entry is not None and entry.memory_id == memory_id else \
            self._store.get(memory_id).created_at
        if entry is not None:
            self._pop(namespace, op.key)
        self._set(namespace, op.key, _Entry(memory_id, value, created, now, indexed))
        if before is not None:
            self._wrote(before, writes)

    def _forget_unkeyed(self, entry: _Entry, store_key: str, tenant: str) -> bool:
        """Forget the memory of an item written before keys lived in the store (it has the item's
        tags but not its store key), so a put or delete never leaves it beside the keyed one."""
        try:
            if self._store.get_by_key(store_key, tenant=tenant).id == entry.memory_id:
                return False
        except KeyError:
            pass
        try:
            return self._store.forget(entry.memory_id, tenant=tenant)
        except KeyError:  # gone meanwhile
            return False

    def _namespaces_under(self, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        return [namespace for namespace in self._items if namespace[:len(prefix)] == prefix]

    def _search(self, op: SearchOp) -> list[SearchItem]:  # FieldrankSearchItems
        prefix = _check_namespace(op.namespace_prefix, "namespace_prefix", allow_empty=True)
        wanted = _check_filter(op.filter)
        limit, offset = _v.non_negative_int(op.limit, "limit"), _v.non_negative_int(op.offset, "offset")
        namespaces = self._namespaces_under(prefix)

        def kept(entry: _Entry) -> bool:
            return all(_matches(_value_at(entry.value, field), want) for field, want in wanted.items())

        if not op.query:
            window = [(namespace, key, entry) for namespace in namespaces
                      for key, entry in self._items[namespace].items() if kept(entry)][offset:offset + limit]
            return [FieldrankSearchItem(namespace, key, entry.value, _utc(entry.created_at), _utc(entry.updated_at))
                    for namespace, key, entry in window]
        # String equalities on top-level keys are gates (exact unless a key holds "=", which makes
        # the tag ambiguous, or ".", which may be a path); any other filter, or an unindexed item
        # in the way, needs every item recalled.
        gates = [f"{_FIELD}{field}={want}" for field, want in wanted.items()
                 if isinstance(want, str) and want and "." not in field]
        exact = (len(gates) == len(wanted) and not any("=" in field for field in wanted)
                 and not any(self._by_id[i][0][:len(prefix)] == prefix for i in self._unindexed))
        scored: list[tuple[float, float, int]] = []
        for tenant in sorted({namespace[0] for namespace in namespaces}):
            size = sum(len(self._items[namespace]) for namespace in namespaces if namespace[0] == tenant)
            k = min(offset + limit, size) if exact else size
            if k == 0:
                continue
            result = self._store.recall(op.query, None, k, tenant=tenant, mode=self._mode,
                                        required_tags=self._prefix_gates((tenant,) + prefix[1:]) + gates,
                                        reinforce=self._reinforce)
            for hit in result.hits:
                where = self._by_id.get(hit.id)
                if where is None or where[0][:len(prefix)] != prefix:
                    continue
                entry = self._items[where[0]][where[1]]
                if entry.indexed and kept(entry):
                    scored.append((hit.score, hit.confidence, hit.id))
        scored.sort(key=lambda hit: -hit[0])  # stable: one tenant keeps its recall order
        # Items with nothing indexed follow every ranked one, unscored (as InMemoryStore lists them).
        unscored = [(math.nan, math.nan, memory_id) for memory_id in sorted(self._unindexed)
                    if self._by_id[memory_id][0][:len(prefix)] == prefix
                    and kept(self._items[self._by_id[memory_id][0]][self._by_id[memory_id][1]])]
        results: list[SearchItem] = []
        for score, confidence, memory_id in (scored + unscored)[offset:offset + limit]:
            namespace, key = self._by_id[memory_id]
            entry = self._items[namespace][key]
            results.append(FieldrankSearchItem(namespace, key, entry.value, _utc(entry.created_at),
                                               _utc(entry.updated_at), None if math.isnan(score) else float(score),
                                               None if math.isnan(confidence) else float(confidence)))
        return results

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = list(self._items)
        conditions: Sequence[MatchCondition] = op.match_conditions or ()
        kept = [namespace for namespace in namespaces if all(_namespace_matches(c, namespace) for c in conditions)]
        if op.max_depth is not None:
            kept = list({namespace[:op.max_depth] for namespace in kept})
        kept.sort()
        return kept[op.offset:op.offset + op.limit]


def _store_key(namespace: tuple[str, ...], key: str) -> str:
    """The store key of an item (its tenant is ``namespace[0]``): JSON, so no two (namespace, key)
    pairs share one."""
    return json.dumps([list(namespace[1:]), key], ensure_ascii=False)


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path))
    else:
        msg = f"match_type must be 'prefix' or 'suffix', got {condition.match_type!r}"
        raise ValueError(msg)
    return all(label == "*" or have == label for have, label in pairs)
