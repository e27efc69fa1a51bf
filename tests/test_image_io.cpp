// Image IO: loading/saving round trips, colour conventions, error handling,
// atomic writes, bilinear sampling and metrics.
#include "io/atomic_file.h"
#include "io/half.h"
#include "io/image.h"
#include "io/metrics.h"
#include "io/sampling.h"

#include "exr_test_util.h"
#include "io_test_util.h"

#include <stb_image_write.h>
#include <tinyexr.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace fusedngp;
using fusedngp::test::write_raw_exr;
using fusedngp::test::expect_input_error;
using fusedngp::test::ScratchDir;

namespace {

const std::string kSharedImages = FUSEDNGP_SOURCE_DIR "/../shared/data/image";

// An image with seeded random values in [lo, hi).
Image random_image(int w, int h, int c, ColorSpace space, uint64_t seed, float lo = 0.0f, float hi = 1.0f) {
    Image image = make_image(w, h, c, space);
    Rng rng(seed);
    for (float& v : image.pixels) v = lo + (hi - lo) * rng.next_float();
    return image;
}

// Random 8-bit levels k/255, which survive an 8-bit PNG exactly.
Image random_8bit_image(int w, int h, int c, uint64_t seed) {
    Image image = make_image(w, h, c, ColorSpace::Srgb);
    Rng rng(seed);
    for (float& v : image.pixels) v = (float)(rng.next_u64() % 256) / 255.0f;
    return image;
}

// ---- a minimal PNG writer for 16-bit files (stb_image_write is 8-bit only) ----

uint32_t crc32(const uint8_t* data, size_t n, uint32_t crc = 0) {
    crc = ~crc;
    for (size_t i = 0; i < n; ++i) {
        crc ^= data[i];
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back((uint8_t)(v >> s));
}

void put_chunk(std::vector<uint8_t>& png, const char* type, const std::vector<uint8_t>& data) {
    put_be32(png, (uint32_t)data.size());
    std::vector<uint8_t> typed(type, type + 4);
    typed.insert(typed.end(), data.begin(), data.end());
    png.insert(png.end(), typed.begin(), typed.end());
    put_be32(png, crc32(typed.data(), typed.size()));
}

// zlib stream made of uncompressed ("stored") deflate blocks.
std::vector<uint8_t> zlib_stored(const std::vector<uint8_t>& raw) {
    std::vector<uint8_t> z = {0x78, 0x01};
    size_t pos = 0;
    do {
        const size_t n = std::min<size_t>(65535, raw.size() - pos);
        z.push_back(pos + n == raw.size() ? 1 : 0);
        z.push_back((uint8_t)(n & 0xff));
        z.push_back((uint8_t)(n >> 8));
        z.push_back((uint8_t)(~n & 0xff));
        z.push_back((uint8_t)((~n >> 8) & 0xff));
        z.insert(z.end(), raw.begin() + (long)pos, raw.begin() + (long)(pos + n));
        pos += n;
    } while (pos < raw.size());
    uint32_t a = 1, b = 0;
    for (uint8_t byte : raw) {
        a = (a + byte) % 65521;
        b = (b + a) % 65521;
    }
    put_be32(z, (b << 16) | a);
    return z;
}

// 16-bit PNG of `samples` (interleaved, channels 1-4 -> colour types 0, 4, 2, 6).
std::vector<uint8_t> make_png16(int w, int h, int channels, const std::vector<uint16_t>& samples) {
    static const uint8_t kColorType[4] = {0, 4, 2, 6};
    std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    std::vector<uint8_t> ihdr;
    put_be32(ihdr, (uint32_t)w);
    put_be32(ihdr, (uint32_t)h);
    ihdr.insert(ihdr.end(), {16, kColorType[channels - 1], 0, 0, 0});
    put_chunk(png, "IHDR", ihdr);
    std::vector<uint8_t> raw;
    for (int y = 0; y < h; ++y) {
        raw.push_back(0);  // filter: none
        for (int i = 0; i < w * channels; ++i) {
            const uint16_t s = samples[(size_t)y * w * channels + i];
            raw.push_back((uint8_t)(s >> 8));
            raw.push_back((uint8_t)(s & 0xff));
        }
    }
    put_chunk(png, "IDAT", zlib_stored(raw));
    put_chunk(png, "IEND", {});
    return png;
}

} // namespace

// ---- conventions ------------------------------------------------------------

TEST(ImageIo, SrgbTransferFunctionsInvertEachOtherAndMatchKnownValues) {
    for (int i = 0; i <= 1000; ++i) {
        const double x = i / 1000.0;
        EXPECT_NEAR(srgb_to_linear(linear_to_srgb(x)), x, 1e-12);
        EXPECT_NEAR(linear_to_srgb(srgb_to_linear(x)), x, 1e-12);
    }
    EXPECT_NEAR(linear_to_srgb(0.5), 0.7353569830524495, 1e-12);
    EXPECT_NEAR(srgb_to_linear(0.5), 0.21404114048223255, 1e-12);
    EXPECT_DOUBLE_EQ(linear_to_srgb(0.002), 0.002 * 12.92);  // linear toe
    EXPECT_DOUBLE_EQ(srgb_to_linear(0.04), 0.04 / 12.92);
    EXPECT_DOUBLE_EQ(linear_to_srgb(1.0), 1.0);
    // The two pieces meet at the break points (the standard's constants make
    // them continuous to ~1e-8).
    EXPECT_NEAR(0.0031308 * 12.92, 1.055 * std::pow(0.0031308, 1 / 2.4) - 0.055, 1e-7);
}

TEST(ImageIo, DescribeReportsShapeColourSpaceAndMemory) {
    Image image = make_image(512, 512, 3, ColorSpace::Srgb);
    EXPECT_EQ(image.bytes(), 512u * 512u * 3u * sizeof(float));
    EXPECT_EQ(image.describe(), "512x512x3 sRGB, 3.0 MiB");
    Image small = make_image(4, 2, 1, ColorSpace::Linear);
    EXPECT_EQ(small.describe(), "4x2x1 linear, 32 B");
}

TEST(ImageIo, ConvertColorSpaceLeavesAlphaAlone) {
    Image image = make_image(1, 1, 4, ColorSpace::Linear);
    image.pixels = {0.2f, 0.5f, 1.0f, 0.3f};
    const Image srgb = convert_color_space(image, ColorSpace::Srgb);
    EXPECT_EQ(srgb.color_space, ColorSpace::Srgb);
    EXPECT_FLOAT_EQ(srgb.pixels[0], (float)linear_to_srgb(0.2f));
    EXPECT_FLOAT_EQ(srgb.pixels[1], (float)linear_to_srgb(0.5f));
    EXPECT_FLOAT_EQ(srgb.pixels[3], 0.3f);
    const Image back = convert_color_space(srgb, ColorSpace::Linear);
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(back.pixels[c], image.pixels[c], 1e-6);
}

// ---- round trips --------------------------------------------------------------

TEST(ImageIo, Png8BitRoundTripForOneToFourChannels) {
    ScratchDir dir;
    for (int c = 1; c <= 4; ++c) {
        const Image image = random_8bit_image(7, 5, c, 100 + c);
        const std::string path = dir.file("rt" + std::to_string(c) + ".png");
        save_png(image, path);
        const Image loaded = load_image(path);
        ASSERT_EQ(loaded.width, 7);
        ASSERT_EQ(loaded.height, 5);
        ASSERT_EQ(loaded.channels, c);
        EXPECT_EQ(loaded.color_space, ColorSpace::Srgb);
        EXPECT_EQ(loaded.path, path);
        for (size_t i = 0; i < image.pixels.size(); ++i) ASSERT_NEAR(loaded.pixels[i], image.pixels[i], 1e-7) << i;
    }
    EXPECT_EQ(dir.entries().size(), 4u);  // no temporary files left behind
}

TEST(ImageIo, SavePngEncodesLinearImagesAsSrgbAndClamps) {
    ScratchDir dir;
    Image image = make_image(4, 1, 2, ColorSpace::Linear);
    image.pixels = {0.2f, 0.5f, -0.5f, 1.0f, 2.0f, 0.25f, 0.0f, 0.0f};
    save_png(image, dir.file("a.png"));
    const Image loaded = load_image(dir.file("a.png"));
    EXPECT_FLOAT_EQ(loaded.pixels[0] * 255.0f, std::round(linear_to_srgb(0.2) * 255.0));
    EXPECT_FLOAT_EQ(loaded.pixels[1] * 255.0f, std::round(0.5 * 255.0));  // alpha is not converted
    EXPECT_EQ(loaded.pixels[2], 0.0f);                                     // clamped below
    EXPECT_EQ(loaded.pixels[4], 1.0f);                                     // clamped above
}

TEST(ImageIo, Png16BitLoadsWithFullPrecision) {
    ScratchDir dir;
    for (int c : {1, 2, 3, 4}) {
        const int w = 5, h = 3;
        std::vector<uint16_t> samples((size_t)w * h * c);
        Rng rng(7 + c);
        for (auto& s : samples) s = (uint16_t)(rng.next_u64() & 0xffff);
        samples[0] = 65535;
        samples[1 % samples.size()] = 1;  // not representable in 8 bits
        const std::string path = dir.file("deep" + std::to_string(c) + ".png");
        fusedngp::test::write_bytes(path, make_png16(w, h, c, samples));
        const Image loaded = load_image(path);
        ASSERT_EQ(loaded.channels, c);
        ASSERT_EQ(loaded.width, w);
        EXPECT_EQ(loaded.color_space, ColorSpace::Srgb);
        for (size_t i = 0; i < samples.size(); ++i) ASSERT_NEAR(loaded.pixels[i], samples[i] / 65535.0, 1e-7) << i;
    }
}

TEST(ImageIo, ExrFloatRoundTripIsExactForOneToFourChannels) {
    ScratchDir dir;
    for (int c = 1; c <= 4; ++c) {
        const Image image = random_image(6, 4, c, ColorSpace::Linear, 200 + c, -0.5f, 4.0f);  // HDR range
        const std::string path = dir.file("rt" + std::to_string(c) + ".exr");
        save_exr(image, path);
        const Image loaded = load_image(path);
        ASSERT_EQ(loaded.width, 6);
        ASSERT_EQ(loaded.height, 4);
        ASSERT_EQ(loaded.channels, c);
        EXPECT_EQ(loaded.color_space, ColorSpace::Linear);
        EXPECT_EQ(loaded.pixels, image.pixels);
    }
}

TEST(ImageIo, SaveExrDecodesSrgbImagesToLinear) {
    ScratchDir dir;
    Image image = make_image(2, 1, 1, ColorSpace::Srgb);
    image.pixels = {0.5f, 1.0f};
    save_exr(image, dir.file("s.exr"));
    const Image loaded = load_image(dir.file("s.exr"));
    EXPECT_FLOAT_EQ(loaded.pixels[0], (float)srgb_to_linear(0.5f));
    EXPECT_FLOAT_EQ(loaded.pixels[1], 1.0f);
}

TEST(ImageIo, ExrHalfChannelsMappedByName) {
    // A half-float EXR with channels written in a non-RGB order plus an extra
    // channel we ignore.
    ScratchDir dir;
    const int w = 3, h = 2, n = w * h;
    const std::vector<std::string> names = {"B", "G", "R", "Z"};
    std::vector<std::vector<uint16_t>> planes(4, std::vector<uint16_t>(n));
    for (int c = 0; c < 4; ++c)
        for (int i = 0; i < n; ++i) planes[c][i] = float_to_half(0.125f * (float)(c * 10 + i));
    std::vector<EXRChannelInfo> infos(4);
    std::vector<unsigned char*> pointers(4);
    std::vector<int> types(4, TINYEXR_PIXELTYPE_HALF);
    for (int c = 0; c < 4; ++c) {
        std::memset(&infos[c], 0, sizeof(EXRChannelInfo));
        std::strncpy(infos[c].name, names[c].c_str(), 255);
        pointers[c] = reinterpret_cast<unsigned char*>(planes[c].data());
    }
    EXRImage exr;
    InitEXRImage(&exr);
    exr.images = pointers.data();
    exr.width = w;
    exr.height = h;
    exr.num_channels = 4;
    EXRHeader header;
    InitEXRHeader(&header);
    header.num_channels = 4;
    header.channels = infos.data();
    header.pixel_types = types.data();
    header.requested_pixel_types = types.data();
    const std::string path = dir.file("half.exr");
    const char* err = nullptr;
    ASSERT_EQ(SaveEXRImageToFile(&exr, &header, path.c_str(), &err), TINYEXR_SUCCESS) << (err ? err : "");

    const Image loaded = load_image(path);
    ASSERT_EQ(loaded.channels, 3);
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(loaded.pixels[i * 3 + 0], half_to_float(planes[2][i]));  // R
        EXPECT_EQ(loaded.pixels[i * 3 + 1], half_to_float(planes[1][i]));  // G
        EXPECT_EQ(loaded.pixels[i * 3 + 2], half_to_float(planes[0][i]));  // B
    }
}

