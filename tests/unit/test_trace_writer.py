"""The FAST'25 trace a run writes (workload.trace_writer): ids follow page keys, rows read back, each row is on
disk as soon as its request finishes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from workload.request import Request
from workload.stats import ideal_hits
from workload.synthetic import SyntheticWorkload, WorkloadSpec
from workload.trace import read_trace
from workload.trace_writer import TraceRecorder


def _req(req_id: int, tokens: list[int], arrival_s: float | None = None, cacheable: int | None = None,
         labels: tuple[tuple[str, str], ...] = ()) -> Request:
    t = np.array(tokens, np.uint32)
    return Request(req_id, t, arrival_s, len(t) if cacheable is None else cacheable, "test", labels)


def test_equal_prefixes_get_equal_ids_and_the_rows_read_back(tmp_path):
    path = tmp_path / "t.jsonl"
    rec = TraceRecorder(path, 4)
    reqs = [_req(0, [1, 2, 3, 4, 5, 6, 7, 8, 9]),  # two full pages and a partial one
            _req(1, [1, 2, 3, 4, 5, 6, 7, 8, 9], labels=(("output_tokens", "7"),)),  # the same prompt
            _req(2, [1, 2, 3, 4, 0, 6, 7, 8]),  # the first page again, then another one
            _req(3, [9, 2, 3, 4, 5, 6, 7, 8]),  # equal second page after another first: another key
            _req(4, [1, 2, 3, 4, 5, 6, 7, 8], cacheable=4)]  # its second page is never published
    for r in reqs:
        rec.drawn(r)
    for r in reqs:
        rec.finished(r.req_id, 10.0 + r.req_id / 10)
    rec.close()
    rows, problems = read_trace(path, block_tokens=4, strict=True)
    assert problems == []
    assert [r.hash_ids for r in rows] == [(0, 1, 2), (0, 1, 2), (0, 3), (4, 5), (0, 6)]
    assert [r.timestamp_ms for r in rows] == [0, 100, 200, 300, 400]  # from the first request's start
    assert [r.input_length for r in rows] == [9, 9, 8, 8, 8] and [r.output_length for r in rows] == [0, 7, 0, 0, 0]
    assert ideal_hits(rows, 4) == (2 + 1 + 0 + 1, 16)  # what a store with room for all would have hit


def test_rows_are_written_in_finish_order_at_non_decreasing_times_and_flushed_at_once(tmp_path):
    path = tmp_path / "t.jsonl"
    rec = TraceRecorder(path, 4)
    rec.drawn(_req(0, [1, 2, 3, 4], arrival_s=0.5))
    rec.drawn(_req(1, [1, 2, 3, 4, 5], arrival_s=0.2))
    rec.drawn(_req(2, [7] * 4, arrival_s=0.9))  # drawn, never finished (an interrupted run): no row
    rec.finished(0, 3.0)  # a request with an arrival time is written at it, not at its start
    rows, _ = read_trace(path, block_tokens=4, strict=True)  # readable before the file is closed
    assert [(r.timestamp_ms, r.hash_ids) for r in rows] == [(0, (0,))]
    rec.finished(1, 3.1)  # arrived earlier, finished later: kept in time order
    rec.finished(99, 3.2)  # never drawn: nothing
    rows, _ = read_trace(path, block_tokens=4, strict=True)
    assert [(r.timestamp_ms, r.hash_ids) for r in rows] == [(0, (0,)), (0, (0, 1))]
    rec.close()
    rec.close()
    assert rec.rows == 2 and rec.error is None


def test_a_bad_block_size_or_path_is_refused(tmp_path):
    with pytest.raises(ValueError):
        TraceRecorder(tmp_path / "t.jsonl", 0)
    with pytest.raises(OSError):
        TraceRecorder(tmp_path / "missing" / "t.jsonl", 4)


def test_a_scenario_saves_its_output_length_and_the_writer_says_the_block_size(tmp_path):
    """A synthetic scenario's rows carry its output length, not 0 (aiperf sends output_length as max_tokens);
    the file cannot say its block size, so the writer's line does, with how to replay it."""
    path = tmp_path / "t.jsonl"
    rec = TraceRecorder(path, 8)
    spec = WorkloadSpec(prompt_tokens=64, page_tokens=8)
    for r in itertools.islice(SyntheticWorkload(spec), 3):
        rec.drawn(r)
        rec.finished(r.req_id, float(r.req_id))
    rec.close()
    rows, _ = read_trace(path, block_tokens=8, strict=True)
    assert [r.output_length for r in rows] == [spec.output_tokens] * 3 and spec.output_tokens > 0
    assert rec.text() == (f"{path}: 3 rows in blocks of 8 tokens; replay it with --trace-block-tokens 8 (aiperf: "
                          "--isl-block-size 8, analyze-trace --block-size 8)")
