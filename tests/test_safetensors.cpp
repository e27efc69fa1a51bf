// safetensors reader/writer and the float <-> half conversion it uses.
#include "io/half.h"
#include "io/safetensors.h"

#include "core/rng.h"
#include "io_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace fusedngp;
using fusedngp::test::expect_input_error;
using fusedngp::test::ScratchDir;

namespace {


// A file image with a hand-written header (as another writer might produce
// it) followed by `data`.
std::vector<uint8_t> file_with_header(const std::string& header, const std::vector<uint8_t>& data) {
    std::vector<uint8_t> out;
    for (int i = 0; i < 8; ++i) out.push_back((uint8_t)((uint64_t)header.size() >> (8 * i)));
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

std::vector<uint8_t> le_floats(const std::vector<float>& values) {
    std::vector<uint8_t> out;
    for (float v : values) {
        const uint32_t u = float_bits(v);
        for (int i = 0; i < 4; ++i) out.push_back((uint8_t)(u >> (8 * i)));
    }
    return out;
}

std::vector<float> random_values(size_t n, uint64_t seed, float scale) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = scale * (2.0f * rng.next_float() - 1.0f);
    return v;
}

// Writes `bytes` to a file and expects read_safetensors to reject it with
// the file name and `reason` in the message.
void expect_rejected(const std::vector<uint8_t>& bytes, const std::string& reason) {
    ScratchDir dir;
    const std::string path = dir.file("bad.safetensors");
    fusedngp::test::write_bytes(path, bytes);
    expect_input_error([&] { read_safetensors(path); }, {path, reason});
}

} // namespace

// ---- half precision -------------------------------------------------------------

TEST(HalfFloat, KnownValuesAndRoundingTiesToEven) {
    EXPECT_EQ(float_to_half(1.0f), 0x3c00);
    EXPECT_EQ(float_to_half(-2.0f), 0xc000);
    EXPECT_EQ(float_to_half(0.0f), 0x0000);
    EXPECT_EQ(float_to_half(-0.0f), 0x8000);
    EXPECT_EQ(float_to_half(65504.0f), 0x7bff);                       // largest half
    EXPECT_EQ(float_to_half(65519.0f), 0x7bff);                       // rounds down
    EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                       // tie rounds to even: infinity
    EXPECT_EQ(float_to_half(1e10f), 0x7c00);
    EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00);
    EXPECT_EQ(float_to_half(1.0f + 0x1.0p-11f), 0x3c00);              // tie: stays even
    EXPECT_EQ(float_to_half(1.0f + 3 * 0x1.0p-11f), 0x3c02);          // tie: rounds up to even
    EXPECT_EQ(float_to_half(1.0f + 0x1.0p-11f + 0x1.0p-20f), 0x3c01); // above tie
    EXPECT_EQ(float_to_half(0x1.0p-14f), 0x0400);                     // smallest normal
    EXPECT_EQ(float_to_half(0x1.ff8p-15f), 0x03ff);                   // largest subnormal
    EXPECT_EQ(float_to_half(0x1.ffcp-15f), 0x0400);                   // tie: rounds up into the normals
    EXPECT_EQ(float_to_half(0x1.0p-24f), 0x0001);                     // smallest subnormal
    EXPECT_EQ(float_to_half(0x1.0p-25f), 0x0000);                     // tie: to even (zero)
    EXPECT_EQ(float_to_half(0x1.8p-25f), 0x0001);
    EXPECT_EQ(float_to_half(3 * 0x1.0p-25f), 0x0002);                 // 1.5 ulp: tie to even (2)
    EXPECT_EQ(float_to_half(-0x1.0p-30f), 0x8000);                    // underflow keeps the sign
    EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
    const uint16_t nan = float_to_half(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7c00, 0x7c00);
    EXPECT_NE(nan & 0x03ff, 0);
    EXPECT_NE(float_to_half(bits_float(0x7f800001u)) & 0x03ff, 0);  // signalling NaN with low payload stays NaN
    EXPECT_EQ(half_to_float(0x3555), 0x1.554p-2f);
    EXPECT_EQ(half_to_float(0x0001), 0x1.0p-24f);
    EXPECT_EQ(half_to_float(0x7c00), std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
    EXPECT_EQ(float_bits(half_to_float(0x8000)), 0x80000000u);
}

