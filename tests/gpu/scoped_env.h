// Sets an environment variable for a scope and puts back what was there: the
// developer knobs the tests switch (FUSEDNGP_WGMMA_TRAIN, FUSEDNGP_UNFUSED_STEP,
// FUSEDNGP_GRID_KERNELS, ...) are read when an object is made, so a test sets
// one around the construction and cannot leak it into the next test, even
// when an assertion returns early.
#pragma once

#include <cstdlib>
#include <string>

namespace fusedngp::test {

class ScopedEnv {
public:
    // value null: unset for the scope.
    ScopedEnv(const char* name, const char* value) : name_(name) {
        const char* old = std::getenv(name);
        had_ = old != nullptr;
        if (had_) old_ = old;
        set(value);
    }
    ~ScopedEnv() { set(had_ ? old_.c_str() : nullptr); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

    // Another value within the same scope (null: unset); false if the
    // environment refused it.
    bool set(const char* value) {
        return (value != nullptr ? ::setenv(name_.c_str(), value, 1) : ::unsetenv(name_.c_str())) == 0;
    }

private:
    std::string name_, old_;
    bool had_ = false;
};

} // namespace fusedngp::test
