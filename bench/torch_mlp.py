#!/usr/bin/env python3
"""PyTorch baseline for `fusedngp bench mlp`: the same MLP, same shapes, same CSV.

Network: n_in -> W x depth hidden layers -> n_out (depth = n_hidden_layers,
i.e. depth - 1 W x W matrices, as in `fusedngp bench mlp`), no bias, ReLU,
fp16 weights, activations, inputs and outputs (CSV column io = fp16; PyTorch's
fp16 GEMMs accumulate in fp32).

Kernels (CSV column `kernel`):
  torch_eager  plain eager PyTorch calls;
  torch_graph  the same calls captured once in a torch.cuda.CUDAGraph and
               replayed (no launch overhead, no Python in the loop).
Passes:
  inference    forward under torch.no_grad();
  train        forward, MSE loss against a target, backward (dL/dW only: the
               input does not require grad). No optimizer step: the fused
               kernel's training row has none either. Gradients are
               overwritten every step (zeroed via set_to_none in eager;
               in the graph, captured backward writes them in place).

Timing: CUDA events around each call, median of --iters after --warmup calls,
inputs (and targets) rotated over 4 buffers so they do not sit in L2. The FLOP
count per sample is the one of `fusedngp bench mlp`: 2 x multiply-adds for
inference, 6 x for a training step.

Without an importable torch (or without a CUDA device) it says so on stderr
and exits 0 with no rows, so scripts can run it unconditionally.
"""
import argparse
import os
import subprocess
import sys

COLUMNS = ["kernel", "variant", "pass", "width", "depth", "n_in", "n_out", "batch", "flop_per_sample", "warmup",
           "iters", "ms", "samples_per_s", "tflops", "registers", "smem_per_block", "blocks_per_sm", "occupancy",
           "waves", "rows_per_tile", "gpu", "sm_count", "sm_clock_mhz", "mem_clock_mhz", "driver", "commit", "io"]
ROTATIONS = 4


def parse_batch(text):
    text = text.strip()
    value = 1 << int(text[2:]) if text.startswith("2^") else int(text)
    if value <= 0:
        raise ValueError(f"batch must be positive: {text}")
    return value


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def flop_per_sample(n_in, width, depth, n_out, training):
    macs = n_in * width + (depth - 1) * width * width + width * n_out
    return (6 if training else 2) * macs


def smi_query(field):
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def source_commit():
    env = os.environ.get("FUSEDNGP_COMMIT")
    if env:
        return env
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def build_mlp(torch, n_in, width, depth, n_out):
    layers = [torch.nn.Linear(n_in, width, bias=False), torch.nn.ReLU()]
    for _ in range(depth - 1):
        layers += [torch.nn.Linear(width, width, bias=False), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(width, n_out, bias=False))
    return torch.nn.Sequential(*layers).cuda().half()


