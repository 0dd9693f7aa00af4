"""Emulated hosts' pure parts: ``--link`` parsing, the addresses the panels show, the Processes panel's host."""

from __future__ import annotations

import pytest

from kvtui.mooncake.client import ClusterEndpoints
from kvtui.mooncake.hosts import BRIDGE_ADDRESS, Host, LinkSpec, parse_link
from kvtui.mooncake.ops import MooncakeCluster


@pytest.mark.parametrize("text, rate, delay", [
    ("1gbit", 10**9, 0.0), ("25gbit", 25 * 10**9, 0.0), ("500mbit", 500 * 10**6, 0.0), ("10Gbit", 10**10, 0.0),
    ("1gbit,200us", 10**9, 200e-6), ("100mbit,1ms", 10**8, 1e-3), ("2.5gbit", 25 * 10**8, 0.0),
])
def test_link_rates_and_delays_are_parsed_in_tc_units(text, rate, delay):
    link = parse_link(text)
    assert link.rate_bps == rate and link.delay_s == pytest.approx(delay)
    assert link.rate_bytes_per_s == rate / 8
    assert parse_link(link.text()) == link  # the normalised form reads back


@pytest.mark.parametrize("text, words", [
    ("fast", "rate must be bits per second"), ("1gbyte", "rate must be bits per second"),
    ("1GBps", "tc's Bps means bytes"), ("125mbps", "tc's Bps means bytes"), ("1G", "rate must be bits per second"),
    ("100kbit", "between 1mbit and 400gbit"),
    ("1tbit", "between 1mbit and 400gbit"), ("1gbit,2", "delay must look like"), ("1gbit,0us", "above 0"),
    ("1gbit,5s", "at most 1s"), ("", "rate must be bits per second"),
])
def test_bad_links_are_refused_in_one_line(text, words):
    with pytest.raises(ValueError, match=words) as e:
        parse_link(text)
    assert "\n" not in str(e.value)


def test_text_names_the_largest_whole_unit():
    assert LinkSpec(10**9).text() == "1gbit" and LinkSpec(1500 * 10**6).text() == "1500mbit"
    assert LinkSpec(10**9, 2e-4).text() == "1gbit,200us"


def test_host_addresses_put_metadata_with_the_master_and_kvtui_on_the_bridge():
    ep = ClusterEndpoints("10.77.0.10:1", "http://10.77.0.10:2/metadata", None,
                          hosts=(Host("master", "10.77.0.10", "/proc/1/ns/net", "kvh-master"),
                                 Host("store", "10.77.0.11", "/proc/2/ns/net", "kvh-store")))
    assert MooncakeCluster.attach(ep).host_addresses() == {"kvtui": BRIDGE_ADDRESS, "master": "10.77.0.10",
                                                           "store": "10.77.0.11", "metadata": "10.77.0.10"}
    assert ep.as_dict()["hosts"]["store"] == {"name": "store", "address": "10.77.0.11", "netns": "/proc/2/ns/net",
                                              "veth": "kvh-store"}
    plain = ClusterEndpoints("127.0.0.1:1", "http://127.0.0.1:2/metadata", None)
    assert MooncakeCluster.attach(plain).host_addresses() == {} and "hosts" not in plain.as_dict()

