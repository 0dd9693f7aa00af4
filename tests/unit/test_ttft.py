"""The TTFT estimate (kvtui.metrics.ttft): the FLOPs formula against hand-computed figures, the measured-rate
override, the per-request accumulation (kvtui.metrics.ttft_saved) whose totals are the sums over the requests,
the break-even mark in the text outputs, and the flags refused before anything starts."""

from __future__ import annotations

import math

import pytest

from kvtui.cli import main
from kvtui.core.events import RequestResult
from kvtui.core.layout import MODEL_PRESETS
from kvtui.metrics.aggregate import Aggregator, span_summary, summary_from_frame
from kvtui.metrics.ttft import (
    DEFAULT_MFU,
    GPUS,
    NO_MODEL,
    PrefillModel,
    TtftEstimator,
    make_estimator,
    prefill_flops,
    reload_estimate,
)
from kvtui.metrics.ttft_saved import SignedRecorder


def _result(req_id: int, pages_hit: int, probe_ms: float, read_ms: float, page_tokens: int = 16) -> RequestResult:
    pages = 8
    return RequestResult(req_id, "s", pages * page_tokens, pages * page_tokens, page_tokens, 1024, pages, pages_hit,
                         bytes(pages), probe_ms=probe_ms, read_ms=read_ms)


def test_formula_by_hand():
    # 2·P·k + 2·L·d_attn·k²: 2·100·10 + 2·2·8·10² = 2,000 + 3,200
    assert prefill_flops(10, 100, 2, 8) == 5_200
    assert prefill_flops(0, 1e9, 32, 4096) == 0
    with pytest.raises(ValueError):
        prefill_flops(-1, 1, 1, 1)
    # P = 10^9, L = 10, d_attn = 1,000, k = 1,000: 2·10^12 + 2·10·1,000·10^6 = 2.02·10^12 FLOPs;
    # on an H100 (989 TFLOPS) at 50 % MFU: 2.02e12 / 494.5e12 s = 4.0849 ms
    est = TtftEstimator(GPUS["h100"], 0.5, PrefillModel("m", 10**9, 10, 1000))
    assert est.recompute_ms(1000) == pytest.approx(1e3 * 2.02e12 / (989e12 * 0.5), rel=1e-12)
    assert est.recompute_ms(1000) == pytest.approx(4.0849, abs=1e-4)


def test_llama_8b_recompute_of_the_bench_prefix_by_hand():
    """Llama-3.1-8B: per layer 2·4096·4096 + 2·4096·1024 (q, o; k, v) + 3·4096·14336 (gated MLP) =
    218,103,808 weights, × 32 layers = 6,979,321,856 = P; d_attn = 32 × 128 = 4,096; k = 1,792 tokens."""
    est = make_estimator("llama-3.1-8b", MODEL_PRESETS["llama-3.1-8b"], "h100", 0.4)
    assert est.model.params == 6_979_321_856 and est.model.layers == 32 and est.model.attn_dim == 4096
    flops = 2 * 6_979_321_856 * 1792 + 2 * 32 * 4096 * 1792**2
    assert flops == 25_855_703_121_920
    assert est.recompute_ms(1792) == pytest.approx(1e3 * flops / (989e12 * 0.4), rel=1e-12)  # ≈ 65.36 ms
    assert est.short == "H100 @ 40 % MFU" and "llama-3.1-8b" in est.basis and "989" in est.basis


