"""Fill the embedding cache ahead of a run, with the texts the ingest pipeline will ask for.

Optional: a run fills the cache itself. Warming first keeps model time out of the import timings.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from bench.quality.embed_cache import CachingEmbedder
from bench.quality.locomo import load_locomo
from bench.quality.longmemeval import VARIANTS, Variant, load_longmemeval
from storage.models import Conversation
from storage.units.passages import chunk_conversation

# Large, so the cache can sort each batch by length (see CachingEmbedder).
BATCH = 4096


def all_conversations(
    data: Path,
    only: str | None,
    limit: int | None,
    variants: Sequence[Variant] = VARIANTS,
    per_type: int | None = None,
) -> Iterator[Conversation]:
    """Cheapest first: LoCoMo, then LongMemEval user turns (short), then assistant turns (long)."""
    if only in (None, "locomo"):
        for sample in load_locomo(data / "locomo" / "locomo_dev.json", limit):
            yield from sample.conversations
    if only in (None, "longmemeval"):
        questions = load_longmemeval(data / "longmemeval" / "longmemeval_s_dev.json", limit, per_type)
        for variant in variants:
            for question in questions:
                yield from question.haystack(variant).conversations


def warm(conversations: Iterable[Conversation], embedder: CachingEmbedder, log: bool = True) -> int:
    seen: set[str] = set()
    pending: list[str] = []
    done = 0
    for conversation in conversations:
        for chunk in chunk_conversation(conversation, embedder.model_name):
            if chunk.model_text and chunk.embed_key not in seen:  # keyword-only and derived ones are not embedded
                seen.add(chunk.embed_key)
                pending.append(chunk.embed_text)
        if len(pending) >= BATCH:
            embedder.embed_documents(pending)
            done += len(pending)
            pending = []
            if log:
                print(f"warm: {done} texts ({embedder.misses} embedded)", flush=True)
    embedder.embed_documents(pending)
    return done + len(pending)
