#include "io/exr.h"

#include "core/errors.h"
#include "io/image.h"

#include <tinyexr.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace fusedngp {
namespace {

[[noreturn]] void fail_exr(const std::string& path, const std::string& problem) {
    throw InputError("cannot load image '" + path + "': " + problem);
}

// tinyexr returns heap-allocated error strings that we must free.
std::string take_error(const char* err, int code) {
    std::string text = err ? err : ("tinyexr error code " + std::to_string(code));
    if (err) FreeEXRErrorMessage(err);
    // Its messages end in a newline (some hold several lines): ours are one line.
    for (char& c : text)
        if (c == '\n' || c == '\r') c = ' ';
    while (!text.empty() && (text.back() == ' ' || text.back() == '.')) text.pop_back();
    return text;
}

struct HeaderGuard {
    EXRHeader* header;
    ~HeaderGuard() { FreeEXRHeader(header); }
};
struct ImageGuard {
    EXRImage* image;
    ~ImageGuard() { FreeEXRImage(image); }
};

int find_channel(const EXRHeader& header, const char* name) {
    for (int i = 0; i < header.num_channels; ++i) {
        if (std::strcmp(header.channels[i].name, name) == 0) return i;
    }
    return -1;
}

std::string list_channels(const EXRHeader& header) {
    std::string list;
    for (int i = 0; i < header.num_channels; ++i) list += (i ? ", " : "") + std::string(header.channels[i].name);
    return list.empty() ? "(none)" : list;
}

// Indices (into the header's channel list) of the channels we load, in our
// interleaved order. Empty if none usable.
std::vector<int> select_channels(const EXRHeader& header) {
    const int r = find_channel(header, "R"), g = find_channel(header, "G"), b = find_channel(header, "B");
    const int y = find_channel(header, "Y"), a = find_channel(header, "A");
    std::vector<int> picked;
    if (r >= 0 && g >= 0 && b >= 0) {
        picked = {r, g, b};
    } else if (y >= 0) {
        picked = {y};
    } else if (r >= 0 && g < 0 && b < 0) {
        picked = {r};  // single-channel data saved as "R"
    }
    if (!picked.empty() && a >= 0) picked.push_back(a);
    return picked;
}

float channel_value(const unsigned char* plane, int pixel_type, size_t i) {
    // Half channels were requested as float; uint channels (ids, counts) are
    // taken by value.
    if (pixel_type == TINYEXR_PIXELTYPE_UINT) return (float)reinterpret_cast<const unsigned int*>(plane)[i];
    return reinterpret_cast<const float*>(plane)[i];
}

void copy_scanline_image(const EXRImage& exr, const EXRHeader& header, const std::vector<int>& picked, Image& out) {
    const size_t n = out.pixel_count();
    for (int c = 0; c < out.channels; ++c) {
        const unsigned char* plane = exr.images[picked[c]];
        const int type = header.pixel_types[picked[c]];
        for (size_t i = 0; i < n; ++i) out.pixels[i * out.channels + c] = channel_value(plane, type, i);
    }
}

// Level 0 of a tiled image: tile t covers pixels from (offset_x, offset_y) *
// tile size; its planes are tile_size_x wide; edge tiles are cut off.
void copy_tiled_image(const EXRImage& exr, const EXRHeader& header, const std::vector<int>& picked, Image& out) {
    const int tw = header.tile_size_x, th = header.tile_size_y;
    for (int t = 0; t < exr.num_tiles; ++t) {
        const EXRTile& tile = exr.tiles[t];
        if (tile.level_x != 0 || tile.level_y != 0) continue;
        for (int j = 0; j < th; ++j) {
            const int y = tile.offset_y * th + j;
            if (y >= out.height || j >= tile.height) break;
            for (int i = 0; i < tw; ++i) {
                const int x = tile.offset_x * tw + i;
                if (x >= out.width || i >= tile.width) break;
                for (int c = 0; c < out.channels; ++c) {
                    out.at(x, y, c) = channel_value(tile.images[picked[c]], header.pixel_types[picked[c]],
                                                    (size_t)j * tw + i);
                }
            }
        }
    }
}

} // namespace

bool has_exr_magic(const std::vector<uint8_t>& bytes) {
    return bytes.size() >= 4 && bytes[0] == 0x76 && bytes[1] == 0x2f && bytes[2] == 0x31 && bytes[3] == 0x01;
}

