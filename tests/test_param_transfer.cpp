// Weight carry-over between reshaped models (live width/depth changes in the app).
#include "core/rng.h"
#include "model/model.h"
#include "model/param_transfer.h"

#include <gtest/gtest.h>

using namespace fusedngp;

namespace {

json model_config(uint32_t width, uint32_t hidden_layers, const std::string& otype = "FullyFusedMLP",
                  uint32_t n_levels = 4) {
    return json{{"encoding",
                 {{"otype", "HashGrid"}, {"n_levels", n_levels}, {"n_features_per_level", 2},
                  {"log2_hashmap_size", 10}, {"base_resolution", 4}, {"per_level_scale", 1.5}}},
                {"network",
                 {{"otype", otype}, {"activation", "ReLU"}, {"output_activation", "None"},
                  {"n_neurons", width}, {"n_hidden_layers", hidden_layers}}}};
}

Matrix<float> random_inputs(int rows, uint64_t seed) {
    Rng rng(seed);
    Matrix<float> in(rows, 2);
    for (int i = 0; i < in.size(); ++i) in.data()[i] = 0.05f + 0.9f * rng.next_float();
    return in;
}

// Gives the grid non-trivial values (its init is tiny) so the function is far from zero.
void randomize(Model<float>& model, uint64_t seed) {
    Rng rng(seed);
    for (auto& p : model.params()) p = 2.0f * rng.next_float() - 1.0f;
}

Matrix<float> outputs(const Model<float>& model) {
    Matrix<float> out;
    model.inference(random_inputs(257, 99), out);
    return out;
}

Model<float> carried(const Model<float>& old_model, const json& old_config, const json& new_config,
                     NewInputs new_inputs, TransferReport* report = nullptr) {
    Model<float> m(2, 3, new_config, 7);
    auto old_tensors = old_model.named_tensors();
    ParamSource source{old_config["encoding"], old_tensors, old_model.params()};
    TransferReport r = transfer_params(source, new_config["encoding"], m.named_tensors(), m.params(), new_inputs);
    if (report) *report = r;
    return m;
}

const NamedTensor& tensor(const std::vector<NamedTensor>& tensors, const std::string& name) {
    for (const auto& t : tensors) {
        if (t.name == name) return t;
    }
    throw std::runtime_error("no tensor " + name);
}

} // namespace

TEST(ParamTransfer, SameShapeDifferentKernelIsTheSameFunction) {
    json a = model_config(32, 2, "FullyFusedMLP"), b = model_config(32, 2, "CublasMLP");
    Model<float> old_model(2, 3, a, 1);
    randomize(old_model, 5);
    TransferReport report;
    Model<float> m = carried(old_model, a, b, NewInputs::FreshInit, &report);
    EXPECT_TRUE(report.encoding_copied);
    EXPECT_EQ(report.copied, old_model.n_params());
    EXPECT_EQ(m.params(), old_model.params());
    Matrix<float> y0 = outputs(old_model), y1 = outputs(m);
    EXPECT_GT(y0.norm(), 0.1f);
    EXPECT_EQ(y0, y1);
}

TEST(ParamTransfer, WiderWithZeroedNewInputsComputesTheOldFunction) {
    json a = model_config(32, 2), wide = model_config(64, 2), wider_odd = model_config(48, 2);
    Model<float> old_model(2, 3, a, 1);
    randomize(old_model, 5);
    Matrix<float> y0 = outputs(old_model);
    for (const json& cfg : {wide, wider_odd}) {
        Model<float> zeroed = carried(old_model, a, cfg, NewInputs::Zero);
        Matrix<float> y1 = outputs(zeroed);
        EXPECT_LT((y1 - y0).norm(), 1e-5f * y0.norm());
        // With fresh weights reading the new neurons the function changes: the
        // zeroing is what preserves it.
        Model<float> fresh = carried(old_model, a, cfg, NewInputs::FreshInit);
        EXPECT_GT((outputs(fresh) - y0).norm(), 1e-3f * y0.norm());
    }
}

TEST(ParamTransfer, LayersMapByIndexAndOutputToOutput) {
    json a = model_config(32, 2), b = model_config(16, 4);
    Model<float> old_model(2, 3, a, 1);
    randomize(old_model, 5);
    Model<float> fresh(2, 3, b, 7);
    Model<float> m = carried(old_model, a, b, NewInputs::FreshInit);
    auto ot = old_model.named_tensors(), nt = m.named_tensors();
    auto expect_overlap = [&](const std::string& from, const std::string& to) {
        const NamedTensor &f = tensor(ot, from), &t = tensor(nt, to);
        for (size_t r = 0; r < t.shape[0]; ++r) {
            for (size_t c = 0; c < t.shape[1]; ++c) {
                float got = m.params()[t.offset + r * t.shape[1] + c];
                if (r < f.shape[0] && c < f.shape[1]) {
                    ASSERT_EQ(got, old_model.params()[f.offset + r * f.shape[1] + c]) << to << " " << r << "," << c;
                } else {
                    ASSERT_EQ(got, fresh.params()[t.offset + r * t.shape[1] + c]) << to << " " << r << "," << c;
                }
            }
        }
    };
    expect_overlap("network.layers.0.weight", "network.layers.0.weight");
    expect_overlap("network.layers.1.weight", "network.layers.1.weight");
    expect_overlap("network.layers.2.weight", "network.layers.4.weight");  // output -> output
    // Hidden layers 2 and 3 have no counterpart: fresh init.
    for (const char* name : {"network.layers.2.weight", "network.layers.3.weight"}) {
        const NamedTensor t = tensor(nt, name);
        for (size_t i = 0; i < t.size(); ++i) ASSERT_EQ(m.params()[t.offset + i], fresh.params()[t.offset + i]);
    }
}

TEST(ParamTransfer, ChangedEncodingKeepsItsFreshInit) {
    json a = model_config(32, 2, "FullyFusedMLP", 4), b = model_config(32, 2, "FullyFusedMLP", 6);
    Model<float> old_model(2, 3, a, 1);
    randomize(old_model, 5);
    Model<float> fresh(2, 3, b, 7);
    TransferReport report;
    Model<float> m = carried(old_model, a, b, NewInputs::FreshInit, &report);
    EXPECT_FALSE(report.encoding_copied);
    for (size_t i = 0; i < m.n_encoding_params(); ++i) ASSERT_EQ(m.params()[i], fresh.params()[i]);
    // The network's last layer still carries over (same shape).
    auto new_tensors = m.named_tensors(), old_tensors = old_model.named_tensors();
    const NamedTensor t = tensor(new_tensors, "network.layers.2.weight");
    const NamedTensor f = tensor(old_tensors, "network.layers.2.weight");
    for (size_t i = 0; i < t.size(); ++i) ASSERT_EQ(m.params()[t.offset + i], old_model.params()[f.offset + i]);
}
