"""--store-size reaches Mooncake to the byte: split over several segments without losing a byte, and given to
the standalone real client as a plain byte count (which it takes as is: no rounding to whole MiB)."""

from __future__ import annotations

import pytest

from kvtui.core.layout import PRESETS
from kvtui.core.units import split_bytes
from kvtui.engine.options import EngineOptions
from kvtui.mooncake.client import ClusterEndpoints
from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster


@pytest.mark.parametrize("total,parts", [(60_000_001, 3), (20_000_000, 1), (17_776_640, 4), (7, 3)])
def test_split_bytes_adds_up_to_the_total(total, parts):
    shares = split_bytes(total, parts)
    assert len(shares) == parts and sum(shares) == total and max(shares) - min(shares) <= 1


def test_each_worker_segment_adds_up_to_the_store_size():
    o = EngineOptions(layout=PRESETS["tiny"], store_bytes=50_000_003, segment_on="decode", decode_workers=2)
    assert [o.segment_share("decode", i) for i in range(2)] == [25_000_002, 25_000_001]
    assert o.segment_share("prefill") == 0


def test_the_real_client_gets_the_exact_byte_count():
    """``mooncake_client --global_segment_size=20000000`` mounts 20,000,000 bytes (measured: the master's
    ``master_total_capacity_bytes``); "19 MB" was what kvtui passed before, 19,922,944 bytes."""
    c = EmbeddedCluster(ClusterOptions(store_bytes=20_000_000, worker_client="dummy"))
    c.endpoints = ClusterEndpoints("127.0.0.1:1", "http://127.0.0.1:2/metadata", "http://127.0.0.1:3")
    argv = c._real_client_argv(20_000_000, 12345)
    assert "--global_segment_size=20000000" in argv
