#include "app/render_nerf.h"

#include "app/output_dir.h"
#include "app/train_options.h"
#include "backends/backend.h"
#include "core/errors.h"
#include "engine/nerf_model_file.h"
#include "io/atomic_file.h"
#include "io/image.h"
#include "io/metrics.h"
#include "io/path_extension.h"
#include "render/camera_io.h"
#include "render/camera_path.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <unistd.h>

namespace fusedngp {

namespace {

namespace fs = std::filesystem;

// The requested size: either given, the other from the default's aspect.
void output_size(const NerfRenderRequest& r, const CameraIntrinsics& k, uint32_t& w, uint32_t& h) {
    if (r.width < 0 || r.height < 0) throw InputError("--width and --height must be positive");
    w = r.width ? (uint32_t)r.width : k.width;
    h = r.height ? (uint32_t)r.height : k.height;
    if (r.width && !r.height) h = std::max(1u, (uint32_t)std::lround((double)k.height * w / k.width));
    if (r.height && !r.width) w = std::max(1u, (uint32_t)std::lround((double)k.width * h / k.height));
}

// The views' values are the training images' sRGB bytes / 255, as rendered.
Image render(nerf::NerfTraining& trainer, const Camera& camera, Vec3 bg) {
    Image img = trainer.render_view(camera, bg);
    img.color_space = ColorSpace::Srgb;
    return img;
}

// Frame i of a dataset composited on bg: rgb * alpha + bg * (1 - alpha).
Image composited_target(const NerfDataset& d, size_t i, Vec3 bg) {
    Image img = make_image((int)d.images.width, (int)d.images.height, 3, ColorSpace::Srgb);
    const uint8_t* p = d.images.frame(i);
    for (size_t px = 0; px < img.pixel_count(); ++px, p += 4) {
        const float a = (float)p[3] / 255.f;
        for (int c = 0; c < 3; ++c) img.pixels[3 * px + (size_t)c] = (float)p[c] / 255.f * a + bg[c] * (1.f - a);
    }
    return img;
}

void render_single_view(const NerfRenderRequest& r, OpenedNerfModel& m, Vec3 bg) {
    const std::string ext = lower_extension(r.out);
    if (ext != ".png" && ext != ".exr") throw InputError(r.out + ": output must end in .png or .exr");
    if (!r.camera.empty() && !r.camera_file.empty()) throw InputError("give --camera or --camera-file, not both");
    uint32_t w, h;
    output_size(r, m.scene.camera.intrinsics, w, h);
    Camera camera{m.scene.camera.pose, scaled_intrinsics(m.scene.camera.intrinsics, w, h)};
    if (!r.camera.empty()) camera.pose = parse_camera_spec(r.camera);
    if (!r.camera_file.empty()) camera = load_camera_file(r.camera_file, w, h);
    prepare_output_file(r.out);
    const Image img = render(*m.trainer, camera, bg);
    if (ext == ".png") save_png(img, r.out);
    else save_exr(img, r.out);
    std::printf("rendered %ux%u (nerf, %s) from %s -> %s\n", camera.intrinsics.width, camera.intrinsics.height,
                m.trainer->backend_name().c_str(), r.input.c_str(), r.out.c_str());
}

void render_test_views(const NerfRenderRequest& r, OpenedNerfModel& m, Vec3 bg) {
    if (r.width || r.height) throw InputError("--test renders at the test images' size: drop --width/--height");
    if (!fs::is_regular_file(r.test)) throw InputError(r.test + ": --test: no such file");
    const NerfDataset test = load_nerf_dataset(r.test);
    prepare_output_dir(r.out);
    json views = json::array();
    double sum = 0;
    for (size_t i = 0; i < test.frames.size(); ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "test_%03zu.png", i);
        const Image img = render(*m.trainer, nerf_frame_view(test, i), bg);
        save_png(img, (fs::path(r.out) / name).string());
        const double p = psnr(img, composited_target(test, i, bg));
        sum += p;
        views.push_back({{"index", i}, {"image", test.frames[i].image_path}, {"render", name},
                         {"psnr", json_number_or_null(p)}});
        std::printf("view %3zu  %s  PSNR %.2f dB\n", i, name, p);
    }
    const double mean = sum / (double)test.frames.size();
    const json metrics{{"model", r.input},
                       {"test", r.test},
                       {"background", {bg.x, bg.y, bg.z}},
                       {"width", test.images.width},
                       {"height", test.images.height},
                       {"views", views},
                       {"mean_psnr", json_number_or_null(mean)}};
    const std::string text = metrics.dump(2) + "\n";
    write_file_atomically((fs::path(r.out) / "metrics.json").string(), text.data(), text.size());
    std::printf("%zu test views, mean PSNR %.2f dB -> %s/{test_*.png, metrics.json}\n", test.frames.size(), mean,
                r.out.c_str());
}

bool program_on_path(const std::string& name) {
    const char* path = std::getenv("PATH");
    if (!path) return false;
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
        std::error_code ec;
        const fs::path p = fs::path(dir.empty() ? "." : dir) / name;
        if (fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0) return true;
    }
    return false;
}

