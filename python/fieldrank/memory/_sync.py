"""How far a store has caught up with its backend (:class:`SyncState`).

Several processes or store objects may share a backend. Every public call of a store first
applies what others committed: :meth:`SyncState.pending` says cheaply whether anything changed
(``data_version``, no row read when nothing did) and then reads, in one snapshot, the records
written after the last revision this store applied and, when another store purged (the purge
epoch moved), the ids the backend still holds. A store's own writes are applied as it makes
them, so their revisions are skipped when the scan meets them again.
"""

from __future__ import annotations

from typing import Optional

from ._persistence import Changes, StoreBackend

__all__ = ["SyncState"]


class SyncState:
    """The backend revision a store has applied, the revisions it wrote itself, the purge epoch it
    reconciled with and the ``data_version`` it last saw (every method: caller holds the store's lock)."""

    def __init__(self) -> None:
        self.revision = 0
        self.own_revisions: set[int] = set()
        self.data_version = -1
        self.purge_epoch = 0

    def load(self, backend: StoreBackend) -> Changes:
        """Everything the backend holds, in one snapshot (a store being opened)."""
        self.data_version = backend.data_version()
        state = backend.changes(None, None)  # one snapshot: rows, links, revision and purge epoch agree
        self.revision, self.purge_epoch = state.revision, state.purge_epoch
        return state

    def pending(self, backend: StoreBackend) -> Optional[Changes]:
        """What others committed since the last look (None: nothing, read without a row)."""
        version = backend.data_version()
        if version == self.data_version:
            return None
        state = backend.changes(self.revision, self.purge_epoch)
        self.purge_epoch = state.purge_epoch
        self.data_version = version
        return state

    def unapplied(self, state: Changes) -> Optional[list]:
        """The records of ``state`` this store has not applied (None: the revision did not move)."""
        if state.revision <= self.revision:
            return None
        own = self.own_revisions
        return [row for row in state.rows if row[-1] not in own]

    def applied(self, state: Changes) -> None:
        self.revision = state.revision
        self.own_revisions = {r for r in self.own_revisions if r > state.revision}

    def wrote(self, revision: int) -> None:
        """A revision this store committed itself."""
        if revision == self.revision + 1:
            self.revision = revision  # nobody else wrote in between
        else:
            self.own_revisions.add(revision)
        self.look_again()

    def look_again(self) -> None:
        """Read the backend at the next call (another writer may have committed)."""
        self.data_version = -1

    def purged(self, epoch: Optional[int]) -> None:
        """This store purged, moving the epoch to ``epoch`` (None: nothing purged)."""
        if epoch is not None and epoch == self.purge_epoch + 1:
            self.purge_epoch = epoch  # else another store purged too: the next refresh reconciles
        self.look_again()