TEST(ImageIo, ExrLuminanceAndAlphaGiveTwoChannels) {
    ScratchDir dir;
    const std::string path = dir.file("ya.exr");
    write_raw_exr(path, 2, 1, {"A", "Y"}, {{0.25f, 0.5f}, {3.0f, 4.0f}});
    const Image loaded = load_image(path);
    ASSERT_EQ(loaded.channels, 2);
    EXPECT_EQ(loaded.pixels, (std::vector<float>{3.0f, 0.25f, 4.0f, 0.5f}));
}

TEST(ImageIo, TiledExrIsAssembledFromItsTiles) {
    // 5x3 pixels in 2x2 tiles: 3x2 tiles, the right column and bottom row cut off.
    ScratchDir dir;
    const int w = 5, h = 3, tile = 2, tiles_x = 3, tiles_y = 2;
    std::vector<std::vector<float>> planes(tiles_x * tiles_y, std::vector<float>(tile * tile, -1.0f));
    std::vector<unsigned char*> pointers(tiles_x * tiles_y);
    std::vector<EXRTile> tiles(tiles_x * tiles_y);
    for (int ty = 0; ty < tiles_y; ++ty) {
        for (int tx = 0; tx < tiles_x; ++tx) {
            const int t = ty * tiles_x + tx;
            EXRTile& exr_tile = tiles[t];
            std::memset(&exr_tile, 0, sizeof(EXRTile));
            exr_tile.offset_x = tx;
            exr_tile.offset_y = ty;
            exr_tile.width = std::min(tile, w - tx * tile);
            exr_tile.height = std::min(tile, h - ty * tile);
            for (int j = 0; j < exr_tile.height; ++j)
                for (int i = 0; i < exr_tile.width; ++i)
                    planes[t][j * tile + i] = (float)((ty * tile + j) * w + tx * tile + i);
            pointers[t] = reinterpret_cast<unsigned char*>(planes[t].data());
            exr_tile.images = &pointers[t];
        }
    }
    EXRChannelInfo info;
    std::memset(&info, 0, sizeof(info));
    std::strncpy(info.name, "Y", 255);
    int type = TINYEXR_PIXELTYPE_FLOAT;
    EXRImage exr;
    InitEXRImage(&exr);
    exr.tiles = tiles.data();
    exr.num_tiles = (int)tiles.size();
    exr.width = w;
    exr.height = h;
    exr.num_channels = 1;
    EXRHeader header;
    InitEXRHeader(&header);
    header.num_channels = 1;
    header.channels = &info;
    header.pixel_types = &type;
    header.requested_pixel_types = &type;
    header.tiled = 1;
    header.tile_size_x = tile;
    header.tile_size_y = tile;
    header.tile_level_mode = TINYEXR_TILE_ONE_LEVEL;
    header.data_window = {0, 0, w - 1, h - 1};  // tinyexr counts tiles from the data window
    header.display_window = header.data_window;
    const std::string path = dir.file("tiled.exr");
    const char* err = nullptr;
    const int code = SaveEXRImageToFile(&exr, &header, path.c_str(), &err);
    if (code != TINYEXR_SUCCESS) GTEST_SKIP() << "this tinyexr cannot write tiled files: " << (err ? err : "");

    const Image loaded = load_image(path);
    ASSERT_EQ(loaded.width, w);
    ASSERT_EQ(loaded.height, h);
    for (int i = 0; i < w * h; ++i) EXPECT_EQ(loaded.pixels[i], (float)i) << i;
}

