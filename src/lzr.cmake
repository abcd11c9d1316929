# lzr (tandem/lzr.hpp, docs/formats/lzr.md): the format, the CPU codec that
# every build has (it runs the GPU's warp bodies through the emulation), and
# the batched device calls with CUDA, a part that says there is no device
# without.
target_sources(tandem PRIVATE format/lzr_format.cpp cpu/lzr_cpu.cpp)
if(TANDEM_HAVE_CUDA)
  target_sources(tandem PRIVATE gpu/lzr_gpu.cu)
else()
  target_sources(tandem PRIVATE gpu/lzr_gpu_none.cpp)
endif()
