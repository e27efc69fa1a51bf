#include "encodings/factory.h"

#include "encodings/composite.h"
#include "encodings/frequency.h"
#include "encodings/grid.h"
#include "encodings/identity.h"
#include "encodings/one_blob.h"
#include "encodings/spherical_harmonics.h"
#include "encodings/triangle_wave.h"

namespace fusedngp {

template <typename T>
std::unique_ptr<Encoding<T>> create_encoding(uint32_t n_input_dims, const json& config, const std::string& path) {
    const std::string otype =
        match_choice(get_otype(config, path),
                     {"Composite", "Identity", "Frequency", "TriangleWave", "OneBlob", "SphericalHarmonics", "Grid",
                      "HashGrid", "DenseGrid", "TiledGrid"},
                     join_path(path, "otype"));
    if (n_input_dims == 0) throw ConfigError(path, "an encoding needs at least one input dim, got 0");

    if (otype == "Composite") return create_composite_encoding<T>(n_input_dims, config, path);
    if (otype == "Identity") return create_identity_encoding<T>(n_input_dims, config, path);
    if (otype == "Frequency") return create_frequency_encoding<T>(n_input_dims, config, path);
    if (otype == "TriangleWave") return create_triangle_wave_encoding<T>(n_input_dims, config, path);
    if (otype == "OneBlob") return create_one_blob_encoding<T>(n_input_dims, config, path);
    if (otype == "SphericalHarmonics") return create_spherical_harmonics_encoding<T>(n_input_dims, config, path);
    return create_grid_encoding<T>(n_input_dims, config, path, otype);
}

template std::unique_ptr<Encoding<float>> create_encoding<float>(uint32_t, const json&, const std::string&);
template std::unique_ptr<Encoding<double>> create_encoding<double>(uint32_t, const json&, const std::string&);

} // namespace fusedngp
