"""A long import is never silent: progress lines come on the clock, through parsing, indexing and
embedding, and the embedding count moves within a batch (not once per ~500 passages)."""

from __future__ import annotations

import io
import itertools
import re
import time
from pathlib import Path

from importers.registry import read
from server.services.embedding import embed_with_progress
from server.services.importing import progress_reporter
from server.settings import derived_models_dir
from storage.library import Library
from tests.conftest import CORPUS

EVERY = 1.0  # seconds between plain lines (5 s in use; shorter here so that the test stays short)
LATE = 0.5  # what a busy machine may add to a line's time


class TimedLines(io.StringIO):
    """A stream that is not a terminal, noting when each line was written."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        self.lines.extend((time.monotonic(), line) for line in text.splitlines() if line)
        return super().write(text)


def test_a_slow_import_is_never_silent_longer_than_the_interval(tmp_path: Path, model_cache_dir: Path) -> None:
    library = Library.open(tmp_path / "store", cache_dir=model_cache_dir, derived_dir=derived_models_dir())
    assert library.load_error is None
    out = TimedLines()
    conversations, _ = read(CORPUS / "chats.jsonl")
    start = time.monotonic()
    with progress_reporter(True, "corpus", stream=out, every=EVERY) as report:
        library.import_conversations(conversations, progress=report, embed=False)
    waiting = library.pending_embeddings()
    embedded = embed_with_progress(library, stream=out, every=EVERY)
    end = time.monotonic()
    library.close()

    assert embedded == waiting > 0
    times = [start, *(at for at, _ in out.lines), end]
    silences = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert max(silences) <= EVERY + LATE, out.getvalue()
    lines = [line for _, line in out.lines if line.startswith("embedding passages: ")]
    counts = [int(re.match(r"embedding passages: (\d+)/(\d+)", line).group(1)) for line in lines]  # type: ignore[union-attr]
    assert all(f"/{waiting} passages" in line and "elapsed" in line for line in lines)
    assert counts == sorted(counts)
    assert counts[-1] == waiting
    within_the_batch = {count for count in counts if 0 < count < waiting}  # the corpus is one batch of ~500
    assert len(within_the_batch) >= 2, out.getvalue()
    assert any("ETA" in line for line in lines)