TEST(HalfFloat, EveryHalfSurvivesARoundTrip) {
    for (uint32_t h = 0; h <= 0xffff; ++h) {
        const float f = half_to_float((uint16_t)h);
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f)))) << h;
            continue;
        }
        ASSERT_EQ(float_to_half(f), h) << std::hex << h;
    }
}

TEST(HalfFloat, RoundingIsToTheNearestHalf) {
    // For any float in range, the chosen half is at least as close as both neighbours.
    Rng rng(21);
    for (int i = 0; i < 200000; ++i) {
        const float f = bits_float((uint32_t)(rng.next_u64() & 0xffffffffu));
        if (!std::isfinite(f) || std::fabs(f) >= 65504.0f) continue;
        const uint16_t h = float_to_half(f);
        const double chosen = std::fabs((double)half_to_float(h) - f);
        const uint16_t magnitude = h & 0x7fff;
        for (int step : {-1, 1}) {
            const int neighbour = (int)magnitude + step;
            if (neighbour < 0 || neighbour > 0x7bff) continue;
            const uint16_t other = (uint16_t)((h & 0x8000) | neighbour);
            ASSERT_LE(chosen, std::fabs((double)half_to_float(other) - f)) << f;
        }
    }
#if defined(__FLT16_MAX__)
    // Also agree bit for bit with the compiler's conversion where it exists.
    for (int i = 0; i < 200000; ++i) {
        const float f = bits_float((uint32_t)(rng.next_u64() & 0xffffffffu));
        if (std::isnan(f)) continue;
        const _Float16 reference = (_Float16)f;
        uint16_t reference_bits;
        std::memcpy(&reference_bits, &reference, 2);
        ASSERT_EQ(float_to_half(f), reference_bits) << f;
    }
#endif
}

// ---- round trips ------------------------------------------------------------------

TEST(Safetensors, F32RoundTripIsExactWithMetadataAndOrder) {
    ScratchDir dir;
    const std::string path = dir.file("model.safetensors");
    std::vector<float> special = {0.0f, -0.0f, 1.0f / 3.0f, std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::denorm_min(), -1e30f};
    std::vector<SafetensorsTensor> tensors = {
        {"network.layers.0.weight", {4, 3}, random_values(12, 1, 2.0f), TensorDtype::F32},
        {"encoding.grid", {6}, special, TensorDtype::F32},
        {"a_scalar", {}, {42.5f}, TensorDtype::F32},
        {"empty", {0, 3}, {}, TensorDtype::F32},
    };
    const SafetensorsMetadata metadata = {{"format", "fusedngp"}, {"config", "{\"otype\": \"HashGrid\"}"}};
    write_safetensors(path, tensors, metadata);
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.safetensors"});

    const SafetensorsContents read = read_safetensors(path);
    EXPECT_EQ(read.metadata, metadata);
    ASSERT_EQ(read.tensors.size(), tensors.size());
    // Empty tensors share an offset with their neighbour, so only compare contents by name.
    for (const auto& t : tensors) {
        const SafetensorsTensor* r = read.find(t.name);
        ASSERT_NE(r, nullptr) << t.name;
        EXPECT_EQ(r->shape, t.shape);
        EXPECT_EQ(r->dtype, TensorDtype::F32);
        ASSERT_EQ(r->values.size(), t.values.size());
        for (size_t i = 0; i < t.values.size(); ++i) EXPECT_EQ(float_bits(r->values[i]), float_bits(t.values[i]));
    }
    EXPECT_EQ(read.tensors.front().name, "network.layers.0.weight");  // file order
    EXPECT_EQ(read.find("missing"), nullptr);
}