def test_layouts_choose_the_model_or_say_the_estimate_is_off():
    seed = make_estimator("seed")  # the seed layout is Qwen2.5-7B's shape
    assert seed.model.name == "qwen2.5-7b" and "seed's shape" in seed.basis and seed.mfu == DEFAULT_MFU
    assert seed.model.params == MODEL_PRESETS["qwen2.5-7b"].non_embedding_params()
    for name in ("tiny", "custom"):
        est = make_estimator(name)
        assert not est.active and est.basis == NO_MODEL == "no model: TTFT estimate off"
        with pytest.raises(ValueError):
            est.recompute_ms(16)
    # a changed layout is no model's, even when --model-config named one
    assert not make_estimator("custom", MODEL_PRESETS["llama-3.1-8b"]).active
    # an MoE layout the parameter count does not model: off, and says why
    qwen_moe = MODEL_PRESETS["qwen2.5-7b"].__class__(
        "moe", "moe.json", "MHA/GQA", 2, 4, 4, 8, "bf16", config={"hidden_size": 32, "num_experts": 8,
                                                                  "intermediate_size": 64})
    off = make_estimator("moe", qwen_moe)
    assert not off.active and "non-embedding parameters are unknown" in off.off
    # a layout switch keeps the GPU, MFU and measured rate, and follows the new layout's model
    switched = make_estimator("seed", gpu="a100", mfu=0.5).for_layout("llama-3.1-70b")
    assert switched.model.name == "llama-3.1-70b" and switched.gpu.key == "a100" and switched.mfu == 0.5


def test_measured_prefill_rate_gives_exactly_k_over_r():
    for layout in ("tiny", "custom", "llama-3.1-8b"):
        est = make_estimator(layout, tokens_per_s=12_000.0)
        assert est.active
        for k in (1, 16, 1792, 100_000):
            assert est.recompute_ms(k) == 1e3 * k / 12_000.0
    assert make_estimator("tiny", tokens_per_s=8000.0).short == "8,000 tok/s measured"


def test_signed_percentiles_are_rank_percentiles_within_three_digits():
    rec = SignedRecorder()
    values = [-40.0, -3.0, 2.0, 5.0, 12.5, 80.0, 81.0, 300.0, -0.5, 7.0]
    for v in values:
        rec.record(v)
    ordered = sorted(values)
    for p in (1, 10, 25, 50, 75, 90, 99, 100):
        want = ordered[max(1, math.ceil(p / 100 * len(values))) - 1]
        assert rec.percentile(p) == pytest.approx(want, rel=2e-3), p
    assert SignedRecorder().percentile(50) == 0.0


def test_run_totals_are_the_sums_over_its_requests():
    """An aggregator fed known results at R = 1,000 tok/s (16 tokens per page): each request that reloaded
    k tokens saved k ms of prefill minus its reload (probe + read); the JSON totals are the sums."""
    t = [0.0]
    agg = Aggregator(estimator=make_estimator("tiny", tokens_per_s=1000.0), clock=lambda: t[0])
    cases = [(2, 1.0, 3.0), (4, 1.0, 70.0), (0, 1.0, 0.0), (8, 0.5, 5.5), (0, 1.0, 2.0), (1, 2.0, 1.0)]
    saved, gpu_s, reload, slower = [], 0.0, 0.0, 0
    for i, (hit, probe, read) in enumerate(cases):
        t[0] += 0.25
        agg.add(_result(i, hit, probe, read))
        if hit:  # no page loaded (a probe-only or unusable reload): nothing saved, nothing charged
            k = hit * 16
            saved.append(k - (probe + read))
            gpu_s += k / 1000.0
            reload += probe + read
            slower += probe + read > k
    frame = agg.frame()
    s = summary_from_frame(frame)
    assert s["ttft_saved_ms"]["count"] == len(saved) == 4
    assert s["ttft_saved_ms"]["total"] == pytest.approx(sum(saved))  # 28 − 7 + 122 + 13 = 156
    assert sum(saved) == pytest.approx(156.0)
    assert s["prefill_gpu_s_saved"] == pytest.approx(gpu_s) == pytest.approx(s["tokens_hit"] / 1000.0)
    assert s["reload_vs_recompute"] == pytest.approx(reload / (gpu_s * 1e3))
    assert s["reloads_slower_than_recompute"] == slower == 1
    ordered = sorted(saved)  # −7, 13, 28, 122
    assert s["ttft_saved_ms"]["p50"] == pytest.approx(ordered[1], rel=2e-3)
    assert s["ttft_saved_ms"]["p99"] == pytest.approx(ordered[3], rel=2e-3)
    assert frame.ttft["window"]["p50_ms"] == ordered[1] and frame.ttft["window"]["count"] == 4  # exact
    assert s["ttft_estimate"]["basis"].startswith("prefill at 1,000 tok/s")
    # the GPU-seconds saved per second: over the last 2 s of frames
    t[0] += 0.5
    agg.add(_result(9, 4, 1.0, 1.0))
    t[0] += 0.5
    assert agg.frame().ttft["gpu_s_per_s"] == pytest.approx(0.064 / 1.0)  # 64 tokens at 1,000 tok/s in 1 s


