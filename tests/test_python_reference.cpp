// python/fusedngp_reference.py (the numpy evaluator of exported weights)
// against Model<float>::inference: export a model with random parameters,
// evaluate the same points in C++ and, via /usr/bin/python3, in numpy.
#include "core/rng.h"
#include "encodings/grid.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "persist/weights.h"

#include "cli_runner.h"
#include "nerf_persist_scene.h"
#include "persist/nerf_snapshot.h"
#include "render/camera_io.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

using namespace fusedngp;
using fusedngp::test::make_temp_dir;
using fusedngp::test::read_text;

namespace {

const std::string kPython = "/usr/bin/python3";
const std::string kScript = std::string(FUSEDNGP_SOURCE_DIR) + "/python/fusedngp_reference.py";
constexpr int kPoints = 1000;

// ---- .npy (version 1.0, '<f4', C order, 2-D) -------------------------------

void write_npy(const std::string& path, const Matrix<float>& m) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(m.rows()) + ", " +
                         std::to_string(m.cols()) + "), }";
    // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += (char)(header.size() & 0xff);
    bytes += (char)(header.size() >> 8);
    bytes += header;
    for (Eigen::Index i = 0; i < m.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, m.data() + i, 4);
        for (int b = 0; b < 4; ++b) bytes += (char)((u >> (8 * b)) & 0xff);  // little-endian on any host
    }
    std::ofstream(path, std::ios::binary).write(bytes.data(), (std::streamsize)bytes.size());
}

// Reads what np.save writes for a C-order float32 2-D array.
Matrix<float> read_npy(const std::string& path) {
    const std::string bytes = read_text(path);
    if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + ": not .npy");
    const auto byte = [&](size_t i) { return (size_t)(uint8_t)bytes[i]; };
    const int major = (int)byte(6);
    size_t header_len = byte(8) | byte(9) << 8, data_start = 10 + header_len;
    if (major >= 2) {
        header_len |= byte(10) << 16 | byte(11) << 24;
        data_start = 12 + header_len;
    }
    const std::string header = bytes.substr(data_start - header_len, header_len);
    std::smatch shape;
    if (header.find("'descr': '<f4'") == std::string::npos ||
        header.find("'fortran_order': False") == std::string::npos ||
        !std::regex_search(header, shape, std::regex(R"('shape': \((\d+), (\d+)\))"))) {
        throw std::runtime_error(path + ": expected a 2-D '<f4' C-order array, header " + header);
    }
    Matrix<float> m(std::stol(shape[1]), std::stol(shape[2]));
    if (bytes.size() != data_start + 4 * (size_t)m.size()) throw std::runtime_error(path + ": wrong data size");
    for (Eigen::Index i = 0; i < m.size(); ++i) {
        uint32_t u = 0;
        for (int b = 0; b < 4; ++b) u |= (uint32_t)byte(data_start + 4 * (size_t)i + (size_t)b) << (8 * b);
        std::memcpy(m.data() + i, &u, 4);
    }
    return m;
}

// ---- running the script --------------------------------------------------------

struct PythonResult {
    int exit_code = -1;
    std::string out, err;
};

PythonResult run_python(const std::string& args) {
    const auto dir = make_temp_dir("pyref_run");
    const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
    const std::string cmd = kPython + " " + args + " >'" + out + "' 2>'" + err + "' </dev/null";
    const int status = std::system(cmd.c_str());
    PythonResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_text(out);
    r.err = read_text(err);
    std::filesystem::remove_all(dir);
    return r;
}

// numpy is a declared dependency: a missing one is a failure, not a skip.
testing::AssertionResult numpy_available() {
    static const int exit_code = run_python("-c 'import numpy'").exit_code;
    if (exit_code == 0) return testing::AssertionSuccess();
    return testing::AssertionFailure() << kPython << " cannot import numpy (python3-numpy is a declared dependency): "
                                       << "run scripts/install-deps";
}

std::string shell_quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

