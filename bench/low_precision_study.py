#!/usr/bin/env python3
"""Quality of cheaper MLP arithmetic on trained models (docs/FUSED_MLP_STUDY.md,
"Lower precision and dynamic sparsity: quality").

Evaluates the network of exported fusedngp models (image or SDF mode, `fusedngp
export`) with the encoding in fp32 and the network in one of these forms:

  fp32          the reference;
  fp16          fp16 inputs, weights and activations, fp32 sums: our kernels' numerics;
  fp8w          weights in FP8 e4m3 (one scale per matrix), activations fp16;
  fp8           weights and activations in e4m3 (activations: one scale per
                layer input, calibrated as the largest magnitude over the
                calibration rows), fp32 sums: what an e4m3 wgmma would compute;
  sparse<k>     fp16, and each hidden layer's input keeps only the activations
                at or above a per-layer threshold (calibrated so that a fraction
                k of them is kept, zeros included); the skipped products'
                expected sum (calibrated per output) is added back as a bias.
                ReLU's zeros alone are the k at threshold 0+ (exact).

Quality: image models against the source image (PSNR over every pixel centre,
RGB in [0, 1]); SDF models against the fp32 network (mean |difference| and the
fraction of points whose sign flips, in the unit cube and in the band
|sdf| < 0.02). Work: the fraction of the network's multiply-adds (and so of
the weight bytes a batch-1 matrix-vector product reads) that each form keeps.
Time is not measured here: that needs the GPU kernels.

  /usr/bin/python3 bench/low_precision_study.py image MODEL.safetensors IMAGE.png [MODEL2 ...]
  /usr/bin/python3 bench/low_precision_study.py sdf MODEL.safetensors [MODEL2 ...]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import fusedngp_reference as ref  # noqa: E402

F32 = np.float32
E4M3_MAX = 448.0
CALIBRATION_ROWS = 1 << 14
SPARSE_KEEP = (0.5, 0.35, 0.25)


def round_half(x):
    return x.astype(np.float16).astype(F32)


def round_e4m3(x):
    """Nearest FP8 e4m3 value (3 mantissa bits, exponents down to -6 with
    subnormals in steps of 2^-9, saturating at 448), ties to even."""
    a = np.minimum(np.abs(x), E4M3_MAX)
    e = np.floor(np.log2(np.maximum(a, 2.0 ** -9)))
    step = 2.0 ** (np.maximum(e, -6) - 3)
    return (np.sign(x) * np.rint(a / step) * step).astype(F32)


def scaled_e4m3(x, amax):
    scale = F32(amax / E4M3_MAX) if amax > 0 else F32(1)
    return round_e4m3(x / scale) * scale


class Forms:
    """The network's matrices with what each form needs, calibrated once."""

    def __init__(self, model, calibration_inputs):
        net = model.network
        self.act = ref.ACTIVATIONS[net.activation]
        self.out_act = ref.ACTIVATIONS[net.output_activation]
        self.w32 = [w.astype(F32) for w in net.weights]
        self.w16 = [round_half(w) for w in self.w32]
        self.w8 = [scaled_e4m3(w, float(np.abs(w).max())) for w in self.w32]
        # Per layer input: its largest magnitude (fp8) and, per kept fraction,
        # the threshold and the bias that stands in for the skipped products.
        self.amax, self.threshold, self.bias = [], {k: [] for k in SPARSE_KEEP}, {k: [] for k in SPARSE_KEEP}
        h = round_half(calibration_inputs)
        for k, w in enumerate(self.w16):
            self.amax.append(float(np.abs(h).max()))
            for keep in SPARSE_KEEP:
                if k == 0:  # the encoding's output stays dense
                    self.threshold[keep].append(None)
                    self.bias[keep].append(None)
                    continue
                t = float(np.quantile(h, 1.0 - keep))
                skipped = np.where(h < t, h, 0.0).astype(F32)
                self.threshold[keep].append(t)
                self.bias[keep].append(skipped.mean(axis=0) @ w.T)
            h = self._layer(h, w, k, round_half)

    def _layer(self, h, w, k, rounding):
        z = h @ w.T
        return rounding((self.out_act if k + 1 == len(self.w32) else self.act)(z))

    def run(self, form, x):
        h = x.astype(F32)
        kept = total = 0
        for k in range(len(self.w32)):
            fan_out, fan_in = self.w32[k].shape
            total += fan_out * fan_in * len(h)
            if form == "fp32":
                w, h_in = self.w32[k], h
            elif form == "fp16":
                w, h_in = self.w16[k], round_half(h)
            elif form == "fp8w":
                w, h_in = self.w8[k], round_half(h)
            elif form == "fp8":
                w, h_in = self.w8[k], scaled_e4m3(h, self.amax[k])
            else:
                keep = float(form[len("sparse"):])
                w, h_in = self.w16[k], round_half(h)
                t = self.threshold[keep][k]
                if t is not None:
                    mask = h_in >= t if t > 0 else h_in > 0
                    kept += int(mask.sum()) * fan_out
                    z = (h_in * mask) @ w.T + self.bias[keep][k]
                    h = self.out_act(z) if k + 1 == len(self.w32) else round_half(self.act(z))
                    continue
            kept += fan_out * fan_in * len(h)
            z = h_in @ w.T
            h = self.out_act(z) if k + 1 == len(self.w32) else self.act(z)
            if form == "fp16" or form.startswith("fp8"):
                h = h if k + 1 == len(self.w32) else round_half(h)
        return h, kept / total


