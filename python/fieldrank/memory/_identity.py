"""How callers name and list memories: external keys, live ids, count, tenants, revision (issue #34).

:class:`KeyIndex` holds which live memory of a tenant holds which external key (``add(...,
key=)``, :meth:`KeyedAccess.put`); a file store's keys come from its ``key`` column, which the
backend keeps unique among the live memories of a tenant (:class:`~._persistence.StoreBackend`).
:class:`KeyedAccess` is the part of :class:`~fieldrank.memory.MemoryStore`'s public API built on
them and on the live rows (``put``, ``get_by_key``, ``forget_by_key``, ``ids``, ``revision``, ``len``,
``in``, ``tenants``): the store inherits it, and
it calls only the store's own methods and state (its lock, refresh, generation, add, update, forget).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any, Optional

import numpy as np

from ._ingest import checked_text, embedded
from ._persistence import DuplicateKeyError
from ._schema import DEFAULT_TENANT, Memory, check_labels, check_tenant

__all__ = ["PUT_ATTEMPTS", "KeyIndex", "KeyedAccess", "checked_keys"]

#: How often :meth:`KeyedAccess.put` tries when another process added or forgot the key meanwhile.
PUT_ATTEMPTS = 8


class KeyIndex:
    """(tenant, key) -> id of the live memory holding it, and back (every method: caller holds the store
    lock): the external keys of ``add(..., key=)`` and :meth:`KeyedAccess.put`; a file store's come
    from its ``key`` column as its rows are applied."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], int] = {}
        self._named: dict[int, tuple[str, str]] = {}

    def bind(self, tenant: str, key: str, memory_id: int) -> None:
        self._ids[(tenant, key)] = memory_id
        self._named[memory_id] = (tenant, key)

    def drop(self, memory_id: int) -> None:
        """A forgotten memory frees its key (unless another memory holds it by now)."""
        named = self._named.pop(memory_id, None)
        if named is not None and self._ids.get(named) == memory_id:
            del self._ids[named]

    def holder(self, tenant: str, key: str) -> Optional[int]:
        return self._ids.get((tenant, key))

    def named(self, keys: Optional[list[Optional[str]]], tenants: Sequence[str], *, check_free: bool
              ) -> list[tuple[int, tuple[str, str]]]:
        """``(offset, (tenant, key))`` of every new row with a key; with ``check_free`` (an in-memory
        store: no backend enforces it) a key a live memory holds is a :class:`DuplicateKeyError`."""
        named = [] if keys is None else [(i, (tenants[i], key)) for i, key in enumerate(keys) if key is not None]
        for _, (tenant, key) in named if check_free else ():
            if self.holder(tenant, key) is not None:
                raise DuplicateKeyError(key, tenant, self.holder(tenant, key))
        return named

    def bind_rows(self, named: list[tuple[int, tuple[str, str]]], first: int) -> None:
        """The new rows of :meth:`named`, given ids from ``first`` on, hold their keys."""
        for offset, (tenant, key) in named:
            self.bind(tenant, key, first + offset)

    def restore(self, held: dict[tuple[str, str], int]) -> None:
        """The keys of :meth:`held` (a pickled in-memory store)."""
        for (tenant, key), memory_id in held.items():
            self.bind(tenant, key, memory_id)

    def held(self) -> dict[tuple[str, str], int]:
        """A copy of every (tenant, key) -> id (what a pickled in-memory store carries)."""
        return dict(self._ids)


def checked_keys(keys: object, tenants: Sequence[str]) -> Optional[list[Optional[str]]]:
    """``add_many``'s ``keys``: None, or one non-empty str / None per memory, no (tenant, key) twice."""
    if keys is None:
        return None
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        msg = f"keys must be a sequence of str/None, one per memory, got {type(keys).__name__}"
        raise TypeError(msg)
    if len(keys) != len(tenants):
        msg = f"keys must have one entry per memory ({len(tenants)}), got {len(keys)}"
        raise ValueError(msg)
    checked = [None if key is None else check_tenant(key, f"keys[{i}]") for i, key in enumerate(keys)]
    seen: set[tuple[str, str]] = set()
    for tenant, key in zip(tenants, checked):
        if key is not None:
            if (tenant, key) in seen:
                raise DuplicateKeyError(key, tenant)
            seen.add((tenant, key))
    return checked


