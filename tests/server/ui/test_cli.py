"""`pastchats ui` as a user starts it: a loopback address with a fresh token, and a plain error when
the port asked for is taken."""

from __future__ import annotations

import http.client
import socket
import subprocess
from pathlib import Path

import pytest

from tests.server.processes import serve_command, server_env
from tests.server.ui.conftest import Served, ui_process

pytestmark = pytest.mark.integration


def test_it_prints_a_loopback_address_whose_token_opens_the_page(served: Served) -> None:
    assert served.address.startswith("http://127.0.0.1:")
    token = served.address.split("token=")[1]
    assert len(token) >= 40
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    connection.request("GET", "/")
    assert connection.getresponse().status == 403
    connection.close()
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    connection.request("GET", f"/?token={token}")
    answer = connection.getresponse()
    assert answer.status == 303
    assert answer.getheader("set-cookie", "").startswith(f"pastchats-ui-{served.port}={token};")
    connection.close()


def test_each_start_has_its_own_token(real_home: Path, model_cache_dir: Path, served: Served) -> None:
    with ui_process(real_home, server_env(model_cache_dir)) as other:
        assert other.address.split("token=")[1] != served.address.split("token=")[1]
        assert other.port != served.port


def test_a_taken_port_is_one_plain_line(tmp_path: Path, model_cache_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            serve_command(tmp_path, "ui", "--no-browser", "--port", str(port)),
            env=server_env(model_cache_dir),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "pass another --port" in done.stderr