def test_span_counts_only_what_followed_and_window_forgets():
    t = [0.0]
    agg = Aggregator(window_s=10.0, estimator=make_estimator("tiny", tokens_per_s=1000.0), clock=lambda: t[0])
    agg.add(_result(1, 8, 1.0, 1.0))  # 128 − 2 = 126 ms saved
    first = agg.frame()
    agg.begin_span()
    t[0] += 1
    agg.add(_result(2, 2, 1.0, 1.0))  # 32 − 2 = 30 ms saved
    final = agg.frame()
    s = span_summary(final, first)
    assert s["ttft_saved_ms"]["count"] == 1 and s["ttft_saved_ms"]["total"] == pytest.approx(30.0)
    assert summary_from_frame(final)["ttft_saved_ms"]["total"] == pytest.approx(156.0)
    t[0] += 20  # both fall out of the 10 s window; the session keeps them
    later = agg.frame()
    assert later.ttft["window"]["count"] == 0 and later.ttft["session"]["count"] == 2


def test_no_estimator_and_estimate_off_say_so():
    s = Aggregator().summary()
    assert s["ttft_saved_ms"] is None and s["prefill_gpu_s_saved"] is None and s["reload_vs_recompute"] is None
    agg = Aggregator(estimator=make_estimator("tiny"))
    agg.add(_result(1, 4, 1.0, 1.0))
    frame = agg.frame()
    assert frame.ttft["off"] == NO_MODEL and frame.ttft["session"]["count"] == 0
    s = summary_from_frame(frame)
    assert s["ttft_saved_ms"] is None and s["ttft_estimate"]["off"] == NO_MODEL


def test_break_even_is_marked_when_the_reload_is_slower():
    from kvtui.commands.output import format_summary

    agg = Aggregator(estimator=make_estimator("tiny", tokens_per_s=1000.0))
    agg.add(_result(1, 1, 1.0, 40.0))  # 16 ms of prefill, 41 ms of reload
    text = format_summary(agg.summary())
    assert "TTFT saved (estimate)" in text and "RELOAD SLOWER THAN RECOMPUTE (1 of 1 request)" in text
    assert "estimate: prefill at 1,000 tok/s" in text
    fast = Aggregator(estimator=make_estimator("tiny", tokens_per_s=1000.0))
    fast.add(_result(1, 8, 1.0, 4.0))
    assert "SLOWER" not in format_summary(fast.summary())
    assert "no model: TTFT estimate off" in format_summary(Aggregator(estimator=make_estimator("tiny")).summary())


