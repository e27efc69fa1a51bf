// Multi-resolution grid encoding (Mueller et al., "Instant Neural Graphics
// Primitives"): per level, a table of feature vectors at the vertices of a
// regular grid, looked up densely, by spatial hash, or tiled, and interpolated
// inside the cell containing the input. docs/ENCODINGS.md gives the exact
// arithmetic (the GPU and numpy ports reproduce it bit for bit).
#pragma once

#include "core/json_fields.h"
#include "encodings/encoding.h"

#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

enum class GridType { Hash, Dense, Tiled };
enum class GridInterpolation { Linear, Nearest, Smoothstep };

std::string grid_type_name(GridType type);               // "Hash", ...
std::string grid_interpolation_name(GridInterpolation i);  // "Linear", ...

struct GridOptions {
    GridType type = GridType::Hash;
    uint32_t n_levels = 16;
    uint32_t n_features_per_level = 2;  // 1, 2, 4 or 8
    uint32_t log2_hashmap_size = 19;    // 1..30
    uint32_t base_resolution = 16;
    double per_level_scale = 2.0;       // >= 1
    GridInterpolation interpolation = GridInterpolation::Linear;
};

// How a level maps a vertex to a table row.
enum class GridIndexing {
    Dense,  // c0 + c1*res + c2*res^2            (the whole grid fits)
    Tiled,  // dense over (c_i mod base_resolution)
    Hash,   // (c0 ^ c1*2654435761 ^ c2*805459861) mod 2^log2_hashmap_size
};

// Everything about one level, for `fusedngp info`, tests and the GPU port.
struct GridLevel {
    double scale = 0;         // exactly the value (of type T) the kernels use
    uint32_t resolution = 0;  // vertices per axis: ceil(scale) + 2
    uint32_t rows = 0;        // table rows (feature vectors)
    GridIndexing indexing = GridIndexing::Dense;
    size_t param_offset = 0;  // start of the level's block, in elements
    bool hashed() const { return indexing == GridIndexing::Hash; }
};

template <typename T>
class GridEncoding : public Encoding<T> {
public:
    // Limits that keep every index and coordinate in uint32 and every level
    // table addressable; exceeding them is a ConfigError naming `path.<field>`.
    static constexpr uint32_t kMaxResolution = 1u << 24;
    static constexpr uint64_t kMaxRowsPerLevel = 1ull << 30;

    GridEncoding(uint32_t n_dims, const GridOptions& options, const std::string& path = "encoding");

    std::string otype() const override;  // HashGrid, DenseGrid or TiledGrid
    uint32_t n_input_dims() const override { return n_dims_; }
    uint32_t n_output_dims() const override { return options_.n_levels * options_.n_features_per_level; }

    size_t n_params() const override { return n_params_; }
    std::vector<ParamTensor> param_layout() const override;
    void init_params(T* params, uint64_t seed) const override;

    void forward(const T* params, const Matrix<T>& in, Matrix<T>& out) const override;
    void backward(const T* params, const Matrix<T>& in, const Matrix<T>& dout, T* dparams,
                  Matrix<T>* din) const override;
    std::string describe() const override;

    const GridOptions& options() const { return options_; }
    const std::vector<GridLevel>& levels() const { return levels_; }
    // One line per level (scale, resolution, rows, indexing), for `fusedngp info`.
    std::string describe_levels() const;

    // The table row of grid vertex `vertex` (n_input_dims coordinates, each
    // < levels()[level].resolution) at `level`.
    uint32_t row_index(uint32_t level, const uint32_t* vertex) const;
    // The cell containing input point x (n_input_dims values, clamped to
    // [0,1]) at `level`: its lower vertex and the per-axis weight of the
    // upper vertex (after Smoothstep/Nearest shaping).
    void locate(uint32_t level, const T* x, uint32_t* lower_vertex, T* upper_weight) const;

private:
    uint32_t n_dims_;
    GridOptions options_;
    std::vector<GridLevel> levels_;
    std::vector<T> scales_;  // levels_[l].scale as T
    size_t n_params_ = 0;
};

// `otype` is the name used in the config: "Grid" reads the `type` field
// (Hash|Dense|Tiled, default Hash); "HashGrid", "DenseGrid" and "TiledGrid"
// imply the type and ignore `type`. Inputs must be 2D or 3D.
template <typename T>
std::unique_ptr<Encoding<T>> create_grid_encoding(uint32_t n_input_dims, const json& config, const std::string& path,
                                                  const std::string& otype);

} // namespace fusedngp
