// OpenEXR decoding/encoding through tinyexr (used by image.cpp; load_image and
// save_exr are the public entry points).
#pragma once

#include "io/image.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

// True if the bytes start with the OpenEXR magic number.
bool has_exr_magic(const std::vector<uint8_t>& bytes);

// Decodes a single-part scanline or single-level tiled EXR into a linear
// Image. Channel mapping by name: R,G,B (+A) -> 3 (4) channels; else Y (+A)
// -> 1 (2); else a lone R -> 1. Anything else (e.g. only "Z", or layered names
// like "diffuse.R") is an InputError listing the channels found.
Image decode_exr(const std::vector<uint8_t>& bytes, const std::string& path);

// Encodes the image as float32, ZIP-compressed EXR. Pixel values are written
// as stored (the caller converts colour spaces).
std::vector<uint8_t> encode_exr(const Image& image, const std::string& path);

} // namespace fusedngp