TEST(ImageIo, RadianceHdrLoadsAsLinearFloat) {
    ScratchDir dir;
    const std::vector<float> rgb = {0.5f, 2.0f, 10.0f, 0.125f, 1.0f, 3.0f};
    const std::string path = dir.file("a.hdr");
    ASSERT_TRUE(stbi_write_hdr(path.c_str(), 2, 1, 3, rgb.data()));
    const Image loaded = load_image(path);
    EXPECT_EQ(loaded.color_space, ColorSpace::Linear);
    ASSERT_EQ(loaded.channels, 3);
    for (size_t i = 0; i < rgb.size(); ++i) EXPECT_NEAR(loaded.pixels[i], rgb[i], rgb[i] / 64.0f) << i;  // RGBE precision
}

// Wide enough for run-length encoded scanlines (8 to 32767 pixels); every
// cut of the file is an error, the whole file loads.
TEST(ImageIo, RadianceHdrThatEndsEarlyIsAnError) {
    ScratchDir dir;
    const int w = 40, h = 6;
    std::vector<float> rgb((size_t)w * h * 3);
    for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = (float)((i * 7) % 13) * 0.25f;
    const std::string path = dir.file("full.hdr");
    ASSERT_TRUE(stbi_write_hdr(path.c_str(), w, h, 3, rgb.data()));
    EXPECT_EQ(load_image(path).width, w);
    const std::vector<uint8_t> bytes = fusedngp::test::read_bytes(path);
    for (size_t keep : {bytes.size() - 1, bytes.size() - 40, bytes.size() / 2}) {
        const std::string cut = dir.file("cut" + std::to_string(keep) + ".hdr");
        fusedngp::test::write_bytes(cut, std::vector<uint8_t>(bytes.begin(), bytes.begin() + (long)keep));
        expect_input_error([&] { load_image(cut); }, {cut});
    }
}

TEST(ImageIo, SharedDatasetImagesLoad) {
    const std::string png = kSharedImages + "/astronaut.png", exr = kSharedImages + "/albert.exr";
    if (!std::filesystem::exists(png) || !std::filesystem::exists(exr)) {
        GTEST_SKIP() << "shared images not found under " << kSharedImages;
    }
    const Image astronaut = load_image(png);
    EXPECT_EQ(astronaut.describe(), "512x512x3 sRGB, 3.0 MiB");
    const Image albert = load_image(exr);
    EXPECT_EQ(albert.color_space, ColorSpace::Linear);
    EXPECT_GT(albert.width, 0);
    EXPECT_TRUE(albert.channels == 1 || albert.channels == 3 || albert.channels == 4) << albert.describe();
    // An 8-bit PNG survives save/load exactly.
    ScratchDir dir;
    save_png(astronaut, dir.file("copy.png"));
    EXPECT_EQ(psnr(astronaut, load_image(dir.file("copy.png"))), std::numeric_limits<double>::infinity());
}

// ---- bad input ----------------------------------------------------------------

TEST(ImageIoErrors, MissingFile) {
    ScratchDir dir;
    const std::string path = dir.file("nope.png");
    expect_input_error([&] { load_image(path); }, {path, "No such file"});
}

TEST(ImageIoErrors, EmptyFile) {
    ScratchDir dir;
    const std::string path = dir.file("empty.png");
    fusedngp::test::write_text(path, "");
    expect_input_error([&] { load_image(path); }, {path, "empty"});
}

TEST(ImageIoErrors, TextFileNamedPng) {
    ScratchDir dir;
    const std::string path = dir.file("notes.png");
    fusedngp::test::write_text(path, "this is not an image, just some text\n");
    expect_input_error([&] { load_image(path); }, {path, "not a supported image", "stb_image"});
}