TEST(Safetensors, FileLayoutFollowsTheFormat) {
    const std::vector<SafetensorsTensor> tensors = {{"w", {2}, {1.0f, -2.0f}, TensorDtype::F32},
                                                    {"h", {1}, {1.0f}, TensorDtype::F16}};
    const std::vector<uint8_t> bytes = encode_safetensors(tensors, {{"k", "v"}});
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= (uint64_t)bytes[i] << (8 * i);
    EXPECT_EQ(n % 8, 0u);
    ASSERT_EQ(bytes.size(), 8 + n + 8 + 2);
    const std::string header(bytes.begin() + 8, bytes.begin() + 8 + (long)n);
    EXPECT_EQ(header.front(), '{');
    EXPECT_EQ(header.find_last_not_of(' ') + 1, header.find_last_of('}') + 1);  // padding is spaces only
    EXPECT_NE(header.find("\"__metadata__\":{\"k\":\"v\"}"), std::string::npos) << header;
    EXPECT_NE(header.find("\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"), std::string::npos) << header;
    EXPECT_NE(header.find("\"h\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[8,10]}"), std::string::npos);
    // Little-endian data: -2.0f is 0xC0000000, 1.0 in half is 0x3C00.
    const uint8_t* data = bytes.data() + 8 + n;
    EXPECT_EQ(std::vector<uint8_t>(data + 4, data + 10), (std::vector<uint8_t>{0, 0, 0, 0xc0, 0x00, 0x3c}));
    // No metadata: the key is left out.
    const std::vector<uint8_t> plain = encode_safetensors(tensors);
    EXPECT_EQ(std::string(plain.begin() + 8, plain.end()).find("__metadata__"), std::string::npos);
}

TEST(Safetensors, F16RoundTripIsWithinHalfPrecision) {
    ScratchDir dir;
    const std::string path = dir.file("half.safetensors");
    const std::vector<float> values = random_values(1000, 2, 100.0f);
    write_safetensors(path, {{"x", {10, 100}, values, TensorDtype::F16}});
    const SafetensorsContents read = read_safetensors(path);
    ASSERT_EQ(read.tensors.size(), 1u);
    EXPECT_EQ(read.tensors[0].dtype, TensorDtype::F16);
    EXPECT_EQ(fusedngp::test::read_bytes(path).size() % 2, 0u);
    bool any_rounded = false;
    for (size_t i = 0; i < values.size(); ++i) {
        const float r = read.tensors[0].values[i];
        EXPECT_LE(std::fabs(r - values[i]), std::fabs(values[i]) * 0x1.0p-11f + 0x1.0p-25f) << values[i];
        EXPECT_EQ(r, half_to_float(float_to_half(values[i])));
        any_rounded |= (r != values[i]);
    }
    EXPECT_TRUE(any_rounded);
}

TEST(Safetensors, ReadsAHeaderWrittenByAnotherTool) {
    // Keys in any order, whitespace, data in an order different from the header's.
    const std::string header =
        "{ \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},\n"
        "  \"__metadata__\": {\"format\": \"pt\"},\n"
        "  \"a\": {\"shape\": [1, 2], \"data_offsets\": [4, 12], \"dtype\": \"F32\", \"extra\": 1} }";
    ScratchDir dir;
    const std::string path = dir.file("other.safetensors");
    fusedngp::test::write_bytes(path, file_with_header(header, le_floats({7.0f, 1.5f, -2.5f})));
    const SafetensorsContents read = read_safetensors(path);
    ASSERT_EQ(read.tensors.size(), 2u);
    EXPECT_EQ(read.tensors[0].name, "b");
    EXPECT_EQ(read.tensors[0].values, std::vector<float>{7.0f});
    EXPECT_EQ(read.find("a")->values, (std::vector<float>{1.5f, -2.5f}));
    EXPECT_EQ(read.find("a")->shape, (std::vector<size_t>{1, 2}));
    EXPECT_EQ(read.metadata.at("format"), "pt");
}

TEST(Safetensors, WriterRejectsInconsistentTensors) {
    EXPECT_THROW(encode_safetensors({{"a", {2}, {1.0f}, TensorDtype::F32}}), std::invalid_argument);
    EXPECT_THROW(encode_safetensors({{"a", {1}, {1.0f}, TensorDtype::F32}, {"a", {1}, {2.0f}, TensorDtype::F32}}),
                 std::invalid_argument);
    EXPECT_THROW(encode_safetensors({{"__metadata__", {1}, {1.0f}, TensorDtype::F32}}), std::invalid_argument);
    EXPECT_THROW(encode_safetensors({{"", {1}, {1.0f}, TensorDtype::F32}}), std::invalid_argument);
}

