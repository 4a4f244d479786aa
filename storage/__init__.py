"""Storage and search: models, embeddings, the LanceDB store, the Tantivy index, ingest and hybrid search.

Plain Python, usable without MCP. `storage.library.Library` is the entry point.
"""