TEST(ImageIoErrors, TruncatedPng) {
    ScratchDir dir;
    const std::string good = dir.file("good.png"), cut = dir.file("cut.png");
    save_png(random_image(64, 64, 3, ColorSpace::Srgb, 1), good);
    std::vector<uint8_t> bytes = fusedngp::test::read_bytes(good);
    ASSERT_GT(bytes.size(), 1000u);
    bytes.resize(bytes.size() / 2);
    fusedngp::test::write_bytes(cut, bytes);
    expect_input_error([&] { load_image(cut); }, {cut, "corrupt or truncated", "stb_image"});
}

TEST(ImageIoErrors, TruncatedJpeg) {
    ScratchDir dir;
    const std::string good = dir.file("good.jpg"), cut = dir.file("cut.jpg");
    std::vector<uint8_t> rgb(64 * 64 * 3);
    Rng rng(5);
    for (auto& v : rgb) v = (uint8_t)(rng.next_u64() & 0xff);
    ASSERT_TRUE(stbi_write_jpg(good.c_str(), 64, 64, 3, rgb.data(), 90));
    ASSERT_EQ(load_image(good).channels, 3);  // the uncut file is fine
    std::vector<uint8_t> bytes = fusedngp::test::read_bytes(good);
    bytes.resize(bytes.size() / 2);
    fusedngp::test::write_bytes(cut, bytes);
    expect_input_error([&] { load_image(cut); }, {cut, "stb_image"});
}

TEST(ImageIoErrors, ZeroSizeImages) {
    ScratchDir dir;
    // A BMP header claiming 0x0 pixels.
    std::vector<uint8_t> bmp(54, 0);
    bmp[0] = 'B';
    bmp[1] = 'M';
    bmp[2] = 54;      // file size
    bmp[10] = 54;     // pixel data offset
    bmp[14] = 40;     // info header size; width, height stay 0
    bmp[26] = 1;      // planes
    bmp[28] = 24;     // bits per pixel
    const std::string bmp_path = dir.file("empty.bmp");
    fusedngp::test::write_bytes(bmp_path, bmp);
    expect_input_error([&] { load_image(bmp_path); }, {bmp_path});
    // A PNG whose IHDR says 0x4.
    const std::string png_path = dir.file("empty.png");
    fusedngp::test::write_bytes(png_path, make_png16(0, 4, 1, {}));
    expect_input_error([&] { load_image(png_path); }, {png_path});
    // Our own check, whatever the decoder lets through.
    expect_input_error([] { check_image_dimensions(0, 5, 3, "x.exr"); }, {"x.exr", "no pixels"});
    expect_input_error([] { check_image_dimensions(5, 0, 3, "x.exr"); }, {"x.exr", "no pixels"});
    expect_input_error([] { check_image_dimensions(5, 5, 5, "x.exr"); }, {"x.exr", "channels"});
    expect_input_error([] { make_image(0, 0, 3, ColorSpace::Srgb, "y.png"); }, {"y.png"});
    EXPECT_EQ(dir.entries(), (std::vector<std::string>{"empty.bmp", "empty.png"}));
}

TEST(ImageIoErrors, ExrWithoutUsableChannelsListsWhatItFound) {
    ScratchDir dir;
    const std::string depth = dir.file("depth.exr");
    write_raw_exr(depth, 2, 2, {"Z"}, {{1, 2, 3, 4}});
    expect_input_error([&] { load_image(depth); }, {depth, "no usable channels", "found: Z"});
    const std::string layered = dir.file("layered.exr");
    write_raw_exr(layered, 1, 1, {"foo.bar", "foo.baz"}, {{1}, {2}});
    expect_input_error([&] { load_image(layered); }, {layered, "foo.bar, foo.baz"});
}

TEST(ImageIoErrors, CorruptExr) {
    ScratchDir dir;
    const std::string good = dir.file("good.exr"), cut = dir.file("cut.exr");
    save_exr(random_image(32, 32, 3, ColorSpace::Linear, 3), good);
    std::vector<uint8_t> bytes = fusedngp::test::read_bytes(good);
    bytes.resize(bytes.size() / 2);
    fusedngp::test::write_bytes(cut, bytes);
    expect_input_error([&] { load_image(cut); }, {cut});
}

TEST(ImageIoErrors, SavingIntoAnUnwritableDirectoryLeavesNothing) {
    // Tests may run as root, where permissions do not stop writes; a parent
    // that is a regular file stops everyone.
    ScratchDir dir;
    fusedngp::test::write_text(dir.file("blocker"), "a file, not a directory");
    const Image image = random_image(4, 4, 3, ColorSpace::Srgb, 9);
    const std::string png = dir.file("blocker/out.png"), exr = dir.file("blocker/out.exr");
    expect_input_error([&] { save_png(image, png); }, {png, "Not a directory"});
    expect_input_error([&] { save_exr(image, exr); }, {exr, "Not a directory"});
    const std::string missing = dir.file("no/such/dir/out.png");
    expect_input_error([&] { save_png(image, missing); }, {missing, "No such file"});
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"blocker"});
}

// ---- atomic writes ------------------------------------------------------------

TEST(AtomicFile, ReplacesTheFileWholeAndLeavesNoTemporary) {
    ScratchDir dir;
    const std::string path = dir.file("data.bin");
    write_file_atomically(path, std::vector<uint8_t>{1, 2, 3});
    write_file_atomically(path, std::vector<uint8_t>{4, 5});
    EXPECT_EQ(fusedngp::test::read_bytes(path), (std::vector<uint8_t>{4, 5}));
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"data.bin"});
}

TEST(AtomicFile, FailingWriterKeepsTheOldFileAndRemovesTheTemporary) {
    ScratchDir dir;
    const std::string path = dir.file("data.bin");
    write_file_atomically(path, std::vector<uint8_t>{7});
    expect_input_error(
        [&] {
            write_file_atomically(path, [](const std::string& tmp) {
                fusedngp::test::write_text(tmp, "half written");
                throw std::runtime_error("disk full (simulated)");
            });
        },
        {path, "disk full (simulated)"});
    EXPECT_EQ(fusedngp::test::read_bytes(path), std::vector<uint8_t>{7});
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"data.bin"});
    // A writer that forgets to create the file is an error too.
    expect_input_error([&] { write_file_atomically(path, [](const std::string&) {}); }, {path, "did not create"});
}