// Runs the CLI on `weights` and returns its outputs for `inputs`.
Matrix<float> python_outputs(const std::filesystem::path& weights, const Matrix<float>& inputs) {
    const auto dir = make_temp_dir("pyref_io");
    write_npy((dir / "in.npy").string(), inputs);
    const PythonResult r = run_python(shell_quoted(kScript) + " " + shell_quoted(weights) + " --inputs " +
                                      shell_quoted(dir / "in.npy") + " --out " + shell_quoted(dir / "out.npy"));
    if (r.exit_code != 0) {
        throw std::runtime_error("fusedngp_reference.py failed (exit " + std::to_string(r.exit_code) + "): " + r.err);
    }
    Matrix<float> out = read_npy((dir / "out.npy").string());
    std::filesystem::remove_all(dir);
    return out;
}

// ---- models ---------------------------------------------------------------------

// Encoding parameters uniform in [-0.1, 0.1]: far larger than the 1e-4 init,
// so the grid features dominate the outputs and any lookup error shows.
// Network weights keep their Xavier init (already of realistic size).
void randomise_encoding(Model<float>& model, uint64_t seed) {
    Rng rng(seed);
    for (size_t i = 0; i < model.n_encoding_params(); ++i) model.params()[i] = rng.uniform<float>(-0.1f, 0.1f);
}

// Points in [-0.05, 1.05]^n (grids clamp the margin), plus the corners of
// the unit cube in the first rows (cells at the grid's faces).
Matrix<float> random_points(int n, uint32_t dims, uint64_t seed) {
    Rng rng(seed);
    Matrix<float> x(n, dims);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = rng.uniform<float>(-0.05f, 1.05f);
    for (int r = 0; r < 4 && r < n; ++r) {
        for (uint32_t d = 0; d < dims; ++d) x(r, d) = (float)((r >> (d % 2)) & 1);
    }
    return x;
}

ModelDescription describe_model(const json& config, uint32_t n_in, uint32_t n_out) {
    ModelDescription desc;
    desc.config = config;
    desc.mode = "test";
    desc.n_input_dims = n_in;
    desc.n_output_dims = n_out;
    desc.mode_info = json::object();
    return desc;
}

float max_abs_difference(const Matrix<float>& a, const Matrix<float>& b) {
    return (a - b).cwiseAbs().maxCoeff();
}

struct ReferenceCase {
    std::string name;
    uint32_t n_input_dims;
    uint32_t n_output_dims;
    const char* config;
};

// So gtest names a failing case by its name instead of dumping its bytes.
void PrintTo(const ReferenceCase& c, std::ostream* os) { *os << c.name; }

