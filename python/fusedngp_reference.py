#!/usr/bin/python3
"""numpy reference evaluator for fusedngp weight files (.safetensors).

Loads the weights written by `fusedngp export` and evaluates the model's
forward pass (inference only) with numpy alone: no torch, no safetensors
package. The arithmetic mirrors the C++ engine's float build step by step
(docs/ENCODINGS.md, docs/NETWORKS_AND_LOSSES.md), in float32, so outputs agree
with `Model<float>::inference` to within a few float rounding steps.

    import fusedngp_reference as ref
    model = ref.load("weights.safetensors")
    y = model(x)                       # x: (N, model.n_input_dims)

    /usr/bin/python3 fusedngp_reference.py WEIGHTS --inputs IN.npy --out OUT.npy
    /usr/bin/python3 fusedngp_reference.py WEIGHTS --describe

NeRF weights (`fusedngp export` of a NeRF snapshot) render a view: the
marcher of src/nerf/ray_marching_math.h and the compositing of
src/nerf/volume_rendering.h, in float32 (docs/NERF.md):

    nerf = ref.load_nerf("scene.safetensors")
    rgb = nerf.render(camera_dict, background=(1, 1, 1))   # (H, W, 3)

    /usr/bin/python3 fusedngp_reference.py SCENE --camera cam.json --out rgb.npy
"""

import argparse
import json
import math
import re
import struct
import sys

import numpy as np

F32 = np.float32
WEIGHTS_FORMAT = "weights-v1"
# Rows per evaluation chunk: bounds the temporaries (a few hundred bytes per row).
CHUNK_ROWS = 1 << 16


class WeightFileError(ValueError):
    """The file is not a readable fusedngp weight file."""


class UnsupportedError(ValueError):
    """The config asks for something this evaluator does not implement."""


# --------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------

_SAFETENSORS_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "U8": np.dtype("u1")}
_MAX_HEADER_BYTES = 100_000_000


def read_safetensors(path):
    """Returns (tensors, dtypes, metadata): tensors maps name -> float32 array
    in file (data offset) order, dtypes maps name -> "F32"/"F16"/"U8"."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise WeightFileError(f"{path}: too short for a safetensors file ({len(data)} bytes)")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > _MAX_HEADER_BYTES or header_len > len(data) - 8:
        raise WeightFileError(f"{path}: header length {header_len} exceeds the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + header_len].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise WeightFileError(f"{path}: header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise WeightFileError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", {}) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise WeightFileError(f"{path}: __metadata__ must map strings to strings")
    body = memoryview(data)[8 + header_len:]

    entries = []
    for name, info in header.items():
        try:
            dtype_name = info["dtype"]
            shape = [int(s) for s in info["shape"]]
            begin, end = (int(o) for o in info["data_offsets"])
        except (TypeError, KeyError, ValueError):
            raise WeightFileError(f"{path}: tensor \"{name}\" lacks a valid dtype, shape or data_offsets") from None
        if dtype_name not in _SAFETENSORS_DTYPES:
            raise WeightFileError(f"{path}: tensor \"{name}\" has dtype {dtype_name}; supported: F32, F16, U8")
        dtype = _SAFETENSORS_DTYPES[dtype_name]
        count = math.prod(shape)
        if min(shape, default=0) < 0 or not 0 <= begin <= end <= len(body) or end - begin != count * dtype.itemsize:
            raise WeightFileError(f"{path}: tensor \"{name}\" (shape {shape}, {dtype_name}) has data_offsets "
                                  f"[{begin}, {end}] that do not fit its size or the data section")
        entries.append((begin, name, dtype_name, dtype, shape, count))

    tensors, dtypes = {}, {}
    for begin, name, dtype_name, dtype, shape, count in sorted(entries, key=lambda e: e[0]):
        values = np.frombuffer(body, dtype=dtype, count=count, offset=begin)
        # F16 and U8 -> F32 are exact; native byte order for fast arithmetic.
        tensors[name] = values.astype(F32).reshape(shape)
        dtypes[name] = dtype_name
    return tensors, dtypes, metadata


# --------------------------------------------------------------------------
# Config fields (same defaults and matching rules as the C++ factories)
# --------------------------------------------------------------------------

def _join(path, key):
    return f"{path}.{key}" if path else key


def _choice(value, allowed, path, what):
    """The entry of `allowed` equal to `value` ignoring case."""
    if isinstance(value, str):
        for name in allowed:
            if name.lower() == value.lower():
                return name
    raise UnsupportedError(f"{path}: unsupported {what} {value!r}; supported: {', '.join(allowed)}")


def _int(cfg, path, key, default, lo=1, hi=None):
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != math.floor(value):
        raise UnsupportedError(f"{_join(path, key)}: must be an integer, got {value!r}")
    value = int(value)
    if value < lo or (hi is not None and value > hi):
        raise UnsupportedError(f"{_join(path, key)}: is {value}, allowed range is [{lo}, {hi if hi else 'inf'}]")
    return value


def _number(cfg, path, key, default):
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UnsupportedError(f"{_join(path, key)}: must be a finite number, got {value!r}")
    return float(value)


def _string(cfg, path, key, default):
    value = cfg.get(key, default)
    if not isinstance(value, str):
        raise UnsupportedError(f"{_join(path, key)}: must be a string, got {value!r}")
    return value


def _otype(cfg, path):
    if not isinstance(cfg, dict) or not isinstance(cfg.get("otype"), str):
        raise UnsupportedError(f"{_join(path, 'otype')}: missing or not a string")
    return cfg["otype"]


# --------------------------------------------------------------------------
# Special functions
# --------------------------------------------------------------------------

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI = math.sqrt(math.pi)


def _erf(x):
    """erf in float64, accurate to ~2e-15 (numpy has no erf). Maclaurin
    series below |x| = 2, Laplace's continued fraction for erfc above."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    ax = np.abs(x)
    small = ax < 2.0
    xs = x[small]
    x2 = xs * xs
    term = xs.copy()
    total = xs.copy()
    for n in range(1, 60):  # 2^(2n+1) / n! is below 1e-17 from n = 45 on
        term = term * -x2 / n
        total += term / (2 * n + 1)
    out[small] = total * _TWO_OVER_SQRT_PI
    big = ~small  # includes NaN, which stays NaN
    xb = ax[big]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t = xb.copy()
        for k in range(60, 0, -1):  # erfc(x) = e^-x^2 / sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
            t = xb + (0.5 * k) / t
        erfc = np.exp(-xb * xb) / (_SQRT_PI * t)
    out[big] = np.copysign(1.0 - erfc, x[big])
    return out