TEST(AtomicFile, WriterGetsATemporaryPathNextToTheTarget) {
    ScratchDir dir;
    const std::string path = dir.file("x.txt");
    std::string seen;
    write_file_atomically(path, [&](const std::string& tmp) {
        seen = tmp;
        fusedngp::test::write_text(tmp, "ok");
    });
    EXPECT_EQ(seen, atomic_temp_path(path));
    EXPECT_EQ(seen.rfind(path + ".fusedngp-tmp.", 0), 0u);
    EXPECT_TRUE(is_atomic_temp_name(std::filesystem::path(seen).filename().string()));
    EXPECT_EQ(dir.entries(), std::vector<std::string>{"x.txt"});
}

// ---- sampling -----------------------------------------------------------------

TEST(ImageSampling, BilinearIsExactAtPixelCentres) {
    const Image image = random_image(5, 4, 3, ColorSpace::Srgb, 11);
    const Matrix<double> centres = pixel_center_coords<double>(5, 4);
    ASSERT_EQ(centres.rows(), 20);
    double out[3];
    for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 5; ++i) {
            const Eigen::Index row = j * 5 + i;
            EXPECT_DOUBLE_EQ(centres(row, 0), (i + 0.5) / 5);
            EXPECT_DOUBLE_EQ(centres(row, 1), (j + 0.5) / 4);
            sample_bilinear<double>(image, centres(row, 0), centres(row, 1), out);
            for (int c = 0; c < 3; ++c) EXPECT_NEAR(out[c], image.at(i, j, c), 1e-12);
        }
    }
}

TEST(ImageSampling, BilinearAveragesAtMidpointsAndClampsAtEdges) {
    const Image image = random_image(4, 3, 2, ColorSpace::Srgb, 12);
    double out[2];
    for (int c = 0; c < 2; ++c) {
        // Between horizontal neighbours (1,1)-(2,1): u = 2/4.
        sample_bilinear<double>(image, 0.5, 1.5 / 3, out);
        EXPECT_NEAR(out[c], 0.5 * ((double)image.at(1, 1, c) + image.at(2, 1, c)), 1e-12);
        // Centre of four pixels (0,0),(1,0),(0,1),(1,1).
        sample_bilinear<double>(image, 0.25, 1.0 / 3, out);
        EXPECT_NEAR(out[c], 0.25 * ((double)image.at(0, 0, c) + image.at(1, 0, c) + image.at(0, 1, c) + image.at(1, 1, c)),
                    1e-12);
        // Quarter of the way between (2,2) and (3,2).
        sample_bilinear<double>(image, (2.75) / 4, 2.5 / 3, out);
        EXPECT_NEAR(out[c], 0.75 * image.at(2, 2, c) + 0.25 * image.at(3, 2, c), 1e-12);
        // Clamp to edge: the corner pixel for anything beyond the corner centre.
        for (double u : {0.0, 0.05, -3.0}) {
            sample_bilinear<double>(image, u, u, out);
            EXPECT_NEAR(out[c], image.at(0, 0, c), 1e-12);
            sample_bilinear<double>(image, 1.0 - u, 1.0 - u, out);
            EXPECT_NEAR(out[c], image.at(3, 2, c), 1e-12);
        }
    }
    // NaN coordinates stay inside the image instead of indexing out of range.
    sample_bilinear<double>(image, std::nan(""), 0.5, out);
    EXPECT_TRUE(std::isfinite(out[0]));
}

TEST(ImageSampling, BilinearReproducesALinearRamp) {
    Image image = make_image(8, 6, 1, ColorSpace::Linear);
    for (int y = 0; y < 6; ++y)
        for (int x = 0; x < 8; ++x) image.at(x, y, 0) = 0.1f * x + 0.05f * y;
    Rng rng(3);
    for (int k = 0; k < 100; ++k) {
        // Inside the centre hull the interpolation of a linear function is exact.
        const double u = (0.5 + 7.0 * rng.next_double()) / 8, v = (0.5 + 5.0 * rng.next_double()) / 6;
        double out;
        sample_bilinear<double>(image, u, v, &out);
        const double x = u * 8 - 0.5, y = v * 6 - 0.5;
        // Corner values are floats, so compare against the interpolated float corners.
        EXPECT_NEAR(out, 0.1 * x + 0.05 * y, 1e-6);
    }
}

TEST(ImageSampling, BatchIsSeededUniformAndMatchesSingleLookups) {
    const Image image = random_image(9, 7, 3, ColorSpace::Srgb, 13);
    const ImageSampling continuous{SamplePositions::Uniform, SampleTargets::Bilinear};
    Rng a(77), b(77);
    Matrix<double> coords_a, targets_a, coords_b, targets_b;
    sample_batch<double>(image, 500, a, coords_a, targets_a, continuous);
    sample_batch<double>(image, 500, b, coords_b, targets_b, continuous);
    EXPECT_EQ(coords_a, coords_b);
    EXPECT_EQ(targets_a, targets_b);
    ASSERT_EQ(coords_a.rows(), 500);
    ASSERT_EQ(targets_a.cols(), 3);
    EXPECT_GE(coords_a.minCoeff(), 0.0);
    EXPECT_LT(coords_a.maxCoeff(), 1.0);
    EXPECT_NEAR(coords_a.col(0).mean(), 0.5, 0.05);
    EXPECT_NEAR(coords_a.col(1).mean(), 0.5, 0.05);
    for (Eigen::Index i = 0; i < 500; ++i) {
        double expected[3];
        sample_bilinear<double>(image, coords_a(i, 0), coords_a(i, 1), expected);
        for (int c = 0; c < 3; ++c) ASSERT_EQ(targets_a(i, c), expected[c]);
    }
    // Reusing the matrices does not reallocate, and the stream moves on.
    const double* data = coords_a.data();
    sample_batch<double>(image, 500, a, coords_a, targets_a, continuous);
    EXPECT_EQ(coords_a.data(), data);
    EXPECT_NE(coords_a, coords_b);
    // The float version draws with next_float, u before v.
    Rng c(5), reference(5);
    Matrix<float> coords_f, targets_f;
    sample_batch<float>(image, 3, c, coords_f, targets_f, continuous);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(coords_f(i, 0), reference.next_float());
        EXPECT_EQ(coords_f(i, 1), reference.next_float());
    }
}

