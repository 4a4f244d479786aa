"""The two legs of a search, under the same filters: what each ranks and the evidence each gives.

- keyword (Tantivy BM25): messages, each counting by the share of the query's words it holds; chunks
  holding an identifier word for word, as a list of their own; the messages whose tool calls touched
  the files or ran the commands the query names, edits first, as another; and the exchange windows
  around the message hits, scored from those hits (no window search of their own).
- vector (the store's matrix): messages and windows by cosine similarity to the query's embedding.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from storage.evidence import ChatEvidence, TermWeights, keyword_factor
from storage.query.analysis import AnalysedQuery
from storage.query.filters import Filters
from storage.query.grammar import holds_phrase
from storage.search.fusion import (
    READ_WEIGHT,
    WINDOW_SIMILARITY_POWER,
    WINDOW_VECTOR_WEIGHT,
    Fusion,
    Leg,
    relative_similarity,
)
from storage.stores.keyword_index import KeywordIndex
from storage.stores.lance_store import UnitHit
from storage.units.passages import ChunkOptions
from storage.units.windows import MESSAGE, WINDOW, kind_of

LEG_DEPTH = 100  # candidates each leg contributes to the fusion
# The vector leg ranks messages and windows at once; with windows it reads this many times deeper, so
# that each kind still gets about LEG_DEPTH candidates.
VECTOR_OVERFETCH = 3

# The windows' shape as the chunker builds them: `size` messages, one starting every `stride`.
WINDOW_SIZE, WINDOW_STRIDE = ChunkOptions().window_size, ChunkOptions().window_stride
# A window from the message hits: its chat, first index, keyword score, the query stems its messages
# hold, and the ids of the messages the hits name (by index).
MemberWindow = tuple[str, int, float, set[str], dict[int, str]]


# The titles of chats by id (the catalog's), read for the chats the legs found.
Titles = Callable[[Collection[str]], Mapping[str, str]]


def add_titles(legs: Legs, chats: Collection[str], titles: Titles) -> None:
    """The query words each chat's title holds, into its evidence (once a chat)."""
    wanted = [cid for cid in chats if cid not in legs.titled]
    if not wanted or not legs.weights.weights:
        return
    for cid, title in titles(wanted).items():
        legs.chat(cid).add_title(legs.weights.present(title).intersection(legs.weights.weights), legs.weights)
    legs.titled.update(wanted)


@dataclass
class Legs:
    """What the legs found for one query, in the order they are fused, and the evidence each chat gave."""

    weights: TermWeights
    messages: list[Leg] = field(default_factory=list)  # keyword hits, identifiers word for word, vector hits
    windows: list[Leg] = field(default_factory=list)  # windows from the keyword hits, the vector leg's windows
    evidence: dict[str, ChatEvidence] = field(default_factory=dict)
    keyword_weight: float = 1.0
    member_windows: list[MemberWindow] = field(default_factory=list)
    titled: set[str] = field(default_factory=set)  # chats whose title's words are in their evidence

    def chat(self, chat_id: str) -> ChatEvidence:
        return self.evidence.setdefault(chat_id, ChatEvidence())


