# zstd frames (docs/formats/zstd.md): the host parser of frames, blocks and
# skippable frames, and the copy of raw and RLE blocks' content.
target_sources(tandem PRIVATE ${CMAKE_CURRENT_LIST_DIR}/format/zstd_frame.cpp)
