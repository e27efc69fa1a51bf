#!/usr/bin/python3
"""The fused-MLP boundary study (issue 5, docs/FUSED_MLP_STUDY.md): sweep driver and plots.

  study.py run  --out DIR [--chunk N --n-chunks K] [--budget-s S] [grid options]
  study.py plot --csv FILE --out DIR [--depth D] [--peak-tflops X --peak-gbps Y]

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

`plot` writes PNGs (matplotlib, Agg backend) from such a CSV: the speedup of
fused over the best unfused kernel as a width x batch heatmap (one file per
pass), a roofline per point, and throughput against batch for each width.

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
COLUMNS = ["kernel", "pass", "width", "depth", "n_in", "n_out", "batch", "flop_per_sample", "warmup", "iters",
           "ms", "samples_per_s", "tflops", "gpu", "sm_count", "sm_clock_mhz", "mem_clock_mhz", "driver", "commit"]
NATIVE_KERNELS = ("fused", "cublas", "cpu")
TORCH_KERNELS = ("torch_eager", "torch_graph")
UNFUSED_KERNELS = ("cublas",) + TORCH_KERNELS
# Widths the fused kernel supports; others are not asked for (bench mlp would skip them anyway).
FUSED_MAX_WIDTH = 256
CSV_NAME = "study.csv"
SUMMARY_NAME = "summary.json"


# ---------------------------------------------------------------- the grid

def int_list(text):
    return [int(x) for x in text.split(",") if x]


def batch_list(text):
    return [1 << int(b[2:]) if b.startswith("2^") else int(b) for b in text.split(",") if b]


def case_key(kernel, pass_name, width, depth, batch):
    return (kernel, pass_name, int(width), int(depth), int(batch))


def planned_groups(args):
    """[(depth, width, tool, [case keys])] of the whole grid, in a stable order; tool is
    "native" (fusedngp bench mlp) or "torch" (bench/torch_mlp.py)."""
    groups = []
    for depth in args.depths:
        for width in args.widths:
            for tool in ("native", "torch"):
                cases = [case_key(k, q, width, depth, b) for k in args.kernels if (k in TORCH_KERNELS) == (tool == "torch")
                         if not (k == "fused" and width > FUSED_MAX_WIDTH) for q in args.passes for b in args.batches]
                if cases:
                    groups.append((depth, width, tool, cases))
    return groups


def group_cost(group):
    """Relative cost of a group: FLOP of all its calls (enough to balance chunks)."""
    depth, width, _, cases = group
    macs = 32 * width + (depth - 1) * width * width + width * 16
    return macs * sum(c[4] * (3 if c[1] == "train" else 1) for c in cases)


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
    return {case_key(r["kernel"], r["pass"], r["width"], r["depth"], r["batch"]) for r in rows if r["ms"]}


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
              "--passes", ",".join(ordered_union(c[1] for c in missing)),
              "--batches", ",".join(map(str, sorted({c[4] for c in missing}))),
              "--warmup", str(args.warmup), "--iters", str(args.iters), "--csv", csv_path]
    if tool == "torch":
        return [args.torch_python, os.path.join(ROOT, "bench", "torch_mlp.py")] + common
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
    return [g for g in groups if g[2] == "native"] + [g for g in groups if g[2] == "torch"]


def command_run(args):
    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, CSV_NAME)
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
        wanted = set(missing)
        new_rows = run_group(args, group, missing)
        append_rows(csv_path, [r for r in new_rows
                               if case_key(r["kernel"], r["pass"], r["width"], r["depth"], r["batch"]) in wanted])
        ran += 1
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
        for c in ("width", "depth", "batch", "n_in", "n_out"):
            row[c] = int(r[c])
        row["ms"] = float(r["ms"])
        row["flop_per_sample"] = float(r["flop_per_sample"])
        # Derived from ms, not read, so hand-edited or merged rows stay consistent.
        row["samples_per_s"] = row["batch"] / (row["ms"] * 1e-3)
        row["tflops"] = row["samples_per_s"] * row["flop_per_sample"] / 1e12
        out.append(row)
    return out


def speedups(rows):
    """{(pass, depth, width, batch): (fused time / best unfused time)^-1, best unfused kernel}."""
    cases = {}
    for r in rows:
        cases.setdefault((r["pass"], r["depth"], r["width"], r["batch"]), {})[r["kernel"]] = r["ms"]
    result = {}
    for key, times in cases.items():
        unfused = {k: t for k, t in times.items() if k in UNFUSED_KERNELS}
        if "fused" in times and unfused:
            best = min(unfused, key=unfused.get)
            result[key] = (unfused[best] / times["fused"], best)
    return result


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
        counts[r["kernel"]] = counts.get(r["kernel"], 0) + 1
    summary = {
        "n_rows": len(rows),
        "rows_per_kernel": counts,
        "machines": machine_of(rows),
        "fused_speedup_over_best_unfused": [
            {"pass": p, "depth": d, "width": w, "batch": b, "speedup": round(s, 4), "best_unfused": k}
            for (p, d, w, b), (s, k) in sorted(table.items())],
        "largest_width_where_fused_wins": fusion_boundary(table),
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


def plot_heatmaps(plt, rows, out_dir, depth):
    table = speedups(rows)
    paths = []
    for pass_name in ("train", "inference"):
        cells = {(w, b): s for (p, d, w, b), (s, _) in table.items() if p == pass_name and d == depth}
        if not cells:
            continue
        widths = sorted({w for w, _ in cells})
        batches = sorted({b for _, b in cells})
        grid = [[cells.get((w, b), float("nan")) for b in batches] for w in widths]
        fig, ax = plt.subplots(figsize=(2.5 + 0.7 * len(batches), 1.5 + 0.5 * len(widths)))
        # Centred on 1 (no gain): red where fusion loses, green where it wins.
        norm = matplotlib_colors().TwoSlopeNorm(vmin=min(0.5, min(cells.values())), vcenter=1.0,
                                                vmax=max(2.0, max(cells.values())))
        image = ax.imshow(grid, cmap="RdYlGn", norm=norm, origin="lower", aspect="auto")
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                if value == value:  # not NaN
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(batches)), [batch_label(b) for b in batches], rotation=45)
        ax.set_yticks(range(len(widths)), [str(w) for w in widths])
        ax.set_xlabel("batch")
        ax.set_ylabel("width")
        ax.set_title(f"{pass_name}: fused speedup over\nbest unfused kernel (depth {depth})", fontsize=10)
        fig.colorbar(image, ax=ax, label="speedup (x)")
        paths.append(save(plt, fig, out_dir, f"speedup_heatmap_{pass_name}.png"))
    return paths


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
                ax.plot([b for b, _ in line], [s / 1e9 for _, s in line], marker="o", markersize=3, label=kernel)
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


def save(plt, fig, out_dir, name):
    path = os.path.join(out_dir, name)
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
    paths = plot_heatmaps(plt, rows, args.out, depth) + plot_roofline(plt, rows, args.out, args)
    paths += plot_throughput(plt, rows, args.out, depth)
    for path in paths:
        print("study: wrote", path)
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
    run.add_argument("--batches", type=batch_list, default=[1 << k for k in range(10, 23)])
    run.add_argument("--kernels", default="fused,cublas,torch_eager,torch_graph",
                     help="comma separated: fused, cublas, cpu, torch_eager, torch_graph")
    run.add_argument("--passes", default="inference,train")
    run.add_argument("--warmup", type=int, default=5)
    run.add_argument("--iters", type=int, default=20)
    run.add_argument("--fusedngp", default=os.path.join(ROOT, "build", "fusedngp"), help="the fusedngp binary")
    run.add_argument("--torch-python", default=sys.executable, help="python that runs bench/torch_mlp.py")
    run.add_argument("--quiet", action="store_true", help="hide the tools' tables")
    plot = sub.add_parser("plot", help="PNG plots from a study CSV")
    plot.add_argument("--csv", required=True)
    plot.add_argument("--out", required=True)
    plot.add_argument("--depth", type=int, default=None, help="depth of the heatmaps and throughput plots")
    plot.add_argument("--peak-tflops", type=float, default=None, help="compute ceiling (else a CSV column)")
    plot.add_argument("--peak-gbps", type=float, default=None, help="memory ceiling (else a CSV column)")
    args = p.parse_args(argv)
    if args.command == "run":
        args.kernels = [k for k in args.kernels.split(",") if k]
        args.passes = [q for q in args.passes.split(",") if q]
        for k in args.kernels:
            if k not in NATIVE_KERNELS + TORCH_KERNELS:
                p.error(f"--kernels: unknown kernel {k} ({', '.join(NATIVE_KERNELS + TORCH_KERNELS)})")
        if args.chunk is not None and not 0 <= args.chunk < args.n_chunks:
            p.error(f"--chunk must be in 0..{args.n_chunks - 1}")
    return args


def main(argv):
    args = parse_args(argv)
    return command_run(args) if args.command == "run" else command_plot(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
