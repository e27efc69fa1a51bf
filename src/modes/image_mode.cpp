#include "modes/image_mode.h"

#include "core/errors.h"
#include "io/metrics.h"
#include "io/sampling.h"

#include <algorithm>

namespace fusedngp {

void ImageTrainingData::sample(uint32_t batch, Rng& rng, Matrix<float>& inputs, Matrix<float>& targets) const {
    sample_batch<float>(image_, batch, rng, inputs, targets, sampling_);
}

Image render_image(const InferenceFn& infer, int width, int height, int channels, ColorSpace space, size_t tile_pixels) {
    Image out = make_image(width, height, channels, space);
    size_t n = out.pixel_count();
    tile_pixels = std::max<size_t>(tile_pixels, 1);
    Matrix<float> coords, values;
    for (size_t begin = 0; begin < n; begin += tile_pixels) {
        size_t count = std::min(tile_pixels, n - begin);
        coords.resize((Eigen::Index)count, 2);
        for (size_t k = 0; k < count; ++k) {
            size_t p = begin + k;
            coords((Eigen::Index)k, 0) = ((float)(p % (size_t)width) + 0.5f) / (float)width;
            coords((Eigen::Index)k, 1) = ((float)(p / (size_t)width) + 0.5f) / (float)height;
        }
        infer(coords, values);
        if (values.rows() != (Eigen::Index)count || values.cols() != channels) {
            throw std::logic_error("render_image: inference returned the wrong shape");
        }
        std::copy(values.data(), values.data() + count * (size_t)channels, out.pixels.begin() + begin * (size_t)channels);
    }
    return out;
}

ImageQuality evaluate_image(const InferenceFn& infer, const Image& reference, bool with_ssim, Image* render) {
    Image r = render_image(infer, reference.width, reference.height, reference.channels, reference.color_space);
    ImageQuality q;
    q.psnr = psnr(r, reference);
    if (with_ssim && reference.width >= 11 && reference.height >= 11) q.ssim = ssim(r, reference);
    if (render) *render = std::move(r);
    return q;
}

json image_mode_info(const Image& image) {
    return json{{"width", image.width},
                {"height", image.height},
                {"channels", image.channels},
                {"color_space", to_string(image.color_space)}};
}

Image blank_image_from_info(const json& info, const std::string& source) {
    try {
        int w = info.at("width").get<int>();
        int h = info.at("height").get<int>();
        int c = info.at("channels").get<int>();
        std::string cs = info.at("color_space").get<std::string>();
        ColorSpace space = cs == to_string(ColorSpace::Linear) ? ColorSpace::Linear : ColorSpace::Srgb;
        return make_image(w, h, c, space, source);
    } catch (const json::exception& e) {
        throw InputError(source + ": image description in the metadata is invalid (" + e.what() + ")");
    }
}

} // namespace fusedngp
