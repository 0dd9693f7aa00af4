"""Shared fixtures. Integration tests share one real embedded Mooncake cluster per test session."""

from __future__ import annotations

import os

import pytest

# In-process CLI calls must not move the test process into a private network namespace (the session
# cluster lives in the host one). Tests of the isolation itself run kvtui in a subprocess without this.
os.environ.setdefault("KVTUI_ISOLATE", "off")


@pytest.fixture(scope="session")
def cluster():
    """A real master + metadata server + 256 MiB store node on free loopback ports."""
    from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster

    c = EmbeddedCluster(ClusterOptions(store_bytes=256 << 20))
    c.start()
    yield c
    c.stop()


@pytest.fixture
def fresh_cluster(tmp_path):
    """A real cluster of this test's own (256 MiB store node, ~0.5 s to start): for tests whose figures
    depend on what the store holds. The session cluster holds what earlier tests left, and its eviction
    (oldest unleased objects first, or a just-put object when most of the store is leased) can take the
    pages a test publishes before they are reused."""
    from kvtui.mooncake.cluster import ClusterOptions, EmbeddedCluster

    c = EmbeddedCluster(ClusterOptions(store_bytes=256 << 20, log_dir=str(tmp_path / "cluster-logs")))
    c.start()
    yield c
    c.stop()


@pytest.fixture
def attached_engine(cluster):
    """Factory: an Engine (prefill + decode workers) attached to the session cluster; stopped after the test."""
    from kvtui.engine.engine import Engine, EngineOptions

    engines = []

    def make(layout, model="test-model", **kw):
        e = Engine(EngineOptions(layout=layout, model=model, **kw), endpoints=cluster.endpoints)
        e.start()
        engines.append(e)
        return e

    yield make
    for e in engines:
        e.stop()
