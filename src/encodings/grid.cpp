#include "encodings/grid.h"

#include "core/rng.h"
#include "encodings/encoding_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>

namespace fusedngp {

std::string grid_type_name(GridType type) {
    switch (type) {
        case GridType::Hash: return "Hash";
        case GridType::Dense: return "Dense";
        case GridType::Tiled: return "Tiled";
    }
    return "?";
}

std::string grid_interpolation_name(GridInterpolation i) {
    switch (i) {
        case GridInterpolation::Linear: return "Linear";
        case GridInterpolation::Nearest: return "Nearest";
        case GridInterpolation::Smoothstep: return "Smoothstep";
    }
    return "?";
}

namespace {

constexpr uint32_t kHashPrime1 = 2654435761u;
constexpr uint32_t kHashPrime2 = 805459861u;

// Samples per work item: a thread walks all levels over one block, so each
// level's table is touched in bursts instead of 16 tables per sample.
constexpr int64_t kSampleBlock = 64;

// base^exponent, saturating at limit + 1 (res^3 can exceed 64 bits).
uint64_t saturating_pow(uint64_t base, uint32_t exponent, uint64_t limit) {
    uint64_t r = 1;
    for (uint32_t i = 0; i < exponent; ++i) {
        if (r > limit / base) return limit + 1;
        r *= base;
    }
    return r;
}

// What the per-sample kernels need about a level, in compact form.
struct LevelIndex {
    GridIndexing indexing;
    uint32_t stride;  // res (Dense) or base_resolution (Tiled)
    uint32_t mask;    // rows - 1 (Hash; rows is a power of two)
};

template <int D>
inline uint32_t vertex_row(const LevelIndex& ix, const uint32_t* v) {
    switch (ix.indexing) {
        case GridIndexing::Hash: {
            uint32_t h = v[0] ^ (v[1] * kHashPrime1);
            if constexpr (D == 3) h ^= v[2] * kHashPrime2;
            return h & ix.mask;
        }
        case GridIndexing::Tiled: {
            uint32_t row = v[0] % ix.stride + (v[1] % ix.stride) * ix.stride;
            if constexpr (D == 3) row += (v[2] % ix.stride) * ix.stride * ix.stride;
            return row;
        }
        case GridIndexing::Dense:
        default: {
            uint32_t row = v[0] + v[1] * ix.stride;
            if constexpr (D == 3) row += v[2] * ix.stride * ix.stride;
            return row;
        }
    }
}

// Clamp to [0,1]; NaN becomes 0. `inside` is false when the clamp changed
// the value (or it was NaN): the output is then flat in that coordinate.
template <typename T>
inline T clamp_unit(T x, bool& inside) {
    inside = (x >= T(0) && x <= T(1));
    return x >= T(0) ? (x <= T(1) ? x : T(1)) : T(0);
}

// The cell of one sample at one level.
template <typename T, int D>
struct Cell {
    uint32_t lower[D];  // lower vertex
    T w[D];             // weight of the upper vertex per axis (shaped)
    T dw[D];            // d w / d p per axis; 0 for Nearest and clamped axes
};

template <typename T, int D>
inline void locate_cell(const T* x, T scale, GridInterpolation interp, Cell<T, D>& cell) {
    for (int i = 0; i < D; ++i) {
        bool inside;
        const T xc = clamp_unit(x[i], inside);
        const T p = xc * scale + T(0.5);
        const T c = std::floor(p);
        const T w = p - c;
        cell.lower[i] = (uint32_t)c;
        T shaped = w, slope = T(1);  // Linear
        if (interp == GridInterpolation::Smoothstep) {
            shaped = w * w * (T(3) - T(2) * w);
            slope = T(6) * w * (T(1) - w);
        } else if (interp == GridInterpolation::Nearest) {
            shaped = w >= T(0.5) ? T(1) : T(0);
            slope = T(0);
        }
        cell.w[i] = shaped;
        cell.dw[i] = inside ? slope : T(0);
    }
}

// Corner k of a cell: bit i of k picks the upper vertex along axis i.
template <typename T, int D>
inline T corner_weight(const Cell<T, D>& cell, int k, uint32_t* vertex) {
    T weight = T(1);
    for (int i = 0; i < D; ++i) {
        const bool upper = (k >> i) & 1;
        vertex[i] = cell.lower[i] + (upper ? 1u : 0u);
        weight *= upper ? cell.w[i] : T(1) - cell.w[i];
    }
    return weight;
}

// Read-only view of a grid the kernels share.
template <typename T>
struct GridView {
    uint32_t n_dims;
    uint32_t n_features;
    GridInterpolation interpolation;
    const std::vector<GridLevel>* levels;
    const std::vector<T>* scales;
    std::vector<LevelIndex> index;
};

// Row and weight of every corner of every sample in a block, at one level.
// Computing them first and prefetching the rows lets the table reads of a
// whole block be in flight together: hashed levels are megabytes of random
// access, so this is what bounds the speed.
template <typename T, int D>
struct BlockCorners {
    static constexpr int kCorners = 1 << D;
    Cell<T, D> cell[kSampleBlock];
    uint32_t row[kSampleBlock][kCorners];
    T weight[kSampleBlock][kCorners];
};

template <typename T, int D, int F>
void locate_block(const GridView<T>& g, uint32_t level, const T* table, const Matrix<T>& in, int64_t begin,
                  int64_t end, BlockCorners<T, D>& bc) {
    const T scale = (*g.scales)[level];
    const LevelIndex ix = g.index[level];
    for (int64_t s = begin; s < end; ++s) {
        const int64_t j = s - begin;
        locate_cell<T, D>(in.data() + s * D, scale, g.interpolation, bc.cell[j]);
        for (int k = 0; k < BlockCorners<T, D>::kCorners; ++k) {
            uint32_t vertex[D];
            bc.weight[j][k] = corner_weight(bc.cell[j], k, vertex);
            bc.row[j][k] = vertex_row<D>(ix, vertex);
#if defined(__GNUC__)
            __builtin_prefetch(table + (size_t)bc.row[j][k] * F);
#endif
        }
    }
    (void)table;
}

template <typename T, int D, int F>
void forward_kernel(const GridView<T>& g, const T* params, const Matrix<T>& in, Matrix<T>& out) {
    const int64_t batch = in.rows();
    const uint32_t n_levels = (uint32_t)g.levels->size();
    const int64_t n_out = (int64_t)n_levels * F;
    const int64_t n_blocks = (batch + kSampleBlock - 1) / kSampleBlock;
#pragma omp parallel for schedule(static) if (n_blocks > 1)
    for (int64_t b = 0; b < n_blocks; ++b) {
        const int64_t begin = b * kSampleBlock, end = std::min(batch, begin + kSampleBlock);
        BlockCorners<T, D> bc;
        for (uint32_t l = 0; l < n_levels; ++l) {
            const T* table = params + (*g.levels)[l].param_offset;
            locate_block<T, D, F>(g, l, table, in, begin, end, bc);
            for (int64_t s = begin; s < end; ++s) {
                const int64_t j = s - begin;
                T acc[F] = {};
                for (int k = 0; k < BlockCorners<T, D>::kCorners; ++k) {
                    const T* feature = table + (size_t)bc.row[j][k] * F;
                    for (int f = 0; f < F; ++f) acc[f] += bc.weight[j][k] * feature[f];
                }
                T* y = out.data() + s * n_out + (int64_t)l * F;
                for (int f = 0; f < F; ++f) y[f] = acc[f];
            }
        }
    }
}

// dL/dparams. Levels own disjoint blocks, so levels run in parallel while
// each level adds its samples in batch order: the result is bit-identical
// for any thread count.
template <typename T, int D, int F>
void param_gradient_kernel(const GridView<T>& g, const Matrix<T>& in, const Matrix<T>& dout, T* dparams) {
    const int64_t batch = in.rows();
    const int64_t n_levels = (int64_t)g.levels->size();
    const int64_t n_out = n_levels * F;
#pragma omp parallel for schedule(static, 1) if (batch > kSampleBlock)
    for (int64_t l = 0; l < n_levels; ++l) {
        T* grad_table = dparams + (*g.levels)[l].param_offset;
        BlockCorners<T, D> bc;
        for (int64_t begin = 0; begin < batch; begin += kSampleBlock) {
            const int64_t end = std::min(batch, begin + kSampleBlock);
            locate_block<T, D, F>(g, (uint32_t)l, grad_table, in, begin, end, bc);
            for (int64_t s = begin; s < end; ++s) {
                const int64_t j = s - begin;
                const T* gy = dout.data() + s * n_out + l * F;
                for (int k = 0; k < BlockCorners<T, D>::kCorners; ++k) {
                    T* grad_feature = grad_table + (size_t)bc.row[j][k] * F;
                    for (int f = 0; f < F; ++f) grad_feature[f] += bc.weight[j][k] * gy[f];
                }
            }
        }
    }
}

// dL/dx: per sample, levels in ascending order.
template <typename T, int D, int F>
void input_gradient_kernel(const GridView<T>& g, const T* params, const Matrix<T>& in, const Matrix<T>& dout,
                           Matrix<T>& din) {
    const int64_t batch = in.rows();
    const uint32_t n_levels = (uint32_t)g.levels->size();
    const int64_t n_out = (int64_t)n_levels * F;
    din.setZero(batch, D);
    const int64_t n_blocks = (batch + kSampleBlock - 1) / kSampleBlock;
#pragma omp parallel for schedule(static) if (n_blocks > 1)
    for (int64_t b = 0; b < n_blocks; ++b) {
        const int64_t begin = b * kSampleBlock, end = std::min(batch, begin + kSampleBlock);
        BlockCorners<T, D> bc;
        for (uint32_t l = 0; l < n_levels; ++l) {
            const T* table = params + (*g.levels)[l].param_offset;
            const T scale = (*g.scales)[l];
            locate_block<T, D, F>(g, l, table, in, begin, end, bc);
            for (int64_t s = begin; s < end; ++s) {
                const int64_t j = s - begin;
                const Cell<T, D>& cell = bc.cell[j];
                const T* gy = dout.data() + s * n_out + (int64_t)l * F;
                T grad_p[D] = {};  // dL/dp at this level
                for (int k = 0; k < BlockCorners<T, D>::kCorners; ++k) {
                    const T* feature = table + (size_t)bc.row[j][k] * F;
                    T dl_dweight = T(0);
                    for (int f = 0; f < F; ++f) dl_dweight += gy[f] * feature[f];
                    for (int i = 0; i < D; ++i) {
                        // d weight / d p_i: axis i's factor differentiated, the others kept.
                        T dweight = ((k >> i) & 1) ? cell.dw[i] : -cell.dw[i];
                        for (int a = 0; a < D; ++a) {
                            if (a != i) dweight *= ((k >> a) & 1) ? cell.w[a] : T(1) - cell.w[a];
                        }
                        grad_p[i] += dl_dweight * dweight;
                    }
                }
                T* gx = din.data() + s * D;
                for (int i = 0; i < D; ++i) gx[i] += scale * grad_p[i];
            }
        }
    }
}

// Calls fn(integral_constant<D>, integral_constant<F>) for the runtime pair.
template <typename Fn>
void dispatch_shape(uint32_t n_dims, uint32_t n_features, Fn&& fn) {
    auto with_dims = [&](auto dims) {
        switch (n_features) {
            case 1: fn(dims, std::integral_constant<int, 1>{}); break;
            case 2: fn(dims, std::integral_constant<int, 2>{}); break;
            case 4: fn(dims, std::integral_constant<int, 4>{}); break;
            case 8: fn(dims, std::integral_constant<int, 8>{}); break;
            default: throw std::logic_error("Grid: unsupported n_features_per_level");
        }
    };
    if (n_dims == 2) {
        with_dims(std::integral_constant<int, 2>{});
    } else if (n_dims == 3) {
        with_dims(std::integral_constant<int, 3>{});
    } else {
        throw std::logic_error("Grid: unsupported input dimension");
    }
}

LevelIndex level_index(const GridOptions& o, const GridLevel& lv) {
    const uint32_t stride = lv.indexing == GridIndexing::Tiled ? o.base_resolution : lv.resolution;
    return {lv.indexing, stride, lv.rows - 1};
}

template <typename T>
GridView<T> make_view(uint32_t n_dims, const GridOptions& o, const std::vector<GridLevel>& levels,
                      const std::vector<T>& scales) {
    GridView<T> v{n_dims, o.n_features_per_level, o.interpolation, &levels, &scales, {}};
    for (const auto& lv : levels) v.index.push_back(level_index(o, lv));
    return v;
}

} // namespace

template <typename T>
GridEncoding<T>::GridEncoding(uint32_t n_dims, const GridOptions& options, const std::string& path)
    : n_dims_(n_dims), options_(options) {
    if (n_dims_ != 2 && n_dims_ != 3) throw std::invalid_argument("Grid: n_dims must be 2 or 3");
    const uint64_t hash_rows = 1ull << options_.log2_hashmap_size;
    const double log2_scale = std::log2(options_.per_level_scale);
    for (uint32_t l = 0; l < options_.n_levels; ++l) {
        GridLevel lv;
        const double scale = options_.base_resolution * std::exp2(l * log2_scale) - 1.0;
        const T scale_t = (T)scale;
        lv.scale = (double)scale_t;
        // ceil of the double value: the same layout for float and double, and
        // never smaller than ceil of the rounded value, so indices stay in range.
        const double res = std::ceil(scale) + 2.0;
        if (!(res <= kMaxResolution)) {
            throw ConfigError(join_path(path, l == 0 ? "base_resolution" : "n_levels"),
                              "level " + std::to_string(l) + " would have " + format_number(res) +
                                  " vertices per axis, more than the limit 2^24; lower n_levels, "
                                  "base_resolution or per_level_scale");
        }
        lv.resolution = (uint32_t)res;
        const uint64_t full_rows = saturating_pow(lv.resolution, n_dims_, kMaxRowsPerLevel);
        switch (options_.type) {
            case GridType::Dense:
                if (full_rows > kMaxRowsPerLevel) {
                    throw ConfigError(join_path(path, "n_levels"),
                                      "dense level " + std::to_string(l) + " (resolution " +
                                          std::to_string(lv.resolution) +
                                          ") needs more than 2^30 rows; use type Hash, or lower n_levels, "
                                          "base_resolution or per_level_scale");
                }
                lv.rows = (uint32_t)full_rows;
                lv.indexing = GridIndexing::Dense;
                break;
            case GridType::Hash:
                lv.rows = (uint32_t)std::min(full_rows, hash_rows);
                lv.indexing = full_rows <= hash_rows ? GridIndexing::Dense : GridIndexing::Hash;
                break;
            case GridType::Tiled: {
                const uint64_t tile_rows = saturating_pow(options_.base_resolution, n_dims_, kMaxRowsPerLevel);
                if (tile_rows > kMaxRowsPerLevel) {
                    throw ConfigError(join_path(path, "base_resolution"),
                                      "a tiled level needs base_resolution^" + std::to_string(n_dims_) +
                                          " rows, more than 2^30");
                }
                lv.rows = (uint32_t)tile_rows;
                lv.indexing = GridIndexing::Tiled;
                break;
            }
        }
        lv.param_offset = n_params_;
        n_params_ += (size_t)lv.rows * options_.n_features_per_level;
        levels_.push_back(lv);
        scales_.push_back(scale_t);
    }
}

template <typename T>
std::string GridEncoding<T>::otype() const {
    return grid_type_name(options_.type) + "Grid";
}

template <typename T>
std::vector<ParamTensor> GridEncoding<T>::param_layout() const {
    std::vector<ParamTensor> layout;
    for (size_t l = 0; l < levels_.size(); ++l) {
        char name[32];
        std::snprintf(name, sizeof(name), "grid.level%02zu", l);
        ParamTensor t;
        t.name = name;
        t.offset = levels_[l].param_offset;
        t.shape = {levels_[l].rows, options_.n_features_per_level};
        t.row_size = options_.n_features_per_level;
        layout.push_back(t);
    }
    return layout;
}

template <typename T>
void GridEncoding<T>::init_params(T* params, uint64_t seed) const {
    Rng rng(seed);
    for (size_t i = 0; i < n_params_; ++i) params[i] = rng.uniform<T>(T(-1e-4), T(1e-4));
}

template <typename T>
void GridEncoding<T>::forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const {
    require_input_width(in, n_dims_, otype());
    out.resize(in.rows(), n_output_dims());
    const GridView<T> view = make_view(n_dims_, options_, levels_, scales_);
    dispatch_shape(n_dims_, options_.n_features_per_level, [&](auto dims, auto features) {
        forward_kernel<T, decltype(dims)::value, decltype(features)::value>(view, params, in, out);
    });
}

template <typename T>
void GridEncoding<T>::backward(const T* params, const Matrix<T>& in, const Matrix<T>& dout, T* dparams,
                               Matrix<T>* din) const {
    require_input_width(in, n_dims_, otype());
    require_same_shape(in, dout, n_output_dims(), otype());
    const GridView<T> view = make_view(n_dims_, options_, levels_, scales_);
    dispatch_shape(n_dims_, options_.n_features_per_level, [&](auto dims, auto features) {
        constexpr int D = decltype(dims)::value;
        constexpr int F = decltype(features)::value;
        if (dparams) param_gradient_kernel<T, D, F>(view, in, dout, dparams);
        if (din) {
            if (options_.interpolation == GridInterpolation::Nearest) {
                din->setZero(in.rows(), n_dims_);  // piecewise constant in x
            } else {
                input_gradient_kernel<T, D, F>(view, params, in, dout, *din);
            }
        }
    });
}

template <typename T>
uint32_t GridEncoding<T>::row_index(uint32_t level, const uint32_t* vertex) const {
    const LevelIndex ix = level_index(options_, levels_.at(level));
    return n_dims_ == 2 ? vertex_row<2>(ix, vertex) : vertex_row<3>(ix, vertex);
}

template <typename T>
void GridEncoding<T>::locate(uint32_t level, const T* x, uint32_t* lower_vertex, T* upper_weight) const {
    auto copy_out = [&](const auto& cell) {
        for (uint32_t i = 0; i < n_dims_; ++i) {
            lower_vertex[i] = cell.lower[i];
            upper_weight[i] = cell.w[i];
        }
    };
    const T scale = scales_.at(level);
    if (n_dims_ == 2) {
        Cell<T, 2> cell;
        locate_cell<T, 2>(x, scale, options_.interpolation, cell);
        copy_out(cell);
    } else {
        Cell<T, 3> cell;
        locate_cell<T, 3>(x, scale, options_.interpolation, cell);
        copy_out(cell);
    }
}

template <typename T>
std::string GridEncoding<T>::describe() const {
    return otype() + "(" + std::to_string(n_dims_) + "D, " + std::to_string(options_.n_levels) + " levels x " +
           std::to_string(options_.n_features_per_level) + " features, base_resolution " +
           std::to_string(options_.base_resolution) + ", per_level_scale " +
           format_number(options_.per_level_scale) +
           (options_.type == GridType::Hash ? ", log2_hashmap_size " + std::to_string(options_.log2_hashmap_size)
                                            : std::string()) +
           ", " + grid_interpolation_name(options_.interpolation) + "; " + std::to_string(n_params_) + " params)";
}

template <typename T>
std::string GridEncoding<T>::describe_levels() const {
    std::string text;
    for (size_t l = 0; l < levels_.size(); ++l) {
        const GridLevel& lv = levels_[l];
        const char* indexing = lv.indexing == GridIndexing::Hash ? "hash" : lv.indexing == GridIndexing::Tiled ? "tiled" : "dense";
        char line[160];
        std::snprintf(line, sizeof(line), "level%02zu  scale %.6g  resolution %u  rows %u  %s\n", l, lv.scale,
                      lv.resolution, lv.rows, indexing);
        text += line;
    }
    return text;
}

template <typename T>
std::unique_ptr<Encoding<T>> create_grid_encoding(uint32_t n_input_dims, const json& config, const std::string& path,
                                                  const std::string& otype) {
    require_encoding_input_dims(config, path, otype, n_input_dims, {2, 3});
    GridOptions o;
    if (equals_ignore_case(otype, "HashGrid")) {
        o.type = GridType::Hash;
    } else if (equals_ignore_case(otype, "DenseGrid")) {
        o.type = GridType::Dense;
    } else if (equals_ignore_case(otype, "TiledGrid")) {
        o.type = GridType::Tiled;
    } else {
        const std::string type = match_choice(get_string(config, path, "type", "Hash"), {"Hash", "Dense", "Tiled"},
                                              join_path(path, "type"));
        o.type = type == "Dense" ? GridType::Dense : type == "Tiled" ? GridType::Tiled : GridType::Hash;
    }
    o.n_levels = get_size(config, path, "n_levels", 16);
    o.n_features_per_level = get_size(config, path, "n_features_per_level", 2);
    const uint32_t F = o.n_features_per_level;
    if (F != 1 && F != 2 && F != 4 && F != 8) {
        throw ConfigError(join_path(path, "n_features_per_level"),
                          "is " + std::to_string(F) + ", allowed values: 1, 2, 4, 8");
    }
    o.log2_hashmap_size = (uint32_t)get_int(config, path, "log2_hashmap_size", 19, 1, 30);
    o.base_resolution = get_size(config, path, "base_resolution", 16);
    o.per_level_scale = get_number(config, path, "per_level_scale", 2.0);
    if (o.per_level_scale < 1.0) {
        throw ConfigError(join_path(path, "per_level_scale"),
                          "is " + format_number(o.per_level_scale) + ", must be >= 1");
    }
    const std::string interpolation = match_choice(get_string(config, path, "interpolation", "Linear"),
                                                   {"Linear", "Nearest", "Smoothstep"},
                                                   join_path(path, "interpolation"));
    o.interpolation = interpolation == "Nearest"      ? GridInterpolation::Nearest
                      : interpolation == "Smoothstep" ? GridInterpolation::Smoothstep
                                                      : GridInterpolation::Linear;
    return std::make_unique<GridEncoding<T>>(n_input_dims, o, path);
}

template class GridEncoding<float>;
template class GridEncoding<double>;
template std::unique_ptr<Encoding<float>> create_grid_encoding<float>(uint32_t, const json&, const std::string&,
                                                                      const std::string&);
template std::unique_ptr<Encoding<double>> create_grid_encoding<double>(uint32_t, const json&, const std::string&,
                                                                        const std::string&);

} // namespace fusedngp
