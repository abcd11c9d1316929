# The inflater's fuzz targets: the inflate body on arbitrary and edited
# streams (against zlib), and the Huffman table builder (against a slow
# reference decoder).
list(APPEND TANDEM_FUZZ_TARGETS fuzz_inflate fuzz_huffman_decode)
