// Output directories: created up front and probed for writability, so an
// unwritable --out fails before any work (and leaves nothing behind).
#pragma once

#include <string>

namespace fusedngp {

// Creates `dir` (and parents) and checks a file can be written there.
// Throws InputError naming the directory and the reason.
void prepare_output_dir(const std::string& dir);

// Creates the parent directory of an output file and checks it is writable.
void prepare_output_file(const std::string& path);

// Removes the directories the two functions above created in this process
// that are still empty: a run that fails (a config error, bad data) before
// writing anything leaves no empty --out folder behind. main calls it on
// every failing exit.
void remove_unused_output_dirs();

} // namespace fusedngp
