// FUSEDNGP_HD: inline functions compiled for both the host and CUDA
// devices, so CPU references and kernels share one definition of their math.
#pragma once

#if defined(__CUDACC__)
#define FUSEDNGP_HD __host__ __device__ inline
#else
#define FUSEDNGP_HD inline
#endif
