"""``python -m fieldrank.evaluation locomo ...``: the same as ``fieldrank eval locomo ...``."""

from __future__ import annotations

from ._command import main

if __name__ == "__main__":
    raise SystemExit(main())
