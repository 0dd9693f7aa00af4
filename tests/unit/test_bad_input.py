"""Bad input to any command: one line on stderr, exit 2, nothing printed or written, before any store process
starts (argument parsing, flag checks, files and folders, addresses that do not answer on loopback)."""

from __future__ import annotations

import pytest

from kvtui.cli import main


@pytest.mark.parametrize("argv,needle", [
    (["run", "--layers", "0"], "layers"),
    (["run", "--overlap", "120"], "0-100"),
    (["run", "--trace", "/nonexistent.jsonl"], "nonexistent"),
    (["run", "--trace", "x.jsonl", "--page-tokens", "300"], "divide"),
    (["run", "--speed", "0", "--trace", "x.jsonl", "--layout", "tiny"], "speed"),
    (["run", "--master", "127.0.0.1:1", "--metadata", "http://127.0.0.1:1/metadata"], "no Mooncake master"),
    (["run", "--master", "etcd://"], "--master 'etcd://' names no etcd endpoint"),
    (["run", "--master", "etcd://127.0.0.1", "--layout", "tiny"], "'127.0.0.1' is not HOST:PORT"),
    (["run", "--master", "etcd://127.0.0.1:2379;;127.0.0.1:2380"], "'' is not HOST:PORT"),
    (["run", "--master", "etcd://127.0.0.1:99999"], "with a port within 1-65535"),
    (["run", "--master", "etcd://127.0.0.1:1"], "no etcd answers at etcd://127.0.0.1:1"),
    (["run", "--master", "etcd://127.0.0.1:1", "--metadata", "etcd://x"], "--metadata 'etcd://x'"),
    (["soak", "--master", "etcd://127.0.0.1:1,127.0.0.1:2", "--duration", "60"], "separated by ';'"),
    (["watch", "--observe", "--master", "etcd://127.0.0.1", "--metrics-url", "http://127.0.0.1:1", "--headless",
      "--duration", "3"], "is not HOST:PORT"),
    (["worker", "--join", "127.0.0.1:1", "--token", "t", "--master", "etcd://"], "names no etcd endpoint"),
    (["run", "--ha", "1"], "--ha must be within 2-5"),
    (["watch", "--ha", "2", "--master", "etcd://127.0.0.1:2379", "--headless", "--duration", "3"],
     "to attach to one, drop --ha"),
    (["soak", "--ha", "2", "--master-port", "23456", "--duration", "60"], "--master-port: with --ha"),
    (["run", "--store-size", "1MiB"], "at least 16 MiB"),
    (["run", "--store-size", "16MiB", "--layers", "64"], "larger than the store"),
    (["run", "--json", "/nonexistent-dir/x.json", "--layout", "tiny"], "does not exist"),
    (["run", "--record", "/proc/x.kvtui", "--layout", "tiny"], "not writable"),
    (["run", "--concurrency", "0"], "--concurrency"),
    (["run", "--save-trace", "same.x", "--json", "same.x"], "--json and --save-trace name the same file"),
    (["run", "--save-trace", "/dev/null"], "--save-trace: /dev/null is not a regular file"),
    (["run", "--requests", "0"], "--requests"),
    (["run", "--store-size", "abc"], "not a size"),
    (["run", "--trace", "empty.jsonl", "--layout", "tiny"], "empty"),
    (["run", "--trace", "binary.jsonl", "--layout", "tiny"], "binary"),
    (["watch", "--headless", "--screenshot", "x.svg"], "--screenshot needs --duration"),
    (["replay", "nothing.kvtui", "--speed", "0"], "--speed"),
    (["watch", "--headless"], "--headless needs --duration"),
    (["replay", "nothing.kvtui"], "nothing.kvtui"),  # the file first, even without a terminal
    (["watch", "--screenshot-dir", "/nonexistent-dir/deep/shots"], "folder /nonexistent-dir/deep does not exist"),
    (["watch", "--screenshot-dir", "x.jsonl"], "is not a folder"),
    (["run", "--record", "x.jsonl", "--layout", "tiny"], "exists already"),
    (["run", "--record", ".", "--layout", "tiny"], "--record: . is a folder; give a new file's path"),
    (["run", "--json", "x.jsonl/out.json", "--layout", "tiny"], "x.jsonl is a file, not a folder"),
    (["trace-stats", "x.jsonl", "--json", "/nonexistent-dir/x.json"], "--json: folder /nonexistent-dir does not exist"),
    (["run", "--log-dir", "x.jsonl", "--layout", "tiny"], "--log-dir"),
    (["run", "--master-port", "23456", "--metrics-port", "23456"], "both 23456"),
    (["run", "--layers", "abc"], "invalid int value"),
    (["run", "--verify", "most"], "--verify: invalid choice: 'most'"),
    (["bench", "--verify", "none"], "--verify: invalid choice: 'none'"),
    (["run", "--store-size", "1TB"], "more than this machine's memory"),
    (["bench", "--ui", "--trace", "x.jsonl"], "not allowed with"),
    (["bench", "--trace", "x.jsonl", "--trace-speedup", "2", "--layout", "tiny"],
     "--trace-speedup changes when trace rows"),
    (["keys", "--model", "", "--page-tokens", "4", "--tokens", "1,2,3,2147483648"], "outside int32"),
    (["report", "."], "is a folder"),
    (["keys", "--model", "m", "--page-tokens", "4", "--tokens", "1,x"], "not an integer token id"),
])
def test_bad_input_is_one_line_exit_2(capsys, tmp_path, argv, needle, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.jsonl").write_text('{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}\n')
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "binary.jsonl").write_bytes(bytes(range(256)) * 4)
    rc = main(argv)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert rc == 2
    assert needle in err and "Traceback" not in err
    assert captured.out == ""  # refused before any work: nothing printed
    assert len(err.splitlines()) == 1, err
    if "exists already" in needle:
        assert (tmp_path / "x.jsonl").read_text().startswith('{"timestamp"')  # nothing overwritten


def test_save_trace_to_a_bad_path_is_one_line_exit_2(tmp_path, capsys):
    rc = main(["run", "--scenario", "random", "--requests", "1", "--layout", "tiny",
               "--save-trace", str(tmp_path / "no-such-folder" / "t.jsonl")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--save-trace" in err and "Traceback" not in err
