# GPU deflate compression (gpu/deflate_gpu.hpp): the shared encoder bodies and
# their CPU emulation always; the device calls with CUDA, or calls that say
# there is no device without it.
target_sources(tandem PRIVATE gpu/deflate_gpu_emulate.cpp)
if(TANDEM_HAVE_CUDA)
  target_sources(tandem PRIVATE gpu/deflate_gpu.cu)
else()
  target_sources(tandem PRIVATE gpu/deflate_gpu_none.cpp)
endif()
