# GPU clock and power sampling beside a benchmark (sourced by scripts/gpu-check
# and scripts/gpu/mlp). A card that reaches its power limit lowers its clocks,
# and the kernels it slows are the tensor-core-dense ones, so a figure that
# differs between two cards of one kind is checked against this record first.
#
#   gpu_monitor_start FILE    samples every 200 ms into FILE (CSV) until stopped
#   gpu_monitor_stop FILE     stops it and prints one line: SM clock (min / median
#                             / max MHz), power (max W against the limit), and the
#                             clock event reasons seen (nvidia-smi's bit mask)

GPU_MONITOR_PID=""
gpu_monitor_start() {
  local file="$1" reasons=clocks_event_reasons.active
  # Older drivers name the field clocks_throttle_reasons.
  nvidia-smi --query-gpu=$reasons --format=csv,noheader > /dev/null 2>&1 || reasons=clocks_throttle_reasons.active
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,$reasons \
    --format=csv,nounits -lms 200 > "$file" 2> /dev/null &
  GPU_MONITOR_PID=$!
}

gpu_monitor_stop() {
  local file="$1"
  [ -n "$GPU_MONITOR_PID" ] && kill "$GPU_MONITOR_PID" 2> /dev/null && wait "$GPU_MONITOR_PID" 2> /dev/null
  GPU_MONITOR_PID=""
  python3 - "$file" <<'PY'
import csv, statistics, sys
try:
    rows = [r for r in csv.reader(open(sys.argv[1])) if r and not r[0].startswith("timestamp")]
    sm = [float(r[1]) for r in rows]
    power = [float(r[3]) for r in rows]
    limit = float(rows[-1][4])
    reasons = sorted({r[6].strip() for r in rows})
    print(f"{len(rows)} samples: SM clock {min(sm):.0f} / {statistics.median(sm):.0f} / {max(sm):.0f} MHz, "
          f"power up to {max(power):.0f} of {limit:.0f} W, clock event reasons {' '.join(reasons)}")
except Exception as e:
    print(f"no GPU monitor record ({e})")
PY
}
