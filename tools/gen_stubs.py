"""Generate ``python/fieldrank/_core.pyi`` from the compiled ``fieldrank._core`` (pybind11-stubgen).

Usage::

    python tools/gen_stubs.py                # rewrite python/fieldrank/_core.pyi from the build
    python tools/gen_stubs.py --check        # exit 1 with a diff when the committed stub is stale
    python tools/gen_stubs.py --output DIR   # write DIR/_core.pyi instead

The stub is never edited by hand: names, argument names, defaults, array dtypes, shapes and
flags, return types and docstrings all come from the bindings (``cpp/bindings/``), so a change
there is a rebuild (``pip install -e ".[test]" --no-build-isolation``) and a rerun of this tool.
``tests/operators/test_stubs.py`` regenerates the stub and fails, naming this command, when the
committed file differs. Tooling only: nothing in the ``fieldrank`` package imports it.
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
import tempfile
from pathlib import Path

MODULE = "fieldrank._core"
REPOSITORY = Path(__file__).resolve().parents[1]
STUB = REPOSITORY / "python" / "fieldrank" / "_core.pyi"
COMMAND = "python tools/gen_stubs.py"
HEADER = (
    f"# Generated from the compiled {MODULE} by pybind11-stubgen ({COMMAND}): do not edit.\n"
    "# Change the bindings in cpp/bindings/, rebuild, and rerun the command.\n"
)


def generate() -> str:
    """The stub text of the ``fieldrank._core`` this interpreter imports."""
    with tempfile.TemporaryDirectory() as directory:
        # --exit-code: an annotation the generator cannot resolve fails here, not in a user's IDE.
        subprocess.run(
            [sys.executable, "-m", "pybind11_stubgen", MODULE, "--output-dir", directory, "--exit-code"],
            check=True, capture_output=True, text=True,
        )
        text = Path(directory, *MODULE.split(".")).with_suffix(".pyi").read_text(encoding="utf-8")
    return HEADER + text


def stale_diff(committed: Path = STUB) -> list[str]:
    """Unified diff from ``committed`` to the generated stub (empty: up to date)."""
    current = committed.read_text(encoding="utf-8") if committed.exists() else ""
    return list(difflib.unified_diff(current.splitlines(keepends=True), generate().splitlines(keepends=True),
                                     fromfile=str(committed), tofile="generated"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when the stub is stale")
    parser.add_argument("--output", type=Path, help="write OUTPUT/_core.pyi instead of the package's stub")
    args = parser.parse_args(argv)
    if args.check:
        diff = stale_diff()
        sys.stdout.writelines(diff)
        if diff:
            print(f"\n{STUB} is stale: run `{COMMAND}` and commit the result.")
        return 1 if diff else 0
    target = STUB if args.output is None else args.output / "_core.pyi"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(generate(), encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
