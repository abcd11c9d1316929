# The scanner's GPU path through its emulation, differential against scan().
list(APPEND TANDEM_FUZZ_TARGETS fuzz_scan_device)