def test_bench_recompute_line():
    from kvtui.commands.bench import _recompute_line

    est = make_estimator("tiny", tokens_per_s=1000.0)
    o = {"tokens_skipped": 96, **reload_estimate(est, 96, [100.0, 120.0, 110.0])}
    assert o["recompute_ms"] == 96.0 and o["reload_vs_recompute"] == pytest.approx(110.0 / 96.0)
    assert o["ttft_saved_ms"]["total"] == pytest.approx(3 * 96.0 - 330.0)
    assert o["ttft_saved_ms"]["p50"] == pytest.approx(96.0 - 110.0) and o["prefill_gpu_s_saved"] == pytest.approx(0.288)
    line = _recompute_line(o, {"p50": 110.0, "mean": 110.0})
    assert "recompute ~96.0 ms for 96 tokens vs reload p50 110.00 · mean 110.00 ms measured" in line
    assert "RELOAD SLOWER THAN RECOMPUTE (Σ reload/Σ recompute 1.15×" in line
    assert "estimate: prefill at 1,000 tok/s" in line
    quick = {"tokens_skipped": 96, **reload_estimate(est, 96, [10.0])}
    assert "TTFT saved (estimate) p50 86.0 ms" in _recompute_line(quick, {"p50": 10.0, "mean": 10.0})
    off = {"tokens_skipped": 96, **reload_estimate(make_estimator("tiny"), 96, [10.0])}
    assert off["ttft_saved_ms"] is None and _recompute_line(off, {"p50": 10.0}) == NO_MODEL


@pytest.mark.parametrize("command", ["run", "watch", "bench"])
@pytest.mark.parametrize("flags, message", [
    (["--mfu", "0"], "--mfu must be within (0, 1]"),
    (["--mfu", "1.5"], "--mfu must be within (0, 1]"),
    (["--gpu", "z100"], "argument --gpu: invalid choice: 'z100'"),
    (["--prefill-tokens-per-s", "0"], "--prefill-tokens-per-s must be a positive number"),
    (["--prefill-tokens-per-s", "-5"], "--prefill-tokens-per-s must be a positive number"),
    (["--prefill-tokens-per-s", "1000", "--mfu", "0.5"], "--prefill-tokens-per-s replaces the FLOPs estimate"),
    (["--mfu", "half"], "argument --mfu: must be a number or a percentage"),
])
def test_bad_estimate_flags_are_one_line_before_anything_starts(command, flags, message, capsys):
    assert main([command, "--layout", "tiny", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("kvtui: error: ")
    assert "starting" not in err and "network" not in err


def test_bench_modes_without_an_estimate_refuse_its_flags(capsys):
    assert main(["bench", "--ui", "--layout", "tiny", "--gpu", "a100"]) == 2
    assert ("--gpu sets the recompute estimate of the default bench and --disk; --ui has none"
            in capsys.readouterr().err)


def test_the_panel_records_and_replays():
    from kvtui.session.codec import FrameDecoder, FrameEncoder, decode_record

    agg = Aggregator(estimator=make_estimator("seed"))
    agg.add(_result(1, 6, 1.0, 80.0, page_tokens=256))
    frame = agg.frame()
    assert frame.ttft["session"]["count"] == 1 and frame.ttft["short"] == "H100 @ 40 % MFU"
    back = FrameDecoder().apply(decode_record(FrameEncoder().encode(frame)))
    assert back.ttft == frame.ttft
    assert summary_from_frame(back)["ttft_saved_ms"] == summary_from_frame(frame)["ttft_saved_ms"]
    # a frame without an estimator records no panel, and replays as one without
    plain = Aggregator().frame()
    assert FrameDecoder().apply(decode_record(FrameEncoder().encode(plain))).ttft == {}


def test_a_layout_switch_moves_the_estimate_to_the_new_layouts_model():
    from test_controls import _events_after, _n_events, _session

    from kvtui.core.controls import SetLayout

    agg = Aggregator(estimator=make_estimator("tiny", gpu="a100", mfu=0.5))
    session, _engine = _session(prompt_pages=8, aggregator=agg)
    try:
        assert not agg.estimator.active and session.frame().ttft["off"] == NO_MODEL
        n = _n_events(session)
        session.send(SetLayout("seed"))
        texts = _events_after(session, n, count=2)
        assert texts[1] == f"TTFT estimate: {agg.estimator.basis}" and "qwen2.5-7b (seed's shape)" in texts[1]
        assert agg.estimator.model.name == "qwen2.5-7b" and agg.estimator.gpu.key == "a100" and agg.estimator.mfu == 0.5
        assert "off" not in session.frame().ttft
    finally:
        session.stop()
