# The zstd frame parser's fuzz target: arbitrary inputs and edited valid frames.
list(APPEND TANDEM_FUZZ_TARGETS fuzz_zstd_frame)
