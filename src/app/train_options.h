// `fusedngp train`'s options and the helpers its per-mode paths share.
#pragma once

#include "backends/training_data.h"
#include "core/json_fields.h"
#include "geometry/vec3.h"
#include "persist/snapshot.h"

#include <cstdint>
#include <string>

namespace fusedngp {

class Backend;
struct TrainOutcome;

struct TrainOptions {
    std::string data;
    std::string mode;
    std::string config;
    std::string backend;
    uint64_t steps = 0;
    double seconds = 0;
    uint32_t batch_size = 1 << 14;
    uint64_t seed = 1337;
    std::string out = "out";
    std::string resume;
    uint64_t log_every = 100;
    double eval_every = 10.0;
    std::string sampling = "stratified";  // image mode: training positions
    std::string targets = "pixels";       // image mode: training targets
    std::string sample_order = "tiled";   // image mode: order of the strata within a batch
    uint32_t mesh_resolution = 0;         // sdf mode: also extract a mesh at the end (0: no)
    std::string test;                     // nerf mode: the test split's transforms (default: beside --data)
    std::string background = "white";     // nerf mode: white, black or R,G,B for evaluation and renders
    bool batch_given = false;             // --batch was passed (nerf's default differs)
};

// The config to train with: the snapshot's when resuming (a --config that
// differs is an error), else the mode's default or the user's file.
json resolve_config(const TrainOptions& o, const std::string& mode, const Snapshot* resumed);
// Throws InputError when a resumed snapshot does not fit the data.
void check_resume_fits(const Snapshot& s, const TrainOptions& o, const std::string& mode, const TrainingData& data);
// JSON has no infinity or NaN: +inf (the PSNR of a perfect fit) is written as
// 1e9, NaN and -inf as null.
json json_number_or_null(double v);
// Whether a run diverged: its last loss or its final quality (PSNR, IoU) is
// not a finite number (NaN parameters give NaN predictions).
bool training_diverged(double loss, double quality);
// Prints what happened and what to try; the exit code of a diverged run.
int report_divergence(uint64_t step, const std::string& out);
constexpr int kExitDiverged = 3;
// The summary.json fields of every mode (the run, its speed, the model); each
// mode adds its data's and its quality's.
json common_summary_json(const TrainOptions& o, const std::string& mode, Backend& b, const TrainOutcome& outcome);

// NeRF backgrounds: "white", "black" or "R,G,B" (each in [0, 1]); InputError otherwise.
Vec3 parse_background(const std::string& text);
// NeRF crop boxes (`render --crop`, `mesh --crop`): "X0,Y0,Z0,X1,Y1,Z1" in
// model space (the unit cube holds the object), finite, X0 < X1 and so on;
// InputError otherwise.
Box3 parse_crop_box(const std::string& text);

// The SDF mode's training run (app/train_sdf.cpp); `o` is validated.
int run_train_sdf(const TrainOptions& o);
// The NeRF mode's training run (app/train_nerf.cpp); `o` is validated.
int run_train_nerf(const TrainOptions& o);

} // namespace fusedngp
