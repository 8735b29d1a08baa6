#!/usr/bin/env bash
# Installs the system packages pprof-share needs, with apt-get, only where they are missing.
#   base: what `make run` needs (the venv module, Graphviz's dot for the call graph SVG);
#   test: also redis-server, Go (for `go tool pprof`) and Chromium (browser tests).
set -euo pipefail
want=()
python3 -c 'import venv, ensurepip' 2>/dev/null || want+=(python3-venv)
command -v dot >/dev/null || want+=(graphviz)
if [ "${1:-base}" = test ]; then
  command -v redis-server >/dev/null || want+=(redis-server)
  command -v go >/dev/null || want+=(golang-go)
  command -v chromium >/dev/null || want+=(chromium)
fi
[ ${#want[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing with apt-get: ${want[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${want[@]}"
