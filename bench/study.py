#!/usr/bin/python3
"""The fused-MLP boundary study (issue 5, docs/FUSED_MLP_STUDY.md): sweep driver and plots.

  study.py run  --out DIR [--chunk N --n-chunks K] [--budget-s S] [grid options] [--variants A,B]
  study.py plot --csv FILE --out DIR [--depth D] [--peak-tflops X --peak-gbps Y]
  study.py report --csv FILE [--depth D]      (markdown tables, as in the study document)

`run` calls `fusedngp bench mlp` (or bench/torch_mlp.py) once per (depth, width)
group with the kernels, passes and batches not measured yet (one call per group,
since each call fills its input buffers for the largest batch, seconds at 2^22),
and appends the new rows to DIR/study.csv (the schema of
`fusedngp bench mlp --csv`). Rows already in the CSV are skipped, so a chunk that
was cut off is simply run again. The grid is split into K chunks (round-robin
over the groups, largest first, so chunks cost about the same); --chunk N runs
chunk N only. --budget-s stops starting new groups once that many seconds have
passed, so one call stays under a device's time limit. When torch is importable
(and torch kernels are asked for) bench/torch_mlp.py measures the same grid.
Each call rewrites DIR/summary.json from the whole CSV.

--variants adds runs of the fused kernel under resource restrictions that
emulate a smaller GPU (RESTRICTIONS below: shared memory per SM/block capped,
or one resident block per SM); their rows carry the restriction's name in the
`variant` column and are compared with the same unrestricted unfused kernels.

`plot` writes PNGs (matplotlib, Agg backend) from such a CSV: the speedup of
fused over the best unfused kernel as a width x batch heatmap (one file per
pass, one panel per depth), a roofline per point, throughput against batch
for each width, per-call latency at small batches (<= 4096) and the speedup
of each restricted variant against width.

Runs with Debian's python3 + python3-numpy + python3-matplotlib.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ["kernel", "variant", "pass", "width", "depth", "n_in", "n_out", "batch", "flop_per_sample", "warmup",
           "iters", "ms", "samples_per_s", "tflops", "registers", "smem_per_block", "blocks_per_sm", "occupancy",
           "waves", "rows_per_tile", "gpu", "sm_count", "sm_clock_mhz", "mem_clock_mhz", "driver", "commit", "io"]
NATIVE_KERNELS = ("fused", "cublas", "cpu")
TORCH_KERNELS = ("torch_eager", "torch_graph")
UNFUSED_KERNELS = ("cublas",) + TORCH_KERNELS
# Widths the fused kernel supports; others are not asked for (bench mlp would skip them anyway).
FUSED_MAX_WIDTH = 256
CSV_NAME = "study.csv"
SUMMARY_NAME = "summary.json"
SMALL_BATCH_MAX = 4096  # the small-batch (latency) regime: batch <= this
HEATMAP_MIN_BATCH = 1024
# One colour per kernel in every plot.
KERNEL_COLORS = {"fused": "tab:orange", "cublas": "tab:blue", "torch_eager": "tab:green", "torch_graph": "tab:red",
                 "cpu": "tab:gray"}

# Resource restrictions of the fused kernel: name -> (bench mlp flags, what it emulates).
RESTRICTIONS = {
    "rtx3090_smem": (["--fused-smem-per-sm", "100", "--fused-smem-per-block", "99"],
                     "shared memory of an RTX 3090 (GA102): 100 KB per SM, 99 KB per block"),
    "a100_smem": (["--fused-smem-per-sm", "164", "--fused-smem-per-block", "163"],
                  "shared memory of an A100: 164 KB per SM, 163 KB per block"),
    "one_block_per_sm": (["--fused-blocks-per-sm", "1"],
                         "one resident block (8 warps) per SM, as if registers or warp slots allowed no more"),
}


# ---------------------------------------------------------------- the grid

def int_list(text):
    return [int(x) for x in text.split(",") if x]


def batch_list(text):
    return [1 << int(b[2:]) if b.startswith("2^") else int(b) for b in text.split(",") if b]


def case_key(kernel, variant, pass_name, width, depth, batch):
    return (kernel, variant or "", pass_name, int(width), int(depth), int(batch))


def row_key(r):
    return case_key(r["kernel"], r.get("variant", ""), r["pass"], r["width"], r["depth"], r["batch"])


def planned_groups(args):
    """[(depth, width, tool, [case keys])] of the whole grid, in a stable order; tool is
    "native" (fusedngp bench mlp), "torch" (bench/torch_mlp.py) or "variant:NAME"
    (fusedngp bench mlp, fused kernel under the restriction NAME)."""
    groups = []
    for depth in args.depths:
        for width in args.widths:
            for tool in ("native", "torch"):
                cases = [case_key(k, "", q, width, depth, b) for k in args.kernels
                         if (k in TORCH_KERNELS) == (tool == "torch")
                         if not (k == "fused" and width > FUSED_MAX_WIDTH) for q in args.passes for b in args.batches]
                if cases:
                    groups.append((depth, width, tool, cases))
            if width > FUSED_MAX_WIDTH:
                continue
            for variant in args.variants:
                cases = [case_key("fused", variant, q, width, depth, b) for q in args.passes for b in args.batches]
                groups.append((depth, width, "variant:" + variant, cases))
    return groups


def group_cost(group):
    """Relative cost of a group: FLOP of all its calls (enough to balance chunks)."""
    depth, width, _, cases = group
    macs = 32 * width + (depth - 1) * width * width + width * 16
    return macs * sum(c[5] * (3 if c[2] == "train" else 1) for c in cases)


def chunk_of(groups, chunk, n_chunks):
    """Round-robin over the groups sorted by cost: chunks of similar cost."""
    ordered = sorted(groups, key=group_cost, reverse=True)
    return [g for i, g in enumerate(ordered) if i % n_chunks == chunk]


# ---------------------------------------------------------------- the CSV

def read_rows(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def done_keys(rows):
    return {row_key(r) for r in rows if r["ms"]}


def ensure_schema(path):
    """Rewrites a CSV written with an older column set (e.g. before `variant` and
    the resource columns) with today's COLUMNS; the new columns stay empty."""
    if not os.path.exists(path):
        return
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames == COLUMNS:
            return
        rows = list(reader)
    with open(path + ".tmp", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows({c: r.get(c) or "" for c in COLUMNS} for r in rows)
    os.replace(path + ".tmp", path)
    print(f"study: {path}: rewrote {len(rows)} rows with the current columns", flush=True)


def append_rows(path, rows):
    new_file = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        if new_file:
            writer.writeheader()
        writer.writerows(rows)


# ---------------------------------------------------------------- running

def ordered_union(values):
    return list(dict.fromkeys(values))


def group_command(args, group, missing, csv_path):
    """One call covering every missing case (and possibly a few done ones: filtered out later)."""
    depth, width, tool, _ = group
    common = ["--widths", str(width), "--depths", str(depth),
              "--kernels", ",".join(ordered_union(c[0] for c in missing)),
              "--passes", ",".join(ordered_union(c[2] for c in missing)),
              "--batches", ",".join(map(str, sorted({c[5] for c in missing}))),
              "--warmup", str(args.warmup), "--iters", str(args.iters), "--csv", csv_path]
    if tool == "torch":
        return [args.torch_python, os.path.join(ROOT, "bench", "torch_mlp.py")] + common
    if tool.startswith("variant:"):
        variant = tool.split(":", 1)[1]
        return [args.fusedngp, "bench", "mlp"] + common + RESTRICTIONS[variant][0] + ["--variant", variant]
    return [args.fusedngp, "bench", "mlp"] + common


def run_group(args, group, missing):
    """Runs one group into a scratch CSV and returns its rows; a failing tool stops the study."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "rows.csv")
        cmd = group_command(args, group, missing, out)
        print("study:", " ".join(cmd), flush=True)
        result = subprocess.run(cmd, stdout=subprocess.DEVNULL if args.quiet else None)
        if result.returncode != 0:
            raise SystemExit(f"study: command failed with exit status {result.returncode}: {' '.join(cmd)}")
        return read_rows(out)


def torch_importable(python):
    probe = subprocess.run([python, "-c", "import torch"], capture_output=True)
    return probe.returncode == 0


def runnable_groups(args):
    groups = planned_groups(args)
    if any(g[2] == "torch" for g in groups) and not torch_importable(args.torch_python):
        print(f"study: torch is not importable by {args.torch_python}; skipping the torch kernels", file=sys.stderr)
        groups = [g for g in groups if g[2] != "torch"]
    if args.chunk is not None:
        chunk = {g[:3] for g in chunk_of(groups, args.chunk, args.n_chunks)}
        groups = [g for g in groups if g[:3] in chunk]
    # Native kernels first, torch after (as the issue asks: bench mlp, then torch_mlp.py).
    return [g for g in groups if g[2] != "torch"] + [g for g in groups if g[2] == "torch"]


def command_run(args):
    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, CSV_NAME)
    ensure_schema(csv_path)
    start = time.monotonic()
    ran = skipped = 0
    for group in runnable_groups(args):
        done = done_keys(read_rows(csv_path))
        missing = [c for c in group[3] if c not in done]
        if not missing:
            skipped += 1
            continue
        if args.budget_s and time.monotonic() - start > args.budget_s:
            print(f"study: time budget of {args.budget_s} s spent; run again to resume", flush=True)
            break
        if args.dry_run:
            # What would run, one command per group; nothing is measured or written.
            print("study: would run:", " ".join(group_command(args, group, missing, "GROUP.csv")), flush=True)
            ran += 1
            continue
        wanted = set(missing)
        new_rows = run_group(args, group, missing)
        append_rows(csv_path, [r for r in new_rows if row_key(r) in wanted])
        ran += 1
    if args.dry_run:
        print(f"study: dry run: {ran} groups to run, {skipped} already done")
        return 0
    summary = write_summary(args.out, read_rows(csv_path))
    print(f"study: {ran} groups run, {skipped} already done, {summary['n_rows']} rows in {csv_path} "
          f"({time.monotonic() - start:.1f} s)")
    return 0


# ---------------------------------------------------------------- analysis

def measured(rows):
    """Rows with a time, numeric columns as numbers."""
    out = []
    for r in rows:
        if not r.get("ms"):
            continue
        row = dict(r)
        row["variant"] = r.get("variant") or ""
        for c in ("width", "depth", "batch", "n_in", "n_out"):
            row[c] = int(r[c])
        for c in ("registers", "smem_per_block", "blocks_per_sm", "occupancy", "waves", "rows_per_tile"):
            row[c] = float(r[c]) if r.get(c) else None
        row["ms"] = float(r["ms"])
        row["flop_per_sample"] = float(r["flop_per_sample"])
        # Derived from ms, not read, so hand-edited or merged rows stay consistent.
        row["samples_per_s"] = row["batch"] / (row["ms"] * 1e-3)
        row["tflops"] = row["samples_per_s"] * row["flop_per_sample"] / 1e12
        out.append(row)
    return out


def speedups(rows, variant=""):
    """{(pass, depth, width, batch): (best unfused time / fused time, best unfused kernel)}; the fused
    time is that of the given restriction variant ("" = unrestricted), the unfused ones are unrestricted."""
    cases = {}
    for r in rows:
        if r["kernel"] == "fused" and r["variant"] != variant:
            continue
        if r["kernel"] != "fused" and r["variant"]:
            continue
        cases.setdefault((r["pass"], r["depth"], r["width"], r["batch"]), {})[r["kernel"]] = r["ms"]
    result = {}
    for key, times in cases.items():
        unfused = {k: t for k, t in times.items() if k in UNFUSED_KERNELS}
        if "fused" in times and unfused:
            best = min(unfused, key=unfused.get)
            result[key] = (unfused[best] / times["fused"], best)
    return result


def speedup_list(table):
    return [{"pass": p, "depth": d, "width": w, "batch": b, "speedup": round(s, 4), "best_unfused": k}
            for (p, d, w, b), (s, k) in sorted(table.items())]


def fused_resources(rows):
    """Resource use of each fused kernel configuration (pass, depth, width, variant) at its largest
    measured batch: registers, shared memory, resident blocks and occupancy of the kernel that batch
    runs (training switches from the block-tile to the warp kernel from 2^17-2^18 rows, so they may
    differ at small batches); waves are listed per batch."""
    configs = {}
    for r in rows:
        if r["kernel"] != "fused" or r["registers"] is None:
            continue
        key = (r["pass"], r["depth"], r["width"], r["variant"])
        entry = configs.setdefault(key, {
            "pass": r["pass"], "depth": r["depth"], "width": r["width"], "variant": r["variant"],
            "waves_by_batch": {}, "batch": -1})
        if r["batch"] > entry["batch"]:
            entry.update({"batch": r["batch"], "registers": int(r["registers"]),
                          "smem_per_block": int(r["smem_per_block"]), "blocks_per_sm": int(r["blocks_per_sm"]),
                          "occupancy": r["occupancy"], "rows_per_tile": int(r["rows_per_tile"])})
        entry["waves_by_batch"][str(r["batch"])] = r["waves"]
    for entry in configs.values():
        del entry["batch"]
    return [configs[k] for k in sorted(configs)]


def small_batch_latency(rows):
    """Per-call time in microseconds at batches <= SMALL_BATCH_MAX: fused and the best unfused kernel."""
    cases = {}
    for r in rows:
        if r["batch"] > SMALL_BATCH_MAX or r["variant"]:
            continue
        cases.setdefault((r["pass"], r["depth"], r["width"], r["batch"]), {})[r["kernel"]] = r["ms"] * 1e3
    out = []
    for (p, d, w, b), times in sorted(cases.items()):
        unfused = {k: t for k, t in times.items() if k in UNFUSED_KERNELS}
        entry = {"pass": p, "depth": d, "width": w, "batch": b,
                 "us": {k: round(t, 2) for k, t in sorted(times.items())}}
        if unfused:
            best = min(unfused, key=unfused.get)
            entry["best_unfused"] = best
            if "fused" in times:
                entry["speedup"] = round(unfused[best] / times["fused"], 4)
        out.append(entry)
    return out


def fusion_boundary(speedup_table):
    """Per (pass, depth, batch): the largest width at which fused is faster than every unfused kernel."""
    boundary = {}
    for (pass_name, depth, width, batch), (speedup, _) in speedup_table.items():
        key = f"{pass_name} depth={depth} batch={batch}"
        if speedup > 1.0:
            boundary[key] = max(boundary.get(key, 0), width)
        else:
            boundary.setdefault(key, 0)
    return dict(sorted(boundary.items()))


def machine_of(rows):
    """The device columns of each kernel's first row."""
    machines = {}
    for r in rows:
        machines.setdefault(r["kernel"], {c: r[c] for c in ("gpu", "sm_count", "sm_clock_mhz", "mem_clock_mhz",
                                                           "driver", "commit")})
    return machines


def write_summary(out_dir, raw_rows):
    rows = measured(raw_rows)
    table = speedups(rows)
    counts = {}
    for r in rows:
        name = r["kernel"] + (":" + r["variant"] if r["variant"] else "")
        counts[name] = counts.get(name, 0) + 1
    summary = {
        "n_rows": len(rows),
        "rows_per_kernel": counts,
        "machines": machine_of(rows),
        "fused_speedup_over_best_unfused": speedup_list(table),
        "largest_width_where_fused_wins": fusion_boundary(table),
        "fused_resources": fused_resources(rows),
        "small_batch_latency_us": small_batch_latency(rows),
        "restricted": {},
    }
    for variant in sorted({r["variant"] for r in rows if r["variant"]}):
        vt = speedups(rows, variant)
        summary["restricted"][variant] = {
            "emulates": RESTRICTIONS[variant][1] if variant in RESTRICTIONS else variant,
            "fused_speedup_over_best_unfused": speedup_list(vt),
            "largest_width_where_fused_wins": fusion_boundary(vt),
        }
    with open(os.path.join(out_dir, SUMMARY_NAME), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    return summary


# ---------------------------------------------------------------- plots

def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def matplotlib_colors():
    import matplotlib.colors
    return matplotlib.colors


def bytes_per_sample(row):
    """DRAM bytes per sample under a minimal-traffic model (documented in FUSED_MLP_STUDY.md).

    Every kernel reads its fp32 input and writes (inference) or reads back a
    target (train) of fp32 outputs. Unfused kernels also write each hidden
    activation to memory in fp16 and read it back (twice more in training:
    the backward pass re-reads the activation and writes/reads its gradient).
    Fused kernels keep activations on chip. Weights are negligible per sample.
    """
    io = 4 * (row["n_in"] + row["n_out"])
    if row["kernel"] == "fused":
        return io
    hidden = 2 * row["width"] * row["depth"]
    return io + hidden * (2 if row["pass"] == "inference" else 6)


def plot_heatmaps(plt, rows, out_dir, depths):
    """One figure per pass, one panel per depth: width x batch (batches >= HEATMAP_MIN_BATCH when any)."""
    table = speedups(rows)
    paths = []
    for pass_name in ("train", "inference"):
        panels = []
        for depth in depths:
            cells = {(w, b): s for (p, d, w, b), (s, _) in table.items() if p == pass_name and d == depth}
            large = {k: v for k, v in cells.items() if k[1] >= HEATMAP_MIN_BATCH}
            if large or cells:
                panels.append((depth, large or cells))
        if not panels:
            continue
        values = [v for _, cells in panels for v in cells.values()]
        # Centred on 1 (no gain): red where fusion loses, green where it wins.
        norm = matplotlib_colors().TwoSlopeNorm(vmin=min(0.5, min(values)), vcenter=1.0, vmax=max(2.0, max(values)))
        n_batches = max(len({b for _, b in cells}) for _, cells in panels)
        n_widths = max(len({w for w, _ in cells}) for _, cells in panels)
        cols = min(2, len(panels))
        n_rows = (len(panels) + cols - 1) // cols
        fig, axes = plt.subplots(n_rows, cols, figsize=(1.5 + (1.0 + 0.55 * n_batches) * cols,
                                                        (1.8 + 0.45 * n_widths) * n_rows), squeeze=False,
                                 layout="constrained")
        for ax in list(axes.flat)[len(panels):]:
            ax.set_visible(False)
        for ax, (depth, cells) in zip(axes.flat, panels):
            widths = sorted({w for w, _ in cells})
            batches = sorted({b for _, b in cells})
            grid = [[cells.get((w, b), float("nan")) for b in batches] for w in widths]
            image = ax.imshow(grid, cmap="RdYlGn", norm=norm, origin="lower", aspect="auto")
            for i, row in enumerate(grid):
                for j, value in enumerate(row):
                    if value == value:  # not NaN
                        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6)
            ax.set_xticks(range(len(batches)), [batch_label(b) for b in batches], rotation=60, fontsize=7)
            ax.set_yticks(range(len(widths)), [str(w) for w in widths], fontsize=7)
            ax.set_xlabel("batch")
            ax.set_ylabel("width")
            ax.set_title(f"depth {depth}", fontsize=9)
        fig.colorbar(image, ax=list(axes.flat)[:len(panels)], label="speedup (x)")
        fig.suptitle(f"{pass_name}: fused speedup over the best unfused kernel", fontsize=10)
        paths.append(save(plt, fig, out_dir, f"speedup_heatmap_{pass_name}.png", tight=False))
    return paths


def plot_small_batch(plt, rows, out_dir, depth):
    """Per-call time against batch (<= SMALL_BATCH_MAX), one panel per pass x width."""
    points = [r for r in rows if r["batch"] <= SMALL_BATCH_MAX and r["depth"] == depth and not r["variant"]]
    batches = {r["batch"] for r in points}
    if len(batches) < 2:
        return []
    passes = [p for p in ("inference", "train") if any(r["pass"] == p for r in points)]
    widths = sorted({r["width"] for r in points})
    fig, axes = plt.subplots(len(passes), len(widths), figsize=(2.6 * len(widths), 2.4 * len(passes)),
                             squeeze=False, sharey="row")
    for i, pass_name in enumerate(passes):
        for j, width in enumerate(widths):
            ax = axes[i][j]
            for kernel in sorted({r["kernel"] for r in points}):
                line = sorted((r["batch"], r["ms"] * 1e3) for r in points
                              if r["pass"] == pass_name and r["width"] == width and r["kernel"] == kernel)
                if line:
                    ax.plot([b for b, _ in line], [t for _, t in line], marker="o", markersize=3, label=kernel,
                            color=KERNEL_COLORS.get(kernel))
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{pass_name}, W = {width}", fontsize=8)
            ax.set_xlabel("batch", fontsize=7)
            if j == 0:
                ax.set_ylabel("us per call", fontsize=7)
            ax.tick_params(labelsize=6)
    handles = {}
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    axes[0][0].legend(handles.values(), handles.keys(), fontsize=6)
    fig.suptitle(f"small batches: time per call (depth {depth})", fontsize=10)
    return [save(plt, fig, out_dir, "latency_small_batch.png")]


def plot_restrictions(plt, rows, out_dir, depth):
    """Fused speedup against width, unrestricted and per restriction variant, for the batches measured
    with variants (at most three), one panel per pass x batch."""
    variants = sorted({r["variant"] for r in rows if r["variant"]})
    if not variants:
        return []
    vrows = [r for r in rows if r["variant"] and r["depth"] == depth]
    batches = sorted({r["batch"] for r in vrows})[-3:]
    passes = [p for p in ("train", "inference") if any(r["pass"] == p for r in vrows)]
    if not batches or not passes:
        return []
    tables = {v: speedups(rows, v) for v in [""] + variants}
    fig, axes = plt.subplots(len(passes), len(batches), figsize=(3.6 * len(batches), 2.8 * len(passes)),
                             squeeze=False, sharey=True)
    for i, pass_name in enumerate(passes):
        for j, batch in enumerate(batches):
            ax = axes[i][j]
            for v in [""] + variants:
                line = sorted((w, s) for (p, d, w, b), (s, _) in tables[v].items()
                              if p == pass_name and d == depth and b == batch)
                if line:
                    ax.plot([w for w, _ in line], [s for _, s in line], marker="o", markersize=3,
                            label=v or "H200 (no restriction)")
            ax.axhline(1.0, color="black", linewidth=0.8)
            ax.set_xscale("log", base=2)
            ax.set_title(f"{pass_name}, batch {batch_label(batch)}", fontsize=8)
            ax.set_xlabel("width", fontsize=7)
            ax.set_ylabel("fused speedup (x)", fontsize=7)
            ax.tick_params(labelsize=6)
    axes[0][0].legend(fontsize=6)
    fig.suptitle(f"fused speedup under emulated resource limits (depth {depth})", fontsize=10)
    return [save(plt, fig, out_dir, "restrictions.png")]


def batch_label(batch):
    return f"2^{batch.bit_length() - 1}" if batch & (batch - 1) == 0 else str(batch)


def ceilings(rows, args):
    """(peak TFLOP/s, peak GB/s): CSV columns peak_tflops / peak_gbps when present, else the flags."""
    def column(name):
        values = [float(r[name]) for r in rows if r.get(name)]
        return max(values) if values else None
    return column("peak_tflops") or args.peak_tflops, column("peak_gbps") or args.peak_gbps


def plot_roofline(plt, rows, out_dir, args):
    fig, ax = plt.subplots(figsize=(7, 5))
    for kernel in sorted({r["kernel"] for r in rows}):
        for pass_name, marker in (("train", "o"), ("inference", "^")):
            points = [r for r in rows if r["kernel"] == kernel and r["pass"] == pass_name]
            if points:
                intensity = [r["flop_per_sample"] / bytes_per_sample(r) for r in points]
                ax.scatter(intensity, [r["tflops"] for r in points], s=12, marker=marker,
                           label=f"{kernel} {pass_name}")
    peak_tflops, peak_gbps = ceilings(rows, args)
    best = max(r["tflops"] for r in rows)
    ax.axhline(peak_tflops or best, color="black", linestyle="--", linewidth=1,
               label=f"compute ceiling {peak_tflops} TFLOP/s" if peak_tflops else f"best measured {best:.3g} TFLOP/s")
    if peak_gbps:
        xs = [10 ** (k / 10) for k in range(-10, 50)]
        ax.plot(xs, [min(x * peak_gbps / 1e3, peak_tflops or float("inf")) for x in xs], color="gray",
                linewidth=1, label=f"memory ceiling {peak_gbps} GB/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / DRAM byte, minimal-traffic model)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title("roofline: every measured point")
    ax.legend(fontsize=7)
    return [save(plt, fig, out_dir, "roofline.png")]


def plot_throughput(plt, rows, out_dir, depth):
    paths = []
    for pass_name in ("train", "inference"):
        points = [r for r in rows if r["pass"] == pass_name and r["depth"] == depth]
        widths = sorted({r["width"] for r in points})
        if not widths:
            continue
        cols = min(3, len(widths))
        n_rows = (len(widths) + cols - 1) // cols
        fig, axes = plt.subplots(n_rows, cols, figsize=(4 * cols, 3 * n_rows), squeeze=False)
        for ax, width in zip(axes.flat, widths):
            for kernel in sorted({r["kernel"] for r in points if r["width"] == width}):
                line = sorted((r["batch"], r["samples_per_s"]) for r in points
                              if r["width"] == width and r["kernel"] == kernel)
                ax.plot([b for b, _ in line], [s / 1e9 for _, s in line], marker="o", markersize=3, label=kernel,
                        color=KERNEL_COLORS.get(kernel))
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"W = {width}", fontsize=9)
            ax.set_xlabel("batch")
            ax.set_ylabel("G samples/s")
            ax.legend(fontsize=6)
        for ax in list(axes.flat)[len(widths):]:
            ax.set_visible(False)
        fig.suptitle(f"{pass_name} throughput against batch (depth {depth})")
        paths.append(save(plt, fig, out_dir, f"throughput_{pass_name}.png"))
    return paths


def save(plt, fig, out_dir, name, tight=True):
    path = os.path.join(out_dir, name)
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def command_plot(args):
    try:
        plt = pyplot()
    except ImportError as e:
        raise SystemExit(f"study.py plot needs matplotlib and numpy (Debian: python3-matplotlib "
                         f"python3-numpy): {e}")
    rows = measured(read_rows(args.csv))
    if not rows:
        raise SystemExit(f"study: {args.csv} has no measured rows")
    os.makedirs(args.out, exist_ok=True)
    depths = sorted({r["depth"] for r in rows})
    depth = args.depth if args.depth is not None else (2 if 2 in depths else depths[0])
    base = [r for r in rows if not r["variant"]]
    paths = plot_heatmaps(plt, rows, args.out, [args.depth] if args.depth is not None else depths)
    paths += plot_roofline(plt, base, args.out, args)
    paths += plot_throughput(plt, base, args.out, depth)
    paths += plot_small_batch(plt, rows, args.out, depth)
    paths += plot_restrictions(plt, rows, args.out, depth)
    for path in paths:
        print("study: wrote", path)
    return 0


# ---------------------------------------------------------------- report

def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def report_speedups(table, pass_name, depths, batches, widths):
    """Rows: depth x width, columns: batches; cells: fused speedup."""
    out = []
    for depth in depths:
        for width in widths:
            cells = [table.get((pass_name, depth, width, b)) for b in batches]
            if any(cells):
                out.append([depth, width] + [f"{c[0]:.2f}" if c else "-" for c in cells])
    return markdown_table(["depth", "W"] + [batch_label(b) for b in batches], out)


def report_boundary(table, depths, batches):
    """Largest width at which fused beats every unfused kernel, per pass x depth x batch."""
    out = []
    for pass_name in ("train", "inference"):
        for depth in depths:
            cells = []
            for b in batches:
                wins = [w for (p, d, w, bb), (s, _) in table.items() if p == pass_name and d == depth and bb == b and s > 1]
                measured_here = [w for (p, d, w, bb) in table if p == pass_name and d == depth and bb == b]
                cells.append(str(max(wins)) if wins else ("none" if measured_here else "-"))
            out.append([pass_name, depth] + cells)
    return markdown_table(["pass", "depth"] + [batch_label(b) for b in batches], out)


def report_resources(rows, depth):
    res = [e for e in fused_resources(rows) if e["depth"] == depth]
    out = []
    for e in sorted(res, key=lambda e: (e["variant"], e["pass"], e["width"])):
        waves = e["waves_by_batch"]
        big = max(waves, key=int) if waves else None
        out.append([e["variant"] or "(none)", e["pass"], e["width"], e["registers"], f"{e['smem_per_block'] / 1024:.1f}",
                    e["blocks_per_sm"], f"{e['occupancy']:.3f}", e["rows_per_tile"],
                    f"{waves[big]:.1f} @ {batch_label(int(big))}" if big else "-"])
    return markdown_table(["restriction", "pass", "W", "registers", "smem KB/block", "blocks/SM", "occupancy",
                           "rows/tile (largest batch)", "waves (largest batch)"], out)


def report_latency(rows, depth, batches):
    lat = [e for e in small_batch_latency(rows) if e["depth"] == depth and e["batch"] in batches]
    out = []
    for e in sorted(lat, key=lambda e: (e["pass"], e["width"], e["batch"])):
        us = e["us"]
        best = e.get("best_unfused")
        out.append([e["pass"], e["width"], e["batch"], us.get("fused", "-"), us.get("cublas", "-"),
                    us.get("torch_graph", "-"), us.get("torch_eager", "-"),
                    f"{e['speedup']:.2f} ({best})" if "speedup" in e else "-"])
    return markdown_table(["pass", "W", "batch", "fused us", "cublas us", "torch graph us", "torch eager us",
                           "speedup (best unfused)"], out)


def command_report(args):
    rows = measured(read_rows(args.csv))
    if not rows:
        raise SystemExit(f"study: {args.csv} has no measured rows")
    depths = sorted({r["depth"] for r in rows})
    widths = sorted({r["width"] for r in rows if r["kernel"] == "fused"})
    large = (sorted({r["batch"] for r in rows if r["batch"] >= HEATMAP_MIN_BATCH}) or
             sorted({r["batch"] for r in rows}))
    even = [b for b in large if (b.bit_length() - 1) % 2 == 0] or large
    table = speedups(rows)
    depth = args.depth if args.depth is not None else (2 if 2 in depths else depths[0])
    print("## Largest width at which fused wins\n")
    print(report_boundary(table, depths, even) + "\n")
    for pass_name in ("train", "inference"):
        print(f"## Fused speedup, {pass_name}\n")
        print(report_speedups(table, pass_name, depths, even, widths) + "\n")
    for variant in sorted({r["variant"] for r in rows if r["variant"]}):
        vt = speedups(rows, variant)
        vb = sorted({r["batch"] for r in rows if r["variant"] == variant})
        vd = sorted({r["depth"] for r in rows if r["variant"] == variant})
        print(f"## Restricted: {variant} ({RESTRICTIONS.get(variant, ('', variant))[1]})\n")
        for pass_name in ("train", "inference"):
            print(f"{pass_name}:\n\n" + report_speedups(vt, pass_name, vd, vb, widths) + "\n")
    print(f"## Fused kernel resources (depth {depth})\n")
    print(report_resources(rows, depth) + "\n")
    small = sorted({r["batch"] for r in rows if r["batch"] <= SMALL_BATCH_MAX})
    print(f"## Small batches: time per call (depth {depth})\n")
    print(report_latency(rows, depth, small) + "\n")
    return 0


# ---------------------------------------------------------------- command line

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run (a chunk of) the sweep, appending to DIR/study.csv")
    run.add_argument("--out", required=True, help="output directory (study.csv, summary.json)")
    run.add_argument("--chunk", type=int, default=None, help="run only chunk N (0-based) of --n-chunks")
    run.add_argument("--n-chunks", type=int, default=4)
    run.add_argument("--budget-s", type=float, default=0, help="start no new group after this many seconds")
    run.add_argument("--widths", type=int_list, default=[16, 32, 64, 128, 256, 512])
    run.add_argument("--depths", type=int_list, default=[1, 2, 4, 8])
    # 2^10 ... 2^22, plus the small-batch (latency) regime 1 ... 256.
    run.add_argument("--batches", type=batch_list, default=[1, 4, 16, 64, 256] + [1 << k for k in range(10, 23)])
    run.add_argument("--kernels", default="fused,cublas,torch_eager,torch_graph",
                     help="comma separated: fused, cublas, cpu, torch_eager, torch_graph")
    run.add_argument("--passes", default="inference,train")
    run.add_argument("--warmup", type=int, default=5)
    run.add_argument("--iters", type=int, default=20)
    run.add_argument("--fusedngp", default=os.path.join(ROOT, "build", "fusedngp"), help="the fusedngp binary")
    run.add_argument("--torch-python", default=sys.executable, help="python that runs bench/torch_mlp.py")
    run.add_argument("--quiet", action="store_true", help="hide the tools' tables")
    run.add_argument("--dry-run", action="store_true", help="print the commands of the missing groups, run nothing")
    run.add_argument("--variants", default="",
                     help="also run the fused kernel under these resource restrictions: " + ", ".join(RESTRICTIONS))
    plot = sub.add_parser("plot", help="PNG plots from a study CSV")
    plot.add_argument("--csv", required=True)
    plot.add_argument("--out", required=True)
    plot.add_argument("--depth", type=int, default=None, help="depth of the heatmaps and throughput plots")
    plot.add_argument("--peak-tflops", type=float, default=None, help="compute ceiling (else a CSV column)")
    plot.add_argument("--peak-gbps", type=float, default=None, help="memory ceiling (else a CSV column)")
    report = sub.add_parser("report", help="markdown tables from a study CSV (stdout)")
    report.add_argument("--csv", required=True)
    report.add_argument("--depth", type=int, default=None, help="depth of the resource and latency tables")
    args = p.parse_args(argv)
    if args.command == "run":
        args.kernels = [k for k in args.kernels.split(",") if k]
        args.passes = [q for q in args.passes.split(",") if q]
        args.variants = [v for v in args.variants.split(",") if v]
        for v in args.variants:
            if v not in RESTRICTIONS:
                p.error(f"--variants: unknown restriction {v} ({', '.join(RESTRICTIONS)})")
        for k in args.kernels:
            if k not in NATIVE_KERNELS + TORCH_KERNELS:
                p.error(f"--kernels: unknown kernel {k} ({', '.join(NATIVE_KERNELS + TORCH_KERNELS)})")
        if args.chunk is not None and not 0 <= args.chunk < args.n_chunks:
            p.error(f"--chunk must be in 0..{args.n_chunks - 1}")
    return args


def main(argv):
    args = parse_args(argv)
    return {"run": command_run, "plot": command_plot, "report": command_report}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