def keyword_leg(
    keywords: KeywordIndex,
    reader: Any,
    legs: Legs,
    analysed: AnalysedQuery,
    depth: int,
    filters: Filters,
    fusion: Fusion,
    titles: Titles,
) -> None:
    """The keyword leg's lists into `legs`, and the windows its message hits fall in."""
    members = fusion.window_weight > 0 and keywords.holds(WINDOW, reader)
    # Every Tantivy search first, while the worker embeds the query (native code, no GIL wanted): a
    # search lets go of the GIL and, beside Python on the worker, waits for it again. Then the documents
    # and their coverage (Python) while the worker scans.
    scored = keywords.find_scored(analysed, depth, filters, reader)
    found_exact = keywords.find_phrases(analysed, depth, filters, reader)
    found_edited = keywords.find_touched(analysed, depth, filters, reader, edited=True)
    found_touched = keywords.find_touched(analysed, depth, filters, reader, edited=False)
    hits, scored = phrase_kept(keywords.read([address for _, address in scored], reader), scored, analysed)
    add_titles(legs, {hit.conversation_id for hit in hits}, titles)
    factors: dict[str, float] = {}
    presents: list[set[str]] = []
    for hit in hits:
        text = hit.text or ""
        present = legs.weights.present(text)
        chat = legs.chat(hit.conversation_id)
        held = present.intersection(legs.weights.weights)
        # the title's words count as the hit's own: the title says what all of the chat is about
        coverage = legs.weights.share(held | chat.title)
        chat.add_words(held, text, tool=hit.tool)
        if not hit.tool:  # tool output is found, but it is no evidence of what the chat was about
            chat.add_unit(held, legs.weights, hit.first_index)
        presents.append(present)
        factors[hit.chunk_id] = keyword_factor(coverage, fusion.keyword_coverage)
    legs.keyword_weight = fusion.identifier_keyword_weight if analysed.has_identifier else 1.0
    # Tool output (a command's result, "Todos have been modified successfully") stays findable, ranked
    # after every hit in what the user or the assistant wrote.
    ranked = [hit for hit in hits if not hit.tool] + [hit for hit in hits if hit.tool]
    legs.messages.append(Leg(ranked, legs.keyword_weight, factors))
    exact = [hit for hit in keywords.read(found_exact, reader) if not hit.tool]
    exact = [hit for hit in exact if holds_phrases(hit.text or "", analysed.required_words)]
    typed = [name.casefold() for name in analysed.identifiers]
    for hit in exact:  # the phrase may join its words otherwise ("per hour" for per-hour): not word for word
        text = (hit.text or "").casefold()
        if any(name in text for name in typed):
            legs.chat(hit.conversation_id).add(exact=True)
    if analysed.required:  # what the user or the assistant wrote holds every quoted phrase
        for hit in hits:
            if not hit.tool:
                legs.chat(hit.conversation_id).add(exact=True)
    if exact:  # chunks holding an identifier word for word rank as a list of their own
        legs.messages.append(Leg(exact, 1.0))
    touched_lists(keywords, reader, legs, found_edited, found_touched)
    if members:
        written = [i for i, hit in enumerate(hits) if not hit.tool]
        legs.member_windows = member_windows(
            [hits[i] for i in written], [scored[i][0] for i in written], [presents[i] for i in written]
        )


def phrase_kept(
    hits: list[UnitHit], scored: list[tuple[float, Any]], analysed: AnalysedQuery
) -> tuple[list[UnitHit], list[tuple[float, Any]]]:
    """The keyword hits (and their scores) that hold every quoted phrase's words: the index matched the
    phrases' stems in order, each hit must hold their words."""
    if not analysed.required:
        return hits, scored
    kept = [i for i, hit in enumerate(hits) if holds_phrases(hit.text or "", analysed.required_words)]
    return [hits[i] for i in kept], [scored[i] for i in kept]


def holds_phrases(text: str, phrases: tuple[tuple[str, ...], ...]) -> bool:
    """Whether `text` holds every quoted phrase's words one after another (`grammar.holds_phrase`)."""
    return all(holds_phrase(text, words) for words in phrases)


def grammar_kept(keywords: KeywordIndex, reader: Any, hits: list[UnitHit], analysed: AnalysedQuery) -> list[UnitHit]:
    """The vector leg's hits that hold every quoted phrase (word for word) and no excluded word."""
    texts = keywords.holding([hit.chunk_id for hit in hits], analysed, reader)
    return [
        hit for hit in hits if hit.chunk_id in texts and holds_phrases(texts[hit.chunk_id], analysed.required_words)
    ]


def without_chats(legs: Legs, chats: set[str]) -> None:
    """Every unit of these chats out of the legs, and their evidence (a chat holding an excluded word)."""
    if not chats:
        return
    legs.messages = [
        leg._replace(hits=[h for h in leg.hits if h.conversation_id not in chats]) for leg in legs.messages
    ]
    legs.windows = [leg._replace(hits=[h for h in leg.hits if h.conversation_id not in chats]) for leg in legs.windows]
    legs.member_windows = [window for window in legs.member_windows if window[0] not in chats]
    for cid in chats:
        legs.evidence.pop(cid, None)


