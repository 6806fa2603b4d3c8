"""Vector indexes of sealed segments: FLAT (numpy) and HNSW (hnswlib). See README.md."""
