// fusedngp command-line entry point (placeholder until the CLI lands).
#include <cstdio>

int main() {
    std::printf("fusedngp 0.1.0\n");
    return 0;
}
