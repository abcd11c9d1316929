# The inflater's fuzz targets: the inflate body on arbitrary and edited
# streams (against zlib), the Huffman table builder (against a slow reference
# decoder), and the segmented inflate (against the warp form).
list(APPEND TANDEM_FUZZ_TARGETS fuzz_inflate fuzz_huffman_decode fuzz_inflate_segmented)
