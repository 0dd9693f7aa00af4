"""Mooncake FAST'25 trace parsing, block tokens and replay (workload.trace)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pytest

from workload.trace import (
    TraceError,
    TraceWorkload,
    block_tokens_ids,
    check_page_divides_block,
    late_rows,
    read_trace,
    row_tokens,
    skipped_count,
    skipped_rows_text,
)

TRACES = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces"
if not TRACES.is_dir():
    TRACES = Path("/work/shared/data/traces")


def row(ts: int, n: int, ids: list[int], out: int = 1) -> str:
    return json.dumps({"timestamp": ts, "input_length": n, "output_length": out, "hash_ids": ids})


def write(tmp_path: Path, text: str | bytes, name: str = "t.jsonl") -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_bytes(text.encode())
    return p


# --- parsing --------------------------------------------------------------------------------------------


def test_blank_lines_crlf_and_line_numbers(tmp_path):
    p = write(tmp_path, "\r\n" + row(5, 10, [1]) + "\r\n\r\n   \n" + row(7, 600, [1, 2]) + "\r\n")
    rows, problems = read_trace(p)
    assert problems == []
    assert [r.line_no for r in rows] == [2, 5]
    assert rows[1].hash_ids == (1, 2) and rows[1].input_length == 600 and rows[0].timestamp_ms == 5


def test_bad_rows_are_skipped_with_reasons(tmp_path):
    lines = [
        row(0, 10, [1]),  # 1 ok
        "{not json",  # 2
        "[1, 2]",  # 3 not an object
        json.dumps({"timestamp": 0, "input_length": 10, "hash_ids": [1]}),  # 4 missing output_length
        json.dumps({"timestamp": True, "input_length": 10, "output_length": 1, "hash_ids": [1]}),  # 5 bool
        json.dumps({"timestamp": 1.5, "input_length": 10, "output_length": 1, "hash_ids": [1]}),  # 6 float
        row(-1, 10, [1]),  # 7 negative timestamp
        row(0, -10, []),  # 8 negative length
        row(0, 10, [-4]),  # 9 negative id
        row(0, 1000, [1]),  # 10 needs 2 ids
        row(0, 512, [1, 2]),  # 11 needs exactly 1
        row(0, 10, ["a"]),  # 12 id not int
        row(3, 513, [1, 9]),  # 13 ok
        row(4, 5, [1]),  # 14 ok, truncated below
    ]
    text = "\n".join(lines)[:-3]  # truncated last line, no newline
    rows, problems = read_trace(write(tmp_path, text))
    assert [r.line_no for r in rows] == [1, 13]
    assert [p.line_no for p in problems] == list(range(2, 13)) + [14]
    reasons = {p.line_no: p.reason for p in problems}
    assert "bad JSON" in reasons[2] and "bad JSON" in reasons[14]
    assert "not a JSON object" in reasons[3]
    assert "output_length" in reasons[4]
    assert "bool" in reasons[5] and "float" in reasons[6]
    assert ">= 0" in reasons[7] and ">= 0" in reasons[8] and ">= 0" in reasons[9]
    assert "needs ceil(1000/512) = 2" in reasons[10]
    assert "needs ceil(512/512) = 1" in reasons[11]
    assert all("\n" not in r for r in reasons.values())


def test_strict_raises_at_first_bad_row_with_file_and_line(tmp_path):
    p = write(tmp_path, row(0, 10, [1]) + "\n" + row(0, 1000, [1]) + "\n{bad\n")
    with pytest.raises(TraceError) as exc:
        read_trace(p, strict=True)
    assert str(exc.value).startswith(f"{p}:2: ")
    assert isinstance(exc.value, ValueError)


def test_block_tokens_parameter_changes_the_consistency_check(tmp_path):
    p = write(tmp_path, row(0, 100, [1, 2, 3, 4]) + "\n")
    rows, problems = read_trace(p, block_tokens=32)
    assert len(rows) == 1 and not problems
    with pytest.raises(TraceError, match="no valid rows"):
        read_trace(p)  # 512-token blocks: needs 1 id
    with pytest.raises(ValueError):
        read_trace(p, block_tokens=0)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty trace"),
        (b"\n\r\n  \n", "empty trace"),
        (b"\x00\x01\x02binary", "binary"),
        (b'{"timestamp": 0}\xff\xfe\n', "binary"),
        (b"{bad\nnope\n", "no valid rows"),
    ],
)
def test_file_level_errors(tmp_path, content, message):
    p = write(tmp_path, content)
    with pytest.raises(TraceError, match=message) as exc:
        read_trace(p)
    assert "\n" not in str(exc.value) and str(p) in str(exc.value)


@pytest.mark.parametrize("bad_line, column", [
    (b'{"timestamp": 5, "input_length": 10,\x00 "output_length": 1, "hash_ids": [1]}', 37),  # between fields
    (b'{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1], "x": "a\x00b"}', 82),  # in a string
    (b"\x00" * 40, 1),  # a stretch of zeroes (a block never written)
])
def test_a_line_with_a_nul_byte_is_a_bad_row_like_any_other(tmp_path, bad_line, column):
    """One line with a NUL byte in an otherwise valid JSONL trace is skipped, counted and named with its line
    number like other bad lines (the whole trace was refused as a binary file); --strict stops at it."""
    good = [row(t, 10, [1]).encode() for t in range(4)]
    for where in (0, 2):  # the first line, or one in the middle
        lines = good[:where] + [bad_line] + good[where:]
        p = write(tmp_path, b"\n".join(lines) + b"\n")
        rows, problems = read_trace(p)
        assert [r.line_no for r in rows] == [n for n in range(1, 6) if n != where + 1]
        assert [(q.line_no, q.reason, q.skipped) for q in problems] == [
            (where + 1, f"NUL byte at column {column} (binary data, not JSON)", True)]
        assert skipped_rows_text(problems) == (f"skipped 1 bad trace row (first: line {where + 1}: NUL byte at "
                                               f"column {column} (binary data, not JSON))")
        with pytest.raises(TraceError) as exc:
            read_trace(p, strict=True)
        assert str(exc.value) == f"{p}:{where + 1}: NUL byte at column {column} (binary data, not JSON)"


@pytest.mark.parametrize("bad_line, bad", [
    (b'{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1], "x": "\xff"}', b"\xff"),  # latin-1
    (b"\xc3\x28 not a trace row", b"\xc3"),  # a broken two-byte sequence
])
def test_a_line_that_is_not_utf8_is_a_bad_row_like_any_other(tmp_path, bad_line, bad):
    """One line that is not UTF-8 in an otherwise valid trace is skipped and counted with its line number (the
    whole trace was refused as a binary file); --strict stops at it."""
    byte = bad_line.index(bad) + 1
    good = [row(t, 10, [1]).encode() for t in range(4)]
    p = write(tmp_path, b"\n".join(good[:2] + [bad_line] + good[2:]) + b"\n")
    rows, problems = read_trace(p)
    assert [r.line_no for r in rows] == [1, 2, 4, 5]
    assert [(q.line_no, q.reason, q.skipped) for q in problems] == [
        (3, f"not UTF-8 at byte {byte} (binary data, not JSON)", True)]
    assert skipped_rows_text(problems).startswith("skipped 1 bad trace row (first: line 3: not UTF-8")
    with pytest.raises(TraceError) as exc:
        read_trace(p, strict=True)
    assert str(exc.value) == f"{p}:3: not UTF-8 at byte {byte} (binary data, not JSON)"


def test_a_trace_of_another_block_size_is_refused_with_that_size_and_how_to_replay_it(tmp_path):
    """A trace saved with 8-token pages read with the FAST'25 blocks (512): every row fits blocks of 8 tokens,
    so the refusal says so, with kvtui's and aiperf's flags (it said only "8 hash_ids but … needs 1")."""
    p = write(tmp_path, "\n".join([row(0, 64, list(range(8))), row(5, 61, list(range(8))),
                                   row(9, 100, list(range(13)))]) + "\n")
    with pytest.raises(TraceError) as exc:
        read_trace(p)
    assert str(exc.value) == (
        f"{p}: no valid rows (3 bad; first at line 1: 8 hash_ids but input_length 64 needs ceil(64/512) = 1; every "
        "row fits blocks of 8 tokens: replay it with --trace-block-tokens 8 (aiperf: --isl-block-size 8, "
        "analyze-trace --block-size 8))")
    with pytest.raises(TraceError, match=f"^{p}:1: 8 hash_ids .* replay it with --block-tokens 8 "):
        read_trace(p, strict=True, block_flag="--block-tokens")
    assert len(read_trace(p, block_tokens=8, strict=True)[0]) == 3
    short = write(tmp_path, "\n".join([row(0, 4, [1]), row(1, 64, list(range(8))), row(2, 64, list(range(8)))])
                  + "\n", "short.jsonl")
    rows, problems = read_trace(short)  # a one-block row fits 512 too: kept, the others skipped with the hint
    assert [r.line_no for r in rows] == [1] and "every row fits blocks of 8 tokens" in problems[0].reason
    assert sum("every row fits" in q.reason for q in problems) == 1  # said once, with the first row it explains
    first_bad = write(tmp_path, "{oops\n" + p.read_text(), "first_bad.jsonl")
    with pytest.raises(TraceError, match=r"first at line 1: bad JSON.*; every row fits blocks of 8 tokens"):
        read_trace(first_bad)


@pytest.mark.parametrize("lines", [
    [row(0, 64, list(range(8))), row(1, 64, list(range(4)))],  # 8 tokens a block, then 16: no one size
    [row(0, 64, list(range(6)))],  # fits 11 and 12: neither is the only one, no power of two among them
])
def test_no_block_size_is_named_when_the_rows_do_not_agree_on_one(tmp_path, lines):
    p = write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(TraceError) as exc:
        read_trace(p)
    assert "fits" not in str(exc.value)


@pytest.mark.parametrize("content", [
    b"\x00" * 4096,  # zeroes
    ("\n".join([row(t, 10, [1]) for t in range(4)]) + "\n").encode("utf-16-le"),  # UTF-16: a NUL every 2nd byte
    b"\x00\x01\x02binary\n" + row(0, 10, [1]).encode("utf-16-le") + b"\n",
])
def test_a_binary_file_with_nul_bytes_is_still_refused(tmp_path, content):
    p = write(tmp_path, content)
    for strict in (False, True):
        with pytest.raises(TraceError) as exc:
            read_trace(p, strict=strict)
        assert "NUL" in str(exc.value) and "binary" in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(TraceError, match=f"^{p}: binary file \\(NUL bytes\\), not a JSONL trace$"):
        read_trace(p)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(tmp_path / "nope.jsonl")
    with pytest.raises(TraceError, match="is a folder"):
        read_trace(tmp_path)


def test_huge_ids_kept_exact_and_give_distinct_tokens(tmp_path):
    a, b = 2**53 + 1, 2**53  # float would merge these
    c, d = 2**64 + 7, 2**64 + 7 + 2**31
    text = "\n".join([row(0, 2048, [a, b, c, d]), row(1, 512, [2**200])]) + "\n"
    rows, problems = read_trace(write(tmp_path, text))
    assert not problems
    assert rows[0].hash_ids == (a, b, c, d) and rows[1].hash_ids == (2**200,)
    blocks = [block_tokens_ids(i, 512, 512) for i in (a, b, c, d, 2**200, 7)]
    for x in range(len(blocks)):
        for y in range(x + 1, len(blocks)):
            assert not np.array_equal(blocks[x], blocks[y])
    assert all(blk.dtype == np.uint32 and int(blk.max()) < 2**32 for blk in blocks)


# --- block tokens ---------------------------------------------------------------------------------------


def test_block_tokens_deterministic_prefix_and_distinct():
    x = block_tokens_ids(42, 512, 512)
    assert x.shape == (512,) and x.dtype == np.uint32
    assert np.array_equal(x, block_tokens_ids(42, 512, 512))
    assert np.array_equal(block_tokens_ids(42, 100, 512), x[:100])
    assert block_tokens_ids(42, 0, 512).shape == (0,)
    ids = list(range(2000)) + [2**31 - 1, 2**31, 2**32, 2**62, 2**64 - 1]
    seen = {block_tokens_ids(i, 512, 512).tobytes() for i in ids}
    assert len(seen) == len(ids)
    # filler differs too (not only the id header), so independent page hashes also differ
    assert not np.array_equal(block_tokens_ids(1, 512)[16:32], block_tokens_ids(2, 512)[16:32])


def test_block_tokens_bad_arguments():
    with pytest.raises(ValueError):
        block_tokens_ids(-1, 4, 512)
    with pytest.raises(ValueError):
        block_tokens_ids(1, 513, 512)
    with pytest.raises(ValueError, match="needs"):
        block_tokens_ids(2**100, 4, 4)  # 4 limbs + length word > 4 tokens
    assert block_tokens_ids(2**61, 4, 4).shape == (4,)  # 2 limbs + length word fit in 4


def test_row_tokens_match_per_block_and_fast():
    ids = [3, 9, 2**70, 11]
    toks = row_tokens(ids, 3 * 512 + 100, 512)
    expect = np.concatenate([block_tokens_ids(i, 512 if k < 3 else 100, 512) for k, i in enumerate(ids)])
    assert np.array_equal(toks, expect)
    t = time.perf_counter()
    for start in range(0, 20_000, 40):  # 20,000 blocks of 512 tokens
        row_tokens(list(range(start, start + 40)), 40 * 512, 512)
    assert time.perf_counter() - t < 2.0


def test_check_page_divides_block():
    check_page_divides_block(16, 512)
    check_page_divides_block(512, 512)
    with pytest.raises(ValueError, match="page size 48 tokens does not divide the trace block size 512 tokens"):
        check_page_divides_block(48, 512)


# --- replay ---------------------------------------------------------------------------------------------


def test_replay_requests_tokens_cacheable_and_arrivals(tmp_path):
    text = "\n".join(
        [
            row(1000, 1100, [1, 2, 3]),  # first timestamp not 0
            row(1000, 1024, [1, 2]),  # tie keeps file order
            row(1500, 700, [1, 4]),
            row(3000, 10, [5]),
        ]
    )
    rows, _ = read_trace(write(tmp_path, text, "x.jsonl"))
    reqs = list(TraceWorkload(rows, name="x.jsonl"))
    assert [r.req_id for r in reqs] == [0, 1, 2, 3]
    assert [r.label("row") for r in reqs] == ["1", "2", "3", "4"]
    assert [r.arrival_s for r in reqs] == [0.0, 0.0, 0.5, 2.0]
    assert [len(r.tokens) for r in reqs] == [1100, 1024, 700, 10]
    assert [r.cacheable_tokens for r in reqs] == [1024, 1024, 512, 0]  # partial tail not cacheable
    assert reqs[0].scenario == "trace:x.jsonl"
    assert reqs[0].label("output_tokens") == "1"
    # shared ids -> shared tokens, exactly to block granularity
    assert np.array_equal(reqs[0].tokens[:1024], reqs[1].tokens)
    assert np.array_equal(reqs[2].tokens[:512], reqs[0].tokens[:512])
    assert not np.array_equal(reqs[2].tokens[512:700], reqs[0].tokens[512:700])
    assert all(r.tokens.dtype == np.uint32 for r in reqs)

    fast = [r.arrival_s for r in TraceWorkload(rows, speed=4.0)]
    assert fast == [0.0, 0.0, 0.125, 0.5]
    assert all(r.arrival_s is None for r in TraceWorkload(rows, speed=None))
    assert all(r.arrival_s is None for r in TraceWorkload(rows, speed=math.inf))
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="speed"):
            TraceWorkload(rows, speed=bad)
    w = TraceWorkload(rows)
    assert w.rows_total == 4 == len(w)
    assert len(list(w)) == len(list(w)) == 4  # re-iterable


def test_replay_rejects_block_size_mismatch_and_empty(tmp_path):
    rows, _ = read_trace(write(tmp_path, row(0, 100, [1]) + "\n"))
    with pytest.raises(ValueError, match="hash_ids"):
        TraceWorkload(rows, block_tokens=16)
    with pytest.raises(ValueError, match="no rows"):
        TraceWorkload([])


def test_out_of_order_timestamps_never_go_backwards(tmp_path):
    rows, _ = read_trace(write(tmp_path, "\n".join([row(2000, 5, [1]), row(1000, 5, [2]), row(3000, 5, [3])])))
    assert [r.arrival_s for r in TraceWorkload(rows)] == [0.0, 0.0, 1.0]


def _late_trace(tmp_path) -> Path:
    return write(tmp_path, "\n".join([
        row(1000, 5, [1]),  # 1
        row(1000, 5, [2]),  # 2 a tie is in order
        "{bad",  # 3 skipped
        row(900, 5, [3]),  # 4 below the previous (valid) row's 1000 ms
        row(950, 5, [4]),  # 5 above line 4, still below line 2's 1000 ms: replayed at 1000 ms too
        row(2000, 5, [5]),  # 6
        row(1500, 5, [6]),  # 7
    ]) + "\n")


def test_a_row_below_an_earlier_timestamp_is_named_with_its_line_and_kept(tmp_path):
    rows, problems = read_trace(_late_trace(tmp_path))
    assert [r.line_no for r in rows] == [1, 2, 4, 5, 6, 7]  # late rows are replayed, not dropped
    assert [(p.line_no, p.skipped) for p in problems] == [(3, True), (4, False), (5, False), (7, False)]
    reasons = {p.line_no: p.reason for p in problems}
    assert reasons[4] == "timestamp 900 ms is below the previous row's 1000 ms"
    assert reasons[5] == "timestamp 950 ms is below line 2's 1000 ms"
    assert reasons[7] == "timestamp 1500 ms is below the previous row's 2000 ms"
    assert skipped_count(problems) == 1
    assert late_rows(rows) == [p for p in problems if not p.skipped]  # one rule, also used by workload.stats
    text = skipped_rows_text(problems)
    assert text.startswith("skipped 1 bad trace row (first: line 3: bad JSON")
    assert "3 trace rows out of order, replayed at the earlier row's time (first: line 4: timestamp 900 ms is " \
           "below the previous row's 1000 ms)" in text and "\n" not in text
    # the replay issues each late row at the latest earlier arrival
    assert [r.arrival_s for r in TraceWorkload(rows)] == [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]


def test_strict_rejects_a_row_below_an_earlier_timestamp(tmp_path):
    p = write(tmp_path, "\n".join([row(1000, 5, [1]), "", row(900, 5, [2])]) + "\n")
    with pytest.raises(TraceError) as exc:
        read_trace(p, strict=True)
    assert str(exc.value) == f"{p}:3: timestamp 900 ms is below the previous row's 1000 ms"
    only_late = write(tmp_path, row(10, 5, [1]) + "\n" + row(5, 5, [2]) + "\n", "late.jsonl")
    assert skipped_rows_text(read_trace(only_late)[1]) == (
        "1 trace row out of order, replayed at the earlier row's time (first: line 2: timestamp 5 ms is below "
        "the previous row's 10 ms)")


def test_real_trace_replay_is_fast_and_consistent():
    path = TRACES / "synthetic_trace.jsonl"
    if not path.exists():
        pytest.skip("shared traces not available")
    rows, problems = read_trace(path)
    assert len(rows) == 3993 and problems == []
    t = time.perf_counter()
    total = cacheable = 0
    for req, r in zip(TraceWorkload(rows, speed=None, name=path.name), rows):
        total += len(req.tokens)
        cacheable += req.cacheable_tokens
        assert len(req.tokens) == r.input_length
    assert time.perf_counter() - t < 5.0
    assert total == 61_194_628
    assert sum(len(r.hash_ids) for r in rows) == 121_877
    assert cacheable == sum(r.input_length // 512 * 512 for r in rows)
