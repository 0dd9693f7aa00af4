#!/usr/bin/env bash
# Make this machine ready for kvtui, from nothing, installing only what the job needs.
#
#   scripts/setup.sh          what `kvtui watch` and every command need: the libibverbs1 system library (the
#                             Mooncake store library links it even over TCP), iproute2 (ip and tc, for
#                             --hosts auto), a virtual environment in .venv and kvtui with its dependencies
#   scripts/setup.sh --test   that, plus what the test suite needs: libcairo2 (cairosvg loads it for kvtui
#                             export --gif), prometheus (one integration test scrapes kvtui with it), chromium
#                             (the browser test of kvtui serve), etcd-server (the HA tests run real etcd and
#                             masters: kvtui --ha N), and the test extra (pytest, ruff, mypy, import-linter,
#                             MkDocs for the docs build)
#
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
TEST=0
[ "${1:-}" = "--test" ] && TEST=1

SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
apt_install() {  # apt_install PACKAGE WHY: one Debian package, quietly
  echo "setup: installing $1 (Debian package, $2)…" >&2
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$1" >/dev/null
}

if ! ldconfig -p 2>/dev/null | grep -q 'libibverbs\.so\.1'; then
  apt_install libibverbs1 "the Mooncake store library links it"
fi
if ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then  # --hosts auto: veths, bridge, tc
  apt_install iproute2 "for emulated hosts" || echo "setup: iproute2 not installed; --hosts auto is unavailable" >&2
fi

if [ "$TEST" = 1 ]; then
  if ! ldconfig -p 2>/dev/null | grep -q 'libcairo\.so\.2'; then  # cairosvg (kvtui export --gif) loads it
    apt_install libcairo2 "for kvtui export --gif and its tests"
  fi
  # The Prometheus server one integration test scrapes kvtui with (tests/integration/test_prometheus_server.py):
  # ~19 MB download, ~95 MB installed. On a host running systemd the package also enables a prometheus service
  # on :9090 (systemctl disable --now prometheus stops it). KVTUI_SETUP_PROMETHEUS=0 skips it (the test is then
  # skipped); a failed install only skips the test too.
  if [ "${KVTUI_SETUP_PROMETHEUS:-1}" != 0 ] && ! command -v prometheus >/dev/null 2>&1; then
    apt_install prometheus "for one integration test" || echo "setup: prometheus not installed; its test is skipped" >&2
  fi
  # etcd for the HA tests (tests/integration/test_ha.py) and kvtui --ha N: ~24 MB installed. On a host running
  # systemd the package also enables an etcd service on :2379 (systemctl disable --now etcd stops it; kvtui starts
  # its own).
  # A failed install only skips those tests.
  if ! command -v etcd >/dev/null 2>&1; then
    apt_install etcd-server "for the HA tests and kvtui --ha" \
      || echo "setup: etcd-server not installed; the HA tests are skipped and --ha is unavailable" >&2
  fi
  if ! command -v chromium >/dev/null 2>&1; then  # the browser test of kvtui serve runs headless Chromium
    apt_install chromium "for the browser test of kvtui serve" \
      || echo "setup: could not install chromium; the browser test of kvtui serve will be skipped" >&2
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv…" >&2
  "$PY" -m venv .venv
fi
pip_install() {  # pip_install SPEC STAMP: kvtui (with extras) into .venv, again when pyproject.toml changed
  if [ ! -f "$2" ] || [ pyproject.toml -nt "$2" ]; then
    echo "setup: installing $1 and its dependencies into .venv…" >&2
    .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' >&2 || true
    .venv/bin/python -m pip install -q -e "$1" 2>&1 | grep -v '^WARNING: Location' >&2 || true
    .venv/bin/python -c 'import kvtui, mooncake, textual, hdrh, psutil, numpy, prometheus_client'
    touch "$2"
  fi
}
if [ "$TEST" = 1 ]; then
  pip_install '.[test]' .venv/.kvtui-test-installed  # (kvtui's own dependencies included)
  .venv/bin/python -c 'import pytest, mkdocs, material'
else
  pip_install . .venv/.kvtui-installed
fi
