"""The public store builder of `bench.performance.perf`: realistic shape, and a store the real server opens as is."""

from __future__ import annotations

from pathlib import Path

from bench.corpus.synthetic import CorpusWriter
from bench.performance.perf import main
from bench.performance.perf_build import ClaimingHashEmbedder
from bench.performance.perf_run import measure_cli
from storage.library import Library


def test_the_corpus_has_the_requested_messages_and_the_shapes_that_cost_time() -> None:
    chats = list(CorpusWriter(400, seed=1))
    messages = [m for c in chats for m in c.messages]
    assert len(messages) == 400
    assert {m.role for m in messages} >= {"user", "assistant"}
    assert any("```" in m.text for m in messages)
    assert len({c.source for c in chats}) > 2
    assert max(c.updated_at for c in chats) - min(c.created_at for c in chats) > (
        chats[0].updated_at - chats[0].created_at
    )
    assert [c.id for c in CorpusWriter(400, seed=1)] == [c.id for c in chats]


def test_a_hash_vector_store_opens_with_the_real_model_without_re_embedding(
    tmp_path: Path, model_cache_dir: Path
) -> None:
    home = tmp_path / "store"
    main(["build", "--messages", "60", "--home", str(home)])
    assert (home / "bench-store.json").is_file()
    built = Library.open(home, embedder=ClaimingHashEmbedder())
    keys = built.store.chunks.search().select(["id", "embed_key"]).limit(None).to_arrow().to_pylist()
    version = built.store.chunks.version
    served = Library.open(home, cache_dir=model_cache_dir)
    assert served.stats().messages == 60
    assert served.store.chunks.version == version
    assert served.store.chunks.search().select(["id", "embed_key"]).limit(None).to_arrow().to_pylist() == keys
    assert served.search("nginx proxy docker postgres").chats


def test_the_cli_measurement_times_stats_recent_and_read_each_in_its_own_process(tmp_path: Path) -> None:
    home = tmp_path / "store"
    main(["build", "--messages", "40", "--home", str(home)])
    timings = measure_cli(home, spawns=1)
    assert set(timings) == {"cli_stats", "cli_recent", "cli_read", "baseline_bare_interpreter"}
    assert all(t["n"] == 1 and t["p50_ms"] > 0 for t in timings.values())
