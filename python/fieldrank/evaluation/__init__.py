"""Evaluation harness for fieldrank on LoCoMo (docs/spec.md §9).

Public submodules (pure numpy/scipy/stdlib; none needs the native core):

- :mod:`fieldrank.evaluation.locomo`: load and check the LoCoMo data
  (:func:`~fieldrank.evaluation.locomo.load_locomo`), splits and reporting subsets.
- :mod:`fieldrank.evaluation.metrics`: per-question NDCG@k, Recall@k and hit@k with
  binary relevance.
- :mod:`fieldrank.evaluation.stats`: seeded bootstrap intervals, paired bootstrap
  and McNemar's test.

Public tools (these use the native core and :mod:`fieldrank.hybrid`):

- :func:`evaluate` runs ``{name: RetrieverConfig | preset | callable}`` over a split, one
  batch per conversation, asserting equal k; fitting on tune only.
- :mod:`fieldrank.evaluation.calibrate`: ``fieldrank calibrate`` (re-fit ``default`` on a
  labelled tuning split).
- :mod:`fieldrank.evaluation.bench`: ``python -m fieldrank.evaluation.bench`` (asv imports it).

Private (the machinery behind ``fieldrank eval locomo`` and the memory suites; may change):
``_runner`` (where :func:`evaluate` lives), ``_report``, ``_plots``, ``_ring_experiment``,
``_command`` (``fieldrank eval locomo``, also ``python -m fieldrank.evaluation locomo``),
``_memory_scenarios``, ``_memory_suite``, ``_memory_cases``.
"""

from __future__ import annotations

import importlib
from typing import Any

from .._api import public_dir

__all__ = ["bench", "calibrate", "evaluate", "locomo", "metrics", "stats"]
#: Public functions defined in private submodules: name -> submodule.
_FUNCTIONS = {"evaluate": "_runner"}


def __getattr__(name: str) -> Any:
    # Submodules load on first use, so importing the package stays cheap.
    if name in _FUNCTIONS:
        return getattr(importlib.import_module(f"{__name__}.{_FUNCTIONS[name]}"), name)
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


__dir__ = public_dir(__all__)