def median_ms(torch, warmup, iters, call):
    for i in range(warmup):
        call(i)
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for i, (start, stop) in enumerate(events):
        start.record()
        call(warmup + i)
        stop.record()
    torch.cuda.synchronize()
    times = sorted(start.elapsed_time(stop) for start, stop in events)
    return times[len(times) // 2]


def time_case(torch, args, kernel, pass_name, width, depth, batch, inputs, targets):
    mlp = build_mlp(torch, args.n_in, width, depth, args.n_out)
    x = [t[:batch] for t in inputs]
    y = [t[:batch] for t in targets]

    if pass_name == "inference":
        def step(i):
            with torch.no_grad():
                return mlp(x[i % ROTATIONS])
    else:
        loss_fn = torch.nn.MSELoss()

        def step(i):
            loss = loss_fn(mlp(x[i % ROTATIONS]), y[i % ROTATIONS])
            loss.backward()

    if kernel == "torch_eager":
        def eager(i):
            if pass_name == "train":
                mlp.zero_grad(set_to_none=True)
            step(i)
        return median_ms(torch, args.warmup, args.iters, eager)

    # CUDA graph: one captured graph per rotation slot, since a graph bakes in
    # its input addresses. Warm up on a side stream first (required before
    # capture so lazy initialisation and the .grad tensors are allocated
    # outside it; the captured backward then accumulates into them in place,
    # one extra add per weight). The graphs share one memory pool, which is
    # safe because they replay one at a time in capture order (0, 1, 2, 3,
    # 0, ...); a pool per graph held four copies of every activation and ran
    # out of the H200's 140 GB at W = 512, depth 8, batch 2^22.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):
            step(i)
    torch.cuda.current_stream().wait_stream(side)
    graphs = []
    pool = torch.cuda.graph_pool_handle()
    for r in range(ROTATIONS):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            step(r)
        graphs.append(g)
    ms = median_ms(torch, args.warmup, args.iters, lambda i: graphs[i % ROTATIONS].replay())
    del graphs
    return ms


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--widths", type=int_list, default=[16, 32, 64, 128, 256])
    p.add_argument("--depths", type=int_list, default=[2])
    p.add_argument("--batches", default="2^20", help="comma separated: 65536 or 2^16")
    p.add_argument("--kernels", default="torch_eager,torch_graph")
    p.add_argument("--passes", default="inference,train")
    p.add_argument("--in", dest="n_in", type=int, default=32)
    p.add_argument("--out", dest="n_out", type=int, default=16)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--csv", default="")
    args = p.parse_args()
    batches = [parse_batch(b) for b in args.batches.split(",") if b]
    kernels = [k for k in args.kernels.split(",") if k]
    passes = [q for q in args.passes.split(",") if q]
    for k in kernels:
        if k not in ("torch_eager", "torch_graph"):
            p.error(f"--kernels: unknown kernel {k} (torch_eager, torch_graph)")
    for q in passes:
        if q not in ("inference", "train"):
            p.error(f"--passes: unknown pass {q} (inference, train)")

    try:
        import torch
    except ImportError as e:
        print(f"torch_mlp.py: torch is not importable ({e}); no rows written", file=sys.stderr)
        return 0
    if not torch.cuda.is_available():
        print("torch_mlp.py: torch has no CUDA device; no rows written", file=sys.stderr)
        return 0

    props = torch.cuda.get_device_properties(0)
    machine = {
        "gpu": props.name, "sm_count": props.multi_processor_count,
        "sm_clock_mhz": smi_query("clocks.max.sm"), "mem_clock_mhz": smi_query("clocks.max.mem"),
        "driver": smi_query("driver_version") or f"torch CUDA {torch.version.cuda}", "commit": source_commit(),
    }
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    max_batch = max(batches)
    gen = torch.Generator(device="cuda").manual_seed(0)
    inputs = [torch.rand(max_batch, args.n_in, device="cuda", generator=gen).half() * 2 - 1 for _ in range(ROTATIONS)]
    targets = [torch.rand(max_batch, args.n_out, device="cuda", generator=gen).half() for _ in range(ROTATIONS)]

    rows = []
    print(f"gpu {machine['gpu']}, {machine['sm_count']} SMs, torch {torch.__version__}, driver {machine['driver']}")
    print(f"{'kernel':<12} {'pass':<9} {'W':>5} {'depth':>5} {'batch':>9} {'ms':>10} {'Gsamples/s':>12} {'TFLOP/s':>9}")
    for depth in args.depths:
        for width in args.widths:
            for batch in batches:
                for kernel in kernels:
                    for pass_name in passes:
                        ms = time_case(torch, args, kernel, pass_name, width, depth, batch, inputs, targets)
                        flop = flop_per_sample(args.n_in, width, depth, args.n_out, pass_name == "train")
                        sps = batch / (ms * 1e-3)
                        row = {"kernel": kernel, "pass": pass_name, "width": width, "depth": depth,
                               "n_in": args.n_in, "n_out": args.n_out, "batch": batch, "flop_per_sample": flop,
                               "warmup": args.warmup, "iters": args.iters, "ms": f"{ms:.6f}",
                               "samples_per_s": f"{sps:.6e}", "tflops": f"{sps * flop / 1e12:.3f}", "io": "fp16",
                               **machine}
                        rows.append(row)
                        print(f"{kernel:<12} {pass_name:<9} {width:>5} {depth:>5} {batch:>9} {ms:>10.4f} "
                              f"{sps / 1e9:>12.3f} {sps * flop / 1e12:>9.1f}", flush=True)
                        torch.cuda.empty_cache()
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(",".join(COLUMNS) + "\n")
            for row in rows:
                # variant and the kernel-resource columns stay empty: they describe our fused kernel.
                f.write(",".join(str(row.get(c, "")) for c in COLUMNS) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
