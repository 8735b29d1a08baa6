#!/usr/bin/env bash
# Installs the system packages pprof-share needs, with apt-get, only where they are missing.
#   base: what `make run` needs (the venv module, the DejaVu fonts of the preview images,
#         Graphviz's dot for the call graph SVG, a C compiler for the decoder's compiled core,
#         share/pprof/scan.c);
#   test: also redis-server, Go (for `go tool pprof`), Chromium (browser tests), npm (the
#         speedscope package that the speedscope test serves locally), Node.js and perf (real
#         .cpuprofile and perf script files to convert), perl (stackcollapse-perf.pl), haproxy
#         (the balanced pair of tests/test_web_balanced_pair.py);
#   load: wrk, for bench/load.py; haproxy, for bench/fleet.py.
set -euo pipefail
want=()
python3 -c 'import venv, ensurepip' 2>/dev/null || want+=(python3-venv)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || want+=(fonts-dejavu-core)
command -v dot >/dev/null || want+=(graphviz)
command -v cc >/dev/null || want+=(gcc)
[ -e /usr/include/stdint.h ] || want+=(libc6-dev)  # the C library a shared object links with
if [ "${1:-base}" = test ]; then
  command -v redis-server >/dev/null || want+=(redis-server)
  command -v go >/dev/null || want+=(golang-go)
  command -v chromium >/dev/null || want+=(chromium)
  command -v npm >/dev/null || want+=(npm)
  command -v node >/dev/null || want+=(nodejs)
  command -v perf >/dev/null || want+=(linux-perf)
  command -v perl >/dev/null || want+=(perl)
  command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || want+=(haproxy)
fi
if [ "${1:-base}" = load ]; then
  command -v wrk >/dev/null || want+=(wrk)
  command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || want+=(haproxy)
fi
[ ${#want[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing with apt-get: ${want[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${want[@]}"