// ---- bad files ----------------------------------------------------------------------

TEST(SafetensorsErrors, MissingAndTooShortFiles) {
    ScratchDir dir;
    const std::string path = dir.file("none.safetensors");
    expect_input_error([&] { read_safetensors(path); }, {path, "No such file"});
    expect_rejected({1, 2, 3}, "shorter than the 8-byte header length");
    expect_rejected({}, "shorter than the 8-byte header length");
}

TEST(SafetensorsErrors, TruncatedFile) {
    std::vector<uint8_t> bytes = encode_safetensors({{"x", {4}, {1, 2, 3, 4}, TensorDtype::F32}});
    bytes.pop_back();
    expect_rejected(bytes, "out of range");
    bytes.resize(20);  // inside the header
    expect_rejected(bytes, "exceeds the file size");
}

TEST(SafetensorsErrors, HeaderLengthBeyondTheLimit) {
    std::vector<uint8_t> bytes(8);
    const uint64_t n = 100'000'001;
    for (int i = 0; i < 8; ++i) bytes[i] = (uint8_t)(n >> (8 * i));
    bytes.push_back('{');
    expect_rejected(bytes, "100 MB");
    for (int i = 0; i < 8; ++i) bytes[i] = 0xff;  // 2^64-1: must not overflow the size check
    expect_rejected(bytes, "100 MB");
}

TEST(SafetensorsErrors, HeaderNotAJsonObject) {
    expect_rejected(file_with_header("{\"a\": {\"dtype\": ", {}), "not valid JSON");
    expect_rejected(file_with_header("[1, 2, 3]", {}), "not a JSON object");
    expect_rejected(file_with_header("{\"a\": 5}", {}), "tensor 'a' must be a JSON object");
    expect_rejected(file_with_header("{\"__metadata__\": {\"k\": 3}}", {}), "must be a string");
}

TEST(SafetensorsErrors, UnknownDtype) {
    expect_rejected(file_with_header("{\"a\": {\"dtype\": \"BF16\", \"shape\": [1], \"data_offsets\": [0, 2]}}", {0, 0}),
                    "unsupported dtype \"BF16\" (supported: F32, F16, U8)");
}

TEST(SafetensorsErrors, HeaderLyingAboutSizesAndOffsets) {
    const auto data = le_floats({1, 2, 3, 4});
    // Shape needs 16 bytes, offsets span 12.
    expect_rejected(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,12]},"
                                     "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}",
                                     data),
                    "need 16 bytes but data_offsets span 12");
    // Offsets beyond the data.
    expect_rejected(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]}}", data),
                    "out of range");
    // Overlap.
    expect_rejected(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
                                     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
                                     data),
                    "overlaps");
    // Gap.
    expect_rejected(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                                     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
                                     data),
                    "gap of 4 bytes before tensor 'b'");
    // Trailing bytes.
    expect_rejected(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}", data),
                    "4 trailing bytes");
    // Reversed and negative offsets, negative shape.
    expect_rejected(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]}}", data),
                    "begin > end");
    expect_rejected(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", data),
                    "non-negative integer");
    expect_rejected(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]}}", data),
                    "data_offsets");
    // A shape whose byte count overflows 64 bits.
    expect_rejected(file_with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                                     "\"data_offsets\":[0,16]}}",
                                     data),
                    "too large");
}

TEST(SafetensorsErrors, UnwritableDirectoryLeavesNothing) {
    ScratchDir dir;
    fusedngp::test::write_text(dir.file("blocker"), "x");
    const std::string path = dir.file("blocker/model.safetensors");
    expect_input_error([&] { write_safetensors(path, {{"a", {1}, {1.0f}, TensorDtype::F32}}); },
                       {path, "Not a directory"});
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"blocker"});
}
