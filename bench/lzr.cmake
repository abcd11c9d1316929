# The lzr benchmark (lzr_bench.hpp): run_lzr_bench, its GPU part with CUDA, a
# part that says there is none without; libzstd (levels 1 and 3) as the
# reference when pkg-config finds it.
target_sources(tandem_bench PRIVATE lzr_bench.cpp)
if(TANDEM_HAVE_CUDA)
  target_sources(tandem_bench PRIVATE lzr_bench.cu)
else()
  target_sources(tandem_bench PRIVATE lzr_bench_none.cpp)
endif()
pkg_check_modules(ZSTD IMPORTED_TARGET libzstd)
if(ZSTD_FOUND)
  set_source_files_properties(lzr_bench.cpp PROPERTIES COMPILE_DEFINITIONS TANDEM_BENCH_ZSTD=1)
  target_link_libraries(tandem_bench PRIVATE PkgConfig::ZSTD)
endif()
