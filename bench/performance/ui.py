"""How fast `pastchats ui` answers on a large store: the first page after start-up, then each page.

    uv run python -m bench.performance.perf build --messages 100000 --home STORE --vectors hash
    uv run python -m bench.performance.ui --home STORE [--repeats 20] [--out bench/results/ui.json]

Starts `pastchats ui --no-browser` as a user does, waits for the address it prints (start-up: the
store opened, the model loaded, the page warmed up), then times, over real HTTP: the token's redirect and the first
page (the search page with the latest chats, what the browser shows first), then `--repeats` rounds of
every page, each round in the same order (this machine is shared and noisy: medians and p95). A
search uses a word from a stored chat; the chat page reads the newest chat.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote


def get(port: int, path: str, cookie: str = "") -> tuple[int, bytes, dict[str, str]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request("GET", path, headers={"Cookie": cookie} if cookie else {})
        response = connection.getresponse()
        return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
    finally:
        connection.close()


def timed(port: int, path: str, cookie: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    status, body, _ = get(port, path, cookie)
    elapsed = time.perf_counter() - started
    if status != 200:
        raise SystemExit(f"{path} answered {status}")
    return elapsed * 1000, body


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.performance.ui", description=__doc__)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    command = [sys.executable, "-m", "server.cli", "--home", str(args.home), "ui", "--no-browser"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PASTCHATS_")} | {"PASTCHATS_SYNC": "false"}
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        for line in process.stderr:
            found = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=(\S+)", line)
            if found:
                break
        else:
            raise SystemExit(f"pastchats ui exited ({process.wait()}) without printing its address")
        ready = (time.perf_counter() - started) * 1000
        port, token = int(found.group(1)), found.group(2)
        t0 = time.perf_counter()
        status, _, headers = get(port, f"/?token={token}")
        redirect = (time.perf_counter() - t0) * 1000
        if status != 303:
            raise SystemExit(f"the printed address answered {status}, not the token's redirect")
        cookie = headers["set-cookie"].split(";")[0]
        first, body = timed(port, headers["location"], cookie)
        uris = re.findall(r'href="/chat\?uri=([^"&]+)', body.decode())
        if not uris:
            raise SystemExit("the first page lists no chat: is the store empty?")
        _, chat, _ = get(port, f"/chat?uri={uris[0]}", cookie)
        texts = " ".join(re.findall(r'<div class="text">(.*?)</div></article>', chat.decode(), re.DOTALL))
        words = re.findall(r"[a-z]{6,}", re.sub(r"<[^>]+>", " ", texts))
        query = quote(" ".join(words[:2]))
        found = get(port, f"/?q={query}", cookie)[1].decode()
        found_chats = found.count('<section class="chat">') + found.count('<li class="row">')  # strong, weak
        pages = {
            "search page (latest chats)": "/",
            "search": f"/?q={query}",
            "search, filtered by source": f"/?q={query}&source={quote(_source(body))}",
            "timeline by week": "/timeline",
            "timeline by day": "/timeline?by=day",
            "chat": f"/chat?uri={uris[0]}",
            "store": "/store",
            "forget (confirmation)": f"/forget?source={quote(_source(body))}",
        }
        times: dict[str, list[float]] = {name: [] for name in pages}
        for _ in range(args.repeats):
            for name, path in pages.items():
                times[name].append(timed(port, path, cookie)[0])
    finally:
        process.terminate()
        process.wait()
    result = {
        "home": str(args.home),
        "start_to_address_ms": round(ready),
        "token_redirect_ms": round(redirect, 1),
        "first_page_ms": round(first, 1),
        "search_query": " ".join(words[:2]),
        "search_found_chats": found_chats,
        "pages": {
            name: {
                "p50_ms": round(statistics.median(v), 1),
                "p95_ms": round(sorted(v)[max(0, round(0.95 * len(v)) - 1)], 1),
            }
            for name, v in times.items()
        },
        "repeats": args.repeats,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


def _source(page: bytes) -> str:
    found = re.search(r'<span class="source">([^<]+)</span>', page.decode())
    return found.group(1) if found else ""


if __name__ == "__main__":
    main()
