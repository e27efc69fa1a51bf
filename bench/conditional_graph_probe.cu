// Whether compute-sanitizer runs a CUDA graph with a conditional (IF) node
// the way the GPU does (docs/CUDA_BACKEND.md, "Sanitizers"). The graph has
// CudaBackend's update-graph shape, built the same way: a captured kernel
// that sets the condition from a device flag (cudaGraphSetConditional), an IF
// node, and a body captured into the node's graph (a kernel that updates a
// buffer, a device-to-device copy, a second kernel). No memory is touched
// outside cudaMalloc'd buffers, so any error is the tool's or the runtime's.
//
//   conditional_graph_probe [launches] [elements] [skip_every]
// launches the graph that many times (the flag is set every skip_every-th
// launch, so the body is skipped there) and checks the buffers against a host
// replay; prints "ok" or the first mismatch, exits non-zero on any error.
// Build: nvcc -std=c++17 -arch=sm_90 bench/conditional_graph_probe.cu
// Run natively, under compute-sanitizer --tool memcheck, and both with
// CUDA_LAUNCH_BLOCKING=1 (bench/sanitize_test_run.sh's PROBE=1 does all four).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
}

__global__ void set_condition_kernel(cudaGraphConditionalHandle handle, const unsigned int* flag) {
    cudaGraphSetConditional(handle, *flag == 0 ? 1u : 0u);
}

__global__ void add_one_kernel(float* data, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        data[i] += 1.f;
}

__global__ void twice_kernel(const float* src, float* dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = 2.f * src[i];
}

} // namespace

int main(int argc, char** argv) {
    const int launches = argc > 1 ? std::atoi(argv[1]) : 50;
    const size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (1u << 16);
    const int skip_every = argc > 3 ? std::atoi(argv[3]) : 7;
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    float *a, *b, *c;
    unsigned int* flag;
    check(cudaMalloc(&a, n * sizeof(float)), "malloc a");
    check(cudaMalloc(&b, n * sizeof(float)), "malloc b");
    check(cudaMalloc(&c, n * sizeof(float)), "malloc c");
    check(cudaMalloc(&flag, sizeof(unsigned int)), "malloc flag");
    check(cudaMemset(a, 0, n * sizeof(float)), "memset a");
    check(cudaMemset(flag, 0, sizeof(unsigned int)), "memset flag");

    cudaGraph_t graph;
    check(cudaGraphCreate(&graph, 0), "graph");
    cudaGraphConditionalHandle handle;
    check(cudaGraphConditionalHandleCreate(&handle, graph, 0, 0), "handle");
    check(cudaStreamBeginCaptureToGraph(stream, graph, nullptr, nullptr, 0, cudaStreamCaptureModeThreadLocal),
          "capture condition");
    set_condition_kernel<<<1, 1, 0, stream>>>(handle, flag);
    cudaGraph_t captured;
    check(cudaStreamEndCapture(stream, &captured), "end capture condition");
    size_t n_nodes = 0;
    check(cudaGraphGetNodes(graph, nullptr, &n_nodes), "nodes");
    std::vector<cudaGraphNode_t> nodes(n_nodes);
    check(cudaGraphGetNodes(graph, nodes.data(), &n_nodes), "nodes");
    cudaGraphNodeParams cond{};
    cond.type = cudaGraphNodeTypeConditional;
    cond.conditional.handle = handle;
    cond.conditional.type = cudaGraphCondTypeIf;
    cond.conditional.size = 1;
    cudaGraphNode_t cond_node;
    check(cudaGraphAddNode(&cond_node, graph, nodes.data(), nullptr, n_nodes, &cond), "if node");
    cudaGraph_t body = cond.conditional.phGraph_out[0];
    check(cudaStreamBeginCaptureToGraph(stream, body, nullptr, nullptr, 0, cudaStreamCaptureModeThreadLocal),
          "capture body");
    add_one_kernel<<<64, 256, 0, stream>>>(a, n);
    check(cudaMemcpyAsync(b, a, n * sizeof(float), cudaMemcpyDeviceToDevice, stream), "body copy");
    twice_kernel<<<64, 256, 0, stream>>>(b, c, n);
    check(cudaStreamEndCapture(stream, &captured), "end capture body");
    cudaGraphExec_t exec;
    check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");

    float expected = 0.f;
    for (int i = 0; i < launches; ++i) {
        const unsigned int skip = skip_every > 0 && i % skip_every == skip_every - 1;
        check(cudaMemcpyAsync(flag, &skip, sizeof(skip), cudaMemcpyHostToDevice, stream), "flag");
        check(cudaStreamSynchronize(stream), "flag sync");  // &skip is a stack variable
        check(cudaGraphLaunch(exec, stream), "graph launch");
        if (!skip) expected += 1.f;
    }
    check(cudaStreamSynchronize(stream), "sync");
    std::vector<float> ha(n), hc(n);
    check(cudaMemcpy(ha.data(), a, n * sizeof(float), cudaMemcpyDeviceToHost), "download a");
    check(cudaMemcpy(hc.data(), c, n * sizeof(float), cudaMemcpyDeviceToHost), "download c");
    for (size_t i = 0; i < n; ++i) {
        if (ha[i] != expected || hc[i] != 2.f * expected) {
            std::printf("mismatch at %zu: a %g c %g, expected %g / %g\n", i, ha[i], hc[i], expected, 2.f * expected);
            return 2;
        }
    }
    std::printf("ok: %d launches, %zu elements, body ran %g times\n", launches, n, expected);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(flag);
    cudaStreamDestroy(stream);
    return 0;
}
