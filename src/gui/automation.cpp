#include "gui/automation.h"

#include "gui/training_session.h"

#include <cstdio>

namespace fusedngp {

void Automation::apply_due(uint64_t frame, TrainingSession& session) const {
    for (const auto& s : options_.changes) {
        if (s.frame == frame) session.apply(s.change, frame);
    }
}

void Automation::print_report(TrainingSession& session, uint64_t frames_drawn, const std::string& quality) const {
    for (const auto& c : session.changes()) {
        std::printf("change frame=%llu key=%s value=%s loss_before=%.6g loss_after=%.6g params_carried=%zu kept=%d\n",
                    (unsigned long long)c.frame, c.key.c_str(), c.value.c_str(), c.loss_before, c.loss_after,
                    c.params_carried, c.function_kept ? 1 : 0);
    }
    print_final_line(frames_drawn, session.step(), session.first_loss(), session.last_loss(), quality);
}

void print_final_line(uint64_t frames_drawn, uint64_t steps, float first_loss, float loss, const std::string& quality) {
    std::printf("final frames=%llu steps=%llu first_loss=%.6g loss=%.6g %s\n", (unsigned long long)frames_drawn,
                (unsigned long long)steps, first_loss, loss, quality.c_str());
    std::fflush(stdout);
}

} // namespace fusedngp
