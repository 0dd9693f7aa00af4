"""`kvtui compare`: run/report/bench JSON files and recorded sessions (written here from known request results,
no store), the inputs that differ, every shared figure with its deltas, the --svg overlay, and bad input."""

from __future__ import annotations

import json

import pytest

from kvtui.cli import main
from kvtui.commands.compare import _figure_names, compare, describe_field
from kvtui.core.events import RequestResult
from kvtui.metrics.aggregate import Aggregator, summary_from_frame
from kvtui.session.writer import SessionWriter

HEADER = {"layout": {"layers": 4, "kv_heads": 2, "head_dim": 16, "page_tokens": 8, "elem_bytes": 2, "kv_factor": 2},
          "page_bytes": 4096, "concurrency": 1, "store_mode": "embedded", "bad_rows_skipped": 0,
          "setup": {"store_bytes": 1 << 30, "segment_on": "store", "protocol": "tcp", "read_streams": 1,
                    "kvtui_version": "0.1.0", "mooncake_version": "mooncake 0.3.13"}}


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _result(i: int, hit: int) -> RequestResult:
    return RequestResult(req_id=i, scenario="s", n_tokens=32, cacheable_tokens=32, page_tokens=8, page_bytes=4096,
                         pages_total=4, pages_hit=hit, states=bytes([1] * hit + [2] * (4 - hit)),
                         pages_published=4 - hit, bytes_loaded=hit * 4096, bytes_written=(4 - hit) * 4096,
                         verified=hit, probe_ms=0.5, read_ms=1.0 + hit, put_ms=2.0)


def record(path, hit: int, overlap: float, requests: int = 20, **header) -> dict:
    """A session of ``requests`` requests of 4 pages, ``hit`` of them reloaded each, 10 per second; returns
    the summary of its final frame."""
    clock = Clock()
    agg = Aggregator(clock=clock)
    workload = {"kind": "synthetic", "scenario": "shared-system-prompt", "overlap": overlap, "pool": 8}
    w = SessionWriter(path, {**HEADER, "workload": workload, **header})
    agg.begin_span()
    for i in range(requests):
        clock.t += 0.1
        agg.add(_result(i, hit))
        w.write(agg.frame(workload=workload))
    final = agg.frame(workload=workload)
    w.write(final)
    w.close()
    return summary_from_frame(final)


def run_json(path, hit: int, **extra) -> dict:
    """A `kvtui run --json` file of the same shape as :func:`record`'s sessions."""
    clock = Clock()
    agg = Aggregator(clock=clock)
    for i in range(10):
        clock.t += 0.1
        agg.add(_result(i, hit))
    doc = {**summary_from_frame(agg.frame()), **HEADER, "workload": {"kind": "synthetic", "overlap": 0.5},
           "interrupted": False, **extra}
    path.write_text(json.dumps(doc))
    return doc


def _row(c: dict, field: str) -> dict:
    return next(r for r in c["figures"] if r["field"] == field)


