"""The segment engine, shared by the query node and the Spark jobs (Milvus's segcore and knowhere).

``segments``: in-memory segment stores (growing and sealed), MVCC, exact search and the reduce of
partial results; ``index``: the vector index families, their parameters and their saved form.
Imports shared code (``common``) and no role.
"""
