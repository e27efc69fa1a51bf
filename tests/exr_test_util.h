// Writing raw EXR files with arbitrary channel names (tests of EXR loading).
#pragma once

#include <gtest/gtest.h>
#include <tinyexr.h>

#include <cstring>
#include <string>
#include <vector>

namespace fusedngp::test {

// Writes an EXR with tinyexr directly: one float plane per named channel.
inline void write_raw_exr(const std::string& path, int w, int h, const std::vector<std::string>& names,
                   std::vector<std::vector<float>> planes) {
    const int n = (int)names.size();
    std::vector<EXRChannelInfo> infos(n);
    std::vector<unsigned char*> pointers(n);
    std::vector<int> types(n, TINYEXR_PIXELTYPE_FLOAT);
    for (int c = 0; c < n; ++c) {
        std::memset(&infos[c], 0, sizeof(EXRChannelInfo));
        std::strncpy(infos[c].name, names[c].c_str(), 255);
        pointers[c] = reinterpret_cast<unsigned char*>(planes[c].data());
    }
    EXRImage image;
    InitEXRImage(&image);
    image.images = pointers.data();
    image.width = w;
    image.height = h;
    image.num_channels = n;
    EXRHeader header;
    InitEXRHeader(&header);
    header.num_channels = n;
    header.channels = infos.data();
    header.pixel_types = types.data();
    header.requested_pixel_types = types.data();
    header.compression_type = TINYEXR_COMPRESSIONTYPE_NONE;
    const char* err = nullptr;
    ASSERT_EQ(SaveEXRImageToFile(&image, &header, path.c_str(), &err), TINYEXR_SUCCESS) << (err ? err : "");
}


} // namespace fusedngp::test