def _f32(fn, x):
    """A float function of float32 x, evaluated in float64 and rounded once:
    this matches glibc's sinf/cosf/erff/expf to within one ulp."""
    return fn(x.astype(np.float64)).astype(F32)


# --------------------------------------------------------------------------
# Encodings. Each has n_input_dims, n_output_dims, param_slots() (tensors it
# needs, keyed by (nested scope, level)), bind(tensors by key), forward(x).
# --------------------------------------------------------------------------

class _Encoding:
    n_input_dims = 0
    n_output_dims = 0

    def param_slots(self):
        """[(key, shape)] in parameter layout order."""
        return []

    def bind(self, tensors):
        pass

    def describe(self):
        return type(self).__name__.lstrip("_")


class _Identity(_Encoding):
    def __init__(self, n_dims, cfg, path):
        self.n_input_dims = self.n_output_dims = n_dims
        self.scale = F32(_number(cfg, path, "scale", 1.0))
        self.offset = F32(_number(cfg, path, "offset", 0.0))

    def forward(self, x):
        return x * self.scale + self.offset

    def describe(self):
        return f"Identity({self.n_input_dims}D, scale {self.scale}, offset {self.offset})"


class _Frequency(_Encoding):
    def __init__(self, n_dims, cfg, path):
        self.n_frequencies = _int(cfg, path, "n_frequencies", 12, 1, 64)
        self.n_input_dims = n_dims
        self.n_output_dims = n_dims * 2 * self.n_frequencies
        # pi * 2^f formed in double (exact), rounded once to float.
        self.angular = np.array([math.ldexp(math.pi, f) for f in range(self.n_frequencies)]).astype(F32)

    def forward(self, x):
        phase = x[:, :, None] * self.angular[None, None, :]  # float32, as the C++
        # Output d*2F + 2f is sin, d*2F + 2f + 1 is cos.
        y = np.stack([_f32(np.sin, phase), _f32(np.cos, phase)], axis=-1)
        return y.reshape(x.shape[0], self.n_output_dims)

    def describe(self):
        return f"Frequency({self.n_input_dims}D, {self.n_frequencies} frequencies)"


class _TriangleWave(_Encoding):
    def __init__(self, n_dims, cfg, path):
        self.n_frequencies = _int(cfg, path, "n_frequencies", 12, 1, 64)
        self.n_input_dims = n_dims
        self.n_output_dims = n_dims * self.n_frequencies

    def forward(self, x):
        exponents = np.arange(self.n_frequencies, dtype=np.int32)
        t = np.ldexp(x[:, :, None], exponents[None, None, :])  # exact, float32
        frac = t - np.floor(t)
        y = F32(4) * np.abs(frac - F32(0.5)) - F32(1)  # output d*F + f
        return y.reshape(x.shape[0], self.n_output_dims)

    def describe(self):
        return f"TriangleWave({self.n_input_dims}D, {self.n_frequencies} frequencies)"


class _OneBlob(_Encoding):
    _INV_SQRT2 = F32(0.70710678118654752440)

    def __init__(self, n_dims, cfg, path):
        self.n_bins = _int(cfg, path, "n_bins", 16)
        self.n_input_dims = n_dims
        self.n_output_dims = n_dims * self.n_bins

    def forward(self, x):
        u = x * F32(self.n_bins)
        boundaries = np.arange(self.n_bins + 1).astype(F32)
        arg = (boundaries[None, None, :] - u[:, :, None]) * self._INV_SQRT2  # float32
        e = _f32(_erf, arg)
        y = F32(0.5) * (e[:, :, 1:] - e[:, :, :-1])  # output d*B + b
        return y.reshape(x.shape[0], self.n_output_dims)

    def describe(self):
        return f"OneBlob({self.n_input_dims}D, {self.n_bins} bins)"


