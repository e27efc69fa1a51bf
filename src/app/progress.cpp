#include "app/progress.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unistd.h>

namespace fusedngp {

ProgressPrinter::ProgressPrinter(const TrainLimits& limits, uint64_t start_step, uint64_t log_every, FILE* out)
    : limits_(limits), start_step_(start_step), log_every_(std::max<uint64_t>(log_every, 1)), out_(out),
      tty_(isatty(fileno(out))) {}

namespace {
std::string format_duration(double s) {
    if (!std::isfinite(s) || s < 0) return "--:--";
    char buf[32];
    long t = (long)std::lround(s);
    if (t >= 3600) std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
    else std::snprintf(buf, sizeof(buf), "%ld:%02ld", t / 60, t % 60);
    return buf;
}
} // namespace

std::string ProgressPrinter::format(const TrainProgress& p, double psnr) const {
    double rate = p.train_seconds > 0 ? p.steps_this_run / p.train_seconds : 0;
    // ETA from whichever limit comes first.
    double eta = -1;
    if (limits_.max_steps && rate > 0) eta = (double)(limits_.max_steps - std::min(p.step, limits_.max_steps)) / rate;
    if (limits_.max_seconds > 0) {
        double left = std::max(0.0, limits_.max_seconds - p.train_seconds);
        eta = eta < 0 ? left : std::min(eta, left);
    }
    char buf[256];
    std::string steps = std::to_string(p.step);
    if (limits_.max_steps) steps += "/" + std::to_string(limits_.max_steps);
    char psnr_text[32];
    if (psnr >= 0) std::snprintf(psnr_text, sizeof(psnr_text), iou_ ? "%.5f" : "%.2f dB", psnr);
    else std::snprintf(psnr_text, sizeof(psnr_text), "--");
    std::snprintf(buf, sizeof(buf), "step %s  loss %.4e  %s %s  %.1f steps/s  elapsed %s  ETA %s", steps.c_str(),
                  (double)p.loss, iou_ ? "IoU" : "PSNR", psnr_text, rate, format_duration(p.train_seconds).c_str(),
                  format_duration(eta).c_str());
    return buf;
}

void ProgressPrinter::update(const TrainProgress& p, double psnr) {
    if (tty_) {
        auto now = std::chrono::steady_clock::now();
        if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
        last_draw_ = now;
        drawn_ = true;
        std::fprintf(out_, "\r\033[K%s", format(p, psnr).c_str());
        std::fflush(out_);
    } else if ((p.step - start_step_) % log_every_ == 0) {
        std::fprintf(out_, "%s\n", format(p, psnr).c_str());
        std::fflush(out_);
    }
}

void ProgressPrinter::finish(const TrainProgress& p, double psnr) {
    if (tty_) std::fprintf(out_, "\r\033[K%s\n", format(p, psnr).c_str());
    else std::fprintf(out_, "%s\n", format(p, psnr).c_str());
    std::fflush(out_);
}

} // namespace fusedngp
