// The CPU reference MLP: gradients (fp64 finite differences), a hand-computed
// forward, parameter layout and init, and config errors.
#include "core/errors.h"
#include "networks/factory.h"
#include "networks/mlp.h"

#include "gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fusedngp;

namespace {

struct MlpShape {
    uint32_t n_input, n_output, n_neurons, n_hidden_layers;
    Activation activation, output_activation;
};

std::string describe_shape(const MlpShape& s) {
    return std::to_string(s.n_input) + "->" + std::to_string(s.n_hidden_layers) + "x" + std::to_string(s.n_neurons) +
           " " + activation_name(s.activation) + "->" + std::to_string(s.n_output) + " " +
           activation_name(s.output_activation);
}

// Checks dL/dinput and dL/dparams of L = sum(R .* mlp(x)) against central
// differences, at Xavier-initialised weights and inputs in [-1, 1].
void expect_gradients_match(const MlpShape& shape, int batch = 5, uint64_t seed = 1) {
    SCOPED_TRACE(describe_shape(shape));
    Mlp<double> mlp(shape.n_input, shape.n_output, shape.n_neurons, shape.n_hidden_layers, shape.activation,
                    shape.output_activation);
    std::vector<double> params(mlp.n_params());
    mlp.init_params(params.data(), seed);
    Matrix<double> in = test::random_matrix(batch, (int)shape.n_input, seed + 100);
    const Matrix<double> weights = test::random_matrix(batch, (int)shape.n_output, seed + 200);

    Matrix<double> out;
    auto ctx = mlp.forward(params.data(), in, out);
    std::vector<double> dparams(mlp.n_params(), 0.0);
    Matrix<double> din;
    mlp.backward(*ctx, params.data(), in, weights, dparams.data(), &din);
    ASSERT_EQ(din.rows(), batch);
    ASSERT_EQ(din.cols(), (int)shape.n_input);

    auto loss = [&] {
        Matrix<double> o;
        mlp.inference(params.data(), in, o);
        return test::weighted_sum(o, weights);
    };
    const auto numeric_dparams = test::numeric_gradient(params.data(), params.size(), loss);
    const auto numeric_din = test::numeric_gradient(in.data(), (size_t)in.size(), loss);
    const std::vector<double> analytic_din(din.data(), din.data() + din.size());

    EXPECT_LT(test::relative_error(dparams, numeric_dparams), 1e-6);
    EXPECT_LT(test::relative_error(analytic_din, numeric_din), 1e-6);
    EXPECT_GT(test::norm(dparams), 1e-3);
    EXPECT_GT(test::norm(analytic_din), 1e-3);
}

json mlp_config(const std::string& otype = "FullyFusedMLP") {
    return json{{"otype", otype}};
}

void expect_config_error(const json& config, const std::string& path, const std::string& message_part) {
    try {
        create_network<double>(3, 2, config);
        FAIL() << "expected ConfigError for " << config.dump();
    } catch (const ConfigError& e) {
        EXPECT_EQ(e.path(), path) << e.what();
        EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos) << e.what();
    }
}

} // namespace

TEST(MlpGradient, SeveralShapes) {
    const MlpShape shapes[] = {
        {3, 2, 8, 2, Activation::ReLU, Activation::None},
        {5, 3, 7, 0, Activation::ReLU, Activation::None},      // single linear layer
        {4, 3, 7, 3, Activation::Tanh, Activation::Sigmoid},   // deep, odd width
        {2, 1, 16, 1, Activation::SiLU, Activation::Softplus},
        {1, 5, 3, 2, Activation::LeakyReLU, Activation::None}, // narrower than output
    };
    for (const auto& shape : shapes) expect_gradients_match(shape);
}

TEST(MlpGradient, EveryActivationAsHiddenActivation) {
    for (const auto& name : activation_names()) {
        expect_gradients_match({3, 2, 6, 2, parse_activation(name, "test"), Activation::None}, 6, 3);
    }
}

TEST(MlpGradient, EveryActivationAsOutputActivation) {
    for (const auto& name : activation_names()) {
        expect_gradients_match({3, 2, 6, 1, Activation::Tanh, parse_activation(name, "test")}, 6, 5);
    }
}

