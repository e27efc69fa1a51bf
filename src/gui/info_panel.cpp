#include "gui/panels.h"

#include "gui/training_session.h"
#include "gui/ui_state.h"

#include <imgui.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <unistd.h>

namespace fusedngp {

namespace {

// Resident memory of this process (Linux /proc), in MiB; 0 when unknown.
double resident_mib() {
    std::ifstream statm("/proc/self/statm");
    long pages_total = 0, pages_resident = 0;
    if (!(statm >> pages_total >> pages_resident)) return 0;
    return (double)pages_resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

void row(const char* label, const char* fmt, double value) {
    ImGui::TextUnformatted(label);
    ImGui::SameLine(150);
    ImGui::Text(fmt, value);
}

void throughput(const TrainingSession& session, const UiState& ui) {
    const StepStats& s = session.stats();
    row("frame", "%.1f fps", ui.fps);
    row("steps/s", "%.1f", session.wall_steps_per_second());
    row("ms / step", "%.2f", s.step_ms());
    if (session.renders_on_device()) {
        row("GPU steps/render", "%.1f", session.device_steps_ran_per_frame());
    }
    ImGui::TextDisabled("  data %.2f  fwd %.2f  bwd %.2f  opt %.2f", s.data_ms(), s.forward_ms(), s.backward_ms(),
                        s.optimizer_ms());
    row("samples/s", "%.3g", s.samples_per_second());
    row("MLP GFLOP/s", "%.2f", s.gflops(session.forward_flops_per_sample()));
}

void quality(const TrainingSession& session, double psnr) {
    row("loss", "%.5f", session.last_loss());
    if (session.is_image()) row("PSNR", "%.2f dB", psnr);  // the 3-D view's panel shows the SDF's IoU
    plot_log_loss(session.loss_history(), 70);
    if (!session.changes().empty()) {
        const ChangeRecord& c = session.changes().back();
        ImGui::TextWrapped("last change: %s = %s", c.key.c_str(), c.value.c_str());
        ImGui::TextDisabled("  loss %.5f -> %.5f, %zu params carried", c.loss_before, c.loss_after, c.params_carried);
        ImGui::TextDisabled("  %s", function_kept_text(c).c_str());
    }
}

void model_size(const TrainingSession& session) {
    const Backend& b = session.backend();
    row("encoding params", "%.0f", (double)b.n_encoding_params());
    row("network params", "%.0f", (double)b.n_network_params());
    row("total", "%.0f", (double)b.n_params());
    row("params MiB", "%.1f", (double)b.n_params() * 4.0 / (1024.0 * 1024.0));
    size_t used = 0, total = 0;
    if (session.device_memory(used, total)) {
        // Device-wide (cudaMemGetInfo): other processes on the GPU count too.
        ImGui::TextUnformatted("GPU memory used");
        ImGui::SameLine(150);
        ImGui::Text("%.0f / %.0f MiB", (double)used / (1024.0 * 1024.0), (double)total / (1024.0 * 1024.0));
    }
    row("process RSS MiB", "%.0f", resident_mib());
    if (session.is_image()) {
        ImGui::TextDisabled("backend %s, image %s", b.name().c_str(), session.image().describe().c_str());
    } else {
        ImGui::TextDisabled("backend %s, %s %s", b.name().c_str(), session.mode().c_str(), session.data_path().c_str());
    }
}

} // namespace

void draw_info_panel(TrainingSession& session, const UiState& ui, double psnr) {
    if (ImGui::CollapsingHeader("Performance", ImGuiTreeNodeFlags_DefaultOpen)) throughput(session, ui);
    if (ImGui::CollapsingHeader("Quality", ImGuiTreeNodeFlags_DefaultOpen)) quality(session, psnr);
    if (ImGui::CollapsingHeader("Model", ImGuiTreeNodeFlags_DefaultOpen)) model_size(session);
}

void plot_log_loss(const std::vector<float>& loss, float height) {
    if (loss.empty()) return;
    // Log scale: the interesting part of a loss curve spans decades.
    static std::vector<float> log_loss;
    log_loss.resize(loss.size());
    for (size_t i = 0; i < loss.size(); ++i) log_loss[i] = std::log10(std::max(loss[i], 1e-12f));
    ImGui::PlotLines("##loss", log_loss.data(), (int)log_loss.size(), 0, "log10 loss", FLT_MAX, FLT_MAX,
                     ImVec2(ImGui::GetContentRegionAvail().x, height));
}

} // namespace fusedngp
