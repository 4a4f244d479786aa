"""The page reads the query grammar as the tools do: a phrase marked whole, an excluded word never marked
nor shown, a query of only exclusions explained; and a shortened uri opens its chat."""

from __future__ import annotations

import re
from urllib.parse import quote

from starlette.testclient import TestClient


def test_an_excluded_word_leaves_its_chats_out_and_is_never_marked(client: TestClient) -> None:
    page = client.get("/?q=" + quote("proxy -nginx")).text
    assert "Nginx setup" not in page
    assert not re.search(r"<mark>[^<]*nginx", page, re.IGNORECASE)


def test_a_phrase_is_marked_whole(client: TestClient) -> None:
    page = client.get("/?q=" + quote('"reverse proxy"')).text
    assert "Nginx setup" in page
    assert "<mark>reverse proxy</mark>" in page
    assert "<mark>reverse</mark>" not in page


def test_a_query_of_only_exclusions_is_explained(client: TestClient) -> None:
    page = client.get("/?q=" + quote("-nginx")).text
    assert "only says what to leave out" in page


def test_a_shortened_uri_opens_its_chat(client: TestClient) -> None:
    page = client.get("/chat?uri=bre").text
    assert "Sourdough starter" in page