TEST(MlpGradient, BackwardAddsIntoDparamsAndAllowsNoDin) {
    Mlp<double> mlp(3, 2, 5, 1, Activation::Tanh, Activation::None);
    std::vector<double> params(mlp.n_params());
    mlp.init_params(params.data(), 9);
    const Matrix<double> in = test::random_matrix(4, 3, 10);
    const Matrix<double> dout = test::random_matrix(4, 2, 11);
    Matrix<double> out;
    auto ctx = mlp.forward(params.data(), in, out);
    std::vector<double> once(mlp.n_params(), 0.0), twice(mlp.n_params(), 0.0);
    mlp.backward(*ctx, params.data(), in, dout, once.data(), nullptr);
    mlp.backward(*ctx, params.data(), in, dout, twice.data(), nullptr);
    mlp.backward(*ctx, params.data(), in, dout, twice.data(), nullptr);
    for (size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(twice[i], 2 * once[i], 1e-14);
    EXPECT_GT(test::norm(once), 1e-3);
}

TEST(Mlp, ForwardMatchesHandComputedValue) {
    // 2 -> 2 (ReLU) -> 1. W0 = [[1, -2], [0.5, 1]], W1 = [[3, -1]], row-major {fan_out, fan_in}.
    Mlp<double> mlp(2, 1, 2, 1, Activation::ReLU, Activation::None);
    ASSERT_EQ(mlp.n_params(), 6u);
    const std::vector<double> params = {1, -2, 0.5, 1, 3, -1};
    Matrix<double> in(2, 2);
    in << 1, 0.25,  // z0 = [0.5, 0.75] -> out = 1.5 - 0.75 = 0.75
        -1, 1;      // z0 = [-3, 0.5] -> relu [0, 0.5] -> out = -0.5
    Matrix<double> out;
    mlp.inference(params.data(), in, out);
    ASSERT_EQ(out.rows(), 2);
    ASSERT_EQ(out.cols(), 1);
    EXPECT_DOUBLE_EQ(out(0, 0), 0.75);
    EXPECT_DOUBLE_EQ(out(1, 0), -0.5);

    // Sigmoid output: sigmoid(0.75).
    Mlp<double> with_sigmoid(2, 1, 2, 1, Activation::ReLU, Activation::Sigmoid);
    with_sigmoid.inference(params.data(), in, out);
    EXPECT_NEAR(out(0, 0), 1.0 / (1.0 + std::exp(-0.75)), 1e-15);
}

TEST(Mlp, InferenceEqualsForwardOutput) {
    for (int batch : {1, 37, 3000}) {  // 3000 x 64 takes the parallel elementwise path
        Mlp<float> mlp(3, 4, 64, 2, Activation::ReLU, Activation::Sigmoid);
        std::vector<float> params(mlp.n_params());
        mlp.init_params(params.data(), 4);
        const Matrix<float> in = test::random_matrix(batch, 3, 12).cast<float>();
        Matrix<float> a, b;
        mlp.inference(params.data(), in, a);
        auto ctx = mlp.forward(params.data(), in, b);
        ASSERT_EQ(a.rows(), batch);
        ASSERT_EQ(a.cols(), 4);
        EXPECT_TRUE(a == b) << "batch " << batch << ", max diff " << (a - b).cwiseAbs().maxCoeff();
    }
}

TEST(Mlp, RowsAreIndependentSamples) {
    Mlp<double> mlp(3, 2, 16, 2, Activation::SiLU, Activation::None);
    std::vector<double> params(mlp.n_params());
    mlp.init_params(params.data(), 2);
    const Matrix<double> in = test::random_matrix(20, 3, 13);
    Matrix<double> all, single;
    mlp.inference(params.data(), in, all);
    for (int i = 0; i < in.rows(); ++i) {
        mlp.inference(params.data(), Matrix<double>(in.row(i)), single);
        EXPECT_NEAR((single.row(0) - all.row(i)).norm(), 0.0, 1e-14);
    }
}

TEST(Mlp, EmptyBatch) {
    Mlp<double> mlp(3, 2, 8, 1, Activation::ReLU, Activation::None);
    std::vector<double> params(mlp.n_params());
    mlp.init_params(params.data(), 1);
    Matrix<double> in(0, 3), out, din;
    auto ctx = mlp.forward(params.data(), in, out);
    EXPECT_EQ(out.rows(), 0);
    std::vector<double> dparams(mlp.n_params(), 0.0);
    mlp.backward(*ctx, params.data(), in, Matrix<double>(0, 2), dparams.data(), &din);
    EXPECT_EQ(din.rows(), 0);
    EXPECT_EQ(test::norm(dparams), 0.0);
}

TEST(Mlp, WrongInputWidthThrows) {
    Mlp<double> mlp(3, 2, 8, 1, Activation::ReLU, Activation::None);
    std::vector<double> params(mlp.n_params());
    Matrix<double> in(4, 2), out;
    EXPECT_THROW(mlp.inference(params.data(), in, out), std::invalid_argument);
}

TEST(Mlp, ParamCountAndLayout) {
    Mlp<double> mlp(3, 4, 64, 2, Activation::ReLU, Activation::None);
    EXPECT_EQ(mlp.n_params(), 64u * 3 + 64 * 64 + 4 * 64);
    const auto layout = mlp.param_layout();
    ASSERT_EQ(layout.size(), 3u);
    const size_t expected_offsets[] = {0, 192, 192 + 4096};
    const std::vector<size_t> expected_shapes[] = {{64, 3}, {64, 64}, {4, 64}};
    for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(layout[k].name, "layers." + std::to_string(k) + ".weight");
        EXPECT_EQ(layout[k].offset, expected_offsets[k]);
        EXPECT_EQ(layout[k].shape, expected_shapes[k]);
    }
    EXPECT_EQ(layout.back().offset + layout.back().size(), mlp.n_params());

    Mlp<double> linear(5, 3, 64, 0, Activation::ReLU, Activation::None);
    ASSERT_EQ(linear.param_layout().size(), 1u);
    EXPECT_EQ(linear.param_layout()[0].shape, (std::vector<size_t>{3, 5}));
    EXPECT_EQ(linear.n_params(), 15u);
}

