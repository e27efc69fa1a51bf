# Sourced by the device scripts in bench/ (bash): the common start.
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
# passed LOG: a gtest log's PASSED / FAILED count lines, on one line.
passed() { grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$1" | tr '\n' ' '; }
# build_only TARGETS TIMEOUT: scripts/gpu-check into $GC (set by the caller)
# building only the ninja TARGETS: no tests, sanitizers or benchmarks. Notes
# the exit and adds gpu-check's summary and any warning lines to summary.txt.
build_only() {
  NINJA_TARGETS="$1" TEST_FILTER_MLP=- TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- SANITIZE_TOOLS=none \
    SKIP_MLP_BENCH=1 SKIP_TRAIN=1 IMAGE_BENCH_DATA= timeout "${2:-150}" scripts/gpu-check "$GC" > /dev/null 2>&1
  note "gpu-check (build): exit $?"
  cat "$GC/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
  grep -E "warning" "$GC/build.log" | head -20 >> "$OUT/summary.txt"
}
