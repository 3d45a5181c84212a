#!/usr/bin/env bash
# Installs what the test suite needs, from Debian's packages, when missing:
# redis-server (the tests start their own servers on free loopback ports),
# chromium (web's browser test drives it headless; it looks for /usr/bin/chromium),
# nodejs, npm and python3 (e2e runs the example receivers in examples/receivers and
# the clients' suites in clients/, npm ci installing tsc), python3-venv (e2e
# installs the Python client into a virtual environment), curl, jq and
# openssl (e2e runs the documentation's examples), and redis-sentinel
# (internal/server's TestSentinelFailover fails a master over under three
# Sentinels; without it the tests run redis-server --sentinel, and in CI
# (CI=true) a missing one fails them rather than skipping).
set -euo pipefail

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
[ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1 || need+=(chromium fonts-liberation)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "test-deps: installing ${need[*]} with apt-get" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The redis packages start a system redis on :6379 and a sentinel on :26379; the tests use neither.
$SUDO systemctl stop redis-server >/dev/null 2>&1 || $SUDO service redis-server stop >/dev/null 2>&1 || true
$SUDO systemctl stop redis-sentinel >/dev/null 2>&1 || $SUDO service redis-sentinel stop >/dev/null 2>&1 || true