TEST(ImageSampling, StratifiedBatchPutsOneSampleInEveryCell) {
    // 16 x 16 pixels, batch 70: side 8 -> 64 stratified samples (one per 2 x 2
    // pixel cell, in a permuted order) and 6 uniform ones.
    const Image image = random_image(16, 16, 2, ColorSpace::Linear, 21);
    const ImageSampling stratified_bilinear{SamplePositions::Stratified, SampleTargets::Bilinear};
    Rng rng(3);
    Matrix<double> coords, targets;
    sample_batch<double>(image, 70, rng, coords, targets, stratified_bilinear);
    ASSERT_EQ(strata_side(70), 8u);
    std::vector<int> hits(64, 0);
    for (Eigen::Index i = 0; i < 64; ++i) {
        ASSERT_GE(coords(i, 0), 0.0);
        ASSERT_LT(coords(i, 0), 1.0);
        ASSERT_GE(coords(i, 1), 0.0);
        ASSERT_LT(coords(i, 1), 1.0);
        ++hits[(int)(coords(i, 1) * 8) * 8 + (int)(coords(i, 0) * 8)];
    }
    for (int cell = 0; cell < 64; ++cell) EXPECT_EQ(hits[cell], 1) << cell;
    // Neighbours in the batch are not neighbours in the image (the permutation).
    EXPECT_NE(stratum_of(1, 8, strata_multiplier(8)), stratum_of(0, 8, strata_multiplier(8)) + 1);
    for (Eigen::Index i = 0; i < 70; ++i) {
        double expected[2];
        sample_bilinear<double>(image, coords(i, 0), coords(i, 1), expected);
        EXPECT_EQ(targets(i, 0), expected[0]);
    }
}

TEST(ImageSampling, StratumPermutationIsABijection) {
    for (uint32_t n : {1u, 2u, 5u, 1000u, 262144u, 1000003u}) {
        const uint32_t side = strata_side(n);
        ASSERT_LE((uint64_t)side * side, n);
        ASSERT_GT((uint64_t)(side + 1) * (side + 1), n);
        std::vector<bool> seen((size_t)side * side, false);
        const uint64_t multiplier = strata_multiplier(side);
        for (uint32_t i = 0; i < side * side; ++i) {
            const uint32_t cell = stratum_of(i, side, multiplier);
            ASSERT_LT(cell, side * side);
            ASSERT_FALSE(seen[cell]) << n << " " << i;
            seen[cell] = true;
        }
    }
    EXPECT_EQ(strata_side(0), 0u);
    EXPECT_EQ(strata_side(4294967295u), 65535u);
    // One warp's samples at batch 2^18 (side 512) spread over the image: no
    // two of the first 32 closer than 16 cells (row order would give 1, a
    // multiplier of -5 modulo 2^18 gave 5).
    const uint64_t m = strata_multiplier(512);
    double closest = 1e9;
    for (uint32_t a = 0; a < 32; ++a) {
        for (uint32_t b = a + 1; b < 32; ++b) {
            const uint32_t ca = stratum_of(a, 512, m), cb = stratum_of(b, 512, m);
            const double dx = (double)(ca % 512) - (double)(cb % 512), dy = (double)(ca / 512) - (double)(cb / 512);
            closest = std::min(closest, std::sqrt(dx * dx + dy * dy));
        }
    }
    EXPECT_GE(closest, 16.0);
}

// stratum_at (the one function the CPU sampler and the CUDA sampling kernel
// call) with the spread order is stratum_of: Barrett reduction equals %.
TEST(ImageSampling, SpreadStrataOrderIsStratumOf) {
    for (uint32_t side : {0u, 1u, 2u, 3u, 7u, 37u, 512u, 1000u, 65535u}) {
        const StrataOrder order = make_strata_order(side, SampleOrder::Spread);
        const uint64_t m = strata_multiplier(side);
        const uint64_t cells = (uint64_t)side * side;
        for (uint64_t i = 0; i < cells; i += 1 + cells / 5000) {
            ASSERT_EQ(stratum_at(order, (uint32_t)i), stratum_of((uint32_t)i, side, m)) << side << " " << i;
        }
        if (cells > 0) {
            EXPECT_EQ(stratum_at(order, (uint32_t)(cells - 1)), stratum_of((uint32_t)(cells - 1), side, m));
        }
    }
    for (uint64_t x : {0ull, 1ull, 12345678901234ull, ~0ull, ~0ull - 1}) {
        for (uint64_t n : {1ull, 2ull, 3ull, 262144ull, 4294836225ull, (1ull << 40) + 7}) {
            EXPECT_EQ(mod_barrett(x, n, ~0ull / n), x % n) << x << " " << n;
        }
    }
}

// The tiled order is a bijection on the side^2 cells for every side (edges
// where side is not a multiple of the 8 x 4 tile included).
TEST(ImageSampling, TiledStrataOrderIsABijection) {
    std::vector<uint32_t> sides;
    for (uint32_t side = 0; side <= 600; ++side) sides.push_back(side);
    sides.push_back(1024);
    sides.push_back(1023);
    for (uint32_t side : sides) {
        const StrataOrder order = make_strata_order(side, SampleOrder::Tiled);
        const uint32_t cells = side * side;
        std::vector<bool> seen(cells, false);
        for (uint32_t i = 0; i < cells; ++i) {
            const uint32_t cell = stratum_at(order, i);
            ASSERT_LT(cell, cells) << "side " << side << " i " << i;
            ASSERT_FALSE(seen[cell]) << "side " << side << " i " << i;
            seen[cell] = true;
        }
    }
}

// At batch 2^18 (side 512, a multiple of the tile) each aligned group of 32
// samples, one warp's, is exactly one 8 x 4 block of strata; consecutive
// groups are far apart (the tiles in a spread order). At other sides the
// groups inside the full tiles are 8 x 4 blocks, and every group (the edge
// strips' too) lies within a box of at most 32 x 32 cells; most within 8 x 4.
TEST(ImageSampling, TiledStrataOrderGivesEachWarpACompactTile) {
    auto box = [](const StrataOrder& order, uint32_t first, uint32_t count, uint32_t& w, uint32_t& h) {
        uint32_t x0 = ~0u, y0 = ~0u, x1 = 0, y1 = 0;
        for (uint32_t i = first; i < first + count; ++i) {
            const uint32_t cell = stratum_at(order, i);
            x0 = std::min(x0, cell % order.side);
            x1 = std::max(x1, cell % order.side);
            y0 = std::min(y0, cell / order.side);
            y1 = std::max(y1, cell / order.side);
        }
        w = x1 - x0 + 1;
        h = y1 - y0 + 1;
        return std::make_pair(x0, y0);
    };
    const StrataOrder order = make_strata_order(512, SampleOrder::Tiled);
    double closest_groups = 1e9;
    for (uint32_t g = 0; g < 512 * 512 / 32; ++g) {
        uint32_t w = 0, h = 0;
        const auto [x0, y0] = box(order, 32 * g, 32, w, h);
        ASSERT_EQ(w, 8u) << g;
        ASSERT_EQ(h, 4u) << g;
        ASSERT_EQ(x0 % 8, 0u);
        ASSERT_EQ(y0 % 4, 0u);
        if (g + 1 < 512 * 512 / 32 && g < 64) {
            uint32_t w2 = 0, h2 = 0;
            const auto [x2, y2] = box(order, 32 * (g + 1), 32, w2, h2);
            const double dx = (double)x2 - x0, dy = (double)y2 - y0;
            closest_groups = std::min(closest_groups, std::sqrt(dx * dx + dy * dy));
        }
    }
    EXPECT_GE(closest_groups, 32.0) << "consecutive tiles must not be neighbours";
    for (uint32_t side : {1u, 5u, 9u, 37u, 300u, 511u, 597u}) {
        const StrataOrder o = make_strata_order(side, SampleOrder::Tiled);
        const uint32_t cells = side * side, full = o.full_x * o.full_y;
        uint32_t compact = 0, groups = 0;
        for (uint32_t first = 0; first < cells; first += 32, ++groups) {
            uint32_t w = 0, h = 0;
            box(o, first, std::min(32u, cells - first), w, h);
            if (first / 32 < full) {
                ASSERT_EQ(w, 8u) << side << " " << first;
                ASSERT_EQ(h, 4u) << side << " " << first;
            }
            ASSERT_LE(w, 32u) << side << " " << first;
            ASSERT_LE(h, 32u) << side << " " << first;
            compact += w * h <= 32;
        }
        if (side >= 300) {
            EXPECT_GE(compact, groups * 9 / 10) << side;
        }
    }
}

