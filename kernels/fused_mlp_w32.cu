// Fused-MLP kernels for hidden width 32 (one width per file keeps builds parallel).
#include "fused_mlp_instantiate.cuh"

FUSEDNGP_INSTANTIATE_WIDTH(32)