const std::vector<ReferenceCase>& reference_cases() {
    static const std::vector<ReferenceCase> cases = {
        // Levels 0-2 dense (17^2, 33^2, 65^2 <= 2^14 rows), 3-7 hashed.
        {"HashGrid2D", 2, 3, R"({
            "encoding": {"otype": "HashGrid", "n_levels": 8, "n_features_per_level": 2,
                         "log2_hashmap_size": 14, "base_resolution": 16, "per_level_scale": 2.0},
            "network": {"otype": "FullyFusedMLP", "n_neurons": 64, "n_hidden_layers": 2,
                        "activation": "ReLU", "output_activation": "None"}})"},
        {"Frequency3D", 3, 4, R"({
            "encoding": {"otype": "Frequency", "n_frequencies": 10},
            "network": {"otype": "CutlassMLP", "n_neurons": 32, "n_hidden_layers": 3,
                        "activation": "ReLU", "output_activation": "Sigmoid"}})"},
        // 3 + 3 + 1 + 1 + rest 2 = 10 inputs.
        {"CompositeDenseSmoothstepShOneBlobTriangleIdentity", 10, 3, R"({
            "encoding": {"otype": "Composite", "nested": [
                {"otype": "DenseGrid", "n_dims_to_encode": 3, "n_levels": 4, "n_features_per_level": 4,
                 "base_resolution": 4, "per_level_scale": 1.5, "interpolation": "Smoothstep"},
                {"otype": "SphericalHarmonics", "n_dims_to_encode": 3, "degree": 8},
                {"otype": "OneBlob", "n_dims_to_encode": 1, "n_bins": 12},
                {"otype": "TriangleWave", "n_dims_to_encode": 1, "n_frequencies": 6},
                {"otype": "Identity", "scale": 0.5, "offset": 0.25}]},
            "network": {"otype": "MLP", "n_neurons": 48, "n_hidden_layers": 2,
                        "activation": "SiLU", "output_activation": "Softplus"}})"},
        // Tiled 2D with 8 features, and a 3D hash grid with Nearest lookups
        // whose finer levels are hashed (odd per_level_scale).
        {"CompositeTiledAndHashNearest", 5, 2, R"({
            "encoding": {"otype": "Composite", "nested": [
                {"otype": "TiledGrid", "n_dims_to_encode": 2, "n_levels": 3, "n_features_per_level": 8,
                 "base_resolution": 8, "per_level_scale": 1.7},
                {"otype": "Grid", "type": "hash", "n_levels": 6, "n_features_per_level": 1,
                 "log2_hashmap_size": 12, "base_resolution": 6, "per_level_scale": 1.38,
                 "interpolation": "nearest"}]},
            "network": {"otype": "CublasMLP", "n_neurons": 16, "n_hidden_layers": 1,
                        "activation": "Tanh", "output_activation": "Squareplus"}})"},
        {"IdentityLeakyReluExponential", 4, 2, R"({
            "encoding": {"otype": "Identity"},
            "network": {"otype": "Auto", "n_neurons": 24, "n_hidden_layers": 2,
                        "activation": "LeakyReLU", "output_activation": "Exponential"}})"},
        {"TriangleWaveSineNoHiddenLayer", 2, 5, R"({
            "encoding": {"otype": "TriangleWave", "n_frequencies": 8},
            "network": {"otype": "CPU", "n_neurons": 8, "n_hidden_layers": 0,
                        "activation": "Sine", "output_activation": "Sine"}})"},
        {"FrequencySineHidden", 1, 1, R"({
            "encoding": {"otype": "Frequency", "n_frequencies": 4},
            "network": {"otype": "MLP", "n_neurons": 16, "n_hidden_layers": 2,
                        "activation": "Sine", "output_activation": "None"}})"},
    };
    return cases;
}

struct ExportedModel {
    std::unique_ptr<Model<float>> model;
    std::filesystem::path weights;
    Matrix<float> inputs;
    Matrix<float> outputs;  // Model<float>::inference on `inputs`
};

ExportedModel export_case(const ReferenceCase& c, TensorDtype dtype, const std::filesystem::path& dir) {
    const json config = json::parse(c.config);
    ExportedModel e;
    e.model = std::make_unique<Model<float>>(c.n_input_dims, c.n_output_dims, config, 7);
    randomise_encoding(*e.model, 11);
    e.weights = dir / ("weights_" + c.name + ".safetensors");
    export_weights(e.weights.string(), describe_model(config, c.n_input_dims, c.n_output_dims), *e.model,
                   e.model->params(), dtype);
    e.inputs = random_points(kPoints, c.n_input_dims, 13);
    e.model->inference(e.inputs, e.outputs);
    return e;
}

class PythonReference : public testing::TestWithParam<ReferenceCase> {};

