"""The store shared through an object store (`PASTCHATS_STORE_URI`), measured against a real SeaweedFS
started here, behind a proxy that counts the requests each step makes.

    python -m bench.performance.shared_store [--chats 1000] [--messages 100000] [--queries 40]

1. A machine sends 1,000 new chats (`Library.exchange`): seconds and requests; then what a server's
   poll costs (one version check), an exchange with nothing to do, and one new chat sent.
2. A second machine joins a shared store of `--messages` messages: its first exchange brings every
   chat and builds its own keyword index, catalog and (hash) vectors; seconds and requests.
3. Search p50/p95 over the same chats on the machine that joined (truth on the object store, search
   on its local derived indexes) and on a local store (the first machine's), in the same run, with
   the same query embedder: the ratio must stay within 1.2.

Vectors come from the hash embedder `bench.performance.perf_build` uses (the same cost to search as
the model's, none to compute), so the run measures the exchange and the indexes, not the model.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path

from bench.corpus.synthetic import CorpusWriter, queries
from bench.object_store import counting, env_for, seaweed
from bench.performance.perf_build import BUILD_BATCH_MESSAGES, ClaimingHashEmbedder
from storage.library import Library
from storage.models import Conversation, Message
from storage.owner_only import restrict_new_files
from storage.stores.shared_store import SharedStore
from storage.writing import ingest


def _one_chat() -> Conversation:
    now = datetime.now(UTC)
    texts = ["A new question about tiling a bathroom", "Use spacers."]
    messages = [
        Message(id=f"m{i}", index=i, role="user" if i == 0 else "assistant", text=t) for i, t in enumerate(texts)
    ]
    return Conversation(
        id="one-more", source="pastchats", title=texts[0], created_at=now, updated_at=now, messages=messages
    )


def _requests(counts: Counter[str]) -> str:
    return f"{sum(counts.values())} ({', '.join(f'{n} {m}' for m, n in sorted(counts.items()))})"


def _machine(home: Path, uri: str) -> Library:
    library = Library.open(home, embedder=ClaimingHashEmbedder())
    library.share(SharedStore(uri))
    return library


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _search_times(libraries: list[Library], asked: list[str], rounds: int = 3) -> list[list[float]]:
    """Each library's search times (ms), the libraries taking turns query by query: what the machine's
    load does meanwhile falls on both alike."""
    for library in libraries:
        for query in asked[:5]:  # warm: the matrix mapped, the keyword reader open
            library.search(query)
    times: list[list[float]] = [[] for _ in libraries]
    for _ in range(rounds):
        for query in asked:
            for library, spent in zip(libraries, times, strict=True):
                start = time.perf_counter()
                library.search(query)
                spent.append((time.perf_counter() - start) * 1000)
    return times


def run(chats: int, messages: int, query_count: int) -> dict[str, object]:
    out: dict[str, object] = {}
    ingest.BATCH_CHUNKS, ingest.BATCH_CONVERSATIONS = BUILD_BATCH_MESSAGES, BUILD_BATCH_MESSAGES
    restrict_new_files()  # as every pastchats command does
    with (
        tempfile.TemporaryDirectory() as tmp,
        seaweed(Path(tmp) / "seaweedfs") as server,
        counting(server.endpoint) as proxy,
    ):
        os.environ.update(env_for(proxy.endpoint))
        root = Path(tmp)

        # 1. Sending 1,000 chats, and what follows costs.
        uri = server.uri()
        sender = _machine(root / "sender", uri)
        sender.import_conversations(islice(CorpusWriter(chats * 30, seed=7), chats), embed=True)
        proxy.take()
        start = time.perf_counter()
        report = sender.exchange()
        out["send_chats"] = report.sent
        out["send_seconds"] = round(time.perf_counter() - start, 2)
        out["send_requests"] = _requests(proxy.take())
        assert sender.shared is not None
        sender.shared.version()
        out["poll_requests"] = _requests(proxy.take())
        sender.exchange()
        out["idle_exchange_requests"] = _requests(proxy.take())
        sender.import_conversations([_one_chat()])
        proxy.take()
        sender.exchange()
        out["one_chat_exchange_requests"] = _requests(proxy.take())
        print(json.dumps(out), file=sys.stderr, flush=True)

        # 2. A second machine joining a store of `messages` messages.
        uri = server.uri()
        local = _machine(root / "first", uri)
        started = time.perf_counter()
        local.import_conversations(CorpusWriter(messages, seed=12), embed=True)
        out["first_machine_import_seconds"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        proxy.take()
        sent = local.exchange()
        out["upload_seconds"] = round(time.perf_counter() - started, 1)
        out["upload_chats"] = sent.sent
        out["upload_requests"] = _requests(proxy.take())
        print(json.dumps(out), file=sys.stderr, flush=True)
        joining = _machine(root / "joining", uri)
        started = time.perf_counter()
        got = joining.exchange()
        searchable = time.perf_counter() - started
        joining.embed_pending()
        joining.compact()
        out["join_chats"] = got.received
        out["join_keyword_searchable_seconds"] = round(searchable, 1)
        out["join_with_vectors_seconds"] = round(time.perf_counter() - started, 1)
        out["join_requests"] = _requests(proxy.take())
        stats = joining.stats()
        out["join_messages"] = stats.messages
        print(json.dumps(out), file=sys.stderr, flush=True)

        # 3. Search on the machine that joined against the local store, in the same run.
        asked = queries(count=query_count)
        alone = Library.open(root / "first", embedder=ClaimingHashEmbedder())  # the same chats, unshared
        shared_ms, local_ms = _search_times([joining, alone], asked)
        out["search_p50_ms_shared"] = round(statistics.median(shared_ms), 1)
        out["search_p95_ms_shared"] = round(_p(shared_ms, 0.95), 1)
        out["search_p50_ms_local"] = round(statistics.median(local_ms), 1)
        out["search_p95_ms_local"] = round(_p(local_ms, 0.95), 1)
        out["search_p50_ratio"] = round(statistics.median(shared_ms) / statistics.median(local_ms), 2)
        out["search_requests"] = _requests(proxy.take())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    print(json.dumps(run(args.chats, args.messages, args.queries), indent=2))


if __name__ == "__main__":
    main()
