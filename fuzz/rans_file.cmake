# Fuzz target of the .rans file reader (fuzz_rans_file.cpp).
list(APPEND TANDEM_FUZZ_TARGETS fuzz_rans_file)
