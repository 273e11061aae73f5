"""User-facing frontiers never show the internal minimum time (issue 10, bug 6)."""

from __future__ import annotations

import sealtime as st
from sealtime.pubsub.subscriber import Progress
from sealtime.time import MIN_TIME, Antichain

_MIN = str(MIN_TIME)


def test_first_tick_report_says_nothing_was_sealed_before(make_flow):
    flow = make_flow()
    src = flow.source("s", st.sources.Rows({"k": "string"}, [(5, {"k": "a"}), (9, {"k": "b"})]))
    counts = src.aggregate(by="k", n=st.count())
    reports = flow.run(ticks=2)
    first = reports[0]
    assert first.sealed, "the first tick sealed something"
    for lo, _hi in first.sealed.values():
        assert lo is None, "no time was sealed before the first tick"
    # Later ticks report where the previous one stopped.
    assert all(lo is not None for lo, _ in reports[1].sealed.values())
    for r in reports:
        assert _MIN not in str(r) and _MIN not in repr(r.sealed)
    # Before any run, a collection's frontier is the initial one; described in words.
    assert (
        st.time.describe_frontier(
            make_flow().source("t", st.sources.Rows({"k": "string"}, [])).frontier
        )
        == "no time sealed yet"
    )
    assert counts.frontier is None  # both times read: everything is sealed


def test_progress_shows_the_initial_frontier_in_words():
    text = repr(Progress(Antichain([MIN_TIME])))
    assert text == "Progress(no time sealed yet)" and _MIN not in text
    assert repr(Progress(Antichain([12]))) == "Progress(sealed before 12)"