Image decode_exr(const std::vector<uint8_t>& bytes, const std::string& path) {
    EXRVersion version;
    if (ParseEXRVersionFromMemory(&version, bytes.data(), bytes.size()) != TINYEXR_SUCCESS) {
        fail_exr(path, "not a valid OpenEXR file (bad version header)");
    }
    if (version.multipart) fail_exr(path, "multi-part OpenEXR files are not supported");
    if (version.non_image) fail_exr(path, "deep OpenEXR images are not supported");

    EXRHeader header;
    InitEXRHeader(&header);
    HeaderGuard header_guard{&header};
    const char* err = nullptr;
    int code = ParseEXRHeaderFromMemory(&header, &version, bytes.data(), bytes.size(), &err);
    if (code != TINYEXR_SUCCESS) fail_exr(path, "corrupt OpenEXR header (" + take_error(err, code) + ")");
    if (header.tiled && header.tile_level_mode != TINYEXR_TILE_ONE_LEVEL) {
        fail_exr(path, "mip-/rip-mapped tiled OpenEXR files are not supported");
    }

    const std::vector<int> picked = select_channels(header);
    if (picked.empty()) {
        fail_exr(path, "no usable channels (need R,G,B[,A] or Y[,A]); channels found: " + list_channels(header));
    }
    for (int index : picked) {
        const EXRChannelInfo& info = header.channels[index];
        if (info.x_sampling != 1 || info.y_sampling != 1) {
            fail_exr(path, "subsampled channel '" + std::string(info.name) + "' is not supported");
        }
    }
    for (int i = 0; i < header.num_channels; ++i) {
        if (header.pixel_types[i] == TINYEXR_PIXELTYPE_HALF) header.requested_pixel_types[i] = TINYEXR_PIXELTYPE_FLOAT;
    }

    check_loaded_image_size((int64_t)header.data_window.max_x - header.data_window.min_x + 1,
                            (int64_t)header.data_window.max_y - header.data_window.min_y + 1, path);
    EXRImage exr;
    InitEXRImage(&exr);
    // A failed load frees what it allocated but leaves the pointers set: the
    // guard only after success (FreeEXRImage would free them twice).
    code = LoadEXRImageFromMemory(&exr, &header, bytes.data(), bytes.size(), &err);
    if (code != TINYEXR_SUCCESS) fail_exr(path, "corrupt or truncated OpenEXR data (" + take_error(err, code) + ")");
    ImageGuard image_guard{&exr};

    Image out = make_image(exr.width, exr.height, (int)picked.size(), ColorSpace::Linear, path);
    if (header.tiled) {
        copy_tiled_image(exr, header, picked, out);
    } else {
        copy_scanline_image(exr, header, picked, out);
    }
    return out;
}

std::vector<uint8_t> encode_exr(const Image& image, const std::string& path) {
    static const char* const kNames[4][4] = {{"Y"}, {"Y", "A"}, {"R", "G", "B"}, {"R", "G", "B", "A"}};
    check_image_dimensions(image.width, image.height, image.channels, path);
    const int n_channels = image.channels;
    const size_t n = image.pixel_count();

    // EXR readers expect the channel list sorted by name (A, B, G, R / A, Y).
    std::vector<int> order(n_channels);
    for (int c = 0; c < n_channels; ++c) order[c] = c;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return std::strcmp(kNames[n_channels - 1][a], kNames[n_channels - 1][b]) < 0;
    });

    std::vector<std::vector<float>> planes(n_channels, std::vector<float>(n));
    std::vector<unsigned char*> plane_pointers(n_channels);
    std::vector<EXRChannelInfo> infos(n_channels);
    std::vector<int> pixel_types(n_channels, TINYEXR_PIXELTYPE_FLOAT);
    for (int k = 0; k < n_channels; ++k) {
        const int c = order[k];
        for (size_t i = 0; i < n; ++i) planes[k][i] = image.pixels[i * n_channels + c];
        plane_pointers[k] = reinterpret_cast<unsigned char*>(planes[k].data());
        std::memset(&infos[k], 0, sizeof(EXRChannelInfo));
        std::strncpy(infos[k].name, kNames[n_channels - 1][c], sizeof(infos[k].name) - 1);
    }

    EXRImage exr;
    InitEXRImage(&exr);
    exr.images = plane_pointers.data();
    exr.width = image.width;
    exr.height = image.height;
    exr.num_channels = n_channels;

    EXRHeader header;
    InitEXRHeader(&header);
    header.num_channels = n_channels;
    header.channels = infos.data();
    header.pixel_types = pixel_types.data();
    header.requested_pixel_types = pixel_types.data();
    header.compression_type = TINYEXR_COMPRESSIONTYPE_ZIP;

    unsigned char* memory = nullptr;
    const char* err = nullptr;
    size_t size = SaveEXRImageToMemory(&exr, &header, &memory, &err);
    if (size == 0 || !memory) {
        throw InputError("cannot write '" + path + "': OpenEXR encoding failed (" + take_error(err, 0) + ")");
    }
    std::vector<uint8_t> bytes(memory, memory + size);
    std::free(memory);
    return bytes;
}

} // namespace fusedngp
