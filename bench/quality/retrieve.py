"""One ranked turn list per query, from the library's unit-level ranking (or, failing that, `search`)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any, Literal

from bench.quality.metrics import expand_units
from storage.library import Library
from storage.models import Conversation
from storage.reads.results import SearchMode
from storage.search import PLAIN_RRF, SHIPPED

# The product's modes, plus `plain`: both legs fused by textbook RRF (k = 60, equal weights, no chat
# evidence), the baseline the shipped fusion is measured against in the same run.
BenchMode = Literal["keyword", "vector", "hybrid", "plain"]
BENCH_MODES: tuple[BenchMode, ...] = ("keyword", "vector", "hybrid", "plain")


def product_mode(mode: BenchMode) -> SearchMode:
    return "hybrid" if mode == "plain" else mode


# Units asked for per query. LoCoMo needs 50 distinct turns and LongMemEval 10 distinct sessions; passages
# of one message, or windows that overlap, share turns, so ask for more units than that.
UNIT_LIMIT = 100
# The product's own cap on chats per search: all the fallback path can see.
SEARCH_MAX_RESULTS = 10

Turn = tuple[str, str]  # (conversation id, message id)
LibraryFactory = Callable[[Path], Library]


@dataclass(frozen=True)
class Retrieved:
    turns: list[Turn]
    seconds: float
    via: str


def retrieve(lib: Library, query: str, mode: BenchMode, limit: int = UNIT_LIMIT) -> Retrieved:
    """Ranked turns for `query`, best first, each once. Times only the library call."""
    search_units: Any = getattr(lib, "search_units", None)
    if search_units is not None:
        start = perf_counter()
        # Only `hybrid` is the product's fusion; the single legs and `plain` are the baselines, unboosted.
        fusion = SHIPPED if mode == "hybrid" else PLAIN_RRF
        units = search_units(query, limit=limit, mode=product_mode(mode), fusion=fusion)
        seconds = perf_counter() - start
        ranked = [[(u.conversation_id, str(m)) for m in u.message_ids] for u in units]
        return Retrieved(expand_units(ranked), seconds, "search_units")
    # Fallback: the product API, chats in rank order and each chat's matches in rank order. It sees at
    # most 10 chats, so deep cut-offs (LoCoMo @25/@50) are understated.
    start = perf_counter()
    result = lib.search(query, max_results=SEARCH_MAX_RESULTS, mode=product_mode(mode))
    seconds = perf_counter() - start
    if result.mode != product_mode(mode):
        raise RuntimeError(f"asked for {mode} search, the library answered {result.mode}: {result.notes}")
    ranked = [[(chat.uri, m) for m in match.message_ids] for chat in result.chats for match in chat.matches]
    return Retrieved(expand_units(ranked), seconds, "search")


def check_modes(lib: Library, modes: Iterable[BenchMode]) -> None:
    """`search_units` quietly falls back to keyword search when the model is missing; `search` says so."""
    for mode in modes:
        answered = lib.search("probe", max_results=1, mode=product_mode(mode))
        if answered.mode != product_mode(mode):
            raise RuntimeError(f"asked for {mode} search, the library answered {answered.mode}: {answered.notes}")


@dataclass
class ImportTiming:
    stores: int = 0
    seconds: float = 0.0
    messages: int = 0
    chunks_embedded: int = 0

    def as_dict(self) -> dict[str, float | int]:
        return {
            "stores": self.stores,
            "seconds": round(self.seconds, 3),
            "seconds_per_store": round(self.seconds / self.stores, 3) if self.stores else 0.0,
            "messages": self.messages,
            "chunks_embedded": self.chunks_embedded,
        }


@contextmanager
def fresh_store(
    open_library: LibraryFactory, conversations: Iterable[Conversation], timing: ImportTiming, workdir: Path | None
) -> Iterator[Library]:
    """A new store in a temporary directory holding `conversations`; removed afterwards."""
    home = Path(tempfile.mkdtemp(prefix="pastchats-bench-", dir=workdir))
    lib = open_library(home)
    try:
        start = perf_counter()
        stats = lib.import_conversations(conversations)
        timing.seconds += perf_counter() - start
        timing.stores += 1
        timing.messages += stats.messages
        timing.chunks_embedded += stats.chunks_embedded
        if stats.skipped:
            raise RuntimeError(f"the library skipped conversations: {stats.skipped[:3]}")
        yield lib
    finally:
        lib.close()
        shutil.rmtree(home, ignore_errors=True)
