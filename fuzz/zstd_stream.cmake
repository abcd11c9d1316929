# The zstd stream reader's fuzz target: arbitrary inputs and edited frames libzstd writes.
list(APPEND TANDEM_FUZZ_TARGETS fuzz_zstd_stream)