// The tiled order samples the same cells as the spread one: a batch drawn
// either way puts one sample in every stratum, and the samples are identical
// up to their order (same jitter draws per row, so only the cells move).
TEST(ImageSampling, TiledOrderDrawsTheSameStrata) {
    const Image image = random_image(40, 24, 1, ColorSpace::Linear, 23);
    for (SampleOrder sample_order : {SampleOrder::Spread, SampleOrder::Tiled}) {
        Rng rng(3);
        Matrix<double> coords, targets;
        sample_batch<double>(image, 1000, rng, coords, targets,
                             ImageSampling{SamplePositions::Stratified, SampleTargets::Bilinear, sample_order});
        const uint32_t side = strata_side(1000);  // 31
        std::vector<int> hits((size_t)side * side, 0);
        for (Eigen::Index i = 0; i < (Eigen::Index)side * side; ++i) {
            const uint32_t cx = (uint32_t)(coords(i, 0) * side), cy = (uint32_t)(coords(i, 1) * side);
            ASSERT_LT(cx, side);
            ASSERT_LT(cy, side);
            ++hits[cy * side + cx];
            if (sample_order == SampleOrder::Tiled) {
                EXPECT_EQ(cy * side + cx, stratum_at(make_strata_order(side, SampleOrder::Tiled), (uint32_t)i));
            }
        }
        for (int h : hits) ASSERT_EQ(h, 1);
    }
}

TEST(ImageSampling, PixelTargetsSnapToCentresAndTakeThePixelValue) {
    const Image image = random_image(9, 7, 3, ColorSpace::Srgb, 13);
    for (SamplePositions positions : {SamplePositions::Stratified, SamplePositions::Uniform}) {
        Rng rng(11);
        Matrix<float> coords, targets;
        sample_batch<float>(image, 300, rng, coords, targets, ImageSampling{positions, SampleTargets::PixelCentres});
        for (Eigen::Index i = 0; i < 300; ++i) {
            const float x = coords(i, 0) * 9 - 0.5f, y = coords(i, 1) * 7 - 0.5f;
            const int px = (int)std::lround(x), py = (int)std::lround(y);
            ASSERT_NEAR(x, (float)px, 1e-5f);
            ASSERT_NEAR(y, (float)py, 1e-5f);
            ASSERT_GE(px, 0);
            ASSERT_LT(px, 9);
            ASSERT_GE(py, 0);
            ASSERT_LT(py, 7);
            for (int c = 0; c < 3; ++c) ASSERT_EQ(targets(i, c), image.at(px, py, c));
        }
    }
    // Edges: u = 0 and u just below 1 snap to the first and last pixel.
    EXPECT_EQ(pixel_of<float>(0.f, 9), 0);
    EXPECT_EQ(pixel_of<float>(0.99999994f, 9), 8);
    EXPECT_EQ(pixel_of<float>(1.5f, 9), 8);
    EXPECT_EQ(pixel_of<float>(-0.5f, 9), 0);
    EXPECT_EQ(pixel_of<float>(std::nanf(""), 9), 0);
}

// ---- metrics ------------------------------------------------------------------

TEST(ImageMetrics, PsnrOfIdenticalImagesIsInfinite) {
    const Image image = random_image(6, 5, 3, ColorSpace::Srgb, 14);
    EXPECT_EQ(mse(image, image), 0.0);
    EXPECT_EQ(psnr(image, image), std::numeric_limits<double>::infinity());
}

TEST(ImageMetrics, MseAndPsnrMatchHandComputedValues) {
    Image a = make_image(2, 1, 2, ColorSpace::Srgb), b = make_image(2, 1, 2, ColorSpace::Srgb);
    a.pixels = {0.0f, 1.0f, 0.5f, 0.25f};
    b.pixels = {0.5f, 1.0f, 0.25f, 0.25f};
    // squared errors 0.25, 0, 0.0625, 0 -> mean 0.078125
    EXPECT_DOUBLE_EQ(mse(a, b), 0.078125);
    EXPECT_NEAR(psnr(a, b), 11.072099696478685, 1e-12);  // -10 log10(0.078125)
    EXPECT_DOUBLE_EQ(psnr_from_mse(0.01), 20.0);
}

TEST(ImageMetrics, DifferentShapesAreAnInputError) {
    Image a = make_image(2, 2, 3, ColorSpace::Srgb, "a.png"), b = make_image(2, 2, 1, ColorSpace::Srgb, "b.png");
    expect_input_error([&] { psnr(a, b); }, {"a.png", "b.png", "2x2x3", "2x2x1"});
}

TEST(ImageMetrics, SsimOfConstantImagesFollowsTheFormula) {
    Image a = make_image(12, 11, 1, ColorSpace::Srgb), b = make_image(12, 11, 1, ColorSpace::Srgb);
    std::fill(a.pixels.begin(), a.pixels.end(), 0.25f);
    std::fill(b.pixels.begin(), b.pixels.end(), 0.75f);
    const double c1 = 1e-4;
    EXPECT_NEAR(ssim(a, b), (2 * 0.25 * 0.75 + c1) / (0.25 * 0.25 + 0.75 * 0.75 + c1), 1e-12);
    EXPECT_NEAR(ssim(a, a), 1.0, 1e-12);
    expect_input_error([] {
        Image s = make_image(10, 20, 1, ColorSpace::Srgb, "small.png");
        ssim(s, s);
    }, {"small.png", "11x11"});
}

