# The GPU inflate benchmark (inflate_bench.hpp): run_inflate_bench, its GPU
# part with CUDA, a part that says there is none without.
target_sources(tandem_bench PRIVATE inflate_bench.cpp)
if(TANDEM_HAVE_CUDA)
  target_sources(tandem_bench PRIVATE inflate_bench.cu)
else()
  target_sources(tandem_bench PRIVATE inflate_bench_none.cpp)
endif()
