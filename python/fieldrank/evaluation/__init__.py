"""Evaluation harness for fieldrank on LoCoMo (SPEC §9).

Submodules (pure numpy/scipy/stdlib; none needs the native core):

- :mod:`fieldrank.evaluation.locomo`: load and check the LoCoMo data
  (:func:`~fieldrank.evaluation.locomo.load_locomo`), splits and reporting subsets.
- :mod:`fieldrank.evaluation.metrics`: per-question NDCG@k, Recall@k and hit@k with
  binary relevance.
- :mod:`fieldrank.evaluation.stats`: seeded bootstrap intervals, paired bootstrap
  and McNemar's test.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["locomo", "metrics", "stats"]


def __getattr__(name: str) -> ModuleType:
    # Submodules load on first use, so importing the package stays cheap.
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return list(__all__)
