import subprocess
import sys

from kvtui.commands import doctor


def test_doctor_explains_missing_libibverbs(monkeypatch, capsys):
    monkeypatch.setattr(doctor.ctypes.util, "find_library", lambda name: None)
    ok, line = doctor.check_libibverbs()
    assert not ok and "apt-get install -y libibverbs1" in line


def test_doctor_explains_import_failure(monkeypatch):
    fake = subprocess.CompletedProcess([], 1, "", "ImportError: libibverbs.so.1: cannot open shared object file")
    monkeypatch.setattr(doctor.subprocess, "run", lambda *a, **k: fake)
    ok, line = doctor.check_import()
    assert not ok and "libibverbs1" in line
    fake2 = subprocess.CompletedProcess([], 1, "", "ImportError: libcuda.so.1: cannot open shared object file")
    monkeypatch.setattr(doctor.subprocess, "run", lambda *a, **k: fake2)
    ok, line = doctor.check_import()
    assert not ok and "non-cuda" in line


def test_doctor_exit_code_reflects_problems(monkeypatch, capsys):
    monkeypatch.setattr(doctor.ctypes.util, "find_library", lambda name: None)
    assert doctor.run(None) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "libibverbs1" in out


def test_help_works_without_importing_mooncake():
    code = ("import sys; from kvtui.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit: pass\n"
            "assert 'mooncake' not in sys.modules and 'textual' not in sys.modules, "
            "sorted(m for m in sys.modules if 'moon' in m or 'textual' in m)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "watch" in r.stdout and "bench" in r.stdout
