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
    # a value with a minus and a unit is the flag's value, refused by its own check (argparse took -1M for a flag
    # and said "expected one argument")
    (["trace-stats", "synthetic", "--capacity", "-1M"], "--capacity must be at least 1 token, got -1M"),
    (["sweep", "--trace", "synthetic", "--capacity", "2M,-1M"], "--capacity must be at least 1 token, got -1M"),
    (["run", "--store-size", "-1M"], "--store-size must be at least 16 MiB (Mooncake's smallest segment), got -1M"),
    ([*WATCH, "--store-size", "-1GiB"], "--store-size must be at least 16 MiB (Mooncake's smallest segment), "
                                        "got -1GiB"),
    ([*BENCH, "--store-size", "-1M"], "--store-size must be at least 16 MiB (Mooncake's smallest segment), got -1M"),
    # a fraction flag takes a percent sign; its range check is the flag's own
    (["run", "--overlap", "150%"], "--overlap must be within 0-100 %, got 150"),
    (["run", "--overlap", "-5%"], "--overlap must be within 0-100 %, got -5"),
    (["run", "--mfu", "140%"], "--mfu must be within (0, 1] (a fraction of the GPU's peak, 0.4 = 40 %), got 1.4"),
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


@pytest.mark.parametrize("argv, dest, value", [
    (["run", "--overlap", "50%"], "overlap", 50), (["watch", "--overlap", "50%"], "overlap", 50),
    (["serve", "--overlap", "50%"], "overlap", 50), (["soak", "--overlap", "50%"], "overlap", 50),
    (["run", "--overlap", "61"], "overlap", 61), (["run", "--mfu", "40%"], "mfu", 0.4),
    (["watch", "--mfu", "40%"], "mfu", 0.4), (["bench", "--mfu", "40%"], "mfu", 0.4),
    (["run", "--mfu", "0.4"], "mfu", 0.4),
])
def test_a_fraction_flag_takes_a_percent_sign(argv, dest, value):
    """`--overlap 50%` was refused as an invalid float; a percentage is the flag's value in its own unit."""
    from kvtui.cli import build_parser

    assert getattr(build_parser().parse_args(argv), dest) == value


def test_a_bad_percentage_is_one_usage_line(capsys):
    assert main(["run", "--overlap", "half%"]) == 2
    assert capsys.readouterr().err == ("kvtui: error: run: argument --overlap: must be a number or a percentage such "
                                       "as 50%, got 'half%' (see kvtui run --help)\n")
