"""Worker topology and routing (kvtui.core.topology, kvtui.engine.routing): names, counts and the three
route policies, without processes."""

from __future__ import annotations

import pytest

from kvtui.core.topology import MAX_WORKERS, ROUTES, check_count, role_of, worker_name, worker_names
from kvtui.engine.routing import Router, least_loaded


def test_a_lone_worker_is_named_after_its_role_and_several_are_numbered():
    assert worker_names("decode", 1) == ["decode"]
    assert worker_names("prefill", 3) == ["prefill-0", "prefill-1", "prefill-2"]
    names = ("decode-2", "prefill", "store", "decode-x")
    assert [role_of(n) for n in names] == ["decode", "prefill", "store", "decode-x"]
    with pytest.raises(ValueError):
        worker_name("decode", 3, 3)


def test_worker_counts_are_bounded_with_the_flag_named():
    check_count("--decode-workers", 1)
    check_count("--decode-workers", MAX_WORKERS)
    for bad in (0, -1, MAX_WORKERS + 1):
        with pytest.raises(ValueError, match="--decode-workers must be within"):
            check_count("--decode-workers", bad)


def test_least_loaded_takes_the_smallest_and_rotates_ties():
    assert least_loaded([3, 1, 2]) == 1
    assert [least_loaded([0, 0, 0], s) for s in range(4)] == [0, 1, 2, 0]
    assert least_loaded([1, 0, 0], 0) == 1 and least_loaded([1, 0, 0], 2) == 2
    with pytest.raises(ValueError):
        least_loaded([])


def test_round_robin_cycles_the_decode_workers_and_spreads_prefill_by_load():
    r = Router("round-robin", 3, 2)
    picks = [r.route(f"k{i}", [0, 0, 0], [0, 0]) for i in range(6)]
    assert [d for d, _p in picks] == [0, 1, 2, 0, 1, 2]
    assert [p for _d, p in picks] == [0, 1, 0, 1, 0, 1]  # ties taken in turn
    assert r.route("k", [0, 0, 0], [5, 0])[1] == 1  # else the least loaded


def test_least_loaded_follows_the_requests_under_way():
    r = Router("least-loaded", 3, 1)
    assert r.route("a", [2, 0, 1], [0])[0] == 1
    assert r.route("a", [0, 2, 1], [0])[0] == 0


def test_prefix_affinity_sends_a_prefix_group_back_to_its_worker():
    r = Router("prefix-affinity", 3, 1)
    first = {key: r.route(key, [0, 0, 0], [0])[0] for key in ("sys0", "sys1", "sys2")}
    assert sorted(first.values()) == [0, 1, 2]  # new groups spread: to the worker with the fewest groups
    assert r.route("sys3", [5, 0, 0], [0])[0] in (1, 2)  # all have one group: the least loaded
    for _ in range(3):
        for key, worker in first.items():
            assert r.route(key, [9, 9, 9], [0])[0] == worker  # whatever the load
    assert r.affinity_hits == 9
    assert r.route(None, [1, 0, 1], [0])[0] == 1  # no full page: no group, least-loaded


def test_one_decode_worker_always_gets_the_request_and_unknown_routes_are_refused():
    for route in ROUTES:
        assert Router(route, 1, 1).route("k", [7], [0]) == (0, 0)
    with pytest.raises(ValueError, match="--route must be one of"):
        Router("random", 2, 1)


def test_worker_client_auto_is_dummy_only_where_it_is_exact_and_dummy_elsewhere_is_refused():
    """``--worker-client`` (kvtui.config.cluster.resolve_worker_client): auto gives dummy clients for an
    embedded store on one store node of this host with one prefill worker (the only writer), real clients
    otherwise; asking for dummy where it cannot be exact is one line naming the flag in the way."""
    from kvtui.config.cluster import DEFAULT_WORKER_CLIENT, Topology, resolve_worker_client
    from kvtui.core.errors import KvtuiError

    def resolve(choice=DEFAULT_WORKER_CLIENT, segment_on="store", attached=False, n_prefill=1, nodes=1, hosts=False):
        return resolve_worker_client(choice, attached=attached, segment_on=segment_on,
                                     topology=Topology(prefill_workers=n_prefill, store_nodes=nodes), hosts=hosts)

    assert DEFAULT_WORKER_CLIENT == "auto" and resolve() == "dummy" and resolve("real") == "real"
    cases = {"--master": dict(attached=True), "--segment-on decode": dict(segment_on="decode"),
             "--store-nodes 2": dict(nodes=2), "--hosts auto": dict(hosts=True),
             "--prefill-workers 2": dict(n_prefill=2)}
    for flag, kw in cases.items():
        assert resolve(**kw) == "real"
        with pytest.raises(KvtuiError) as err:
            resolve("dummy", **kw)
        assert flag in str(err.value) and "\n" not in str(err.value)
