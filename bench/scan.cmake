# The archive scanner's benchmark (scan_bench.hpp): plain C++ over the public
# API (tandem/scan.hpp, tandem/scan_gpu.hpp), the same source with and
# without CUDA; without a device the GPU rows say so.
target_sources(tandem_bench PRIVATE scan_bench.cpp)
