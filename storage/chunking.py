"""Retrieval units: one chunk per message, long messages split into passages that fit the model's window."""

from __future__ import annotations

import re
from dataclasses import dataclass

from storage.models import Conversation, Message, content_hash

# all-MiniLM-L6-v2 reads 256 word pieces; English prose runs ~1.3 pieces a word, code more.
PASSAGE_WORDS = 150
OVERLAP_WORDS = 25
# A message longer than this many passages (a pasted log, a 20 MB dump) has only its first passages
# embedded; the rest is still keyword-indexed and points at the same message.
MAX_EMBEDDED_PASSAGES = 64

_SENTENCE_END = re.compile(r"[.!?:;]$|\n$")


@dataclass(frozen=True)
class Chunk:
    """A unit of retrieval. `embed_key` names the vector: chunks with equal keys share one embedding."""

    id: str
    conversation_id: str
    kind: str
    first_index: int
    last_index: int
    message_ids: tuple[str, ...]
    text: str
    embed_text: str
    embed_key: str


def split_passages(text: str, size: int = PASSAGE_WORDS, overlap: int = OVERLAP_WORDS) -> list[str]:
    """Split on whitespace into overlapping word windows, ending each at a sentence break when one is near."""
    words = re.findall(r"\S+\s*", text)
    if len(words) <= size:
        return [text.strip()] if text.strip() else []
    passages: list[str] = []
    start = 0
    while start < len(words):
        end = min(start + size, len(words))
        if end < len(words):
            for cut in range(end, max(start + size // 2, end - 30), -1):
                if _SENTENCE_END.search(words[cut - 1].rstrip(" \t")) or words[cut - 1].endswith("\n"):
                    end = cut
                    break
        passages.append("".join(words[start:end]).strip())
        if end >= len(words):
            break
        start = max(end - overlap, start + 1)
    return passages


def _speaker(message: Message) -> str:
    return {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}[message.role]


@dataclass(frozen=True)
class ChunkOptions:
    """How a chunk's embedded text is built. Changing these re-embeds what changed, nothing else."""

    title: bool = False  # prefix the chat's title (no gain measured; see docs/BENCHMARKS.md)
    # Prefix the end of the previous message: a reply ("yes, last week") is embedded with what it answers.
    # LoCoMo vector-leg recall@5 37.1 -> 44.1 with 30 words.
    previous_words: int = 30
    speaker: bool = True  # "User: ..." / "Assistant: ..."


DEFAULT_OPTIONS = ChunkOptions()


def _tail_words(text: str, count: int) -> str:
    words = text.split()
    return " ".join(words[-count:]) if len(words) > count else " ".join(words)


def chunk_conversation(
    conversation: Conversation, model_name: str, options: ChunkOptions = DEFAULT_OPTIONS
) -> list[Chunk]:
    chunks: list[Chunk] = []
    previous: Message | None = None
    for message in conversation.messages:
        passages = split_passages(message.text)
        context = ""
        if options.title:
            context += f"{conversation.title}\n"
        if options.previous_words and previous is not None and previous.text.strip():
            context += f"{_speaker(previous)}: {_tail_words(previous.text, options.previous_words)}\n"
        speaker = f"{_speaker(message)}: " if options.speaker else ""
        for part, passage in enumerate(passages):
            embedded_part = min(part, MAX_EMBEDDED_PASSAGES - 1)
            embed_text = f"{context}{speaker}{passages[embedded_part]}"
            chunks.append(
                Chunk(
                    id=f"{conversation.id}\x1f{message.index}\x1f{part}",
                    conversation_id=conversation.id,
                    kind="message",
                    first_index=message.index,
                    last_index=message.index,
                    message_ids=(message.id,),
                    text=passage,
                    embed_text=embed_text,
                    embed_key=content_hash(model_name, embed_text),
                )
            )
        previous = message
    return chunks
