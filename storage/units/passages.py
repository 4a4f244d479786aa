"""Retrieval units: one chunk per message, long messages split into passages that fit the model's window."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from storage.models import Conversation, Message, content_hash
from storage.units.windows import MESSAGE, WINDOW, WINDOW_MESSAGE_WORDS, Unit, message_chunk_id, speaker_label, windows

# all-MiniLM-L6-v2 reads 256 word pieces; English prose runs ~1.3 pieces a word, code more.
PASSAGE_WORDS = 150
OVERLAP_WORDS = 25
# A message longer than this many passages (a pasted log, a 20 MB dump) has only its first passages
# embedded; the rest is still keyword-indexed and points at the same message.
MAX_EMBEDDED_PASSAGES = 64

_SENTENCE_END = re.compile(r"[.!?:;]$|\n$")

# The embed key of a passage that gets no vector: it is stored and keyword-indexed, and left out of the
# vector leg (`storage.stores.lance_store.VECTOR_ROWS`).
NO_EMBEDDING = ""
# Acknowledgements carry nothing a question could be about; embedding them costs model time and adds
# near-duplicate vectors that crowd real answers. A message made only of these words (at most
# `TRIVIAL_WORDS` of them) is kept for keyword search and not embedded.
TRIVIAL_WORDS = 6
_ACKNOWLEDGEMENT = frozenset(
    """ok okay k kk thanks thank thx ty you yes yeah yep yup no nope sure great perfect got it that
    worked works cool nice awesome good sounds continue go on ahead please right alright fine done
    lol haha wow amazing agreed exactly correct true makes sense understood noted will do much a lot
    lgtm np""".split()
)
_WORDS = re.compile(r"[^\W\d_]+|\d+")


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
    # A vector derived without the model: the normalised weighted mean of these passages' vectors (their
    # embed keys, all in the same conversation) with these weights. Empty: `embed_text` is embedded.
    mean_of: tuple[str, ...] = ()
    mean_weights: tuple[float, ...] = ()

    @property
    def model_text(self) -> bool:
        """Whether the model embeds this chunk's `embed_text` (not keyword-only, not derived)."""
        return self.embed_key != NO_EMBEDDING and not self.mean_of


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


def is_trivial(text: str) -> bool:
    """An acknowledgement ("ok", "thanks!", "perfect, that worked"): nothing in it to search by meaning."""
    words = _WORDS.findall(text.lower())
    return len(words) <= TRIVIAL_WORDS and all(word in _ACKNOWLEDGEMENT for word in words)


def embeds(message: Message) -> bool:
    """Whether a message's passages get vectors. Tool output (logs, file dumps, command results) is
    found by its identifiers, which keyword search matches exactly; embedding it is most of the model
    time on coding chats. Acknowledgements say nothing. Both stay keyword-searchable."""
    return message.role != "tool" and not is_trivial(message.text)


WINDOW_VECTORS = ("model", "mean", "words")  # `ChunkOptions.window_vectors`


@dataclass(frozen=True)
class ChunkOptions:
    """How a chunk's embedded text is built. Changing these re-embeds what changed, nothing else."""

    # Prefix the end of the previous message: a reply ("yes, last week") is embedded with what it answers.
    # LoCoMo vector-leg recall@5 37.1 -> 44.1 with 30 words.
    previous_words: int = 30
    speaker: bool = True  # "User: ..." / "Assistant: ..."
    # Coarse units beside the messages (`storage.units.windows`): windows of `window_size` consecutive messages
    # every `window_stride` messages (0 = none).
    # Windows of 3 every 2 (about half a row per message) with `Fusion(window_weight=0.7)`: LoCoMo R@5
    # 65.6 -> 68.9, R@10 77.0 -> 79.0 in one run.
    window_size: int = 3
    window_stride: int = 2
    window_words: int = WINDOW_MESSAGE_WORDS  # words of each message a window reads
    # A window's vector: "model" embeds its lines; "mean" is the normalised mean of its messages'
    # first-passage vectors, "words" that mean weighted by the words of each message the window reads
    # (at most `window_words`). Derived windows cost no model time: a quarter of the word pieces an import
    # embedded on the realistic corpus. With `search.fusion.WINDOW_VECTOR_WEIGHT` 0.75, against model windows:
    # LoCoMo R@5 / R@10 69.0 / 79.1 -> 68.9 / 78.6, LongMemEval_S user turns ndcg_any@10 0.963 -> 0.988,
    # corpus paraphrases alike.
    window_vectors: str = "words"

    def __post_init__(self) -> None:
        if self.window_vectors not in WINDOW_VECTORS:
            raise ValueError(f"window_vectors must be one of {', '.join(WINDOW_VECTORS)}, not {self.window_vectors!r}")


