# The GPU deflate encoder through its CPU emulation: lossless, deterministic,
# and its Huffman codes within their limits.
list(APPEND TANDEM_FUZZ_TARGETS fuzz_deflate_enc)
