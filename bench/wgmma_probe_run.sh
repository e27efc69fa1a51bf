#!/usr/bin/env bash
# One device call for the Hopper wgmma probe (bench/wgmma_probe.cu,
# docs/HOPPER_WGMMA.md): build it for
# sm_90a (ptxas -v: registers and spills per kernel), count HGMMA / HMMA /
# local-memory instructions per kernel in the SASS where cuobjdump exists,
# the host-only emulation (the image read through our reading of the
# descriptor rules), `check` (every mode and N against a host reference; the
# negative control must fail), `time` (TFLOP/s per mode and N beside
# mma.sync on the same data, same call), then `check` under compute-sanitizer
# memcheck and racecheck in parallel: they may not model wgmma's async proxy,
# so their reports are recorded, not judged. Files back in OUTDIR:
# summary.txt, build.log, sass.txt, emulate.log, check.log, time.log,
# memcheck.log, racecheck.log.
#
#   [PROBE_SANITIZERS=0] bench/wgmma_probe_run.sh OUTDIR
# Typically about a minute; every phase at its timeout would be ~5.5 min.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/wgmma_probe_run.sh
P=/tmp/wgmma_probe
NVCC="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
rm -f $P

# ---- build (the -gencode form: nvcc 13.0's -arch=sm_90a also ran a plain sm_90 pass that rejects wgmma) ----
"$NVCC" -std=c++17 -gencode=arch=compute_90a,code=sm_90a -lineinfo -Xcompiler -Wall,-Wextra -Xptxas -v \
  bench/wgmma_probe.cu -o $P > "$OUT/build.log" 2>&1
note "build: exit $?, $(grep -ciE 'warning' "$OUT/build.log") warning lines," \
  "registers max $(grep -oE 'Used [0-9]+ registers' "$OUT/build.log" | awk '{print $2}' | sort -n | tail -1)," \
  "kernels with spills: $(grep -cE '[1-9][0-9]* bytes spill (stores|loads)' "$OUT/build.log")"
[ -x $P ] || { note "no binary: stop"; exit 1; }

# ---- SASS: does each wgmma kernel hold HGMMA (and no LDL/STL)? ----
CUOBJDUMP="$(dirname "$NVCC")/cuobjdump"
if [ -x "$CUOBJDUMP" ]; then
  "$CUOBJDUMP" -sass $P 2> /dev/null | awk '
    function flush() { if (f != "") printf "%-110s HGMMA %3d  HMMA %4d  LDL/STL %d\n", f, g, h, l }
    /Function :/ { flush(); f = $3; g = h = l = 0 }
    /HGMMA/ { g++ }  /HMMA/ { h++ }  /LDL|STL/ { l++ }
    END { flush() }' > "$OUT/sass.txt"
  note "sass: $(grep -c . "$OUT/sass.txt") kernels, $(awk '$0 ~ /HGMMA +[1-9]/' "$OUT/sass.txt" | wc -l) with HGMMA," \
    "$(awk '$0 ~ /LDL\/STL [1-9]/' "$OUT/sass.txt" | wc -l) with local memory"
else
  echo "no cuobjdump beside $NVCC" > "$OUT/sass.txt"
  note "sass: no cuobjdump"
fi

# ---- emulate (host), check, time ----
timeout 60 $P emulate > "$OUT/emulate.log" 2>&1
note "emulate: exit $?, $(tail -1 "$OUT/emulate.log")"
timeout 60 $P check > "$OUT/check.log" 2>&1
CHECK_RC=$?
note "check: exit $CHECK_RC, $(grep -E '^check:' "$OUT/check.log")"
grep -E 'FAIL|mismatch' "$OUT/check.log" | head -40 | sed 's/^/    /' >> "$OUT/summary.txt"
[ $CHECK_RC -eq 0 ] || tail -3 "$OUT/check.log" | sed 's/^/    /' >> "$OUT/summary.txt"
timeout 120 $P time > "$OUT/time.log" 2>&1
TIME_RC=$?
note "time: exit $TIME_RC"
grep -E 'TFLOP/s|ratio' "$OUT/time.log" | sed 's/^/    /' >> "$OUT/summary.txt"
[ $TIME_RC -eq 0 ] || tail -3 "$OUT/time.log" | sed 's/^/    /' >> "$OUT/summary.txt"

# ---- sanitizers on check, in parallel (host-bound instrumentation) ----
# PROBE_SANITIZERS=0 skips them (for a tighter time budget).
if [ "${PROBE_SANITIZERS:-1}" = 0 ]; then
  note "sanitizers: skipped (PROBE_SANITIZERS=0)"
  note "done"
  exit $CHECK_RC
fi
SANITIZER="$(command -v compute-sanitizer || echo "$(dirname "$NVCC")/compute-sanitizer")"
sanitize() {  # tool
  timeout 120 "$SANITIZER" --tool "$1" --error-exitcode 99 $P check > "$OUT/$1.log" 2>&1
  echo $? > "/tmp/wgmma_probe_$1.rc"
}
sanitize memcheck &
sanitize racecheck &
wait
for tool in memcheck racecheck; do
  note "$tool: exit $(cat "/tmp/wgmma_probe_$tool.rc"), $(grep -E '^check:' "$OUT/$tool.log")" \
    "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)"
  grep -m1 -A4 -E '^========= (Invalid|Program hit|Error|Race|Warning)' "$OUT/$tool.log" | sed 's/^/    /' >> "$OUT/summary.txt"
done
note "done"
exit $CHECK_RC