TEST_P(PythonReference, MatchesCppInferenceWithF32Weights) {
    ASSERT_TRUE(numpy_available());
    const auto dir = make_temp_dir("pyref");
    const ExportedModel e = export_case(GetParam(), TensorDtype::F32, dir);
    // The comparison is meaningful only if the outputs are not all tiny.
    ASSERT_GT(e.outputs.cwiseAbs().maxCoeff(), 0.02f);
    const Matrix<float> py = python_outputs(e.weights, e.inputs);
    ASSERT_EQ(py.rows(), e.outputs.rows());
    ASSERT_EQ(py.cols(), e.outputs.cols());
    EXPECT_LT(max_abs_difference(py, e.outputs), 1e-5f);
    std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(, PythonReference, testing::ValuesIn(reference_cases()),
                         [](const testing::TestParamInfo<ReferenceCase>& param_info) { return param_info.param.name; });

TEST(PythonReferenceCases, HashGridCaseHasDenseAndHashedLevels) {
    const ReferenceCase& c = reference_cases()[0];
    Model<float> model(c.n_input_dims, c.n_output_dims, json::parse(c.config), 0);
    const auto* grid = dynamic_cast<const GridEncoding<float>*>(&model.encoding());
    ASSERT_NE(grid, nullptr);
    EXPECT_FALSE(grid->levels().front().hashed());
    EXPECT_TRUE(grid->levels().back().hashed());
}

// F16 storage rounds the parameters. numpy must decode the halves exactly
// (so it matches C++ run on the weights read back from the file), and the
// result stays close to the unrounded model.
TEST(PythonReferenceF16, MatchesCppOnDecodedWeightsAndStaysCloseToF32Model) {
    ASSERT_TRUE(numpy_available());
    const auto dir = make_temp_dir("pyref_f16");
    for (size_t i : {size_t(0), size_t(2)}) {
        const ReferenceCase& c = reference_cases()[i];
        SCOPED_TRACE(c.name);
        const ExportedModel e = export_case(c, TensorDtype::F16, dir);
        const LoadedWeights loaded = load_weights(e.weights.string());
        ASSERT_NE(loaded.params, e.model->params());  // rounding did happen
        Matrix<float> decoded_outputs;
        e.model->inference(e.inputs, decoded_outputs, loaded.params.data());

        const Matrix<float> py = python_outputs(e.weights, e.inputs);
        EXPECT_LT(max_abs_difference(py, decoded_outputs), 1e-5f);
        // Halves keep 11 significant bits: up to 2^-11 relative error per parameter.
        EXPECT_LT(max_abs_difference(py, e.outputs), 1e-3f * std::max(1.0f, e.outputs.cwiseAbs().maxCoeff()));
    }
    std::filesystem::remove_all(dir);
}

// Rewrites the names of a weight file's grid tensors ("encoding.[nested<i>.]
// [grid.]level<NN>") with `rename(nested prefix, had "grid.", level)`, and
// drops the last one if asked; returns the new file.
std::filesystem::path rename_grid_tensors(
    const std::filesystem::path& weights, const std::string& out_name,
    const std::function<std::string(const std::string&, bool, const std::string&)>& rename, bool drop_last = false) {
    SafetensorsContents contents = read_safetensors(weights.string());
    const std::regex level(R"(^encoding\.((?:nested\d+\.)?)(grid\.)?(level\d\d)$)");
    size_t last = contents.tensors.size();
    for (size_t i = 0; i < contents.tensors.size(); ++i) {
        SafetensorsTensor& t = contents.tensors[i];
        std::smatch m;
        if (!std::regex_match(t.name, m, level)) continue;
        t.name = rename(m[1].str(), m[2].matched, m[3].str());
        last = i;
    }
    if (drop_last && last < contents.tensors.size()) contents.tensors.erase(contents.tensors.begin() + (ptrdiff_t)last);
    const auto path = weights.parent_path() / out_name;
    write_safetensors(path.string(), contents.tensors, contents.metadata);
    return path;
}

// Grid tensors are spelled "encoding.[nested<i>.]level03" or with more
// components before the level ("encoding.nested0.grid.level03"): the script
// keys them by nested index and level, so both load to the same model. A
// spelling it cannot key still loads by position (file order = layout order)
// when every shape agrees; a missing tensor is an error either way.
TEST(PythonReferenceNames, GridTensorsMatchByNestingAndLevelOrByPosition) {
    ASSERT_TRUE(numpy_available());
    const auto dir = make_temp_dir("pyref_names");
    const ExportedModel e = export_case(reference_cases()[3], TensorDtype::F32, dir);
    int renamed = 0;
    const auto toggled = rename_grid_tensors(e.weights, "toggled.safetensors",
                                             [&](const std::string& nested, bool had_grid, const std::string& lv) {
                                                 ++renamed;
                                                 return "encoding." + nested + (had_grid ? "" : "grid.") + lv;
                                             });
    EXPECT_EQ(renamed, 3 + 6);
    EXPECT_LT(max_abs_difference(python_outputs(toggled, e.inputs), e.outputs), 1e-5f);

    // "part0.grid.level00" carries no nesting this script knows, so the two
    // grids' level00..02 collide by name and the file is read by position.
    auto unknown = [](const std::string& nested, bool, const std::string& lv) {
        return "encoding.part" + nested.substr(6) + "grid." + lv;
    };
    const auto positional = rename_grid_tensors(e.weights, "positional.safetensors", unknown);
    ASSERT_NE(read_safetensors(positional.string()).find("encoding.part1.grid.level05"), nullptr);
    EXPECT_LT(max_abs_difference(python_outputs(positional, e.inputs), e.outputs), 1e-5f);

    const auto incomplete = rename_grid_tensors(e.weights, "incomplete.safetensors", unknown, true);
    const PythonResult r = run_python(shell_quoted(kScript) + " " + shell_quoted(incomplete) + " --describe");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("the file has 8 encoding tensors, the config needs 9"), std::string::npos) << r.err;
    std::filesystem::remove_all(dir);
}

