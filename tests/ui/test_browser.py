"""The live page in headless Chromium: every operator in the graph, a frontier that
advances, a late row injected by the test in the source's late view, and a screenshot
of the demo's graph (written outside git: $SEALTIME_SCREENSHOT or /tmp/sealtime-ui.png,
and the operators table next to it, ``*-operators.png``)."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time

from selenium.webdriver.support.ui import WebDriverWait

LATE_ID = 424242


# The page re-renders on every snapshot, so elements are read and clicked through one
# script call each (a Selenium element handle could go stale in between).
def _js(browser, script: str):
    return browser.execute_script(script)


def _frontier(browser) -> int | None:
    text = _js(browser, "return document.getElementById('flow-frontier').dataset.frontier")
    return int(text) if text else None


def _node_names(browser) -> set[str]:
    return set(
        _js(
            browser,
            "return [...document.querySelectorAll('#graph g.node')].map(g => g.dataset.name)",
        )
    )


def _text(browser, css: str) -> str:
    return _js(browser, f"const e = document.querySelector('{css}'); return e ? e.textContent : ''")


def test_page_shows_graph_frontier_and_late_rows(job, browser):
    flow = job.flow
    job.wait_ticks(1)
    browser.get(flow.serve_ui().url)
    wait = WebDriverWait(browser, 120, poll_frequency=0.2)

    # The graph shows every operator of the plan (and the sink).
    names = [n.name for n in flow.nodes]
    wait.until(lambda b: len(_node_names(b)) >= len(names) + 1)
    shown = _node_names(browser)
    assert set(names) <= shown, set(names) - shown
    assert any(name.startswith("Persist") for name in shown)

    # Per-operator numbers: the aggregate's box and table row show the rows its kernel
    # counted this tick and its state rows; a fused stateless operator says so.
    agg = '#graph g.node[data-name="aggregate"]'
    wait.until(
        lambda b: int(_js(b, f"return document.querySelector('{agg}').dataset.rowsIn || 0")) > 0
    )
    assert int(_js(browser, f"return document.querySelector('{agg}').dataset.stateRows")) > 0
    assert "rows in" in _text(browser, agg) and "state" in _text(browser, agg)
    assert "fused" in _text(browser, '#graph g.node[data-name="filter"]')
    cell = '#operators tr[data-name="aggregate"] td.state-rows'
    wait.until(
        lambda b: int(_js(b, f"return document.querySelector('{cell}').dataset.value || 0")) > 0
    )

    # A frontier value on the page advances while the job runs (no reload).
    wait.until(lambda b: _frontier(b) is not None and _frontier(b) > 0)
    first = _frontier(browser)
    wait.until(lambda b: (_frontier(b) or 0) > first)

    # A late row: far below the frontier; it shows in the source's late view.
    job.feed.push((LATE_ID, job.clock.ms - 60_000))
    link = 'a.late-link[data-source="events"]'
    wait.until(lambda b: _text(b, link) not in ("", "0"))
    _js(browser, f"document.querySelector('{link}').click()")
    wait.until(lambda b: str(LATE_ID) in _text(b, "#rows-table"))
    assert "below the admission bound" in _text(browser, "#rows-table")

    # The bindings page lists the remap table, live.
    browser.get(flow.serve_ui().url + "#/bindings")
    wait.until(
        lambda b: _js(b, "return document.querySelectorAll('#bindings tbody tr').length") >= 2
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_screenshot_of_demo_graph(spark, browser, capsys):
    from sealtime.cli import main

    port = _free_port()
    data_dir = os.path.join(tempfile.mkdtemp(prefix="sealtime-ui-demo-"), "demo")
    argv = ["demo", "--seconds", "1", "--rate", "300", "--window", "2s", "--data-dir", data_dir]
    argv += ["--ui", f"127.0.0.1:{port}"]
    done = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            main(argv)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while True:  # the demo builds its flow, then serves the page
        assert not errors, errors
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            assert time.monotonic() < deadline, "the demo's web view did not come up"
            time.sleep(0.2)
    browser.get(url)
    wait = WebDriverWait(browser, 180, poll_frequency=0.3)
    wait.until(lambda b: int(_text(b, "#tick").replace("–", "0") or 0) >= 1)
    shown = _node_names(browser)
    assert {"bids", "channels"} <= shown, shown
    assert len(shown) >= 10, shown  # sources, side outputs, window, aggregate, top-k, join, sinks
    # Every box is readable: no two boxes of the graph overlap.
    boxes = _js(
        browser,
        "return [...document.querySelectorAll('#graph g.node')].map(g => {"
        " const r = g.getBoundingClientRect(); return [g.dataset.name, r.left, r.top, r.right, r.bottom]; })",
    )
    for i, (a, *ra) in enumerate(boxes):
        for b, *rb in boxes[i + 1 :]:
            apart = ra[2] <= rb[0] or rb[2] <= ra[0] or ra[3] <= rb[1] or rb[3] <= ra[1]
            assert apart, f"boxes {a!r} and {b!r} overlap"
    # The kernels' per-operator numbers are on the page (the join counts rows both ways).
    join = '#graph g.node[data-name="join"]'
    wait.until(
        lambda b: _js(b, f"return document.querySelector('{join}').dataset.rowsIn") is not None
    )
    # The tick plot draws something from the first tick on (a bar and a dot per tick).
    assert _js(browser, "return document.querySelectorAll('#plot rect.dur').length") >= 1
    assert _js(browser, "return document.querySelectorAll('#plot circle.rows').length") >= 1
    path = os.environ.get("SEALTIME_SCREENSHOT", "/tmp/sealtime-ui.png")
    assert browser.save_screenshot(path)
    assert os.path.getsize(path) > 10_000
    # A second one of the operators table (per-operator rows, state, times).
    _js(browser, "document.getElementById('operators').scrollIntoView()")
    assert browser.save_screenshot(path[: -len(".png")] + "-operators.png")
    # At 1600 px the operators table shows every column: nothing is cut off or hidden
    # behind its card's scroll bar (issue 33 found it cut off at that width).
    browser.set_window_size(1600, 1000)
    wait.until(lambda b: _js(b, "return window.innerWidth") <= 1600)
    fit = _js(
        browser,
        "const t = document.getElementById('operators'), c = t.closest('.card');"
        " const heads = [...t.querySelectorAll('thead th')];"
        " const last = heads[heads.length - 1].getBoundingClientRect();"
        " return [heads.length, c.scrollWidth - c.clientWidth, last.right,"
        " c.getBoundingClientRect().right, window.innerWidth];",
    )
    columns, hidden, last_right, card_right, inner = fit
    assert columns == 14, fit
    assert hidden <= 0 and last_right <= card_right <= inner, fit
    done.wait(180)
    assert not errors, errors
    assert "web view: http://127.0.0.1:" in capsys.readouterr().out