class KeyedAccess:
    """How a MemoryStore's memories are named and listed: ``put``, ``get_by_key``, ``forget_by_key``,
    ``ids``, ``revision``, ``len``, ``in`` and ``tenants`` (see the module docstring)."""

    # The store's state and methods these calls use (set by MemoryStore.__init__).
    _lock: Any
    _keys: KeyIndex
    _generation: Any
    _revision: int
    _embedder: Any
    _max_text_bytes: int
    _check_open: Any
    _refresh: Any
    add: Any
    update: Any
    forget: Any

    def __len__(self) -> int:
        """Number of live (not forgotten) memories, with what other processes committed."""
        with self._lock:
            self._refresh()
            return self._generation.n_live

    def __contains__(self, memory_id: object) -> bool:
        if not isinstance(memory_id, numbers.Integral):
            return False
        with self._lock:
            self._refresh()
            return int(memory_id) in self._generation.row_of

    def tenants(self) -> tuple[str, ...]:
        """Every tenant that has held a memory in the current generation, sorted."""
        with self._lock:
            self._refresh()
            return tuple(sorted(self._generation.tenant_names))

    def put(
        self,
        key: str,
        text: str,
        embedding: Optional[np.ndarray] = None,
        *,
        tenant: str = DEFAULT_TENANT,
        tags: Iterable[str] = (),
        entities: Iterable[str] = (),
        importance: Optional[float] = None,
        valence: Optional[float] = None,
        tier: Optional[str] = None,
        created_at: Optional[float] = None,
    ) -> int:
        """Store ``text`` under ``key``: replace in place the live memory of ``tenant`` that holds the
        key (as :meth:`update`: same id and ``created_at``, new text, embedding, tags and entities),
        or add one holding it (as :meth:`add`); returns the memory's id.

        Safe with several writers on one file: the file keeps every key unique, so when another
        process adds the key (or forgets its memory) between this store's look and its write, the
        write is refused, the store catches up and tries again as a replace (or an add). Two
        processes putting one key end with one memory holding the last put. ``importance``,
        ``valence`` and ``tier`` (None: the default for a new memory, unchanged for a replaced
        one) and ``created_at`` (a new memory only) are as in :meth:`add`.
        """
        key = check_tenant(key, "key")
        tenant = check_tenant(tenant)
        text = checked_text(text, self._max_text_bytes)
        if embedding is None:
            embedding = embedded(self._embedder, [text], "embedding")[0]
        tags, entities = check_labels(tags, "tags"), check_labels(entities, "entities")
        new_fields = {name: value for name, value in
                      (("importance", importance), ("valence", valence), ("tier", tier)) if value is not None}
        with self._lock:
            for attempt in range(PUT_ATTEMPTS):
                self._check_open()
                self._refresh()
                holder = self._keys.holder(tenant, key)
                try:
                    if holder is None:
                        return self.add(text, embedding, tenant=tenant, tags=tags, entities=entities,
                                        created_at=created_at, key=key, **new_fields)
                    self.update(holder, text=text, embedding=embedding, tags=tags, entities=entities,
                                tenant=tenant, **new_fields)
                    return holder
                except (DuplicateKeyError, KeyError):  # another process added the key / forgot its memory
                    if attempt == PUT_ATTEMPTS - 1:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    def get_by_key(self, key: str, *, tenant: str = DEFAULT_TENANT) -> Memory:
        """The live memory of ``tenant`` that holds ``key`` (``add(..., key=)``, :meth:`put`).

        Raises ``KeyError`` when none does (never held, or its memory was forgotten, in any process).
        """
        key, tenant = check_tenant(key, "key"), check_tenant(tenant)
        with self._lock:
            self._check_open()
            self._refresh()
            memory_id = self._keys.holder(tenant, key)
            if memory_id is None:
                msg = f"no memory holds key {key!r} for tenant {tenant!r}"
                raise KeyError(msg)
            return self._generation.memory(self._generation.row_of[memory_id])

    def forget_by_key(self, key: str, *, tenant: str = DEFAULT_TENANT) -> bool:
        """Forget the live memory of ``tenant`` that holds ``key`` (as :meth:`forget`), freeing the key.

        Returns True if this call forgot it, False if no live memory held the key (never held, or
        already forgotten here or by another process).
        """
        key, tenant = check_tenant(key, "key"), check_tenant(tenant)
        with self._lock:
            self._check_open()
            self._refresh()
            memory_id = self._keys.holder(tenant, key)
            # The key's holder is this tenant's, so forget() needs no tenant: with one, an id another
            # process forgot since the lookup would raise KeyError instead of answering False.
            return memory_id is not None and self.forget(memory_id)

    def ids(self, *, tenant: Optional[str] = None) -> np.ndarray:
        """The ids of every live memory (of ``tenant``, or of all tenants), ascending, as int64.

        What a caller lists the store by (``get`` each); one consistent view, with what other
        processes committed before the call. A memory forgotten afterwards makes its ``get`` raise
        ``KeyError``.
        """
        tenant = None if tenant is None else check_tenant(tenant)
        with self._lock:
            self._check_open()
            self._refresh()
            generation = self._generation
            if tenant is None:
                ids = list(generation.row_of)
            else:
                codes, names = generation.tenant_codes.buffer, generation.tenant_names
                ids = [i for i, row in generation.row_of.items() if names[int(codes[row])] == tenant]
            return np.sort(np.asarray(ids, dtype=np.int64))

    @property
    def revision(self) -> int:
        """A counter that moves whenever a memory of this store is added, updated or forgotten (by
        this store or, for a file store, by another process: applied before it answers).

        Equal values read at two times: nothing was added, updated or forgotten in between (recall
        bookkeeping does not count). What an adapter compares to know when a view it built from
        the memories is stale. Not comparable between two store objects.
        """
        with self._lock:
            self._refresh()
            return self._revision
