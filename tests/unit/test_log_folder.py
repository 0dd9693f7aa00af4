"""Where native logs go and when they stay (kvtui/runtime/logs.py): a temporary folder lasts as long as the run
unless something failed, and then its one line names it; a folder the user gave is never touched."""

from __future__ import annotations

import tempfile

from kvtui.runtime.logs import KEPT_WHY, LogFolder


def test_a_temporary_folder_is_removed_after_a_run_without_trouble(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    logs = LogFolder()
    assert logs.temporary and logs.path.parent == tmp_path and logs.path.name.startswith("kvtui-logs-")
    (logs.path / "master.log").write_text("W something\n")
    logs.close(False, "the embedded cluster and workers")
    assert not logs.path.exists() and capsys.readouterr().err == ""


def test_a_temporary_folder_is_kept_and_named_when_something_failed(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    logs = LogFolder()
    (logs.path / "store.log").write_text("E the segment went away\n")
    logs.close(True, "the embedded cluster and workers")
    logs.close(False, "the embedded cluster and workers")  # (only the first close counts)
    assert (logs.path / "store.log").is_file()
    assert capsys.readouterr().err == (f"kvtui: logs of the embedded cluster and workers kept in {logs.path} "
                                       f"({KEPT_WHY})\n")


def test_a_folder_of_empty_files_is_removed_whatever_happened(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    logs = LogFolder()
    (logs.path / "metadata.log").touch()
    logs.close(True, "the workers")
    assert not logs.path.exists() and capsys.readouterr().err == ""


def test_the_users_log_dir_is_made_and_left_as_it_is(tmp_path, capsys):
    logs = LogFolder(str(tmp_path / "mine" / "logs"))
    assert not logs.temporary and logs.path.is_dir()
    logs.close(False, "the workers")
    logs.close(True, "the workers")
    assert logs.path.is_dir() and capsys.readouterr().err == ""


def test_a_kept_folder_says_why_it_was_kept(tmp_path, monkeypatch, capsys):
    """A folder kept for another reason than a failure (a process restarted on purpose) says that reason."""
    from kvtui.runtime.logs import KEPT_RESTARTED

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    logs = LogFolder()
    (logs.path / "master-0.log").write_text("I leader killed, restarted as a standby\n")
    logs.close(True, "the embedded cluster and workers", KEPT_RESTARTED)
    assert capsys.readouterr().err == (f"kvtui: logs of the embedded cluster and workers kept in {logs.path} "
                                       f"({KEPT_RESTARTED})\n")
    assert "something failed" not in KEPT_RESTARTED
