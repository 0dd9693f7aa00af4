#!/usr/bin/env bash
# Make this machine ready for kvtui, from nothing: the libibverbs1 system library (the Mooncake store
# library links it even over TCP), libcairo2 (cairosvg loads it for kvtui export --gif), prometheus (one
# integration test), chromium (the browser test of kvtui serve), iproute2 (ip and tc for --hosts auto), a virtual
# environment in .venv, and kvtui with its dependencies.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ldconfig -p 2>/dev/null | grep -q 'libibverbs\.so\.1'; then
  echo "setup: installing libibverbs1 (Debian package)…" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libibverbs1 >/dev/null
fi
if ! ldconfig -p 2>/dev/null | grep -q 'libcairo\.so\.2'; then  # cairosvg (kvtui export --gif) loads it
  echo "setup: installing libcairo2 (Debian package)…" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libcairo2 >/dev/null
fi
if ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then  # --hosts auto: veths, bridge, tc
  echo "setup: installing iproute2 (Debian package, for emulated hosts)…" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  { $SUDO apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq iproute2 >/dev/null; } \
    || echo "setup: iproute2 not installed; --hosts auto and its tests are unavailable" >&2
fi

# The Prometheus server one integration test scrapes kvtui with (tests/integration/test_prometheus_server.py):
# ~19 MB download, ~95 MB installed, ~10 s. On a host running systemd the package also enables a prometheus
# service on :9090 (systemctl disable --now prometheus stops it). KVTUI_SETUP_PROMETHEUS=0 skips it (the test
# is then skipped); a failed install only skips the test too.
if [ "${KVTUI_SETUP_PROMETHEUS:-1}" != 0 ] && ! command -v prometheus >/dev/null 2>&1; then
  echo "setup: installing prometheus (Debian package, for one integration test)…" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  { $SUDO apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      --no-install-recommends prometheus >/dev/null; } || echo "setup: prometheus not installed; its test is skipped" >&2
fi
if ! command -v chromium >/dev/null 2>&1; then  # the browser test of kvtui serve runs headless Chromium
  echo "setup: installing chromium (Debian package, for the browser test of kvtui serve)…" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  if ! { $SUDO apt-get update -qq >/dev/null && \
         DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; then
    echo "setup: could not install chromium; the browser test of kvtui serve will be skipped" >&2
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv…" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.kvtui-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing kvtui and its dependencies into .venv…" >&2
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' >&2 || true
  .venv/bin/python -m pip install -q -e '.[test]' 2>&1 | grep -v '^WARNING: Location' >&2 || true
  .venv/bin/python -c 'import kvtui, mooncake, textual, hdrh, psutil, numpy, prometheus_client' 
  touch "$stamp"
fi
