// Warp training kernels for hidden width 64 (one width per file keeps builds parallel).
#include "fused_mlp_warp_train_instantiate.cuh"

FUSEDNGP_INSTANTIATE_WARP_TRAIN_WIDTH(64)
