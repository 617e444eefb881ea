#!/usr/bin/env bash
# Keeps the asv suite from rotting: `asv check` validates every benchmark's signature, then a
# dry, quick run executes each one once (small sizes only) against the installed package.
# Offline: --python=same uses the current environment, nothing is built or downloaded.
# Usage: benchmarks/check_asv.sh        (from any directory; needs fieldrank and asv installed)
set -euo pipefail
cd "$(dirname "$0")"

# asv wants a machine description; keep it out of the caller's home directory.
ASV_HOME="$(mktemp -d)"
trap 'rm -rf "$ASV_HOME"' EXIT
export FIELDRANK_ASV_MAX_MB="${FIELDRANK_ASV_MAX_MB:-16}"  # 10k x 384 float32 and below
export FIELDRANK_ASV_STACK_QUESTIONS="${FIELDRANK_ASV_STACK_QUESTIONS:-100}"

HOME="$ASV_HOME" asv machine --yes --machine ci-check >/dev/null
HOME="$ASV_HOME" asv check --python=same
log="$ASV_HOME/run.log"
HOME="$ASV_HOME" asv run --python=same --quick --dry-run --show-stderr --machine ci-check 2>&1 | tee "$log"
# asv run exits 0 even when a benchmark fails; a failed benchmark prints "failed".
if grep -E "^\s*\[.*\].*failed|Traceback" "$log" >/dev/null; then
    echo "check_asv.sh: some benchmarks failed (see above)" >&2
    exit 1
fi
echo "check_asv.sh: ok"
