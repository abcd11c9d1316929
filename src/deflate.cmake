# Deflate, zlib and gzip on the CPU: the chunk index and container headers,
# chunk compression and inflation, and the stream API of tandem/deflate.hpp.
target_sources(tandem PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/format/deflate_index.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu/deflate_cpu.cpp
  ${CMAKE_CURRENT_LIST_DIR}/codec/deflate_stream.cpp
)