DEFAULT_OPTIONS = ChunkOptions()


def _tail_words(text: str, count: int) -> str:
    words = text.split()
    return " ".join(words[-count:]) if len(words) > count else " ".join(words)


def chunk_conversation(
    conversation: Conversation, model_name: str, options: ChunkOptions = DEFAULT_OPTIONS
) -> list[Chunk]:
    """Every chunk of a conversation: its message passages in order, then its windows."""
    chunks = list(iter_chunks(conversation, model_name, options))
    return [ch for ch in chunks if ch.kind != WINDOW] + [ch for ch in chunks if ch.kind == WINDOW]


def iter_chunks(
    conversation: Conversation, model_name: str, options: ChunkOptions = DEFAULT_OPTIONS
) -> Iterator[Chunk]:
    """The chunks of `chunk_conversation`, made one message at a time: each window comes right after
    its last message's passages. Memory is bounded by a message and a window, whatever the chat's
    length, so a chat of a million messages is derived in slices (`storage.writing.ingest`)."""
    previous: Message | None = None
    heads: dict[int, tuple[str, int]] = {}  # message index -> its first passage's embed key, words read
    size, stride, words = options.window_size, options.window_stride, options.window_words
    units = windows(conversation, size, stride, words=words, readable=embeds)
    unit = next(units, None)
    for message in conversation.messages:
        passages = split_passages(message.text)
        context = ""
        # Tool output says nothing a reply answers: its tail (log lines) would only blur the reply's vector.
        if options.previous_words and previous is not None and previous.role != "tool" and previous.text.strip():
            context += f"{speaker_label(previous)}: {_tail_words(previous.text, options.previous_words)}\n"
        speaker = f"{speaker_label(message)}: " if options.speaker else ""
        vector = embeds(message)
        for part, passage in enumerate(passages):
            embedded_part = min(part, MAX_EMBEDDED_PASSAGES - 1)
            embed_text = f"{context}{speaker}{passages[embedded_part]}" if vector else ""
            chunk = Chunk(
                id=message_chunk_id(conversation.id, message.index, part),
                conversation_id=conversation.id,
                kind=MESSAGE,
                first_index=message.index,
                last_index=message.index,
                message_ids=(message.id,),
                text=passage,
                embed_text=embed_text,
                embed_key=content_hash(model_name, embed_text) if vector else NO_EMBEDDING,
            )
            if part == 0 and vector:
                heads[message.index] = (chunk.embed_key, min(len(message.text.split()), options.window_words))
            yield chunk
        previous = message
        while unit is not None and unit.last_index <= message.index:
            yield _window(conversation.id, unit, heads, options, model_name)
            unit = next(units, None)
        # No window still to come starts this early: its first message is past this one's window.
        heads.pop(message.index + 1 - max(size, 1), None)


def _window(
    conversation_id: str, unit: Unit, heads: dict[int, tuple[str, int]], options: ChunkOptions, model_name: str
) -> Chunk:
    chunk = Chunk(
        id=f"{conversation_id}\x1fw{unit.first_index}-{unit.last_index}",
        conversation_id=conversation_id,
        kind=WINDOW,
        first_index=unit.first_index,
        last_index=unit.last_index,
        message_ids=unit.message_ids,
        text=unit.text,
        embed_text=unit.text,
        embed_key=content_hash(model_name, unit.text),
    )
    if options.window_vectors != "model":
        chunk = _derived(chunk, heads, options.window_vectors, model_name)
    return chunk


def _derived(window: Chunk, heads: dict[int, tuple[str, int]], how: str, model_name: str) -> Chunk:
    """A window whose vector is the mean of its messages' first-passage vectors (`ChunkOptions.window_vectors`)."""
    members = [heads[i] for i in range(window.first_index, window.last_index + 1) if i in heads]
    keys = tuple(key for key, _ in members)
    weights = tuple(float(words) if how == "words" else 1.0 for _, words in members)
    # The key names the recipe and its inputs: a window is derived again only when a member's vector changes.
    key = content_hash(model_name, "\x1fmean", *keys, *(f"{w:g}" for w in weights))
    return replace(window, embed_text="", embed_key=key, mean_of=keys, mean_weights=weights)
