"""Every count and range flag of run, watch, soak and bench says what it got when it refuses a value, in one
shape: ``FLAG must be CONDITION, got VALUE`` (a number as the user reads it, text quoted), as the workload
knobs already did (``--rate must be at least 0 req/s, got -1``). Each is refused before anything starts."""

from __future__ import annotations

import pytest

from kvtui.cli import main

WATCH = ["watch", "--headless", "--duration", "1"]
SOAK = ["soak", "--layout", "tiny"]
BENCH = ["bench", "--layout", "tiny"]


@pytest.mark.parametrize("argv, message", [
    (["run", "--requests", "-3"], "--requests must be at least 1, got -3"),
    (["run", "--requests", "0"], "--requests must be at least 1, got 0"),
    (["run", "--concurrency", "0"], "--concurrency must be at least 1, got 0"),
    (["run", "--duration", "0"], "--duration must be positive seconds, got 0"),
    (["run", "--read-streams", "0"], "--read-streams must be at least 1, got 0"),
    (["run", "--lease-ttl", "-1.5"], "--lease-ttl must be positive seconds, got -1.5"),
    (["run", "--prometheus-linger", "-1"], "--prometheus-linger must be 0 or more seconds, got -1"),
    ([*WATCH, "--concurrency", "-2"], "--concurrency must be at least 1, got -2"),
    (["watch", "--headless", "--duration", "0"], "--duration must be positive seconds, got 0"),
    ([*WATCH, "--refresh-hz", "0"], "--refresh-hz must be within (0, 15], got 0"),
    ([*WATCH, "--read-streams", "-1"], "--read-streams must be at least 1, got -1"),
    ([*WATCH, "--lease-ttl", "0"], "--lease-ttl must be positive seconds, got 0"),
    ([*WATCH, "--size", "0x40"], "--size must be positive, got '0x40'"),
    ([*SOAK, "--concurrency", "0"], "--concurrency must be at least 1, got 0"),
    ([*SOAK, "--duration", "0s"], "--duration must be positive seconds, got 0"),
    ([*SOAK, "--duration", "1h", "--warmup", "2h"], "--warmup must be shorter than --duration (3600 s), got 7200 s"),
    ([*SOAK, "--read-streams", "0"], "--read-streams must be at least 1, got 0"),
    ([*BENCH, "--iterations", "-3"], "--iterations must be at least 1, got -3"),
    ([*BENCH, "--max-streams", "0"], "--max-streams must be at least 1, got 0"),
    ([*BENCH, "--prompt-tokens", "4"], "--prompt-tokens must be at least one page (8 tokens), got 4"),
    ([*BENCH, "--prompt-tokens", "64", "--shared-tokens", "0"], "--shared-tokens must be within 1-64 "
                                                                 "(--prompt-tokens), got 0"),
    ([*BENCH, "--ui", "--rounds", "0"], "--rounds must be within 1-100, got 0"),
    ([*BENCH, "--ui", "--seconds", "0"], "--seconds must be positive, got 0"),
    ([*BENCH, "--ui", "--refresh-hz", "100"], "--refresh-hz must be within (0, 15], got 100"),
])
def test_a_bad_count_or_range_says_what_it_got(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"kvtui: error: {message}\n"


@pytest.mark.parametrize("got, shown", [(-3, "-3"), (0.0, "0"), (2.5, "2.5"), (1e20, "1e+20"), ("0x40", "'0x40'")])
def test_the_one_shape(got, shown):
    from kvtui.core.errors import KvtuiError, bad_value

    err = bad_value("--x", "at least 1", got)
    assert isinstance(err, KvtuiError) and str(err) == f"--x must be at least 1, got {shown}"
