#include "io/image.h"

#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/exr.h"

#include <stb_image.h>
#include <stb_image_write.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

namespace fusedngp {
namespace {

[[noreturn]] void fail_load(const std::string& path, const std::string& problem) {
    throw InputError("cannot load image '" + path + "': " + problem);
}

std::string stb_reason() {
    // stb's reason can be empty (e.g. it names an unknown PNG chunk type,
    // which is "" when the data ends before the IEND chunk).
    const char* reason = stbi_failure_reason();
    return std::string("stb_image: ") + (reason && *reason ? reason : "data ends early or is malformed");
}

struct StbFree {
    void operator()(void* p) const { stbi_image_free(p); }
};

// Copies stb's interleaved samples, scaled so the format's maximum maps to 1.
template <typename Sample>
Image to_image(const Sample* samples, int width, int height, int channels, float scale, ColorSpace space,
               const std::string& path) {
    Image image = make_image(width, height, channels, space, path);
    for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = (float)samples[i] * scale;
    return image;
}

// What stb's Radiance reader would trip over in a file whose header it
// accepted: data that ends early (stb reads zeros past the end) or a run of
// length zero (stb loops forever on it). Walks the scanlines the way stb
// decodes them; "" when the pixel data is complete. Errors stb reports itself
// (a scanline length that is not the width, runs past the line) pass.
std::string radiance_data_problem(const std::vector<uint8_t>& bytes, size_t width, size_t height) {
    const uint8_t* b = bytes.data();
    const size_t size = bytes.size();
    // The header ends at its first empty line; the resolution line follows.
    size_t pos = 0;
    while (pos + 1 < size && !(b[pos] == '\n' && b[pos + 1] == '\n')) ++pos;
    pos += 2;
    while (pos < size && b[pos] != '\n') ++pos;
    ++pos;
    if (pos > size) return "the header ends without pixel data";
    const std::string cut = "the pixel data ends early (" + std::to_string(size - pos) + " bytes for " +
                            std::to_string(width) + "x" + std::to_string(height) + " pixels)";
    auto flat_from = [&](size_t at) { return (size - at) / 4 / width < height ? cut : std::string(); };
    if (width < 8 || width >= 32768) return flat_from(pos);
    for (size_t row = 0; row < height; ++row) {
        if (pos + 4 > size) return cut;
        if (b[pos] != 2 || b[pos + 1] != 2 || (b[pos + 2] & 0x80)) return flat_from(pos);  // stb: all flat from here
        if ((((size_t)b[pos + 2] << 8) | b[pos + 3]) != width) return "";
        pos += 4;
        for (int channel = 0; channel < 4; ++channel) {
            for (size_t i = 0; i < width;) {
                if (pos >= size) return cut;
                size_t count = b[pos++];
                if (count > 128) {
                    count -= 128;
                    if (pos >= size) return cut;
                    ++pos;
                } else {
                    if (count == 0) return "a run of length zero in row " + std::to_string(row);
                    if (count <= width - i && pos + count > size) return cut;
                    pos += count;
                }
                if (count > width - i) return "";
                i += count;
            }
        }
    }
    return "";
}

// TGA has no magic bytes: stb_image tries it after every format that has
// one, so a file none of those claim and whose TGA header gives stb's size
// is read as TGA.
bool looks_like_tga(const std::vector<uint8_t>& b, size_t width, size_t height) {
    static const char* const kMagics[] = {"\x89PNG", "\xFF\xD8", "BM", "GIF8", "8BPS", "#?", "\x53\x80\xF6\x34", "P5", "P6"};
    for (const char* magic : kMagics) {
        const size_t n = std::strlen(magic);
        if (b.size() >= n && std::memcmp(b.data(), magic, n) == 0) return false;
    }
    if (b.size() < 18) return false;
    const unsigned type = b[2];
    const bool known_type = type == 1 || type == 2 || type == 3 || type == 9 || type == 10 || type == 11;
    return known_type && (size_t)(b[12] | (b[13] << 8)) == width && (size_t)(b[14] | (b[15] << 8)) == height;
}

// The pixel data a TGA header promises that the file lacks (stb_image reads
// zeros past the end, so a cut file would load as a wrong image, and a
// 129 KB one claiming 8960 x 13366 pixels took a minute; scripts/fuzz).
// Uncompressed data needs width x height pixels; run-length data at least
// one header byte and one pixel per 128 pixels. Empty: nothing missing.
std::string tga_data_problem(const std::vector<uint8_t>& b, size_t width, size_t height) {
    const unsigned type = b[2], pixel_bytes = (b[16] + 7u) / 8u;
    size_t header = 18 + (size_t)b[0];
    if (b[1] == 1) header += (size_t)(b[5] | (b[6] << 8)) * ((b[7] + 7u) / 8u);  // the colour map
    const uint64_t pixels = (uint64_t)width * height;
    const uint64_t data = type >= 9 ? (pixels + 127) / 128 * (1 + pixel_bytes) : pixels * pixel_bytes;
    if ((uint64_t)b.size() >= header + data) return "";
    return "the header claims " + std::to_string(width) + "x" + std::to_string(height) + " pixels (at least " +
           std::to_string(header + data) + " bytes), the file has " + std::to_string(b.size());
}

Image decode_with_stb(const std::vector<uint8_t>& bytes, const std::string& path) {
    if (bytes.size() > (size_t)INT_MAX) fail_load(path, "file too large for stb_image (over 2 GiB)");
    const stbi_uc* data = bytes.data();
    const int size = (int)bytes.size();
    int width = 0, height = 0, channels = 0;
    if (!stbi_info_from_memory(data, size, &width, &height, &channels)) {
        // stb says "unknown image type" for a PNG whose size it refuses; say the size.
        static const uint8_t kPngStart[16] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
        if (bytes.size() >= 24 && std::equal(kPngStart, kPngStart + 16, bytes.begin())) {
            auto be32 = [&](size_t at) {
                return ((uint32_t)bytes[at] << 24) | ((uint32_t)bytes[at + 1] << 16) | ((uint32_t)bytes[at + 2] << 8) |
                       bytes[at + 3];
            };
            const uint32_t w = be32(16), h = be32(20);
            if (w == 0 || h == 0 || (uint64_t)w * h > kMaxLoadedPixels) {
                fail_load(path, "the PNG header claims " + std::to_string(w) + "x" + std::to_string(h) +
                                    " pixels (" + (w == 0 || h == 0 ? "no pixels" : "too large to decode") + ")");
            }
        }
        fail_load(path, "not a supported image or corrupt header (" + stb_reason() + ")");
    }
    // stb rejects most empty images itself; this also covers formats it lets through.
    check_image_dimensions(width, height, channels, path);
    check_loaded_image_size(width, height, path);  // before stb allocates what the header claims
    // A header claiming far more pixels than the file can hold would only make
    // stb fill a huge buffer with nothing (scripts/fuzz: 19 bytes that stb
    // reads as a TGA of 10^8 pixels).
    if ((uint64_t)width * (uint64_t)height > kMaxPixelsPerFileByte * (uint64_t)bytes.size() + 4096) {
        fail_load(path, "the header claims " + std::to_string(width) + "x" + std::to_string(height) +
                            " pixels, more than a file of " + std::to_string(bytes.size()) + " bytes can hold");
    }

    if (looks_like_tga(bytes, (size_t)width, (size_t)height)) {
        const std::string problem = tga_data_problem(bytes, (size_t)width, (size_t)height);
        if (!problem.empty()) fail_load(path, "truncated TGA: " + problem);
    }

    if (stbi_is_hdr_from_memory(data, size)) {
        const std::string problem = radiance_data_problem(bytes, (size_t)width, (size_t)height);
        if (!problem.empty()) fail_load(path, "corrupt or truncated Radiance HDR: " + problem);
        std::unique_ptr<float, StbFree> pixels(stbi_loadf_from_memory(data, size, &width, &height, &channels, 0));
        if (!pixels) fail_load(path, "corrupt or truncated image (" + stb_reason() + ")");
        return to_image(pixels.get(), width, height, channels, 1.0f, ColorSpace::Linear, path);
    }
    if (stbi_is_16_bit_from_memory(data, size)) {
        std::unique_ptr<stbi_us, StbFree> pixels(stbi_load_16_from_memory(data, size, &width, &height, &channels, 0));
        if (!pixels) fail_load(path, "corrupt or truncated image (" + stb_reason() + ")");
        return to_image(pixels.get(), width, height, channels, 1.0f / 65535.0f, ColorSpace::Srgb, path);
    }
    std::unique_ptr<stbi_uc, StbFree> pixels(stbi_load_from_memory(data, size, &width, &height, &channels, 0));
    if (!pixels) fail_load(path, "corrupt or truncated image (" + stb_reason() + ")");
    return to_image(pixels.get(), width, height, channels, 1.0f / 255.0f, ColorSpace::Srgb, path);
}

std::string format_bytes(size_t bytes) {
    static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = (double)bytes;
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    if (unit == 0) {
        std::snprintf(text, sizeof(text), "%zu B", bytes);
    } else {
        std::snprintf(text, sizeof(text), "%.1f %s", value, kUnits[unit]);
    }
    return text;
}

void append_bytes(void* context, void* data, int size) {
    auto* out = static_cast<std::vector<uint8_t>*>(context);
    const auto* bytes = static_cast<const uint8_t*>(data);
    out->insert(out->end(), bytes, bytes + size);
}

} // namespace

const char* to_string(ColorSpace space) { return space == ColorSpace::Srgb ? "sRGB" : "linear"; }

std::string Image::describe() const {
    return std::to_string(width) + "x" + std::to_string(height) + "x" + std::to_string(channels) + " " +
           to_string(color_space) + ", " + format_bytes(bytes());
}

void check_loaded_image_size(int64_t width, int64_t height, const std::string& path) {
    if (width > 0 && height > 0 && (uint64_t)width * (uint64_t)height > kMaxLoadedPixels) {
        throw InputError("cannot load image '" + path + "': it is " + std::to_string(width) + "x" +
                         std::to_string(height) + " pixels, more than the 2^27 (e.g. 16384x8192) fusedngp loads");
    }
}

void check_image_dimensions(int width, int height, int channels, const std::string& path) {
    if (width <= 0 || height <= 0) {
        throw InputError("image '" + path + "' has no pixels (" + std::to_string(width) + "x" +
                         std::to_string(height) + ")");
    }
    if (channels < 1 || channels > 4) {
        throw InputError("image '" + path + "' has " + std::to_string(channels) +
                         " channels; supported are 1 to 4");
    }
}

Image make_image(int width, int height, int channels, ColorSpace space, const std::string& path) {
    check_image_dimensions(width, height, channels, path);
    Image image;
    image.width = width;
    image.height = height;
    image.channels = channels;
    image.pixels.assign((size_t)width * (size_t)height * (size_t)channels, 0.0f);
    image.color_space = space;
    image.path = path;
    return image;
}

double srgb_to_linear(double encoded) {
    return encoded <= 0.04045 ? encoded / 12.92 : std::pow((encoded + 0.055) / 1.055, 2.4);
}

double linear_to_srgb(double linear) {
    return linear <= 0.0031308 ? linear * 12.92 : 1.055 * std::pow(linear, 1.0 / 2.4) - 0.055;
}

Image convert_color_space(const Image& image, ColorSpace space) {
    Image out = image;
    if (image.color_space == space) return out;
    out.color_space = space;
    const int colour_channels = image.has_alpha() ? image.channels - 1 : image.channels;
    const size_t n = image.pixel_count();
    for (size_t i = 0; i < n; ++i) {
        for (int c = 0; c < colour_channels; ++c) {
            float& v = out.pixels[i * image.channels + c];
            v = (float)(space == ColorSpace::Linear ? srgb_to_linear(v) : linear_to_srgb(v));
        }
    }
    return out;
}

Image load_image(const std::string& path) {
    std::vector<uint8_t> bytes;
    try {
        bytes = read_file_bytes(path);
    } catch (const InputError& e) {
        fail_load(path, std::string(e.what()));
    }
    if (bytes.empty()) fail_load(path, "the file is empty");
    Image image = has_exr_magic(bytes) ? decode_exr(bytes, path) : decode_with_stb(bytes, path);
    image.path = path;
    return image;
}

void save_png(const Image& image, const std::string& path) {
    check_image_dimensions(image.width, image.height, image.channels, path);
    const Image srgb = convert_color_space(image, ColorSpace::Srgb);
    std::vector<uint8_t> samples(srgb.pixels.size());
    for (size_t i = 0; i < samples.size(); ++i) {
        const float v = std::isnan(srgb.pixels[i]) ? 0.0f : std::clamp(srgb.pixels[i], 0.0f, 1.0f);
        samples[i] = (uint8_t)std::lround(v * 255.0f);
    }
    std::vector<uint8_t> encoded;
    const int stride = image.width * image.channels;
    if (!stbi_write_png_to_func(append_bytes, &encoded, image.width, image.height, image.channels, samples.data(),
                                stride)) {
        throw InputError("cannot write '" + path + "': PNG encoding failed");
    }
    write_file_atomically(path, encoded);
}

void save_exr(const Image& image, const std::string& path) {
    check_image_dimensions(image.width, image.height, image.channels, path);
    write_file_atomically(path, encode_exr(convert_color_space(image, ColorSpace::Linear), path));
}

} // namespace fusedngp