class _SphericalHarmonics(_Encoding):
    MAX_DEGREE = 8

    def __init__(self, n_dims, cfg, path):
        if n_dims != 3:
            raise UnsupportedError(f"{_join(path, 'otype')}: SphericalHarmonics encodes 3 input dims, "
                                   f"but {n_dims} are given")
        self.degree = _int(cfg, path, "degree", 4, 1, self.MAX_DEGREE)
        self.n_input_dims = 3
        self.n_output_dims = self.degree ** 2
        # K_l^m in double, rounded once; sqrt(2) for m != 0 (same for -m).
        self.norm = {}
        for l in range(self.degree):
            for m in range(l + 1):
                k = math.sqrt((2 * l + 1) / (4 * math.pi) * _factorial(l - m) / _factorial(l + m))
                if m != 0:
                    k *= math.sqrt(2.0)
                self.norm[l, m] = F32(k)

    def forward(self, x):
        one, two = F32(1), F32(2)
        vx, vy, vz = (two * x[:, i] - one for i in range(3))  # not renormalised
        L = self.degree
        out = np.empty((x.shape[0], self.n_output_dims), F32)
        # (x + iy)^m = c[m] + i s[m] by repeated complex multiplication.
        c = [np.ones_like(vx)]
        s = [np.zeros_like(vx)]
        for m in range(1, L):
            c.append(vx * c[m - 1] - vy * s[m - 1])
            s.append(vx * s[m - 1] + vy * c[m - 1])
        for m in range(L):
            p_prev = np.zeros_like(vx)
            p = np.full_like(vx, F32(_legendre_diagonal(m)))
            for l in range(m, L):
                if l == m + 1:
                    p_prev, p = p, (F32(2 * m + 1) * vz) * p
                elif l > m + 1:
                    p_prev, p = p, ((F32(2 * l - 1) * vz) * p - F32(l + m - 1) * p_prev) / F32(l - m)
                k = self.norm[l, m]
                if m == 0:
                    out[:, l * l + l] = k * p
                else:
                    out[:, l * l + l + m] = (k * p) * c[m]
                    out[:, l * l + l - m] = (k * p) * s[m]
        return out

    def describe(self):
        return f"SphericalHarmonics(degree {self.degree})"


def _factorial(n):
    r = 1.0
    for i in range(2, n + 1):
        r *= i
    return r


def _legendre_diagonal(m):
    """P_m^m = (-1)^m (2m-1)!!, the Condon-Shortley phase included."""
    r = 1.0
    for k in range(1, m + 1):
        r *= -float(2 * k - 1)
    return r


_HASH_PRIME_1 = np.uint32(2654435761)
_HASH_PRIME_2 = np.uint32(805459861)


class _GridLevel:
    def __init__(self, scale, resolution, rows, indexing, stride):
        self.scale = scale            # float32, the value the kernels use
        self.resolution = resolution  # vertices per axis
        self.rows = rows              # table rows
        self.indexing = indexing      # "dense", "hash" or "tiled"
        self.stride = np.uint32(stride)
        self.mask = np.uint32(rows - 1)
        self.table = None

    def row_index(self, v):
        """Table row of vertices v (list of D uint32 arrays), in uint32 arithmetic."""
        if self.indexing == "hash":
            h = v[0] ^ (v[1] * _HASH_PRIME_1)
            if len(v) == 3:
                h ^= v[2] * _HASH_PRIME_2
            return h & self.mask
        if self.indexing == "tiled":
            v = [vi % self.stride for vi in v]
        row = v[0] + v[1] * self.stride
        if len(v) == 3:
            row += v[2] * self.stride * self.stride
        return row


class _Grid(_Encoding):
    TYPES = ("Hash", "Dense", "Tiled")
    INTERPOLATIONS = ("Linear", "Nearest", "Smoothstep")

    def __init__(self, n_dims, cfg, path, otype, scope):
        if n_dims not in (2, 3):
            raise UnsupportedError(f"{_join(path, 'otype')}: {otype} encodes 2 or 3 input dims, "
                                   f"but {n_dims} are given")
        if otype == "Grid":
            self.type = _choice(_string(cfg, path, "type", "Hash"), self.TYPES, _join(path, "type"), "grid type")
        else:
            self.type = otype[:-len("Grid")]
        self.n_dims = n_dims
        self.n_levels = _int(cfg, path, "n_levels", 16)
        self.n_features = _int(cfg, path, "n_features_per_level", 2)
        if self.n_features not in (1, 2, 4, 8):
            raise UnsupportedError(f"{_join(path, 'n_features_per_level')}: is {self.n_features}, "
                                   "allowed values: 1, 2, 4, 8")
        self.log2_hashmap_size = _int(cfg, path, "log2_hashmap_size", 19, 1, 30)
        self.base_resolution = _int(cfg, path, "base_resolution", 16)
        self.per_level_scale = _number(cfg, path, "per_level_scale", 2.0)
        if self.per_level_scale < 1.0:
            raise UnsupportedError(f"{_join(path, 'per_level_scale')}: is {self.per_level_scale}, must be >= 1")
        self.interpolation = _choice(_string(cfg, path, "interpolation", "Linear"), self.INTERPOLATIONS,
                                     _join(path, "interpolation"), "interpolation")
        self.scope = scope
        self.n_input_dims = n_dims
        self.n_output_dims = self.n_levels * self.n_features
        self.levels = [self._make_level(l) for l in range(self.n_levels)]

    def _make_level(self, l):
        # In double with the C library's exp2/log2, exactly as the C++ does;
        # the kernels use the float-rounded scale, the layout the double one.
        exp2 = getattr(math, "exp2", lambda v: 2.0 ** v)  # math.exp2: Python >= 3.11
        scale = self.base_resolution * exp2(l * math.log2(self.per_level_scale)) - 1.0
        resolution = int(math.ceil(scale)) + 2
        full_rows = resolution ** self.n_dims
        if self.type == "Dense":
            rows, indexing, stride = full_rows, "dense", resolution
        elif self.type == "Tiled":
            rows, indexing, stride = self.base_resolution ** self.n_dims, "tiled", self.base_resolution
        else:
            hash_rows = 1 << self.log2_hashmap_size
            rows = min(full_rows, hash_rows)
            indexing, stride = ("dense" if full_rows <= hash_rows else "hash"), resolution
        return _GridLevel(F32(scale), resolution, rows, indexing, stride)

    def param_slots(self):
        return [((self.scope, l), (lv.rows, self.n_features)) for l, lv in enumerate(self.levels)]

    def bind(self, tensors):
        for l, lv in enumerate(self.levels):
            lv.table = tensors[self.scope, l]

    def _shape_weights(self, w):
        if self.interpolation == "Smoothstep":
            return w * w * (F32(3) - F32(2) * w)
        if self.interpolation == "Nearest":
            return np.where(w >= F32(0.5), F32(1), F32(0)).astype(F32)
        return w

    def forward(self, x):
        n, D, F = x.shape[0], self.n_dims, self.n_features
        out = np.empty((n, self.n_output_dims), F32)
        # Clamp to [0, 1]; NaN -> 0 (both comparisons are false for NaN).
        xc = np.where(x >= F32(0), np.where(x <= F32(1), x, F32(1)), F32(0)).astype(F32)
        for l, lv in enumerate(self.levels):
            p = xc * lv.scale + F32(0.5)
            lower_f = np.floor(p)
            s = self._shape_weights(p - lower_f)
            lower = lower_f.astype(np.uint32)
            acc = np.zeros((n, F), F32)
            for k in range(1 << D):  # bit i of k: upper vertex along axis i
                weight = np.ones(n, F32)
                vertex = []
                for i in range(D):
                    upper = (k >> i) & 1
                    vertex.append(lower[:, i] + np.uint32(upper))
                    weight = weight * (s[:, i] if upper else F32(1) - s[:, i])
                acc += weight[:, None] * lv.table[lv.row_index(vertex)]
            out[:, l * F:(l + 1) * F] = acc
        return out

    def describe(self):
        hashed = sum(lv.indexing == "hash" for lv in self.levels)
        return (f"{self.type}Grid({self.n_dims}D, {self.n_levels} levels x {self.n_features} features, "
                f"base_resolution {self.base_resolution}, per_level_scale {self.per_level_scale:g}, "
                f"{self.interpolation}; {hashed} hashed levels)")


