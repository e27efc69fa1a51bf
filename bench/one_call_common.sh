# Sourced by the one-device-call scripts in bench/ (bash): the common start.
#   source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "$1" usage-name
# Sets OUT (absolute, created), ROOT (the tree, now the working directory),
# BUILD (build-gpu), T0 (start time) and note() (a timestamped line in the
# terminal and in $OUT/summary.txt).
OUT="${1:?usage: $2 OUTDIR}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
BUILD="$ROOT/build-gpu"
T0=$(date +%s)
note() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/summary.txt"; }