TEST(PythonReferenceCli, DescribeListsTensorsAndConfig) {
    ASSERT_TRUE(numpy_available());
    const auto dir = make_temp_dir("pyref_describe");
    const ExportedModel e = export_case(reference_cases()[0], TensorDtype::F16, dir);
    const PythonResult r = run_python(shell_quoted(kScript) + " " + shell_quoted(e.weights) + " --describe");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& t : e.model->named_tensors()) {
        EXPECT_NE(r.out.find(t.name), std::string::npos) << t.name << " not in:\n" << r.out;
    }
    for (const char* needle : {"F16", "HashGrid", "log2_hashmap_size", "FullyFusedMLP", "[16384, 2]", "[3, 64]"}) {
        EXPECT_NE(r.out.find(needle), std::string::npos) << needle << " not in:\n" << r.out;
    }
    std::filesystem::remove_all(dir);
}

// A weight file whose config or tensors the script cannot use: exit code 1
// and a message naming the problem (hand-made files, as another tool might
// write them).
TEST(PythonReferenceCli, UnsupportedConfigOrMissingTensorIsAClearError) {
    ASSERT_TRUE(numpy_available());
    const auto dir = make_temp_dir("pyref_errors");
    const std::string in = (dir / "in.npy").string();
    write_npy(in, random_points(4, 2, 1));
    auto run_on = [&](const json& config, const std::vector<SafetensorsTensor>& tensors) {
        SafetensorsMetadata meta{{"fusedngp.format", "weights-v1"}, {"config", config.dump()},
                                 {"n_input_dims", "2"}, {"n_output_dims", "1"}, {"mode", "test"},
                                 {"mode_info", "{}"}};
        const auto path = dir / "bad.safetensors";
        write_safetensors(path.string(), tensors, meta);
        return run_python(shell_quoted(kScript) + " " + shell_quoted(path) + " --inputs " + shell_quoted(in) + " --out " +
                          shell_quoted(dir / "out.npy"));
    };
    const SafetensorsTensor layer{"network.layers.0.weight", {1, 2}, {0.5f, -0.5f}, TensorDtype::F32};

    PythonResult r = run_on(json::parse(R"({"encoding": {"otype": "Wavelet"},
                                            "network": {"otype": "MLP", "n_hidden_layers": 0}})"),
                            {layer});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("encoding.otype"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Wavelet"), std::string::npos) << r.err;

    r = run_on(json::parse(R"({"encoding": {"otype": "Identity"},
                               "network": {"otype": "MLP", "n_hidden_layers": 0, "output_activation": "GELU"}})"),
               {layer});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("network.output_activation"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("GELU"), std::string::npos) << r.err;

    r = run_on(json::parse(R"({"encoding": {"otype": "HashGrid", "n_levels": 2, "base_resolution": 2},
                               "network": {"otype": "MLP", "n_hidden_layers": 0}})"),
               {{"network.layers.0.weight", {1, 4}, {1, 2, 3, 4}, TensorDtype::F32}});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("no encoding tensor"), std::string::npos) << r.err;

    // Sanity: the same hand-made file layout works when complete.
    r = run_on(json::parse(R"({"encoding": {"otype": "Identity"}, "network": {"otype": "MLP", "n_hidden_layers": 0}})"),
               {layer});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const Matrix<float> x = random_points(4, 2, 1), y = read_npy((dir / "out.npy").string());
    ASSERT_EQ(y.rows(), 4);
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y(i, 0), 0.5f * x(i, 0) - 0.5f * x(i, 1));
    std::filesystem::remove_all(dir);
}

} // namespace

