# The lzr decoder's fuzz target: arbitrary frames and edited valid ones.
list(APPEND TANDEM_FUZZ_TARGETS fuzz_lzr_decode)
