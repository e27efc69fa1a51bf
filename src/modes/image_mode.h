// Image mode: learn (u, v) -> colour from one image.
//
// Coordinates: u left to right, v top to bottom, both in [0,1]; pixel (i, j)
// has its centre at ((i+0.5)/W, (j+0.5)/H). Training batches follow an
// ImageSampling (io/sample_positions.h): by default stratified positions
// snapped to pixel centres with the pixels' values as targets (instant-ngp's
// defaults); uniform positions with bilinear targets on request (seeded). Values are the
// file's stored values (sRGB-encoded for LDR files, linear for EXR): see the
// colour convention in io/image.h. PSNR is always over every pixel centre and
// channel of the source, peak 1.
#pragma once

#include "backends/training_data.h"
#include "io/image.h"
#include "io/sample_positions.h"
#include "core/json_fields.h"

#include <functional>

namespace fusedngp {

class ImageTrainingData : public TrainingData {
public:
    explicit ImageTrainingData(Image image, ImageSampling sampling = ImageSampling{})
        : image_(std::move(image)), sampling_(sampling) {}
    uint32_t n_input_dims() const override { return 2; }
    uint32_t n_output_dims() const override { return (uint32_t)image_.channels; }
    void sample(uint32_t batch, Rng& rng, Matrix<float>& inputs, Matrix<float>& targets) const override;
    const Image& image() const { return image_; }
    const ImageSampling& sampling() const { return sampling_; }

private:
    Image image_;
    ImageSampling sampling_;
};

// Maps a batch of (u, v) rows to output rows.
using InferenceFn = std::function<void(const Matrix<float>& inputs, Matrix<float>& outputs)>;

// Renders width x height pixels at pixel centres, `tile_pixels` at a time so
// memory stays bounded at any resolution.
Image render_image(const InferenceFn& infer, int width, int height, int channels, ColorSpace space,
                   size_t tile_pixels = 1 << 16);

struct ImageQuality {
    double psnr = 0;
    double ssim = -1;  // -1 when not computed
};

// Renders at the reference's resolution and compares. `render` receives the
// image when non-null.
ImageQuality evaluate_image(const InferenceFn& infer, const Image& reference, bool with_ssim, Image* render = nullptr);

// What a snapshot or weight file records about the image, so `render` can
// reproduce the output without the source file.
json image_mode_info(const Image& image);
// Width, height, channels and colour space from image_mode_info's JSON.
Image blank_image_from_info(const json& info, const std::string& source);

} // namespace fusedngp
