#include "io/metrics.h"

#include "core/errors.h"

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace fusedngp {
namespace {

constexpr int kSsimWindow = 11;
constexpr double kSsimSigma = 1.5;
constexpr double kSsimC1 = 0.01 * 0.01;
constexpr double kSsimC2 = 0.03 * 0.03;

std::string name_of(const Image& image) { return image.path.empty() ? "(unnamed image)" : "'" + image.path + "'"; }

void require_same_shape(const Image& a, const Image& b) {
    if (a.width != b.width || a.height != b.height || a.channels != b.channels) {
        throw InputError("cannot compare images of different shapes: " + name_of(a) + " is " +
                         std::to_string(a.width) + "x" + std::to_string(a.height) + "x" +
                         std::to_string(a.channels) + ", " + name_of(b) + " is " + std::to_string(b.width) +
                         "x" + std::to_string(b.height) + "x" + std::to_string(b.channels));
    }
    if (a.pixels.empty()) throw InputError("cannot compare empty images " + name_of(a) + " and " + name_of(b));
}

std::array<double, kSsimWindow> gaussian_window() {
    std::array<double, kSsimWindow> w{};
    double sum = 0.0;
    for (int i = 0; i < kSsimWindow; ++i) {
        const double d = i - kSsimWindow / 2;
        w[i] = std::exp(-d * d / (2.0 * kSsimSigma * kSsimSigma));
        sum += w[i];
    }
    for (double& x : w) x /= sum;
    return w;
}

// "Valid" separable Gaussian filter of a width x height plane: output is
// (width-10) x (height-10). The 2D window is the outer product of the 1D one.
std::vector<double> filter_valid(const std::vector<double>& plane, int width, int height,
                                 const std::array<double, kSsimWindow>& w) {
    const int out_w = width - kSsimWindow + 1, out_h = height - kSsimWindow + 1;
    std::vector<double> rows((size_t)out_w * height);
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < out_w; ++x) {
            double s = 0.0;
            for (int k = 0; k < kSsimWindow; ++k) s += w[k] * plane[(size_t)y * width + x + k];
            rows[(size_t)y * out_w + x] = s;
        }
    }
    std::vector<double> out((size_t)out_w * out_h);
    for (int y = 0; y < out_h; ++y) {
        for (int x = 0; x < out_w; ++x) {
            double s = 0.0;
            for (int k = 0; k < kSsimWindow; ++k) s += w[k] * rows[(size_t)(y + k) * out_w + x];
            out[(size_t)y * out_w + x] = s;
        }
    }
    return out;
}

// Sum of the SSIM map of one channel over all valid window positions.
double ssim_channel_sum(const Image& a, const Image& b, int c, const std::array<double, kSsimWindow>& w) {
    const size_t n = a.pixel_count();
    std::vector<double> x(n), y(n), xx(n), yy(n), xy(n);
    for (size_t i = 0; i < n; ++i) {
        x[i] = a.pixels[i * a.channels + c];
        y[i] = b.pixels[i * b.channels + c];
        xx[i] = x[i] * x[i];
        yy[i] = y[i] * y[i];
        xy[i] = x[i] * y[i];
    }
    const std::vector<double> mu_x = filter_valid(x, a.width, a.height, w);
    const std::vector<double> mu_y = filter_valid(y, a.width, a.height, w);
    const std::vector<double> e_xx = filter_valid(xx, a.width, a.height, w);
    const std::vector<double> e_yy = filter_valid(yy, a.width, a.height, w);
    const std::vector<double> e_xy = filter_valid(xy, a.width, a.height, w);
    double sum = 0.0;
    for (size_t i = 0; i < mu_x.size(); ++i) {
        const double var_x = e_xx[i] - mu_x[i] * mu_x[i];
        const double var_y = e_yy[i] - mu_y[i] * mu_y[i];
        const double cov = e_xy[i] - mu_x[i] * mu_y[i];
        sum += ((2.0 * mu_x[i] * mu_y[i] + kSsimC1) * (2.0 * cov + kSsimC2)) /
               ((mu_x[i] * mu_x[i] + mu_y[i] * mu_y[i] + kSsimC1) * (var_x + var_y + kSsimC2));
    }
    return sum;
}

} // namespace

double mse(const Image& a, const Image& b) {
    require_same_shape(a, b);
    double sum = 0.0;
    for (size_t i = 0; i < a.pixels.size(); ++i) {
        const double d = (double)a.pixels[i] - (double)b.pixels[i];
        sum += d * d;
    }
    return sum / (double)a.pixels.size();
}

double psnr_from_mse(double mse_value) {
    if (mse_value <= 0.0) return std::numeric_limits<double>::infinity();
    return -10.0 * std::log10(mse_value);
}

double psnr(const Image& a, const Image& b) { return psnr_from_mse(mse(a, b)); }

double ssim(const Image& a, const Image& b) {
    require_same_shape(a, b);
    if (a.width < kSsimWindow || a.height < kSsimWindow) {
        throw InputError("SSIM needs images of at least 11x11 pixels; " + name_of(a) + " is " +
                         std::to_string(a.width) + "x" + std::to_string(a.height));
    }
    const auto w = gaussian_window();
    double sum = 0.0;
    for (int c = 0; c < a.channels; ++c) sum += ssim_channel_sum(a, b, c, w);
    const double positions = (double)(a.width - kSsimWindow + 1) * (double)(a.height - kSsimWindow + 1);
    return sum / (positions * a.channels);
}

} // namespace fusedngp