def touched_lists(keywords: KeywordIndex, reader: Any, legs: Legs, edited: list[Any], touched: list[Any]) -> None:
    """The messages whose tool calls touched what the query names, as lists of their own (found by
    `KeywordIndex.find_touched`): those that edited or created it at a keyword list's weight, those that
    read it or ran it at less; a chat that edited it says so in its evidence."""
    if edited:
        edits = keywords.read(edited, reader)
        for hit in edits:
            legs.chat(hit.conversation_id).edited = True
        legs.messages.append(Leg(edits, legs.keyword_weight))
    if touched:
        legs.messages.append(Leg(keywords.read(touched, reader), legs.keyword_weight * READ_WEIGHT))


def vector_leg(legs: Legs, hits: list[UnitHit], depth: int, fusion: Fusion) -> None:
    """The vector leg's lists into `legs`: its messages, and its windows (each pulling by its similarity)."""
    by_kind: dict[str, list[UnitHit]] = {MESSAGE: [], WINDOW: []}
    for hit in hits:
        by_kind[kind_of(hit.chunk_id)].append(hit)
    messages = by_kind[MESSAGE][:depth]
    for hit in messages:
        legs.chat(hit.conversation_id).add(similarity=hit.similarity)
    legs.messages.append(Leg(messages, 1.0))
    if fusion.window_weight > 0:
        windows = by_kind[WINDOW][:LEG_DEPTH]
        legs.windows.append(Leg(windows, WINDOW_VECTOR_WEIGHT, relative_similarity(windows, WINDOW_SIMILARITY_POWER)))


def member_windows(
    hits: Sequence[UnitHit], scores: Sequence[float], presents: Sequence[set[str]]
) -> list[MemberWindow]:
    """The windows holding the keyword leg's message hits, best first: each scores the sum of its messages'
    best BM25 scores (a message's passages count once, by the best) and holds the stems its hits hold; at
    most LEG_DEPTH. Against a window search of their own: LoCoMo and LongMemEval alike, ~4.6 ms of CPU less
    a search at 100k messages."""
    best: dict[tuple[str, int], float] = {}
    for hit, score in zip(hits, scores, strict=True):
        key = (hit.conversation_id, hit.first_index)
        best[key] = max(best.get(key, 0.0), score)
    windows: dict[tuple[str, int], MemberWindow] = {}
    for hit, present in zip(hits, presents, strict=True):
        chat, index = hit.conversation_id, hit.first_index
        # the windows [first, first + size) with first a multiple of the stride that hold `index`
        last_first = index - index % WINDOW_STRIDE
        for first in range(last_first, max(index - WINDOW_SIZE, -1), -WINDOW_STRIDE):
            window = windows.get((chat, first))
            if window is None:
                window = windows[(chat, first)] = (chat, first, 0.0, set(), {})
            ids = window[4]
            if index not in ids:
                ids[index] = hit.message_ids[0] if hit.message_ids else ""
                windows[(chat, first)] = window = (chat, first, window[2] + best[(chat, index)], window[3], ids)
            window[3].update(present)
    return sorted(windows.values(), key=itemgetter(2), reverse=True)[:LEG_DEPTH]


def member_window_leg(legs: Legs, fusion: Fusion) -> None:
    """The windows from the message hits as the first window list: the vector leg's own unit where it
    found the same window (the same id, so the two legs' ranks add up), each counting by the share of the
    query's words its messages hold together."""
    vector_windows = legs.windows[0].hits if legs.windows else []
    known = {(hit.conversation_id, hit.first_index): hit for hit in vector_windows}
    units: list[UnitHit] = []
    factors: dict[str, float] = {}
    for chat, first, _score, present, ids in legs.member_windows:
        unit = known.get((chat, first))
        if unit is None:
            last = first + WINDOW_SIZE - 1
            # a message no hit names keeps an empty id until something reads it (`search_units`)
            held = tuple(ids.get(index, "") for index in range(first, last + 1))
            unit = UnitHit(f"{chat}\x1fw{first}-{last}", chat, first, last, held)
        units.append(unit)
        evidence = legs.chat(chat)
        words = present.intersection(legs.weights.weights)
        coverage = legs.weights.share(words | evidence.title)
        evidence.add_unit(words, legs.weights, first)  # the words of a question and its answer, together
        factors[unit.chunk_id] = keyword_factor(coverage, fusion.keyword_coverage)
    legs.windows.insert(0, Leg(units, legs.keyword_weight, factors))
