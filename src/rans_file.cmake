# tandem's block files on the CPU: member and block headers, the engine,
# and the stream APIs of tandem/rans_file.hpp (over the CPU rANS coder) and
# tandem/lzr_file.hpp (over the CPU lzr codec).
target_sources(tandem PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/format/block_file_format.cpp
  ${CMAKE_CURRENT_LIST_DIR}/codec/block_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/codec/rans_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/codec/lzr_file.cpp
)