def test_two_sessions_side_by_side(tmp_path, capsys):
    a, b = tmp_path / "a.kvtui", tmp_path / "b.kvtui"
    record(a, hit=3, overlap=0.75)
    record(b, hit=1, overlap=0.25)
    out = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b), "--json", str(out), "--svg", str(tmp_path / "cmp.svg")]) == 0
    text = capsys.readouterr().out
    c = json.loads(out.read_text())
    assert [i["kind"] for i in c["inputs"]] == ["session", "session"]
    assert c["inputs_differ"] == [{"input": "workload.overlap", "values": [0.75, 0.25]}]
    hits = _row(c, "pages_hit")  # 20 requests × 3 pages against 20 × 1
    assert (hits["values"], hits["delta"], hits["relative"]) == ([60, 20], [None, -40], [None, pytest.approx(-2 / 3)])
    rate = _row(c, "page_hit_rate")
    assert rate["values"] == [0.75, 0.25] and rate["unit"] == "%" and rate["name"] == "page hit rate (session)"
    assert _row(c, "requests")["delta"] == [None, 0]
    reload = _row(c, "reload_ms.p50")  # probe 0.5 + read 1 + hit ms
    assert reload["name"] == "reload latency p50" and reload["unit"] == "ms"
    assert reload["values"][0] == pytest.approx(4.5, rel=0.01) and reload["values"][1] == pytest.approx(2.5, rel=0.01)
    # the table: the differing input, and the pages line with its absolute and relative delta
    assert "workload.overlap  0.75  0.25" in text
    line = next(x for x in text.splitlines() if x.startswith("KV page hits "))  # (pages_hit, by its figure)
    assert line.split()[3:] == ["pages", "60", "20", "-40", "(-66.7", "%)"]
    assert next(x for x in text.splitlines() if x.startswith("page hit rate (session)")).endswith("-50.00 pp")
    svg = (tmp_path / "cmp.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "A: a.kvtui" in svg and "B: b.kvtui" in svg
    assert "page hit rate (last 2 s) (%)" in svg and "reuse read (wall) (MB/s)" in svg


def test_a_session_against_its_run_json_and_a_third_file(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.kvtui"
    run_json(a, hit=2)
    record(b, hit=2, overlap=0.5, requests=10, setup={**HEADER["setup"], "store_bytes": 2 << 30})
    c_path = tmp_path / "c.json"
    run_json(c_path, hit=4, errors={"OBJECT_NOT_FOUND": 3})
    assert main(["compare", str(a), str(b), str(c_path), "--json", "-"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert [i["kind"] for i in c["inputs"]] == ["run", "session", "run"]
    differ = {d["input"]: d["values"] for d in c["inputs_differ"]}
    assert differ["kind"] == ["run", "session", "run"]
    assert differ["setup.store_bytes"] == [1 << 30, 2 << 30, 1 << 30]
    assert "workload.overlap" not in differ  # 0.5 in all three
    assert _row(c, "pages_hit")["values"] == [20, 20, 40]
    assert _row(c, "pages_hit")["delta"] == [None, 0, 20]
    # an error code one file saw counts 0 in the others; relative change of a figure that was 0 is None
    err = _row(c, "errors.OBJECT_NOT_FOUND")
    assert err["values"] == [0, 0, 3] and err["relative"] == [None, None, None]


def test_kinds_of_json_and_figures_they_share(tmp_path, capsys):
    bench = {"layout": HEADER["layout"], "page_bytes": 4096, "iterations": 20, "hit_rate": 0.875,
             "reuse_read_MBps_p50": 900.0, "publish_write_MBps": 400.0, "reload_ms": {"min": 1, "p50": 2.0, "max": 3},
             "baselines": {"raw_get_MBps_p50": 950.0, "memcpy_MBps": 9000.0}, "ratios": {"connector_vs_raw": 0.95}}
    a, b = tmp_path / "b1.json", tmp_path / "b2.json"
    a.write_text(json.dumps(bench))
    b.write_text(json.dumps({**bench, "iterations": 40, "reuse_read_MBps_p50": 1000.0,
                             "ratios": {"connector_vs_raw": 1.0}}))
    assert main(["compare", str(a), str(b), "--json", "-"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert [i["kind"] for i in c["inputs"]] == ["bench", "bench"]
    assert c["inputs_differ"] == [{"input": "iterations", "values": [20, 40]}]
    r = _row(c, "reuse_read_MBps_p50")
    assert r["name"] == "reload throughput (p50 per reload)" and r["unit"] == "MB/s"
    assert r["relative"] == [None, pytest.approx(1 / 9)]
    assert _row(c, "ratios.connector_vs_raw")["unit"] == "×"
    assert _row(c, "baselines.raw_get_MBps_p50")["name"] == "raw batch_get_into (p50 call)"
    # a run summary against a bench result: only what they share, and a note that they differ in kind
    run = tmp_path / "run.json"
    run_json(run, hit=2)
    assert main(["compare", str(run), str(a)]) == 0
    io = capsys.readouterr()
    assert "the files are of different kinds (bench, run)" in io.err
    assert "reload latency p50" in io.out


def test_bench_trace_runs_of_other_rounds_or_rows_are_inputs_that_differ():
    base = {"trace": "t.jsonl", "trace_sha256": "0123456789abcdef", "rows": 300, "block_tokens": 512,
            "round_count": 3, "rounds": [{"engine_s": 1.0}], "engine": {"seconds": 1.0, "requests_per_s": 300.0},
            "bare_loop": {"seconds": 0.8, "requests_per_s": 375.0}, "ratios": {"engine_vs_bare_loop": 0.8}}
    other = {**base, "trace_sha256": "fedcba9876543210", "round_count": 5}
    c = compare([("a", "bench --trace", base), ("b", "bench --trace", other)])
    assert sorted(c["inputs_differ"], key=lambda d: d["input"]) == [
        {"input": "round_count", "values": [3, 5]},
        {"input": "trace_sha256", "values": ["0123456789abcdef", "fedcba9876543210"]}]
    assert "round_count" not in [r["field"] for r in c["figures"]]  # an input, not a figure


def test_figure_names_come_from_the_figures_module():
    names = _figure_names()
    assert describe_field("throughput.reuse_read_MBps", names) == ("reuse read (busy)", "MB/s")
    assert describe_field("publish_ms.count", names) == ("publish latency count", "samples")
    assert describe_field("put_ms_total", names) == ("put_ms_total", "ms")
    assert describe_field("tokens_hit", names) == ("tokens_hit", "tokens")
    # bench --trace's fields: a rate is per second, not seconds; CPU per request is ms
    assert describe_field("engine.requests_per_s", names) == ("engine.requests_per_s", "/s")
    assert describe_field("bare_loop.seconds", names) == ("bare_loop.seconds", "s")
    assert describe_field("cpu_ms_per_request.engine.parent", names) == ("cpu_ms_per_request.engine.parent", "ms")


def test_compare_function_keeps_the_baseline_first():
    docs = [("a", "run", {"requests": 10, "token_hit_rate": 0.5, "layout": HEADER["layout"]}),
            ("b", "run", {"requests": 15, "token_hit_rate": 0.4, "layout": {**HEADER["layout"], "page_tokens": 16}})]
    c = compare(docs)
    assert [r["field"] for r in c["figures"]] == ["requests", "token_hit_rate"]
    assert _row(c, "requests")["relative"] == [None, 0.5]
    assert _row(c, "token_hit_rate")["delta"] == [None, pytest.approx(-0.1)]
    assert c["inputs_differ"][0]["input"] == "layout" and "16 tok/page" in c["inputs_differ"][0]["values"][1]


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_text("not json {"), "is neither a kvtui session nor a JSON result (Expecting value at line 1)"),
    (lambda p: p.write_bytes(b"\x89PNG\r\n\xff\xfe"), "is neither a kvtui session nor a JSON result (not UTF-8 text)"),
    (lambda p: p.write_text("[1, 2]"), "is JSON but not a kvtui result (a list, not an object)"),
    (lambda p: p.mkdir(), "is a folder, not a result file"),
    (lambda p: None, ": no such file"),
    (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200), "is not a"),
])
def test_bad_input_is_one_line(tmp_path, capsys, make, message):
    good = tmp_path / "good.json"
    run_json(good, hit=1)
    bad = tmp_path / "bad.x"
    make(bad)
    assert main(["compare", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kvtui: error: {bad}") and message in err and err.count("\n") == 1


@pytest.mark.parametrize("text", ["{}", '{"name": "pkg", "version": "1.0"}'])
def test_json_that_is_no_result_and_shares_nothing_is_refused(tmp_path, capsys, text):
    """A package.json against a run's JSON printed 32 inputs of "—" and "no figure is in every file", exit 0."""
    good, other = tmp_path / "good.json", tmp_path / "package.json"
    run_json(good, hit=1)
    other.write_text(text)
    assert main(["compare", str(good), str(other)]) == 2
    err = capsys.readouterr().err
    assert err == (f"kvtui: error: nothing to compare: {other} is JSON with no fields of a kvtui result, and no "
                   "figure is in every file\n")


def test_fewer_than_two_files_and_svg_without_sessions(tmp_path, capsys):
    good = tmp_path / "good.json"
    run_json(good, hit=1)
    assert main(["compare", str(good)]) == 2
    assert capsys.readouterr().err == "kvtui: error: compare needs at least two files, got 1\n"
    assert main(["compare", str(good), str(good), "--svg", str(tmp_path / "x.svg")]) == 2
    assert "none of the files is a session" in capsys.readouterr().err
    assert not (tmp_path / "x.svg").exists()


def test_sweep_results_compare_point_by_capacity(tmp_path, capsys):
    def sweep(real):
        return {"kind": "sweep", "trace": "synthetic", "block_tokens": 512, "sizing": {"eviction_ratio": 0.05},
                "ideal_token_hit_rate": 0.65, "points": [
                    {"capacity_tokens": 3_000_000, "real_token_hit_rate": real[1], "lru_token_hit_rate": 0.4},
                    {"capacity_tokens": 1_000_000, "real_token_hit_rate": real[0], "lru_token_hit_rate": 0.15}]}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(sweep([0.10, 0.30])))
    b.write_text(json.dumps({**sweep([0.12, 0.33]), "trace": "conversation-head"}))
    assert main(["compare", str(a), str(b), "--json", "-"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert c["inputs_differ"] == [{"input": "trace", "values": ["synthetic", "conversation-head"]}]
    fields = [r["field"] for r in c["figures"]]
    # points keyed by capacity, in numeric order
    assert fields.index("points[1000000].lru_token_hit_rate") < fields.index("points[3000000].lru_token_hit_rate")
    r = _row(c, "points[1000000].real_token_hit_rate")
    assert r["unit"] == "%" and r["values"] == [0.10, 0.12] and r["delta"][1] == pytest.approx(0.02)


def test_an_interrupted_run_is_named_as_such(tmp_path, capsys):
    """A run stopped short (``interrupted``, and ``stopped_by`` when a process of its cluster died) is an input
    that differs, and a line on stderr says its figures cover only what finished."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    run_json(a, hit=2)
    run_json(b, hit=2, interrupted=True, stopped_by="the master kvtui started died (exit code -9) at 3.6 s")
    assert main(["compare", str(a), str(b), "--json", "-"]) == 0
    captured = capsys.readouterr()
    differ = {d["input"]: d["values"] for d in json.loads(captured.out)["inputs_differ"]}
    assert differ["interrupted"] == [None, True]  # (a run that ran its course is not marked)
    assert (f"kvtui: {b} is of an interrupted run (the master kvtui started died (exit code -9) at 3.6 s): its "
            "figures cover only what finished") in captured.err


def test_the_table_names_every_figure_as_the_summary_does_and_writes_its_numbers_so(tmp_path, capsys):
    """Not raw JSON keys (put_ms_total): each row by its figure's name, its numbers with the summary's decimals and
    thousands separators; within 100 columns. ``--json`` keeps its rows' names as they were."""
    from kvtui.core.text import WIDTH, widest
    from kvtui.metrics import figures as fig

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    doc = run_json(a, hit=2)
    other = {**doc, "throughput": {**doc["throughput"], "reuse_read_MBps": 4_293.4}, "put_ms_total": 1_234.56}
    b.write_text(json.dumps(other))
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert widest([text]) <= WIDTH
    labels = [line.split("  ")[0] for line in text[text.index("\nfigure "):].splitlines()[3:]]
    assert not [x for x in labels if "_" in x], "a row named by its JSON key"
    for f in (fig.REQUESTS, fig.TOKENS_HIT, fig.PAGES_HIT, fig.PUT_BUSY, fig.READ_BUSY, fig.BYTES_LOADED,
              fig.REUSE_BUSY, fig.HIT_RATE_SESSION):
        assert f.name in labels, f.name
    lines = text.splitlines()
    reuse = next(x for x in lines if x.startswith(fig.REUSE_BUSY.name + " "))
    a_reuse = doc["throughput"]["reuse_read_MBps"]
    assert reuse.split()[3:6] == ["MB/s", f"{a_reuse:,.0f}", "4,293"]  # MB/s: no decimals, as in the summary
    put = next(x for x in lines if x.startswith(fig.PUT_BUSY.name + " "))
    assert put.split()[3:5] == ["ms", f"{doc['put_ms_total']:,.1f}"] and "1,234.6" in put
    assert "reload latency p50 " in text and " samples " in text  # a latency's statistics, its count in samples
    assert main(["compare", str(a), str(b), "--json", "-"]) == 0
    c = json.loads(capsys.readouterr().out)
    assert _row(c, "put_ms_total")["name"] == "put_ms_total" and _row(c, "pages_hit")["name"] == "pages_hit"


def test_bench_fields_are_named_by_their_figures_and_what_tells_them_apart():
    from kvtui.commands.compare import _text_figures, figure_label

    figures = _text_figures()
    assert figure_label("reuse_read_MBps_p50", figures)[0] == "reload throughput (p50 per reload)"
    assert figure_label("best_reuse_read_MBps_p50", figures)[0] == "reload throughput (p50 per reload) · best"
    assert figure_label("read_streams.2.MBps_p50", figures)[0] == "reload throughput (p50 per reload) · read streams 2"
    assert figure_label("tcp_path.reuse_read_MBps_p50", figures)[0] == "reload throughput (p50 per reload) · tcp path"
    assert figure_label("tcp_path.reload_ms.p50", figures)[0] == "reload latency p50 · tcp path"
    assert figure_label("best_reload_ms.max", figures)[0] == "reload latency max · best"
    assert figure_label("ratios.fill_vs_memcpy", figures)[0] == "page fill ÷ memcpy"  # (not "page fill (p50)")
    assert figure_label("ratios.aggregate_vs_links.4", figures)[0] == "aggregate ÷ M × link rate · 4"
    assert figure_label("ttft_saved_ms.p50", figures)[0] == "TTFT saved (estimate) p50"
    assert figure_label("tokens_skipped", figures)[0] == "prefill tokens skipped"
    assert figure_label("request_rate.store_bound_rps", figures) == ("request rate · store bound rps", None)


def record_switching(path, scenarios: list[str], requests: int = 20) -> None:
    """A session like :func:`record`'s whose scenario switches mid-way, through ``scenarios`` in turn."""
    clock = Clock()
    agg = Aggregator(clock=clock)
    workload = {"kind": "synthetic", "scenario": scenarios[0], "overlap": 0.5, "pool": 8}
    w = SessionWriter(path, {**HEADER, "workload": workload})
    agg.begin_span()
    for i in range(requests):
        clock.t += 0.1
        agg.add(_result(i, 2))
        w.write(agg.frame(workload={**workload, "scenario": scenarios[i * len(scenarios) // requests]}))
    w.close()


def test_a_recording_that_switched_scenario_says_so(tmp_path, capsys):
    """Its scenarios in order, not only the last one; even against a file whose last scenario is the same."""
    a, b, c = tmp_path / "a.kvtui", tmp_path / "b.kvtui", tmp_path / "c.kvtui"
    record_switching(a, ["few-shot", "shared-system-prompt"])
    record(b, hit=2, overlap=0.5)  # shared-system-prompt throughout
    record_switching(c, ["shared-system-prompt", "few-shot", "multi-turn"])
    assert main(["compare", str(a), str(b), str(c)]) == 0
    text = capsys.readouterr().out
    assert f"A  {a}  (session; scenario switched: few-shot → shared-system-prompt)" in text
    assert f"B  {b}  (session)" in text
    assert f"C  {c}  (session; scenario switched: shared-system-prompt → few-shot → multi-turn)" in text
    lines = text.splitlines()  # (three files' scenarios are too wide side by side: each under its input)
    at = lines.index("workload.scenario")
    assert lines[at + 1: at + 4] == ["  A  few-shot → shared-system-prompt", "  B  shared-system-prompt",
                                     "  C  shared-system-prompt → few-shot → multi-turn"]
    assert main(["compare", str(a), str(b)]) == 0  # the last scenarios agree: the switch is said all the same
    text = capsys.readouterr().out
    assert "inputs that differ (1; " in text and "few-shot → shared-system-prompt  shared-system-prompt" in text
    assert main(["compare", str(a), str(b), "--json", "-"]) == 0  # the JSON as it was: the last scenario only
    assert "workload.scenario" not in [d["input"] for d in json.loads(capsys.readouterr().out)["inputs_differ"]]
