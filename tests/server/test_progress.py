"""Progress for long work: done/total and an ETA; plain periodic lines when stderr is not a terminal."""

from __future__ import annotations

import io

from server.services.progress import PlainProgress, eta_text, progress


def test_a_plain_stream_gets_periodic_lines_with_done_total_share_and_eta() -> None:
    out = io.StringIO()
    plain = PlainProgress("embedding passages", "passages", out, every=0)
    plain.start -= 10  # ten seconds in
    plain.update(250, 1000)
    plain.update(1000, 1000)
    plain.finish()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("embedding passages: 250/1000 passages (25%), 0:10 elapsed, ETA 0:")
    assert lines[1:] == ["embedding passages: 1000/1000 passages (100%), 0:10 elapsed"]


def test_lines_are_spaced_out_rather_than_one_per_update() -> None:
    out = io.StringIO()
    plain = PlainProgress("importing x", "chats", out, every=3600)
    for done in range(1, 500):
        plain.update(done, None)
    plain.finish()
    assert out.getvalue().splitlines() == ["importing x: 499 chats, 0:00 elapsed"]


def test_the_eta_is_the_remaining_share_of_the_time_so_far() -> None:
    assert eta_text(100, 400, 60.0) == ", ETA 3:00"
    assert eta_text(1, 10_000, 60.0) == ", ETA 166:39:00"
    assert eta_text(5, None, 1.0) == ""


def test_progress_that_is_switched_off_reports_nothing() -> None:
    out = io.StringIO()
    with progress("x", "things", enabled=False, stream=out) as report:
        assert report is None
    assert out.getvalue() == ""


def test_a_stream_that_is_not_a_terminal_gets_plain_lines() -> None:
    out = io.StringIO()
    with progress("syncing", "files", stream=out) as report:
        assert report is not None
        report(3, 3)
    assert out.getvalue() == "syncing: 3/3 files (100%), 0:00 elapsed\n"
