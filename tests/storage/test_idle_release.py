"""Freed memory goes back to the system once searching stops, once per pause, never mid-run."""

from __future__ import annotations

import threading
import time

from storage.upkeep.idle_release import IdleRelease


def test_a_run_of_searches_is_followed_by_one_release_after_the_pause() -> None:
    released: list[float] = []
    done = threading.Event()

    def release() -> None:
        released.append(time.monotonic())
        done.set()

    idle = IdleRelease(release, delay=0.2)
    for _ in range(50):
        idle.searched()
    last = time.monotonic()
    assert done.wait(10)
    assert len(released) == 1
    assert released[0] - last >= 0.2 - 0.01  # never before the pause (clock granularity aside)

    done.clear()
    idle.searched()  # searching again: another release after the next pause
    assert done.wait(10)
    assert len(released) == 2


def test_searches_that_keep_coming_hold_the_release_back() -> None:
    released = threading.Event()
    idle = IdleRelease(released.set, delay=3.0)
    started = time.monotonic()
    while time.monotonic() - started < 1.0:  # a search every 50 ms for a second: no pause of 3 s
        idle.searched()
        assert not released.wait(0.05)
    assert released.wait(10)
