# GPU deflate compression (gpu/deflate_gpu.hpp): the shared encoder bodies and
# their CPU emulation; the device calls say there is no device until the CUDA
# kernels land.
target_sources(tandem PRIVATE gpu/deflate_gpu_emulate.cpp gpu/deflate_gpu_none.cpp)
