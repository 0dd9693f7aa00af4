"""The Mooncake backend: everything that starts, watches, signals or reads Mooncake and etcd.

From the bottom up (an import-linter contract in ``pyproject.toml``):

- :mod:`~kvtui.mooncake.net` (TCP probes, ports, ``HOST:PORT`` and ``etcd://`` addresses, HTTP GETs, the
  ``/metrics`` text) and :mod:`~kvtui.mooncake.errors` (typed errors), importing nothing of kvtui;
- :mod:`~kvtui.mooncake.hosts` (emulated hosts: namespaces, veths, ``tc``), :mod:`~kvtui.mooncake.netns`
  (loopback-only isolation) and :mod:`~kvtui.mooncake.tiers` (the disk tier's configuration and checks);
- :mod:`~kvtui.mooncake.client`: the guarded store client and the endpoints a client joins with, the one module
  the request pipeline (:mod:`kvtui.engine`) uses;
- :mod:`~kvtui.mooncake.ha` (HA masters and kvtui's etcd), :mod:`~kvtui.mooncake.store_node` and
  :mod:`~kvtui.mooncake.filler` (processes of their own that hold a segment, or fill the store);
- :mod:`~kvtui.mooncake.cluster` (starting an embedded cluster, attaching to one),
  :mod:`~kvtui.mooncake.samplers` (the Store panel's scrape) and :mod:`~kvtui.mooncake.failover` (measuring a
  failover);
- :mod:`~kvtui.mooncake.ops`: :class:`~kvtui.mooncake.ops.MooncakeCluster`, the
  :class:`~kvtui.core.cluster_api.ClusterOps` through which a live session, a soak and a bench act on the cluster.
"""