TEST(Mlp, XavierInitIsSeededAndInRange) {
    Mlp<double> mlp(3, 4, 32, 2, Activation::ReLU, Activation::None);
    std::vector<double> a(mlp.n_params()), b(mlp.n_params()), c(mlp.n_params());
    mlp.init_params(a.data(), 42);
    mlp.init_params(b.data(), 42);
    mlp.init_params(c.data(), 43);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    for (const auto& tensor : mlp.param_layout()) {
        const double s = std::sqrt(6.0 / double(tensor.shape[0] + tensor.shape[1]));
        double max_abs = 0, mean = 0;
        for (size_t i = 0; i < tensor.size(); ++i) {
            const double w = a[tensor.offset + i];
            EXPECT_LE(std::abs(w), s);
            max_abs = std::max(max_abs, std::abs(w));
            mean += w / double(tensor.size());
        }
        EXPECT_GT(max_abs, 0.8 * s) << tensor.name;  // spans the range, not a narrower one
        EXPECT_LT(std::abs(mean), 0.2 * s) << tensor.name;
    }
    // First weight is the first draw of Rng(42), mapped to [-s, s) (within
    // 4 ulp: a compiler may fuse the multiply-add on one side only).
    Rng rng(42);
    const double s0 = std::sqrt(6.0 / (3.0 + 32.0));
    EXPECT_DOUBLE_EQ(a[0], -s0 + 2 * s0 * rng.next_double());

    // The float model starts from the double weights, rounded.
    Mlp<float> mlp_float(3, 4, 32, 2, Activation::ReLU, Activation::None);
    std::vector<float> f(mlp_float.n_params());
    mlp_float.init_params(f.data(), 42);
    for (size_t i = 0; i < f.size(); ++i) ASSERT_EQ(f[i], (float)a[i]);
}

