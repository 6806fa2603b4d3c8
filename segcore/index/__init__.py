"""Vector indexes of sealed segments: FLAT (numpy), HNSW (hnswlib), BIN_FLAT and BIN_IVF_FLAT (binary vectors). See README.md."""