class _Composite(_Encoding):
    def __init__(self, n_dims, cfg, path, scope):
        nested = cfg.get("nested")
        if not isinstance(nested, list) or not nested:
            raise UnsupportedError(f"{_join(path, 'nested')}: must be a non-empty array of encoding configs")
        dims = _split_input_dims(n_dims, nested, path)
        self.parts = [_build_encoding(d, c, f"{_join(path, 'nested')}[{i}]", scope + (i,))
                      for i, (d, c) in enumerate(zip(dims, nested))]
        self.n_input_dims = n_dims
        self.n_output_dims = sum(p.n_output_dims for p in self.parts)

    def param_slots(self):
        return [slot for p in self.parts for slot in p.param_slots()]

    def bind(self, tensors):
        for p in self.parts:
            p.bind(tensors)

    def forward(self, x):
        outputs, begin = [], 0
        for p in self.parts:
            outputs.append(p.forward(np.ascontiguousarray(x[:, begin:begin + p.n_input_dims])))
            begin += p.n_input_dims
        return np.concatenate(outputs, axis=1)

    def describe(self):
        return "Composite(" + " + ".join(p.describe() for p in self.parts) + ")"


def _split_input_dims(n_dims, nested, path):
    """Dims per entry; the one entry without n_dims_to_encode takes the rest."""
    dims, rest = [], None
    for i, entry in enumerate(nested):
        entry_path = f"{_join(path, 'nested')}[{i}]"
        if not isinstance(entry, dict):
            raise UnsupportedError(f"{entry_path}: must be an object")
        if "n_dims_to_encode" in entry:
            dims.append(_int(entry, entry_path, "n_dims_to_encode", 1))
        elif rest is None:
            rest = i
            dims.append(0)
        else:
            raise UnsupportedError(f"{entry_path}.n_dims_to_encode: missing; only one nested encoding may omit it")
    if rest is not None:
        dims[rest] = n_dims - sum(dims)
    if sum(dims) != n_dims or min(dims) <= 0:
        raise UnsupportedError(f"{_join(path, 'nested')}: nested encodings take {dims} input dims, "
                               f"the input has {n_dims}")
    return dims


_ENCODING_OTYPES = ("Composite", "Identity", "Frequency", "TriangleWave", "OneBlob", "SphericalHarmonics",
                    "Grid", "HashGrid", "DenseGrid", "TiledGrid")


def _build_encoding(n_dims, cfg, path, scope=()):
    otype = _choice(_otype(cfg, path), _ENCODING_OTYPES, _join(path, "otype"), "encoding otype")
    if otype == "Composite":
        return _Composite(n_dims, cfg, path, scope)
    if otype.endswith("Grid"):
        return _Grid(n_dims, cfg, path, otype, scope)
    simple = {"Identity": _Identity, "Frequency": _Frequency, "TriangleWave": _TriangleWave,
              "OneBlob": _OneBlob, "SphericalHarmonics": _SphericalHarmonics}
    return simple[otype](n_dims, cfg, path)


# --------------------------------------------------------------------------
# Network: MLP without biases; z = h W^T per layer.
# --------------------------------------------------------------------------

def _stable_sigmoid(x):
    e = _f32(np.exp, -np.abs(x))  # never overflows
    return np.where(x >= F32(0), F32(1) / (F32(1) + e), e / (F32(1) + e)).astype(F32)


