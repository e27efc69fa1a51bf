// DisplayTexture's CUDA–GL interop: the PBO registered with CUDA, mapped for
// a render kernel to write, unmapped before GL reads it (commit_pbo). Kept
// apart from display_texture.cpp so only this file sees CUDA headers.
#include "gui/display_texture.h"

#include <glad/gl.h>  // before cuda_gl_interop.h, which would include GL/gl.h otherwise

#ifdef FUSEDNGP_HAVE_CUDA
#include <cuda_gl_interop.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#endif

namespace fusedngp {

#ifdef FUSEDNGP_HAVE_CUDA

namespace {

// Interop failing is not fatal (the host upload still works): say why once.
bool ok(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    std::fprintf(stderr, "gui: %s failed: %s; rendering through host memory\n", what, cudaGetErrorString(e));
    cudaGetLastError();  // clear it so the backend's next check does not trip on it
    return false;
}

} // namespace

void* DisplayTexture::map_for_cuda() {
    if (interop_failed_ || !pbo_) return nullptr;
    auto* resource = static_cast<cudaGraphicsResource_t>(cuda_resource_);
    if (!resource) {
        // WriteDiscard: CUDA overwrites the whole buffer, GL's old contents need not be kept.
        if (!ok(cudaGraphicsGLRegisterBuffer(&resource, pbo_, cudaGraphicsRegisterFlagsWriteDiscard),
                "cudaGraphicsGLRegisterBuffer")) {
            interop_failed_ = true;
            return nullptr;
        }
        cuda_resource_ = resource;
    }
    if (!ok(cudaGraphicsMapResources(1, &resource, nullptr), "cudaGraphicsMapResources")) {
        interop_failed_ = true;
        return nullptr;
    }
    void* pointer = nullptr;
    size_t bytes = 0;
    if (!ok(cudaGraphicsResourceGetMappedPointer(&pointer, &bytes, resource), "cudaGraphicsResourceGetMappedPointer") ||
        bytes < (size_t)width_ * (size_t)height_ * 4 * sizeof(float)) {
        cudaGraphicsUnmapResources(1, &resource, nullptr);
        interop_failed_ = true;
        return nullptr;
    }
    return pointer;
}

void DisplayTexture::unmap() {
    auto* resource = static_cast<cudaGraphicsResource_t>(cuda_resource_);
    if (resource) ok(cudaGraphicsUnmapResources(1, &resource, nullptr), "cudaGraphicsUnmapResources");
}

void DisplayTexture::release_cuda() {
    auto* resource = static_cast<cudaGraphicsResource_t>(cuda_resource_);
    if (resource) cudaGraphicsUnregisterResource(resource);
    cuda_resource_ = nullptr;
}

#else

void* DisplayTexture::map_for_cuda() { return nullptr; }
void DisplayTexture::unmap() {}
void DisplayTexture::release_cuda() {}

#endif

} // namespace fusedngp