FORMS = ["fp32", "fp16", "fp8w", "fp8"] + [f"sparse{k}" for k in SPARSE_KEEP]


def encode(model, x):
    out = []
    for begin in range(0, len(x), ref.CHUNK_ROWS):
        out.append(model.encoding.forward(x[begin:begin + ref.CHUNK_ROWS]).astype(F32))
    return np.concatenate(out)


def describe(model):
    shapes = model.network.shapes
    return f"{shapes[0][1]} -> {shapes[0][0]} x {len(shapes) - 1} -> {shapes[-1][0]}"


def image_study(models, image_path):
    from PIL import Image
    img = np.asarray(Image.open(image_path).convert("RGB"), dtype=F32) / 255.0
    h, w, _ = img.shape
    ys, xs = np.mgrid[0:h, 0:w]
    uv = np.stack([(xs + 0.5) / w, (ys + 0.5) / h], axis=-1).reshape(-1, 2).astype(F32)
    target = img.reshape(-1, 3)
    print("| model | form | MACs kept | PSNR (dB) |\n|---|---|---|---|")
    for path in models:
        model = ref.load(path)
        enc = encode(model, uv)
        rng = np.random.default_rng(0)
        forms = Forms(model, enc[rng.choice(len(enc), min(CALIBRATION_ROWS, len(enc)), replace=False)])
        for form in FORMS:
            y, kept = forms.run(form, enc)
            mse = float(np.mean((np.clip(y[:, :3], 0, 1) - target) ** 2))
            print(f"| {os.path.basename(path)} ({describe(model)}) | {form} | {kept:.3f} | "
                  f"{10 * np.log10(1 / mse):.2f} |", flush=True)


def sdf_study(models, n_points):
    print("| model | form | MACs kept | mean abs diff | sign flips (cube) | sign flips (band) |\n"
          "|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    x = rng.random((n_points, 3), dtype=F32)
    for path in models:
        model = ref.load(path)
        enc = encode(model, x)
        forms = Forms(model, enc[:CALIBRATION_ROWS])
        y32, _ = forms.run("fp32", enc)
        band = np.abs(y32[:, 0]) < 0.02
        for form in FORMS:
            y, kept = forms.run(form, enc)
            flip = np.sign(y[:, 0]) != np.sign(y32[:, 0])
            print(f"| {os.path.basename(path)} ({describe(model)}) | {form} | {kept:.3f} | "
                  f"{float(np.mean(np.abs(y[:, 0] - y32[:, 0]))):.2e} | {flip.mean():.4f} | "
                  f"{flip[band].mean() if band.any() else float('nan'):.4f} |", flush=True)


def e4m3_values():
    """Every finite e4m3 value, decoded from its bit pattern (bias 7; exponent
    field 0: subnormals m x 2^-9; S.1111.111 is NaN)."""
    values = []
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exponent, mantissa = (code >> 3) & 0xF, code & 0x7
        if exponent == 0xF and mantissa == 0x7:
            continue
        if exponent == 0:
            values.append(sign * mantissa * 2.0 ** -9)
        else:
            values.append(sign * (1 + mantissa / 8) * 2.0 ** (exponent - 7))
    return np.array(sorted(set(values)), dtype=np.float64)


def self_test():
    """round_e4m3 against the decoded code table: every value maps to itself,
    points between neighbours to the nearer one (ties to the even code),
    magnitudes past 448 saturate."""
    grid = e4m3_values()
    assert len(grid) == 253 and grid.max() == E4M3_MAX and grid[grid > 0].min() == 2.0 ** -9, "code table"
    assert np.array_equal(round_e4m3(grid.astype(F32)), grid.astype(F32)), "codes are fixed points"
    lo, hi = grid[:-1], grid[1:]
    for frac in (0.25, 0.75):
        x = (lo + frac * (hi - lo)).astype(F32)
        want = np.where(frac < 0.5, lo, hi).astype(F32)
        assert np.array_equal(round_e4m3(x), want), f"nearest at {frac}"
    mid = ((lo + hi) / 2).astype(F32)
    got = round_e4m3(mid)
    assert np.all((got == lo.astype(F32)) | (got == hi.astype(F32))), "ties go to a neighbour"
    # Ties to even: the chosen neighbour's last mantissa bit is 0.
    even = [abs(v) == 0 or (abs(v) / 2.0 ** np.floor(np.log2(abs(v))) * 8 % 2 == 0 if abs(v) >= 2.0 ** -6
                            else (abs(v) / 2.0 ** -9) % 2 == 0) for v in got.astype(np.float64)]
    assert all(even), "ties to even"
    assert round_e4m3(np.array([1000.0, -1000.0], F32)).tolist() == [448.0, -448.0], "saturation"
    print("low_precision_study self-test: e4m3 rounding matches the 253 finite codes")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    p_img = sub.add_parser("image")
    p_img.add_argument("models", nargs="+")
    p_img.add_argument("--image", required=True)
    p_sdf = sub.add_parser("sdf")
    p_sdf.add_argument("models", nargs="+")
    p_sdf.add_argument("--points", type=int, default=1 << 18)
    args = parser.parse_args()
    if args.mode == "image":
        image_study(args.models, args.image)
    else:
        sdf_study(args.models, args.points)


if __name__ == "__main__":
    main()