def _squareplus(x):
    r = np.sqrt(x * x + F32(4))
    with np.errstate(divide="ignore"):
        return np.where(x >= F32(0), F32(0.5) * (x + r), F32(2) / (r - x)).astype(F32)


def _softplus(x):
    return np.maximum(x, F32(0)) + _f32(np.log1p, _f32(np.exp, -np.abs(x)))


ACTIVATIONS = {
    "None": lambda x: x,
    "ReLU": lambda x: np.where(x > F32(0), x, F32(0)).astype(F32),
    "LeakyReLU": lambda x: np.where(x > F32(0), x, F32(0.01) * x).astype(F32),
    "Exponential": lambda x: _f32(np.exp, x),
    "Sine": lambda x: _f32(np.sin, x),
    "Sigmoid": _stable_sigmoid,
    "Squareplus": _squareplus,
    "Softplus": _softplus,
    "Tanh": lambda x: _f32(np.tanh, x),
    "SiLU": lambda x: x * _stable_sigmoid(x),
}

_NETWORK_OTYPES = ("FullyFusedMLP", "CutlassMLP", "CublasMLP", "MLP", "Auto", "CPU")


class _Mlp:
    def __init__(self, n_input_dims, n_output_dims, cfg, path="network"):
        self.otype = _choice(_otype(cfg, path), _NETWORK_OTYPES, _join(path, "otype"), "network otype")
        n_neurons = _int(cfg, path, "n_neurons", 64)
        n_hidden = _int(cfg, path, "n_hidden_layers", 2, 0)
        names = list(ACTIVATIONS)
        self.activation = _choice(_string(cfg, path, "activation", "ReLU"), names,
                                  _join(path, "activation"), "activation")
        self.output_activation = _choice(_string(cfg, path, "output_activation", "None"), names,
                                         _join(path, "output_activation"), "activation")
        fans = [n_input_dims] + [n_neurons] * n_hidden + [n_output_dims]
        self.shapes = [(fans[k + 1], fans[k]) for k in range(n_hidden + 1)]  # {fan_out, fan_in}
        self.weights = None

    def param_slots(self):
        return list(enumerate(self.shapes))

    def bind(self, tensors):
        self.weights = [tensors[k] for k in range(len(self.shapes))]

    def forward(self, h):
        for k, w in enumerate(self.weights):
            last = k + 1 == len(self.weights)
            h = ACTIVATIONS[self.output_activation if last else self.activation](h @ w.T)
        return h

    def describe(self):
        widths = " -> ".join(str(s[1]) for s in self.shapes) + f" -> {self.shapes[-1][0]}"
        return f"{self.otype}({widths}, {self.activation}, output {self.output_activation})"


# --------------------------------------------------------------------------
# Tensor names -> slots. The C++ names encoding tensors
# "encoding.[nested<i>.]...level<NN>" (possibly with more components such as
# "grid." before the level): we key them by (nested indices, level) so any
# such spelling maps to the same slot.
# --------------------------------------------------------------------------

_LEVEL_RE = re.compile(r"^level(\d{2,})$")
_NESTED_RE = re.compile(r"^nested(\d+)$")
_LAYER_RE = re.compile(r"^network\.layers\.(\d+)\.weight$")


def _encoding_key(name):
    parts = name.split(".")
    if parts[0] != "encoding" or len(parts) < 2:
        return None
    level = _LEVEL_RE.match(parts[-1])
    if not level:
        return None
    scope = tuple(int(m.group(1)) for m in map(_NESTED_RE.match, parts[1:-1]) if m)
    return scope, int(level.group(1))


def _layer_key(name):
    m = _LAYER_RE.match(name)
    return int(m.group(1)) if m else None


def _slot_name(key):
    """How a slot key reads in messages: "nested1.level03", "layers.2.weight"."""
    if isinstance(key, int):
        return f"layers.{key}.weight"
    scope, level = key
    return "".join(f"nested{i}." for i in scope) + f"level{level:02d}"


def _match_by_key(path, tensors, slots, key_of, component):
    by_key = {}
    for name in tensors:
        key = key_of(name)
        if key is None:
            continue
        if key in by_key:
            raise WeightFileError(f"{path}: tensors \"{by_key[key]}\" and \"{name}\" both name {component} "
                                  f"parameter {_slot_name(key)}")
        by_key[key] = name
    bound = {}
    for key, shape in slots:
        if key not in by_key:
            raise WeightFileError(f"{path}: no {component} tensor for {_slot_name(key)} (expected shape "
                                  f"{list(shape)}); file has {list(tensors)}")
        name = by_key[key]
        if tuple(tensors[name].shape) != tuple(shape):
            raise WeightFileError(f"{path}: tensor \"{name}\" has shape {list(tensors[name].shape)}, "
                                  f"the config needs {list(shape)}")
        bound[key] = tensors[name]
    return bound


def _match_tensors(path, tensors, slots, key_of, component):
    """Maps each slot key to its file tensor, checking presence and shape.
    By name first; if the names do not resolve (a spelling this script does
    not know), by position: our writer stores tensors in layout order, so the
    component's tensors in file order are the slots in order, provided their
    count and every shape agree."""
    try:
        return _match_by_key(path, tensors, slots, key_of, component)
    except WeightFileError as by_name:
        candidates = [name for name in tensors if key_of(name) is not None]
        if len(candidates) != len(slots):
            raise WeightFileError(f"{by_name}; nor by position: the file has {len(candidates)} {component} "
                                  f"tensors, the config needs {len(slots)}") from None
        for name, (key, shape) in zip(candidates, slots):
            if tuple(tensors[name].shape) != tuple(shape):
                raise WeightFileError(f"{by_name}; nor by position: tensor \"{name}\" has shape "
                                      f"{list(tensors[name].shape)}, {_slot_name(key)} needs {list(shape)}") from None
        return {key: tensors[name] for name, (key, _) in zip(candidates, slots)}


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

