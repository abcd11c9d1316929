# The archive scanner's GPU path (tandem/scan_gpu.hpp): the host side and the
# emulation in every build, the CUDA device with TANDEM_HAVE_CUDA.
target_sources(tandem PRIVATE codec/scan_device.cpp gpu/scan_gpu_emulate.cpp)
if(TANDEM_HAVE_CUDA)
  target_sources(tandem PRIVATE gpu/scan_gpu.cu)
else()
  target_sources(tandem PRIVATE gpu/scan_gpu_none.cpp)
endif()
