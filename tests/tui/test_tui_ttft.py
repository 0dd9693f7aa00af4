"""The TTFT estimate on screen: the header's chips (saved p50/p99 with the basis, reload vs recompute marked
when the reload is the slower, "off" without a model) and the Throughput panel's GPU-saved row, which only
a frame with the panel shows. Frames come from a real Aggregator fed with hand-made results."""

from __future__ import annotations

from test_tui_widgets import with_widget
from tui_helpers import result

from kvtui.core.pages import PageState as S
from kvtui.metrics.aggregate import Aggregator
from kvtui.metrics.ttft import make_estimator
from kvtui.tui.widgets.kpis import Kpis
from kvtui.tui.widgets.throughput import Throughput


def _frame(estimator, read_ms: float):
    t = [0.0]
    agg = Aggregator(estimator=estimator, clock=lambda: t[0])
    for i in range(3):  # 2 pages of 256 tokens reloaded each: 512 tokens
        t[0] += 0.5
        agg.add(result(i, [S.HIT, S.HIT, S.PUBLISHED], reload_ms=read_ms))
    return agg.frame()


def test_header_shows_ttft_saved_with_its_basis_and_marks_a_slower_reload():
    est = make_estimator("tiny", tokens_per_s=10_000.0)  # 512 tokens → 51.2 ms of prefill
    fast, slow, off = _frame(est, 10.0), _frame(est, 200.0), _frame(make_estimator("tiny"), 10.0)
    plain = Aggregator().frame()

    def check(kpis):
        out = {}
        for name, f in (("fast", fast), ("slow", slow), ("off", off), ("plain", plain)):
            kpis.update_frame(f)
            out[name] = [c for c in kpis.chips if "TTFT" in c or "recompute" in c]
        return out

    chips = with_widget(Kpis(), check, size=(240, 8))
    # 51.2 − (0.4 probe + 10 read) = 40.8 ms saved per request
    assert chips["fast"] == ["TTFT saved ~40.8 ms p50 · 40.8 ms p99 (est., 10,000 tok/s measured)",
                             "reload/recompute 0.20× (est.)"]
    assert chips["slow"][0].startswith("TTFT saved −149 ms p50")
    assert chips["slow"][1] == "⚠ reload 3.91× slower than recompute (est.)"
    assert chips["off"] == ["TTFT est. off (no model)"]
    assert chips["plain"] == []  # no estimator (a demo, an older recording): nothing shown


def test_throughput_row_shows_the_gpu_time_saved_only_with_the_panel():
    est = make_estimator("seed")
    with_panel, without = _frame(est, 10.0), Aggregator().frame()

    def check(tp):
        out = {}
        for name, f in (("with", with_panel), ("without", without)):
            tp.update_frame(f)
            out[name] = (tp.values.get("gpu_s_per_s"), [w.display for w in tp.query(".tp-ttft")])
        return out

    seen = with_widget(Throughput(), check, size=(60, 10))
    rate = with_panel.ttft["gpu_s_per_s"]
    assert seen["with"] == (f"~{rate:.2f} s/s", [True, True, True])
    assert seen["without"] == ("", [False, False, False])