class Model:
    """A loaded weight file. Call it on an (N, n_input_dims) array."""

    def __init__(self, path, tensors, dtypes, metadata):
        def get(key):
            if key not in metadata:
                raise WeightFileError(f"{path}: weight file metadata lacks \"{key}\"")
            return metadata[key]

        if get("fusedngp.format") != WEIGHTS_FORMAT:
            raise WeightFileError(f"{path}: not fusedngp weights (format \"{metadata['fusedngp.format']}\")")
        try:
            self.config = json.loads(get("config"))
            self.n_input_dims = int(get("n_input_dims"))
            self.n_output_dims = int(get("n_output_dims"))
        except ValueError as e:
            raise WeightFileError(f"{path}: weight file metadata is invalid ({e})") from None
        if not isinstance(self.config, dict) or "encoding" not in self.config or "network" not in self.config:
            raise WeightFileError(f"{path}: the stored config lacks an \"encoding\" or \"network\" section")
        self.path = path
        self.metadata = metadata
        self.tensors = tensors
        self.dtypes = dtypes
        self.mode = metadata.get("mode", "")
        self.encoding = _build_encoding(self.n_input_dims, self.config["encoding"], "encoding")
        self.network = _Mlp(self.encoding.n_output_dims, self.n_output_dims, self.config["network"])
        self.encoding.bind(_match_tensors(path, tensors, self.encoding.param_slots(), _encoding_key, "encoding"))
        self.network.bind(_match_tensors(path, tensors, self.network.param_slots(), _layer_key, "network"))

    def __call__(self, x):
        x = np.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.n_input_dims:
            raise ValueError(f"input must have shape (N, {self.n_input_dims}), got {x.shape}")
        if not np.issubdtype(x.dtype, np.number):
            raise ValueError(f"input must be numeric, got dtype {x.dtype}")
        x = np.ascontiguousarray(x, dtype=F32)  # the C++ model evaluates float inputs
        out = np.empty((x.shape[0], self.n_output_dims), F32)
        for begin in range(0, x.shape[0], CHUNK_ROWS):
            chunk = x[begin:begin + CHUNK_ROWS]
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # inf/NaN propagate as in C++
                out[begin:begin + CHUNK_ROWS] = self.network.forward(self.encoding.forward(chunk))
        return out

    def describe(self):
        lines = [f"file:       {self.path}",
                 f"mode:       {self.mode}",
                 f"inputs:     {self.n_input_dims}",
                 f"outputs:    {self.n_output_dims}",
                 f"encoding:   {self.encoding.describe()}",
                 f"network:    {self.network.describe()}",
                 f"parameters: {sum(t.size for t in self.tensors.values())} in {len(self.tensors)} tensors",
                 "tensors:"]
        width = max((len(n) for n in self.tensors), default=0)
        for name, t in self.tensors.items():
            lines.append(f"  {name:<{width}}  {self.dtypes[name]}  {list(t.shape)}")
        lines.append("config:")
        lines.append(json.dumps(self.config, indent=2))
        if self.metadata.get("mode_info"):
            lines.append("mode_info: " + self.metadata["mode_info"])
        return "\n".join(lines)


def load(path):
    """Reads a fusedngp weight file (.safetensors, F32 or F16)."""
    tensors, dtypes, metadata = read_safetensors(path)
    return Model(path, tensors, dtypes, metadata)


# --------------------------------------------------------------------------
# NeRF (weights written by `fusedngp export` from a NeRF snapshot): two
# models, the occupancy grid and the marcher of src/nerf/ray_marching_math.h,
# volume rendering as src/nerf/volume_rendering.h, all in float32.
# --------------------------------------------------------------------------

NERF_WEIGHTS_FORMAT = "nerf-weights-v1"
GRID_RES = 128
GRID_CELLS = GRID_RES ** 3
MAX_CASCADES = 8
SQRT3 = F32(1.7320508075688772)
MIN_STEP = SQRT3 / F32(1024)
MIN_TRANSMITTANCE = F32(1e-4)
DENSITY_OUTPUTS = 16


def _prefixed(tensors, prefix):
    return {name[len(prefix):]: t for name, t in tensors.items() if name.startswith(prefix)}


def _morton_spread7(v):
    r = np.zeros_like(v)
    for i in range(7):
        r |= ((v >> i) & 1) << (3 * i)
    return r


def _cascade_of(p):
    """The finest cascade holding each point (MAX_CASCADES where none does)."""
    m = np.max(np.abs(p - F32(0.5)), axis=1)
    k = np.zeros(len(p), np.int64)
    half = np.full(len(p), F32(0.5), F32)
    for _ in range(MAX_CASCADES):
        outside = ~(m <= half)
        k += outside
        half = np.where(outside, half * F32(2), half)
    return k


def _cell_of(p, k):
    scale = (np.int64(1) << np.minimum(k, MAX_CASCADES - 1)).astype(F32)[:, None]
    q = ((p - F32(0.5)) / scale + F32(0.5)) * F32(GRID_RES)
    return np.clip(np.floor(q).astype(np.int64), 0, GRID_RES - 1)


