# Inflate on the GPU (gpu/inflate_gpu.hpp): the batched device call, and the
# CPU emulation of its kernel that every build has.
target_sources(tandem PRIVATE gpu/inflate_gpu_common.cpp)
if(TANDEM_HAVE_CUDA)
  target_sources(tandem PRIVATE gpu/inflate_gpu.cu)
else()
  target_sources(tandem PRIVATE gpu/inflate_gpu_none.cpp)
endif()
