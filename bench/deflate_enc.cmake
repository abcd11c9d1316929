# The GPU deflate benchmark (deflate_gpu_bench.hpp): run_deflate_gpu_bench,
# its GPU part with CUDA, a part that says there is none without.
target_sources(tandem_bench PRIVATE deflate_gpu_bench.cpp)
if(TANDEM_HAVE_CUDA)
  target_sources(tandem_bench PRIVATE deflate_gpu_bench.cu)
else()
  target_sources(tandem_bench PRIVATE deflate_gpu_bench_none.cpp)
endif()
