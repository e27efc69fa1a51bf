// Warp training kernels for hidden width 32, ReLU flavour (kWarpRelu: hidden
// ReLU and output None compiled in); a file of its own so it builds in
// parallel with fused_mlp_warp_train_w32.cu.
#include "fused_mlp_warp_train_instantiate.cuh"

FUSEDNGP_INSTANTIATE_WARP_TRAIN_RELU_WIDTH(32)
