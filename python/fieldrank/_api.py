"""The one rule of every public module's namespace: ``dir(module)`` shows its ``__all__``.

A module's public API is its ``__all__`` (docs/design.md, "Package layout"); a module that
binds ``__dir__ = public_dir(__all__)`` also keeps helpers and imported names out of ``dir()``
(and so out of tab completion), without writing the same two-line function again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["public_dir"]


def public_dir(names: Sequence[str]) -> Callable[[], list[str]]:
    """A module-level ``__dir__`` (PEP 562) that lists ``names`` and nothing else."""

    def __dir__() -> list[str]:
        return list(names)

    return __dir__