class _March:
    """The settings of one model's marcher (nerf_settings_from_config)."""

    def __init__(self, config, aabb_scale):
        sampling = config.get("sampling", {})
        self.n_cascades = int(round(math.log2(aabb_scale))) + 1
        self.cone_angle = F32(sampling.get("cone_angle", 0.0 if aabb_scale <= 1 else 1.0 / 256))
        self.max_samples = int(sampling.get("max_samples_per_ray", 1024))
        self.max_step = SQRT3 * F32(2 ** (self.n_cascades - 1)) / F32(GRID_RES)
        half = F32(0.5 * aabb_scale)
        self.lo, self.hi = F32(0.5) - half, F32(0.5) + half

    def step(self, t):
        return np.clip(t * self.cone_angle, MIN_STEP, self.max_step).astype(F32)

    def dt_cascade(self, dt):
        k = np.zeros(len(dt), np.int64)
        for _ in range(self.n_cascades - 1):
            k += (k < self.n_cascades - 1) & ((F32(2) ** k.astype(F32)) / F32(GRID_RES) < F32(2) * dt)
        return k


def _march(origin, direction, bits, m):
    """All rays at once, each exactly as march_ray: returns (ray, p, t, dt) of
    every sample, grouped by ray in marching order."""
    n = len(origin)
    safe = np.where(direction != 0, direction, F32(1e-30))
    inv = (F32(1) / safe).astype(F32)
    ta = (m.lo - origin) * inv
    tb = (m.hi - origin) * inv
    t0 = np.maximum(F32(0), np.max(np.minimum(ta, tb), axis=1))
    t1 = np.minimum(F32(3.4e38), np.min(np.maximum(ta, tb), axis=1))
    active = t0 <= t1
    t = (t0 + F32(0) * m.step(t0)).astype(F32)
    count = np.zeros(n, np.int64)
    skipping = np.zeros(n, bool)
    t_exit = np.zeros(n, F32)
    out = []
    while active.any():
        # Rays skipping an empty cell: one lattice step (do ... while t < t_exit).
        sk = np.nonzero(active & skipping)[0]
        if len(sk):
            t[sk] = t[sk] + m.step(t[sk])
            skipping[sk] = t[sk] < t_exit[sk]
        go = np.nonzero(active & ~skipping)[0]
        done = ~((t[go] <= t1[go]) & (count[go] < m.max_samples))
        active[go[done]] = False
        go = go[~done]
        if not len(go):
            continue
        tg = t[go]
        p = origin[go] + direction[go] * tg[:, None]
        dt = m.step(tg)
        kc = _cascade_of(p)
        k = np.where(kc >= m.n_cascades, kc, np.maximum(kc, m.dt_cascade(dt)))
        outside = k >= m.n_cascades
        cell = _cell_of(p, k)
        index = np.minimum(k, m.n_cascades - 1) * GRID_CELLS + (
            _morton_spread7(cell[:, 0]) | (_morton_spread7(cell[:, 1]) << 1) | (_morton_spread7(cell[:, 2]) << 2))
        occupied = ~outside & (((bits[index >> 3] >> (index & 7)) & 1) == 1)
        emit = outside | occupied
        e = go[occupied]
        out.append((e, p[occupied], tg[occupied], dt[occupied]))
        count[e] += 1
        t[go[emit]] = tg[emit] + dt[emit]
        # Empty cells: t_exit where the ray leaves the cell's box.
        s = ~emit
        gs, ks, cs, ps = go[s], k[s], cell[s], p[s]
        scale = (np.int64(1) << ks).astype(F32)[:, None]
        lo = F32(0.5) + (cs.astype(F32) / F32(GRID_RES) - F32(0.5)) * scale
        hi = lo + scale / F32(GRID_RES)
        face = np.where(direction[gs] >= 0, hi, lo)
        dist = np.maximum(np.min((face - ps) * inv[gs], axis=1), F32(0))
        t_exit[gs] = tg[s] + dist
        skipping[gs] = True
    if not out:
        return np.zeros(0, np.int64), np.zeros((0, 3), F32), np.zeros(0, F32), np.zeros(0, F32)
    ray = np.concatenate([o[0] for o in out])
    order = np.argsort(ray, kind="stable")  # iterations are in marching order per ray
    return (ray[order], np.concatenate([o[1] for o in out])[order], np.concatenate([o[2] for o in out])[order],
            np.concatenate([o[3] for o in out])[order])


def _camera_rays(cam):
    """Pixel-centre rays of a camera dict (camera_to_json's explicit form)."""
    w, h = int(cam["width"]), int(cam["height"])
    pos, fwd, right, up = (np.array(cam[k], F32) for k in ("position", "forward", "right", "up"))
    i = np.arange(w * h)
    px = (i % w).astype(F32) + F32(0.5)
    py = (i // w).astype(F32) + F32(0.5)
    dx = (px - F32(cam["cx"])) / F32(cam["fx"])
    dy = (py - F32(cam["cy"])) / F32(cam["fy"])
    d = (fwd + right * dx[:, None]) - up * dy[:, None]
    length = np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])  # dot() in order
    return np.repeat(pos[None, :], w * h, axis=0), (d / length[:, None]).astype(F32), w, h


