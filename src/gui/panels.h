// The side panel's sections. Each draws its widgets and acts on the session;
// errors become the UI message (the current model keeps running).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fusedngp {

class TrainingSession;
class ImageView;
class SdfView;
struct UiState;
enum class FileAction;

// Start/pause/step/reset, batch size, learning rate, network, encoding, loss.
void draw_control_panel(TrainingSession& session, UiState& ui, uint64_t frame);
// Throughput, loss plot, PSNR, parameter counts, memory, last change.
void draw_info_panel(TrainingSession& session, const UiState& ui, double psnr);
// The loss history on a log scale, the panel's width (info_panel.cpp).
void plot_log_loss(const std::vector<float>& loss, float height);
// View mode, zoom, render resolution.
void draw_view_panel(ImageView& view, UiState& ui);
// The 3-D view (SDF mode): render mode, camera, IoU plot, mesh extraction.
void draw_sdf_panel(SdfView& view, TrainingSession& session, UiState& ui);
// Snapshot / export / screenshot / open buttons, settings, and the file prompt
// (`session` null: a mode with its own files, the NeRF view: `act` gets every
// confirmed action but screenshots, which are handled here).
void draw_files_panel(TrainingSession& session, UiState& ui);
void draw_file_prompt(TrainingSession* session, UiState& ui,
                      const std::function<void(FileAction, const std::string&)>& act = {});
void open_file_prompt(UiState& ui, FileAction action);
void draw_help_window(UiState& ui);
// Keyboard shortcuts (ignored while a text field has focus).
void handle_shortcuts(TrainingSession& session, ImageView& view, UiState& ui);

} // namespace fusedngp
