"""An `Embedder` around another: the benchmarks' wrappers change one method and pass the rest through."""

from __future__ import annotations

from collections.abc import Sequence

from storage.embedding.embedder import Embedder, Vectors


class WrappedEmbedder:
    """Passes everything to `inner`; a subclass overrides what it measures or keeps."""

    def __init__(self, inner: Embedder):
        self.inner = inner

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.inner.embed_query(text)

    def release_documents_model(self) -> None:
        release = getattr(self.inner, "release_documents_model", None)
        if release is not None:
            release()
