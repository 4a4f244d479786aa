"""The embedding model: loading it and taking turns at it (`embedder`), the models on disk and
installing them (`model_files`), and the int8 copy documents are embedded with (`int8_model`)."""