TEST(MlpFactory, AllOtypesIgnoringCaseWithTinyCudaNnDefaults) {
    for (const char* otype : {"FullyFusedMLP", "CutlassMLP", "CublasMLP", "MLP", "Auto", "CPU", "fullyfusedmlp", "cpu"}) {
        auto network = create_network<double>(3, 2, mlp_config(otype));
        auto* mlp = dynamic_cast<Mlp<double>*>(network.get());
        ASSERT_NE(mlp, nullptr) << otype;
        EXPECT_EQ(mlp->n_neurons(), 64u);
        EXPECT_EQ(mlp->n_hidden_layers(), 2u);
        EXPECT_EQ(mlp->activation(), Activation::ReLU);
        EXPECT_EQ(mlp->output_activation(), Activation::None);
        EXPECT_EQ(mlp->n_params(), 64u * 3 + 64 * 64 + 2 * 64);
    }
    EXPECT_EQ(create_network<float>(3, 2, mlp_config("cutlassmlp"))->otype(), "CutlassMLP");
}

TEST(MlpFactory, ReadsFieldsAndIgnoresUnknownOnes) {
    json config = {{"otype", "FullyFusedMLP"}, {"n_neurons", 7},          {"n_hidden_layers", 0},
                   {"activation", "tanh"},     {"output_activation", "Sigmoid"}, {"feedback_alignment", false}};
    auto network = create_network<double>(5, 3, config);
    auto* mlp = dynamic_cast<Mlp<double>*>(network.get());
    ASSERT_NE(mlp, nullptr);
    EXPECT_EQ(mlp->n_neurons(), 7u);
    EXPECT_EQ(mlp->n_hidden_layers(), 0u);
    EXPECT_EQ(mlp->activation(), Activation::Tanh);
    EXPECT_EQ(mlp->output_activation(), Activation::Sigmoid);
    EXPECT_EQ(mlp->n_params(), 15u);
    EXPECT_EQ(mlp->n_input_dims(), 5u);
    EXPECT_EQ(mlp->n_output_dims(), 3u);
}

TEST(MlpFactory, ConfigErrorsNameTheField) {
    json config = mlp_config();
    config["n_neurons"] = 0;
    expect_config_error(config, "network.n_neurons", "positive");
    config["n_neurons"] = -1;
    expect_config_error(config, "network.n_neurons", "positive");

    config = mlp_config();
    config["n_hidden_layers"] = -1;
    expect_config_error(config, "network.n_hidden_layers", "[0, ");

    config = mlp_config();
    config["activation"] = "Relux";
    expect_config_error(config, "network.activation", "SiLU");
    config = mlp_config();
    config["output_activation"] = "Softmax";
    expect_config_error(config, "network.output_activation", "Sigmoid");

    expect_config_error(mlp_config("ResNet"), "network.otype",
                        "FullyFusedMLP, CutlassMLP, CublasMLP, MLP, Auto, CPU");
    expect_config_error(json{{"n_neurons", 64}}, "network.otype", "missing");
}

TEST(Mlp, RepeatedTrainingStepsAreBitIdentical) {
    // Large enough for the parallel elementwise passes and Eigen's threaded GEMM.
    Mlp<float> mlp(16, 3, 64, 2, Activation::ReLU, Activation::None);
    std::vector<float> params(mlp.n_params());
    mlp.init_params(params.data(), 6);
    const Matrix<float> in = test::random_matrix(4096, 16, 14).cast<float>();
    const Matrix<float> dout = test::random_matrix(4096, 3, 15).cast<float>();
    std::vector<float> first, grads;
    Matrix<float> first_din, out, din;
    for (int run = 0; run < 3; ++run) {
        grads.assign(mlp.n_params(), 0.0f);
        auto ctx = mlp.forward(params.data(), in, out);
        mlp.backward(*ctx, params.data(), in, dout, grads.data(), &din);
        if (run == 0) {
            first = grads;
            first_din = din;
        }
        EXPECT_EQ(grads, first);
        EXPECT_TRUE(din == first_din);
    }
}
