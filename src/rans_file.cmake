# .rans files on the CPU: member and block headers, and the stream API of
# tandem/rans_file.hpp over the CPU rANS coder.
target_sources(tandem PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/format/rans_file_format.cpp
  ${CMAKE_CURRENT_LIST_DIR}/codec/rans_file.cpp
)
