"""Generate ``docs/parameters.md`` from the operators' parameter tables (``fieldrank._param_tables``).

Usage::

    python tools/gen_param_docs.py           # rewrite docs/parameters.md
    python tools/gen_param_docs.py --check   # exit 1 with a diff when the committed file is stale

The page is never edited by hand: names, types, intervals, defaults and one-line docs all come
from the tables, which the validation, the config legs and (through a property test) the C++
kernel follow. ``tests/operators/test_param_docs.py`` fails, naming this command, when the
committed page differs. Tooling only: nothing in the ``fieldrank`` package imports it.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from fieldrank import _param_tables as tables

REPOSITORY = Path(__file__).resolve().parents[1]
PAGE = REPOSITORY / "docs" / "parameters.md"
COMMAND = "python tools/gen_param_docs.py"

#: Where each family's parameters are taken (the operators and, for the rerankers, the leg).
USED_BY = {
    "prefilter": "`prefilter`, `prefilter_batch`, `prefilter_pool`; `p` of the CFS-R, CFS and MMR corpus forms "
                 "and legs",
    "cfsr": "`cfsr`, `cfsr_batch`, `cfsr_pool`; `CFSRLeg` (`depth` plays `k`)",
    "cfs": "`cfs`, `cfs_batch`, `cfs_pool`; `CFSLeg` (`depth` plays `k`)",
    "mmr": "`mmr`, `mmr_batch`, `mmr_pool`; `MMRLeg` (`depth` plays `k`)",
    "ring": "`ring`, `ring_batch`, `ring_pool`; `RingLeg` (`depth` plays `k`)",
    "rrf": "`rrf`, `rrf_batch`; `RetrieverConfig.k`, `RetrieverConfig.k0`",
    "temporal": "`fieldrank.temporal.TemporalParams` (the `temporal` leg, `TemporalLeg.params`; the memory store's "
                "relevance core), `fieldrank.temporal.temporal`, `temporal_batch`",
}


def _default(value: object) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def render() -> str:
    lines = [
        f"<!-- Generated from fieldrank._param_tables by {COMMAND}: do not edit. -->",
        "# Operator parameters",
        "",
        "One table per operator family, and one per leg family with native parameters of its own",
        "(`temporal`), generated from `python/fieldrank/_param_tables.py`. The",
        "operators (`fieldrank`, `fieldrank.reference`), the configuration legs (`fieldrank.config`)",
        "and the C++ kernels accept exactly the values in these intervals (a property test draws",
        "values across every interval and its edges and checks all three). Counts are int64 in the",
        "kernels; a real parameter is cast to float32 there, so it must lie within float32's range",
        f"(float32 max = {tables.FLOAT32_MAX:g}), and a positive one must stay positive in float32",
        f"(at least float32's smallest subnormal, {tables.FLOAT32_TRUE_MIN:g}). Wrong types (a bool or",
        "`3.0` as an int, a bool or a string as a number) are `TypeError`; values outside the interval,",
        "NaN and infinities are `ValueError`. Defaults are `fieldrank.DEFAULTS`, the native table.",
    ]
    for family, table in {**tables.TABLES, **tables.LEG_TABLES}.items():
        lines += ["", f"## {family}", "", f"Used by {USED_BY[family]}.", "",
                  "| parameter | symbol | type | interval | default | meaning |", "|---|---|---|---|---|---|"]
        for spec in table:
            lines.append(f"| `{spec.name}` | {spec.symbol or ''} | {spec.interval.type} | {spec.interval.text()} | "
                         f"{_default(spec.default)} | {spec.doc} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail with a diff when docs/parameters.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.is_file() else ""
        if current != text:
            sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                                       str(PAGE), "generated"))
            print(f"\ndocs/parameters.md is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