TEST(ImageMetrics, SsimMatchesADirectWindowSum) {
    const Image a = random_image(14, 12, 2, ColorSpace::Srgb, 15);
    Image b = a;
    Rng rng(16);
    for (float& v : b.pixels) v = std::clamp(v + 0.2f * (rng.next_float() - 0.5f), 0.0f, 1.0f);
    // Direct evaluation: full 2D Gaussian window at every valid position.
    double g[11], gsum = 0;
    for (int k = 0; k < 11; ++k) gsum += (g[k] = std::exp(-(k - 5) * (k - 5) / (2 * 1.5 * 1.5)));
    double total = 0;
    int count = 0;
    for (int c = 0; c < 2; ++c) {
        for (int y0 = 0; y0 + 11 <= 12; ++y0) {
            for (int x0 = 0; x0 + 11 <= 14; ++x0) {
                double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
                for (int j = 0; j < 11; ++j) {
                    for (int i = 0; i < 11; ++i) {
                        const double w = g[i] * g[j] / (gsum * gsum);
                        const double x = a.at(x0 + i, y0 + j, c), y = b.at(x0 + i, y0 + j, c);
                        mx += w * x;
                        my += w * y;
                        sxx += w * x * x;
                        syy += w * y * y;
                        sxy += w * x * y;
                    }
                }
                const double vx = sxx - mx * mx, vy = syy - my * my, cov = sxy - mx * my;
                total += (2 * mx * my + 1e-4) * (2 * cov + 9e-4) / ((mx * mx + my * my + 1e-4) * (vx + vy + 9e-4));
                ++count;
            }
        }
    }
    const double value = ssim(a, b);
    EXPECT_NEAR(value, total / count, 1e-10);
    EXPECT_LT(value, 0.99);
    EXPECT_GT(value, 0.0);
    EXPECT_NEAR(ssim(b, a), value, 1e-12);
}

// A TGA header followed by fewer bytes than its pixels need (uncompressed) or
// than run-length packets can expand to: stb_image reads zeros past the end,
// so the file would load as a wrong image. Found by scripts/fuzz (image), a
// timeout: 129 KB claiming 8960 x 13366 pixels. Whole files still load.
TEST(ImageIo, TgaWithLessDataThanItsHeaderClaimsIsTruncated) {
    ScratchDir dir;
    auto tga = [](uint8_t type, uint16_t w, uint16_t h, size_t data_bytes) {
        std::vector<uint8_t> b(18 + data_bytes, 0x40);
        std::fill(b.begin(), b.begin() + 18, 0);
        b[2] = type;
        b[12] = (uint8_t)(w & 0xff), b[13] = (uint8_t)(w >> 8), b[14] = (uint8_t)(h & 0xff), b[15] = (uint8_t)(h >> 8);
        b[16] = 24;
        return b;
    };
    fusedngp::test::write_bytes(dir.file("cut.tga"), tga(2, 64, 64, 64 * 64 * 3 - 1));
    expect_input_error([&] { load_image(dir.file("cut.tga")); }, {"cut.tga", "truncated TGA", "64x64"});
    fusedngp::test::write_bytes(dir.file("whole.tga"), tga(2, 64, 64, 64 * 64 * 3));
    const Image whole = load_image(dir.file("whole.tga"));
    EXPECT_EQ(whole.width, 64);
    EXPECT_NEAR(whole.pixels[0], 64.0 / 255.0, 1e-6);
    // Run-length: 4096 pixels need at least 32 packets of 1 + 3 bytes.
    fusedngp::test::write_bytes(dir.file("cut_rle.tga"), tga(10, 64, 64, 32 * 4 - 1));
    expect_input_error([&] { load_image(dir.file("cut_rle.tga")); }, {"cut_rle.tga", "truncated TGA"});
    std::vector<uint8_t> rle = tga(10, 64, 64, 0);
    for (int packet = 0; packet < 32; ++packet) rle.insert(rle.end(), {0xff, 10, 20, 30});  // 128 pixels each
    fusedngp::test::write_bytes(dir.file("rle.tga"), rle);
    const Image runs = load_image(dir.file("rle.tga"));
    EXPECT_NEAR(runs.pixels[(size_t)runs.width * runs.height * 3 - 1], 10.0 / 255.0, 1e-6);  // BGR stored
}

// Found by scripts/fuzz (image): 72 bytes that stb_image takes for a huge TGA,
// which it would decode into ~600 MB and we into 2.5 GB of floats. A header
// that claims more than kMaxLoadedPixels is an error before any decoding.
TEST(ImageIo, HeaderClaimingTooManyPixelsIsAnErrorBeforeDecoding) {
    const std::vector<uint8_t> bytes = {
        0x23, 0x00, 0x03, 0x10, 0x02, 0x00, 0x00, 0x49, 0x48, 0x44, 0x53, 0x3d,
        0x30, 0x2e, 0x36, 0x34, 0x20, 0x30, 0x2e, 0x33, 0x33, 0x20, 0x30, 0x2e,
        0x33, 0x20, 0x30, 0x2e, 0x36, 0x20, 0x30, 0x2e, 0x48, 0x44, 0x53, 0x3d,
        0x30, 0x2e, 0x36, 0x34, 0x20, 0x30, 0x2e, 0x33, 0x33, 0x20, 0x30, 0x2e,
        0x33, 0x20, 0x30, 0x2e, 0x36, 0x20, 0x30, 0x2e, 0x31, 0x35, 0x20, 0x30,
        0x2e, 0x80, 0x80, 0x80, 0x00, 0x80, 0x80, 0x00, 0x80, 0x81,
    };
    ScratchDir dir;
    fusedngp::test::write_bytes(dir.file("huge.tga"), bytes);
    expect_input_error([&] { load_image(dir.file("huge.tga")); }, {"huge.tga", "2^27"});
    // A PNG whose header says 16384 x 16384 (2^28 pixels), with no data.
    std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                0, 0, 0x40, 0, 0, 0, 0x40, 0, 8, 2, 0, 0, 0, 0, 0, 0, 0};
    fusedngp::test::write_bytes(dir.file("huge.png"), png);
    expect_input_error([&] { load_image(dir.file("huge.png")); }, {"huge.png", "16384x16384"});
    // Found by scripts/fuzz (image), a timeout: 19 bytes read as a TGA of
    // ~10^8 pixels, under the cap but far more than 19 bytes can hold.
    const std::vector<uint8_t> tiny = {0x63, 0x00, 0x03, 0x10, 0x02, 0x4e, 0x00, 0x00, 0x49, 0x20, 0x2e, 0x36, 0x33, 0x30, 0x2e, 0x27, 0x20, 0x80, 0x80};
    fusedngp::test::write_bytes(dir.file("tiny.tga"), tiny);
    expect_input_error([&] { load_image(dir.file("tiny.tga")); }, {"tiny.tga", "more than a file of 19 bytes can hold"});
}

