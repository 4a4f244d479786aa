"""Odd addresses the page is asked for: out-of-range periods answer 400 with a plain message, and the
token's redirect never leaves this page nor writes a header from what the address holds."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.server.ui.conftest import TOKEN


@pytest.mark.parametrize(
    "query",
    [
        "by=day&period=9999-12-31",
        "by=week&period=9999-12-31",
        "by=week&period=0001-01-01",
        "by=day&period=0001-01-01",
        "by=day&period=2025-01-20&before=0001-01-01",
        "by=day&period=2025-01-20&before=9999-12-31T23:59:59",
    ],
)
def test_a_period_out_of_range_answers_400_in_words(client: TestClient, query: str) -> None:
    answer = client.get(f"/timeline?{query}")
    assert answer.status_code in (200, 400), answer.text
    if answer.status_code == 400:
        assert "period" in answer.text


def test_the_last_day_there_is_is_refused_with_the_range(client: TestClient) -> None:
    answer = client.get("/timeline?by=day&period=9999-12-31")
    assert answer.status_code == 400
    assert "between" in answer.text


@pytest.mark.parametrize("path", ["//evil.com/", "///evil.com/", "/\\evil.com/", "/%5Cevil.com/"])
def test_the_token_redirect_stays_on_this_page(stranger: TestClient, path: str) -> None:
    answer = stranger.get(f"{path}?token={TOKEN}", follow_redirects=False)
    assert answer.status_code == 303
    location = answer.headers["location"]
    assert location.startswith("/")
    assert not location.startswith(("//", "/\\"))


def test_a_line_break_in_the_address_is_not_written_into_the_redirect(stranger: TestClient) -> None:
    answer = stranger.get(f"/%0d%0aX:%20y?token={TOKEN}", follow_redirects=False)
    assert answer.status_code == 303
    assert "x" not in answer.headers
    assert "\r" not in answer.headers["location"]
    assert "\n" not in answer.headers["location"]
