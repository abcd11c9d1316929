# Fuzz target of the block-file readers, .rans and .lzr (fuzz_block_file.cpp).
list(APPEND TANDEM_FUZZ_TARGETS fuzz_block_file)
