"""Evaluation harness for fieldrank on LoCoMo (SPEC §9).

Submodules (pure numpy/scipy/stdlib; none needs the native core):

- :mod:`fieldrank.evaluation.locomo`: load and check the LoCoMo data
  (:func:`~fieldrank.evaluation.locomo.load_locomo`), splits and reporting subsets.
- :mod:`fieldrank.evaluation.metrics`: per-question NDCG@k, Recall@k and hit@k with
  binary relevance.
- :mod:`fieldrank.evaluation.stats`: seeded bootstrap intervals, paired bootstrap
  and McNemar's test.

The harness (these use the native core and :mod:`fieldrank.hybrid`):

- :mod:`fieldrank.evaluation.runner`: :func:`~fieldrank.evaluation.runner.evaluate`
  runs ``{name: RetrieverConfig | preset | callable}`` over a split, one batch per
  conversation, asserting equal k; fitting on tune only.
- :mod:`fieldrank.evaluation.report`: intervals, paired tests, the generated Markdown.
- :mod:`fieldrank.evaluation.ring_experiment`: the pre-registered Ring experiment.
- :mod:`fieldrank.evaluation.plots`: the report figure.
- :mod:`fieldrank.evaluation.command`: ``fieldrank eval locomo`` (also
  ``python -m fieldrank.evaluation locomo``).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "command", "evaluate", "locomo", "metrics", "plots", "report", "ring_experiment", "runner", "stats",
]
_FUNCTIONS = {"evaluate": "runner"}


def __getattr__(name: str) -> Any:
    # Submodules load on first use, so importing the package stays cheap.
    if name in _FUNCTIONS:
        return getattr(importlib.import_module(f"{__name__}.{_FUNCTIONS[name]}"), name)
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return list(__all__)