class NerfModel:
    """A loaded NeRF weight file: render(camera dict, background) -> (H, W, 3)."""

    def __init__(self, path, tensors, metadata):
        if metadata.get("fusedngp.format") != NERF_WEIGHTS_FORMAT:
            raise WeightFileError(f"{path}: not fusedngp NeRF weights")
        try:
            self.config = json.loads(metadata["config"])
            self.scene = json.loads(metadata["scene"])
        except (KeyError, ValueError) as e:
            raise WeightFileError(f"{path}: NeRF metadata lacks or mangles {e}") from None
        cfg = self.config
        self.density_encoding = _build_encoding(3, cfg["encoding"], "encoding")
        self.density_network = _Mlp(self.density_encoding.n_output_dims, DENSITY_OUTPUTS, cfg["network"])
        self.colour_encoding = _build_encoding(3 + DENSITY_OUTPUTS, cfg["dir_encoding"], "dir_encoding")
        self.colour_network = _Mlp(self.colour_encoding.n_output_dims, 3, cfg["rgb_network"], "rgb_network")
        for prefix, enc, net in (("density.", self.density_encoding, self.density_network),
                                 ("colour.", self.colour_encoding, self.colour_network)):
            own = _prefixed(tensors, prefix)
            enc.bind(_match_tensors(path, own, enc.param_slots(), _encoding_key, prefix + "encoding"))
            net.bind(_match_tensors(path, own, net.param_slots(), _layer_key, prefix + "network"))
        self.march = _March(cfg, float(self.scene["aabb_scale"]))
        self.bits = tensors["occupancy.bits"].reshape(-1).astype(np.uint8)
        if len(self.bits) != self.march.n_cascades * GRID_CELLS // 8:
            raise WeightFileError(f"{path}: occupancy.bits has {len(self.bits)} bytes for "
                                  f"{self.march.n_cascades} cascades")

    def _fields(self, positions, dirs01):
        """sigma (N,) and rgb (N, 3) of the samples."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            raw = self.density_network.forward(self.density_encoding.forward(positions)).astype(F32)
            colour_in = np.concatenate([dirs01, raw], axis=1).astype(F32)
            c = self.colour_network.forward(self.colour_encoding.forward(colour_in)).astype(F32)
            return np.exp(raw[:, 0]), F32(1) / (F32(1) + np.exp(-c))

    def render(self, camera, background=(1.0, 1.0, 1.0)):
        origin, direction, w, h = _camera_rays(camera)
        ray, p, t, dt = _march(origin, direction, self.bits, self.march)
        bg = np.array(background, F32)
        rgb_out = np.zeros((len(origin), 3), F32)
        trans = np.ones(len(origin), F32)
        if len(ray):
            dirs01 = F32(0.5) * (direction[ray] + F32(1))
            sigma, rgb = self._fields(p, dirs01)
            # Sample j of every ray at once, front to back, with early termination.
            first = np.searchsorted(ray, np.arange(len(origin)))
            counts = np.bincount(ray, minlength=len(origin))
            for j in range(int(counts.max())):
                r = np.nonzero((counts > j) & (trans >= MIN_TRANSMITTANCE))[0]
                if not len(r):
                    break
                s = first[r] + j
                nxt = trans[r] * np.exp(-sigma[s] * dt[s])
                wgt = trans[r] - nxt
                rgb_out[r] += wgt[:, None] * rgb[s]
                trans[r] = nxt
        rgb_out += trans[:, None] * bg
        return rgb_out.reshape(h, w, 3)


def load_nerf(path):
    """Reads NeRF weights written by `fusedngp export`."""
    tensors, _, metadata = read_safetensors(path)
    return NerfModel(path, tensors, metadata)


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------

def _render_nerf_cli(args):
    if not args.out:
        print("fusedngp_reference: error: --camera needs --out OUT.npy", file=sys.stderr)
        return 2
    try:
        model = load_nerf(args.weights)
        with open(args.camera) as f:
            camera = json.load(f)
        background = [float(v) for v in args.background.split(",")]
        image = model.render(camera, background)
        np.save(args.out, np.ascontiguousarray(image.reshape(-1, 3), dtype="<f4"))
    except (OSError, ValueError, KeyError) as e:
        print(f"fusedngp_reference: error: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description="Evaluate fusedngp weights (.safetensors) with numpy.")
    parser.add_argument("weights", help="weight file written by `fusedngp export`")
    parser.add_argument("--inputs", help=".npy array of shape (N, n_input_dims)")
    parser.add_argument("--out", help=".npy file for the (N, n_output_dims) float32 outputs")
    parser.add_argument("--describe", action="store_true", help="print the tensors and the config")
    parser.add_argument("--camera", help="NeRF weights: render this camera file (explicit frame with fx, fy, cx, cy, "
                                         "width, height, as camera_to_json writes) to --out as (H*W, 3) float32")
    parser.add_argument("--background", default="1,1,1", help="NeRF: R,G,B in [0, 1] (default 1,1,1)")
    args = parser.parse_args(argv)
    if args.camera:
        return _render_nerf_cli(args)
    if not args.describe and not args.inputs:
        parser.error("give --inputs IN.npy --out OUT.npy, --describe, or (NeRF) --camera CAM.json --out OUT.npy")
    if bool(args.inputs) != bool(args.out):
        parser.error("--inputs and --out go together")
    try:
        model = load(args.weights)
        if args.describe:
            print(model.describe())
        if args.inputs:
            x = np.load(args.inputs, allow_pickle=False)
            y = model(x)
            np.save(args.out, np.ascontiguousarray(y, dtype="<f4"))
    except (OSError, ValueError) as e:  # WeightFileError and UnsupportedError are ValueErrors
        print(f"fusedngp_reference: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
