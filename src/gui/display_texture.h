// DisplayTexture: what the model's render is shown from. An RGBA32F GL
// texture fed through a pixel buffer object (PBO).
//
// CPU backend (now): upload_from_host / upload_rows copy host floats into the
// PBO and from there into the texture.
//
// ---- Seam for the CUDA backend (GPU issue) --------------------------------
// The PBO is the interop object: register it once with
// cudaGraphicsGLRegisterBuffer(pbo(), cudaGraphicsRegisterFlagsWriteDiscard),
// then per frame: map_for_cuda() (cudaGraphicsMapResources +
// cudaGraphicsResourceGetMappedPointer -> float4* of width*height), let the
// render kernel write RGBA rows there, unmap() (cudaGraphicsUnmapResources),
// then commit_pbo() copies PBO -> texture on the GPU with no host round trip.
// display_texture_cuda.cpp implements them (stubs returning nullptr / doing
// nothing in a build without CUDA, or when registering fails, e.g. a GL
// context on a GPU the CUDA device is not: the caller then renders on the host).
// ---------------------------------------------------------------------------
#pragma once

namespace fusedngp {

class DisplayTexture {
public:
    DisplayTexture() = default;
    ~DisplayTexture();
    DisplayTexture(const DisplayTexture&) = delete;
    DisplayTexture& operator=(const DisplayTexture&) = delete;

    // (Re)allocates for width x height; contents undefined until uploaded.
    void resize(int width, int height);
    int width() const { return width_; }
    int height() const { return height_; }

    // Whole image, row 0 = top row, 4 floats per pixel.
    void upload_from_host(const float* rgba, int width, int height);
    // Rows [y0, y0 + rows) of the current size.
    void upload_rows(const float* rgba, int y0, int rows);

    // CUDA interop seam (see above). Stubs in the CPU build.
    void* map_for_cuda();
    void unmap();
    bool cuda_interop_failed() const { return interop_failed_; }
    void commit_pbo();  // PBO -> texture, GPU side

    unsigned texture() const { return texture_; }
    unsigned pbo() const { return pbo_; }
    void set_nearest_filter(bool nearest);

private:
    unsigned texture_ = 0;
    unsigned pbo_ = 0;
    int width_ = 0, height_ = 0;
    bool nearest_ = false;

    // The PBO's CUDA registration (a cudaGraphicsResource_t), made on first
    // map and dropped whenever the PBO is reallocated.
    void release_cuda();
    void* cuda_resource_ = nullptr;
    bool interop_failed_ = false;
};

} // namespace fusedngp
