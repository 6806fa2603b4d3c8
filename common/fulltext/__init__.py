"""Full-text search: analyzers, BM25 functions, text match (see README.md)."""