std::string shell_quoted(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

std::vector<uint8_t> rgb24(const Image& img) {
    std::vector<uint8_t> out(img.pixel_count() * 3);
    for (size_t i = 0; i < out.size(); ++i) out[i] = (uint8_t)std::lround(std::clamp(img.pixels[i], 0.f, 1.f) * 255.f);
    return out;
}

// Ignores SIGPIPE for its lifetime (restoring the previous handler).
struct SigpipeIgnored {
    SigpipeIgnored() { previous = std::signal(SIGPIPE, SIG_IGN); }
    ~SigpipeIgnored() { std::signal(SIGPIPE, previous); }
    SigpipeIgnored(const SigpipeIgnored&) = delete;
    SigpipeIgnored& operator=(const SigpipeIgnored&) = delete;
    void (*previous)(int) = SIG_DFL;
};

// Pipes raw RGB frames into ffmpeg, which writes the temporary file of an atomic write.
void encode_mp4(const std::vector<Camera>& frames, nerf::NerfTraining& trainer, Vec3 bg, double fps,
                const std::string& out) {
    const CameraIntrinsics& k = frames.front().intrinsics;
    write_file_atomically(out, [&](const std::string& tmp) {
        const std::string cmd = "ffmpeg -loglevel error -y -f rawvideo -pix_fmt rgb24 -s " + std::to_string(k.width) +
                                "x" + std::to_string(k.height) + " -r " + std::to_string(fps) +
                                " -i - -vf 'pad=ceil(iw/2)*2:ceil(ih/2)*2' -pix_fmt yuv420p -f mp4 " + shell_quoted(tmp);
        // An ffmpeg that quits early must not kill us with SIGPIPE: the failed write and its exit status say it.
        const SigpipeIgnored ignore_sigpipe;
        FILE* pipe = popen(cmd.c_str(), "w");
        if (!pipe) throw InputError(out + ": cannot start ffmpeg");
        bool written = true;
        for (const Camera& c : frames) {
            const std::vector<uint8_t> bytes = rgb24(render(trainer, c, bg));
            written = written && std::fwrite(bytes.data(), 1, bytes.size(), pipe) == bytes.size();
            if (!written) break;
        }
        if (pclose(pipe) != 0 || !written) throw InputError(out + ": ffmpeg failed to encode the frames");
    });
}

void render_camera_path(const NerfRenderRequest& r, OpenedNerfModel& m, Vec3 bg) {
    if (!(r.fps > 0 && std::isfinite(r.fps))) throw InputError("--fps must be a positive number");
    if (!r.camera.empty() || !r.camera_file.empty()) throw InputError("--camera-path takes no --camera or --camera-file");
    uint32_t w, h;
    output_size(r, m.scene.camera.intrinsics, w, h);
    CameraPath path = load_camera_path(r.camera_path, w, h);
    if (r.width || r.height) {  // the command line wins over the file
        path.width = w;
        path.height = h;
    }
    const std::vector<Camera> frames = camera_path_frames(path, r.fps);
    if (lower_extension(r.out) == ".mp4") {
        if (!program_on_path("ffmpeg"))
            throw InputError(r.out + ": ffmpeg is not on PATH, so no .mp4 can be encoded (give a folder for PNG frames)");
        prepare_output_file(r.out);
        encode_mp4(frames, *m.trainer, bg, r.fps, r.out);
        std::printf("rendered %zu frames %ux%u at %g fps -> %s\n", frames.size(), path.width, path.height, r.fps, r.out.c_str());
        return;
    }
    prepare_output_dir(r.out);
    for (size_t i = 0; i < frames.size(); ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "frame_%05zu.png", i);
        save_png(render(*m.trainer, frames[i], bg), (fs::path(r.out) / name).string());
    }
    std::printf("rendered %zu frames %ux%u at %g fps -> %s/frame_*.png\n", frames.size(), path.width, path.height, r.fps,
                r.out.c_str());
}

} // namespace

void render_nerf_model(const NerfRenderRequest& r, const SafetensorsContents& contents) {
    if (!r.test.empty() && !r.camera_path.empty()) throw InputError("give --test or --camera-path, not both");
    const Box3 crop = r.crop.empty() ? unbounded_box() : parse_crop_box(r.crop);
    OpenedNerfModel m = nerf_model_from_contents(contents, r.input, r.backend.empty() ? available_backends().front() : r.backend);
    const Vec3 bg = r.background.empty() ? m.scene.background : parse_background(r.background);
    m.trainer->set_view_crop(crop);
    if (!r.test.empty()) return render_test_views(r, m, bg);
    if (!r.camera_path.empty()) return render_camera_path(r, m, bg);
    render_single_view(r, m, bg);
}

} // namespace fusedngp
