"""`kvtui bench --disk` without a store: finding a prefix's pages in a disk tier's files, reading them raw, taking
them out of the page cache, the figures' arithmetic, the printed table, and `kvtui compare` of two results."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from kvtui.bench.disk import (
    COLD_METHODS,
    DiskFigures,
    DiskPhase,
    PageSpan,
    RawReader,
    advise_out,
    cold_method,
    default_dram_bytes,
    disk_ratios,
    drop_page_cache,
    evict,
    expected_pages,
    find_pages,
    format_disk,
    phase_figures,
    resident_pages,
)
from kvtui.bench.targets import TARGETS
from kvtui.cli import main
from kvtui.core.errors import KvtuiError
from kvtui.core.text import WIDTH, widest
from kvtui.engine.connector import ReloadResult
from kvtui.testing.shapes import shape_errors

PAGE = 3 * 4096 + 24  # several chunks' worth of words and a tail: no page size is special
KEYS = [f"mc/ollama/m/{i:032x}" for i in range(5)]


def _bucket_files(folder, keys, page_bytes, per_file=2, header=57):
    """Files as the bucket backend writes them: a header, then objects (a name, the page), ``per_file`` each;
    other bytes between. Returns where each page was written."""
    pages = expected_pages(keys, page_bytes)
    where = {}
    for f, start in enumerate(range(0, len(keys), per_file)):
        path = folder / "store" / f"{f}.bucket"
        path.parent.mkdir(exist_ok=True)
        blob = bytearray(os.urandom(header))
        for i in range(start, min(len(keys), start + per_file)):
            blob += b"default\0" + keys[i].encode()
            where[i] = PageSpan(str(path), len(blob))
            blob += pages[i].tobytes()
        path.write_bytes(bytes(blob))
        (folder / "store" / f"{f}.meta").write_bytes(b"\x08" + bytes(40))
    return where


def test_the_prefix_pages_are_found_in_the_tier_files_by_their_contents(tmp_path):
    where = _bucket_files(tmp_path, KEYS, PAGE)
    (tmp_path / "store" / "other.bucket").write_bytes(os.urandom(2 * PAGE))  # another prompt's bucket
    assert find_pages(tmp_path, KEYS, PAGE) == [where[i] for i in range(len(KEYS))]
    assert find_pages(tmp_path, KEYS[3:1:-1], PAGE) == [where[3], where[2]]  # any order, any subset
    # a page whose head is there but whose bytes differ further on is no page of that key
    damaged = tmp_path / "store" / "0.bucket"
    blob = bytearray(damaged.read_bytes())
    blob[where[0].offset + PAGE - 1] ^= 0xFF
    damaged.write_bytes(bytes(blob))
    with pytest.raises(LookupError, match=r"1 of 5 pages are in none of the \d+ files under"):
        find_pages(tmp_path, KEYS, PAGE)


def test_a_raw_read_returns_the_same_bytes_and_opens_each_file_once(tmp_path):
    where = _bucket_files(tmp_path, KEYS, PAGE, per_file=3)
    spans = find_pages(tmp_path, KEYS, PAGE)
    reader = RawReader(spans, PAGE)
    assert [p for p, _ in reader.files] == [where[0].path, where[3].path] == reader.paths
    assert reader.read() > 0
    assert np.array_equal(reader.buf, expected_pages(KEYS, PAGE))
    short = RawReader([PageSpan(where[4].path, os.path.getsize(where[4].path) - 10)], PAGE)
    with pytest.raises(OSError, match=f"10 of {PAGE} bytes"):
        short.read()


def test_the_files_leave_the_page_cache_without_touching_the_rest_of_the_machine(tmp_path):
    path = tmp_path / "bucket"
    path.write_bytes(os.urandom(64 * 4096))
    path.read_bytes()
    files = [str(path)]
    if resident_pages(files) == 0:  # (a file system without a page cache: tmpfs keeps pages as memory)
        pytest.skip("the temporary folder's pages are not cached")
    advise_out(files)
    assert resident_pages(files) == 0
    path.read_bytes()
    assert resident_pages(files) == 64
    method, text = cold_method(files, drop_path=str(tmp_path / "no" / "drop_caches"))
    assert (method, text) == ("fadvise", COLD_METHODS["fadvise"]) and resident_pages(files) == 0
    path.read_bytes()
    evict("fadvise", files)
    assert resident_pages(files) == 0


def test_dropping_the_page_cache_where_not_permitted_says_why(tmp_path):
    assert drop_page_cache(str(tmp_path / "missing" / "drop_caches")).endswith("No such file or directory")
    target = tmp_path / "drop_caches"
    target.write_text("")
    assert drop_page_cache(str(target)) is None and target.read_text() == "1"  # the page cache only
    with pytest.raises(KvtuiError, match="could not be evicted from the page cache again"):
        evict("drop_caches", [], drop_path=str(tmp_path / "missing" / "drop_caches"))


def test_the_default_dram_holds_three_prompts_in_whole_mib():
    assert default_dram_bytes(112 << 20, 16 << 20) == 336 << 20
    assert default_dram_bytes(1000, 16 << 20) == 16 << 20
    assert default_dram_bytes((5 << 20) + 1, 1) == 16 << 20  # 15 MiB and 3 bytes: rounded up


def _reload(ms: float, disk_ms: float, pages: int = 4, disk: bool = True) -> ReloadResult:
    return ReloadResult(pages_total=pages + 1, pages_hit=pages, verified=pages, bytes_loaded=pages * 1_000_000,
                        probe_ms=1.0, read_ms=ms - 1.0, read_ms_disk=disk_ms, verify_ms=0.5,
                        disk_pages=list(range(pages)) if disk else [])


def _phase(disk_ms: float, raw_ms: float, memory_ms: float) -> DiskPhase:
    return phase_figures([_reload(disk_ms, disk_ms - 2), _reload(disk_ms * 3, disk_ms * 3 - 2)],
                         [raw_ms, raw_ms], [True, True], 2,
                         [_reload(memory_ms, 0, disk=False), _reload(memory_ms, 0, disk=False)])


def test_each_ratio_is_the_quotient_of_the_figures_beside_it():
    warm, cold = _phase(10.0, 2.0, 4.0), _phase(40.0, 20.0, 4.0)
    # 4 MB in 10 and 30 ms: per-reload rates 400 and 133.3 MB/s, median their mean; the raw reads 2,000 MB/s
    assert warm["disk_reload"]["MBps_p50"] == pytest.approx((400 + 400 / 3) / 2)
    assert warm["raw_read"]["MBps_p50"] == pytest.approx(2000) and warm["raw_read"]["files"] == 2
    assert warm["disk_read_MBps_p50"] == pytest.approx((4000 / 8 + 4000 / 28) / 2)  # the disk part alone
    q = disk_ratios(warm, cold, recompute_ms=100.0)
    assert q["disk_reload_vs_raw_read"] == pytest.approx(warm["disk_reload"]["MBps_p50"] / 2000)
    assert q["disk_vs_memory_reload"] == pytest.approx(warm["disk_reload"]["MBps_p50"] / 1000)
    assert q["cold_disk_reload_vs_raw_read"] == pytest.approx(cold["disk_reload"]["MBps_p50"] / 200)
    assert q["cold_disk_vs_memory_reload"] == pytest.approx(cold["disk_reload"]["MBps_p50"] / 1000)
    assert q["disk_reload_vs_recompute"] == pytest.approx(20.0 / 100)  # the mean reload (10, 30 ms) ÷ recompute
    assert q["cold_disk_reload_vs_recompute"] == pytest.approx(80.0 / 100)
    assert q["memory_reload_vs_recompute"] == pytest.approx(4.0 / 100)
    warm_only = disk_ratios(warm, None)  # no cold phase, no estimate: the warm ratios alone
    assert set(warm_only) == {"disk_reload_vs_raw_read", "disk_vs_memory_reload"}
    assert not phase_figures([_reload(10.0, 8.0)], [2.0], [False], 1, [_reload(4.0, 0)])["raw_read"]["verified"]


def _figures(cold: bool = True) -> DiskFigures:
    warm = _phase(10.0, 2.0, 4.0)
    c = _phase(40.0, 20.0, 4.0) if cold else None
    return {"layout": {"layers": 1}, "page_bytes": 1_000_000, "iterations": 2, "tokens_reloaded": 512,
            "pages_reloaded": 4, "bytes_reloaded": 4_000_000,
            "tiers": {"dram_bytes": 48 << 20, "disk_bytes": 192 << 20, "disk_path": "/tmp", "flood_bytes": 96 << 20},
            "worker_client": "dummy", "flood_s": 4.5, "disk_files": 2, "warm": warm, "cold": c,
            "cold_method": COLD_METHODS["fadvise"] if cold else "not measured: /proc/sys/vm/drop_caches: Permission "
                                                                "denied",
            "ratios": disk_ratios(warm, c, 100.0), "verified": True,
            "environment": {"cores": 2, "mooncake": "m 1", "mc_settings": {}}, "verify": "full",
            "ttft_estimate": {"basis": "a model on a GPU"}, "recompute_ms": 100.0}


def test_the_table_shows_both_phases_every_ratio_and_fits_the_width():
    o = _figures()
    assert shape_errors(o, DiskFigures) == []
    text = format_disk(o)
    lines = text.splitlines()
    assert widest([text]) <= WIDTH and "\nLegend\n" in text
    assert text.count("\n  disk reload     p50 ") == 2 and text.count("\n  raw file read   p50 ") == 2
    assert "the same bytes from 2 files of the tier" in text and "POSIX_FADV_DONTNEED" in text
    assert "recompute ~100.0 ms for 512 tokens; estimate: a model on a GPU" in text
    names = [line.split("  ")[1] for line in lines[lines.index(next(x for x in lines if x.startswith("Ratios"))) + 1:
                                                   lines.index("Legend") - 1]]
    assert names == ["disk reload ÷ raw file read", "cold: disk reload ÷ raw file read", "disk reload ÷ memory reload",
                     "cold: disk reload ÷ memory reload", "disk reload ÷ recompute (time)",
                     "cold: disk reload ÷ recompute", "memory reload ÷ recompute (time)"]
    for key in TARGETS.keys() & o["ratios"].keys():  # a ratio with a target says met or NOT met
        assert f"≥ {TARGETS[key]:g}" in text
    warm = format_disk(_figures(cold=False))
    assert "not measured: /proc/sys/vm/drop_caches: Permission denied" in warm and "cold:" not in warm
    assert warm.count("\n  disk reload     p50 ") == 1


def test_compare_reads_two_disk_results(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_figures()))
    other = _figures()
    other["ratios"]["disk_reload_vs_raw_read"] *= 2
    other["tiers"]["dram_bytes"] = 64 << 20
    b.write_text(json.dumps(other))
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "bench --disk" in out and "tiers.dram_bytes" in out  # what ran differently, as an input
    assert "disk reload ÷ raw file read" in out and "(+100.0 %)" in out
    assert re.search(r"\nwarm · raw read · read ms · p50 +ms ", out)  # (its unit from its group's name)


@pytest.mark.parametrize("argv, message", [
    (["bench", "--disk", "--layout", "tiny", "--max-streams", "2"], "--max-streams applies to the default bench only"),
    (["bench", "--layout", "tiny", "--disk-path", "/tmp"], "--disk-path applies to bench --disk only"),
    (["bench", "--disk", "--layout", "tiny", "--disk-path", "/no/such/folder"],
     "--disk-path /no/such/folder: not an existing folder"),
    (["bench", "--disk", "--layout", "tiny", "--shared-tokens", "4"], "--shared-tokens must be within 8-2048"),
    (["bench", "--disk", "--layout", "tiny", "--store-size", "16MiB", "--prompt-tokens", "40000"],
     "cannot hold 5000 pages"),
    (["bench", "--disk", "--ui", "--layout", "tiny"], "not allowed with argument"),
])
def test_bench_disk_refuses_bad_flags_before_starting_anything(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "kvtui bench: network" not in err
