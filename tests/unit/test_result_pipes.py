"""The parent's results pipes: one poll set, pipes taking turns, a deadline, a pipe whose worker is gone."""

from __future__ import annotations

import multiprocessing as mp
import time

import pytest

from kvtui.engine.result_pipes import PipeGone, ResultPipes


def test_ready_pipes_take_turns_and_a_deadline_ends_the_wait():
    ends = [mp.Pipe(duplex=False) for _ in range(2)]
    pipes = ResultPipes([r for r, _w in ends])
    for i in range(3):
        for j, (_r, w) in enumerate(ends):
            w.send((j, i))
    got = [pipes.recv(time.monotonic() + 1) for _ in range(6)]
    assert sorted(got) == [(j, i) for j in range(2) for i in range(3)]
    assert [g[0] for g in got[:4]] in ([0, 1, 0, 1], [1, 0, 1, 0])  # both ready: neither pipe starves
    t0 = time.monotonic()
    assert pipes.recv(t0 + 0.05) is None and time.monotonic() - t0 >= 0.05
    assert pipes.recv(time.monotonic() - 1) is None  # a deadline passed: one look, no wait


def test_a_pipe_whose_writer_is_gone_names_its_index():
    ends = [mp.Pipe(duplex=False) for _ in range(2)]
    pipes = ResultPipes([r for r, _w in ends])
    ends[1][1].close()
    with pytest.raises(PipeGone) as gone:
        pipes.recv(time.monotonic() + 1)
    assert gone.value.index == 1


def test_serves_only_the_list_it_was_made_of_with_no_pipe_added():
    conns = [mp.Pipe(duplex=False)[0]]
    pipes = ResultPipes(conns)
    assert pipes.serves(conns) and not pipes.serves(list(conns))
    conns.append(mp.Pipe(duplex=False)[0])  # (a remote prefill worker joined)
    assert not pipes.serves(conns)
