// Images for the image-fitting mode: loading, saving and colour conventions.
//
// Colour convention: pixels are kept exactly as the file stores them.
//  * LDR files (PNG, JPEG, BMP, TGA, ...) are sRGB-encoded; we keep the encoded
//    values scaled to [0,1] and tag them ColorSpace::Srgb.
//  * EXR and Radiance HDR files are linear; tagged ColorSpace::Linear.
// Training and PSNR use the stored values with peak 1, so PSNR on a PNG is on
// sRGB values and on an EXR on linear values (as instant-ngp reports
// albert.exr). Conversions only happen when saving to a format of the other
// convention (save_png of a linear image, save_exr of an sRGB image). The
// alpha channel (the last channel of a 2- or 4-channel image) is coverage, not
// colour, and is never converted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

enum class ColorSpace { Linear, Srgb };

// "linear" or "sRGB".
const char* to_string(ColorSpace space);

struct Image {
    int width = 0;
    int height = 0;
    int channels = 0;           // 1 (gray), 2 (gray+alpha), 3 (RGB) or 4 (RGBA)
    std::vector<float> pixels;  // row-major, y=0 is the top row, interleaved channels
    ColorSpace color_space = ColorSpace::Srgb;
    std::string path;           // the file it came from (for messages); may be empty

    size_t pixel_count() const { return (size_t)width * (size_t)height; }
    size_t index(int x, int y, int c) const {
        return ((size_t)y * (size_t)width + (size_t)x) * (size_t)channels + (size_t)c;
    }
    float at(int x, int y, int c) const { return pixels[index(x, y, c)]; }
    float& at(int x, int y, int c) { return pixels[index(x, y, c)]; }
    bool has_alpha() const { return channels == 2 || channels == 4; }

    // Memory held by the pixels.
    size_t bytes() const { return pixels.size() * sizeof(float); }
    // e.g. "512x512x3 sRGB, 3.0 MiB"
    std::string describe() const;
};

// A zero-filled image. Throws InputError naming `path` unless
// width, height >= 1 and channels in [1, 4].
Image make_image(int width, int height, int channels, ColorSpace space, const std::string& path = "");

// Throws InputError naming `path` unless width, height >= 1 and channels in [1, 4].
void check_image_dimensions(int width, int height, int channels, const std::string& path);
// The largest image a loader accepts: 2^27 pixels (e.g. 16384 x 8192; 2 GiB
// as 4-channel floats). A header that claims more is an InputError naming the
// file before anything is decoded or allocated.
constexpr uint64_t kMaxLoadedPixels = uint64_t(1) << 27;
void check_loaded_image_size(int64_t width, int64_t height, const std::string& path);
// stb formats: a file of N bytes holds at most this many pixels per byte
// (deflate packs at most 1032 bytes into one, a 1-bit PNG 8 pixels into a
// byte: 8256; twice that for room).
constexpr uint64_t kMaxPixelsPerFileByte = 16384;

// Exact sRGB transfer functions (IEC 61966-2-1, piecewise with the linear toe).
double srgb_to_linear(double encoded);
double linear_to_srgb(double linear);

// The same image in `space` (alpha untouched). A copy if already there.
Image convert_color_space(const Image& image, ColorSpace space);

// Loads PNG/JPEG/BMP/TGA/PSD/GIF/PNM (stb_image: 8-bit, and 16-bit PNG),
// Radiance HDR (stb_image, float) and OpenEXR (tinyexr: half/float/uint,
// channels R,G,B[,A] or Y[,A] or a lone R; scanline or single-level tiled).
// The format is detected from the content, not the extension. Throws
// InputError naming the file: missing/unreadable file, not an image,
// corrupt/truncated data (with the decoder's reason), zero-size image, EXR
// without usable channels (listing the channels found).
Image load_image(const std::string& path);

// 8-bit PNG, sRGB-encoded: linear images are converted, values clamped to
// [0,1] and rounded to nearest. Written atomically; InputError on failure.
void save_png(const Image& image, const std::string& path);

// 32-bit float OpenEXR (ZIP compressed), linear: sRGB images are converted.
// Channels are named Y / Y,A / R,G,B / R,G,B,A. Written atomically.
void save_exr(const Image& image, const std::string& path);

} // namespace fusedngp