// NeRF: a tiny model trained on the generated scene (CPU, 40 steps), exported,
// one 24 x 24 view rendered by `fusedngp render` and by the numpy reference
// (same marcher, networks and compositing in float32). Measured: mean
// |difference| ~1e-7, max ~1e-6 (float rounding of the MLP sums and expf);
// the tolerance allows a sample attributed to the other side of a cell face.
TEST(PythonReferenceNerf, RendersTheSameViewAsTheCli) {
    ASSERT_TRUE(numpy_available());
    const auto dir = make_temp_dir("pyref_nerf");
    const auto train = fusedngp::test::run_cli(fusedngp::test::nerf_train_args(dir / "out", 40));
    ASSERT_EQ(train.exit_code, 0) << train.out << train.err;
    const auto snapshot = dir / "out" / "snapshot.fusedngp";
    const auto weights = dir / "w.safetensors";
    auto r = fusedngp::test::run_cli("export " + shell_quoted(snapshot) + " --out " + shell_quoted(weights));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    save_camera_file(load_nerf_snapshot(snapshot.string()).scene.camera, (dir / "cam.json").string());
    r = fusedngp::test::run_cli("render " + shell_quoted(weights) + " --camera-file " + shell_quoted(dir / "cam.json") +
                                " --background white --out " + shell_quoted(dir / "cpp.exr"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const PythonResult py = run_python(shell_quoted(kScript) + " " + shell_quoted(weights) + " --camera " +
                                       shell_quoted(dir / "cam.json") + " --background 1,1,1 --out " +
                                       shell_quoted(dir / "py.npy"));
    ASSERT_EQ(py.exit_code, 0) << py.err;
    const Image cpp = convert_color_space(load_image((dir / "cpp.exr").string()), ColorSpace::Srgb);
    const Matrix<float> ref = read_npy((dir / "py.npy").string());
    ASSERT_EQ(cpp.width, 24);
    ASSERT_EQ(cpp.height, 24);
    ASSERT_EQ(ref.rows(), 24 * 24);
    ASSERT_EQ(ref.cols(), 3);
    double sum = 0, max = 0, spread = 0;
    for (Eigen::Index i = 0; i < ref.rows(); ++i)
        for (int c = 0; c < 3; ++c) {
            const double d = std::fabs((double)cpp.pixels[3 * (size_t)i + (size_t)c] - (double)ref(i, c));
            sum += d;
            max = std::max(max, d);
            spread += std::fabs(ref(i, c) - 1.0);
        }
    const double mean = sum / (double)ref.size();
    std::printf("NeRF python reference vs render: mean |diff| %.3g, max %.3g\n", mean, max);
    EXPECT_GT(spread / (double)ref.size(), 0.05) << "the view is blank: the comparison would prove nothing";
    EXPECT_LT(mean, 2e-3);
    EXPECT_LT(max, 5e-2);
}
