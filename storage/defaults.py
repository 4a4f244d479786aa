"""Defaults that the server needs before anything heavy is imported.

`server.settings` is on the path to answering `initialize`; importing `storage.embedding.embedder` there would
pull in NumPy (~0.1-0.4 s here) before the first reply.
"""

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
