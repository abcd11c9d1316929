# Fuzz targets of the deflate, zlib and gzip reader (fuzz_gzip_reader.cpp).
list(APPEND TANDEM_FUZZ_TARGETS fuzz_gzip_reader)
