#!/bin/sh
# Runs units of Redis's own Tcl test suite against xstreamd (external-server mode), to find
# behaviour that differs from Redis. Not part of CI: it fetches Debian's redis source package
# (Redis 7.0) with apt-get source, so it needs deb-src, tcl and dpkg-dev (installed here when
# missing, as root). Nothing of Redis's is copied into this repository: the suite is unpacked
# under $WORK and patched there.
#
#   sh tools/redis_tcl_suite.sh [unit ...]      (default: the stream units and their neighbours)
#
# WORK (where the suite is unpacked), PORT, BASEPORT (the suite's own ports) and PYTHON (the
# interpreter that runs xstreamd) can be set in the environment; APT_SETUP=no leaves apt alone
# (no package installed, no deb-src entry added: the suite is then fetched only if it can be). Exit status 3: the suite could not be fetched or run here.
# tests/compat/test_redis_tcl_suite.py runs the stream units this way and checks the result.
#
# Two harness patches: `FUNCTION FLUSH` is tried, not required (once needed, when functions
# were not implemented), and a test that fails on an unknown command (lists, sets: not
# implemented) is
# reported as [skip] instead of aborting the run. Expected differences (Redis 7.0 vs the 8.4
# this server follows, unsupported types and options) are listed in
# tools/redis_tcl_suite_known.md.
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/redis-tcl-suite}
PORT=${PORT:-7779}
BASEPORT=${BASEPORT:-21111}  # the suite's own ports start just below this
PYTHON=${PYTHON:-python3}
APT_SETUP=${APT_SETUP:-yes}
UNITS=${*:-"type/stream type/stream-cgroups multi keyspace protocol info-command
  latency-monitor slowlog dump expire other introspection introspection-2 scan querybuf"}

need() { command -v "$1" >/dev/null 2>&1; }
unavailable() { echo "redis_tcl_suite: $1" >&2; exit 3; }
if ! need tclsh || ! need dpkg-source; then
    [ "$APT_SETUP" != no ] || unavailable "needs tcl and dpkg-dev"
    apt-get install -y tcl dpkg-dev >/dev/null 2>&1 || unavailable "needs tcl and dpkg-dev"
fi
mkdir -p "$WORK"
cd "$WORK"
if ! ls -d redis-*/tests >/dev/null 2>&1; then
    if [ "$APT_SETUP" != no ] \
            && ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list \
                /etc/apt/sources.list.d; then
        codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-bookworm}")
        printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\n%s\n%s\n' \
            "$codename" 'Components: main' \
            'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' \
            > /etc/apt/sources.list.d/xstreamd-src.sources 2>/dev/null \
            || unavailable "no deb-src entry, and none can be added"
        apt-get update >/dev/null 2>&1 || true
    fi
    apt-get source --download-only redis >/dev/null 2>&1 || unavailable "apt-get source failed"
    tar xzf redis_*.orig.tar.gz
    SUITE=$(ls -d redis-*/ | head -1)
    # The two harness patches (see above).
    sed -i 's/^    r function flush$/    catch {r function flush}/' "$SUITE/tests/support/server.tcl"
    python3 - "$SUITE/tests/support/test.tcl" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
anchor = "    if {[catch {set retval [uplevel 1 $code]} error]} {\n"
skip = anchor + (
    "        if {[string match \"*unknown command*\" $error]} {\n"
    "            catch {r discard}\n"
    "            catch {r client kill type normal skipme yes}\n"
    "            send_data_packet $::test_server_fd skip \"$name (unknown command)\"\n"
    "            return\n"
    "        }\n")
assert anchor in text
open(path, "w").write(text.replace(anchor, skip, 1))
PY
fi
SUITE=$(ls -d "$WORK"/redis-*/ | head -1)
# unit/scripting runs its tests twice, with FUNCTION then with EVAL (a suite unpacked by an
# older version of this script kept the EVAL pass only: both again).
sed -i '1s/^foreach is_eval {1} {$/foreach is_eval {0 1} {/' "$SUITE/tests/unit/scripting.tcl"

DATA=$(mktemp -d)
cd "$REPO"
"$PYTHON" -m server --port "$PORT" --dir "$DATA" --appendonly no --save "" \
    --enable-debug-command yes > "$DATA/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$DATA"' EXIT
tries=0
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ "$tries" -lt 40 ] || { cat "$DATA/server.log" >&2; exit 1; }
    sleep 0.25
done

cd "$SUITE"
for unit in $UNITS; do
    out="$WORK/$(echo "$unit" | tr / _).txt"
    ./runtest --host 127.0.0.1 --port "$PORT" --baseport "$BASEPORT" --single "unit/$unit" \
        --durable --timeout 60 \
        2>&1 | sed 's/\x1b\[[0-9;]*m//g' > "$out" || true
    counts=$(grep -aoE '^\[(ok|err|exception|skip)\]' "$out" | tr -d '[]' | sort | uniq -c \
        | awk '{printf " %s %s", $1, $2}')
    echo "unit/$unit:${counts:- (no tests ran, see $out)}"
    grep -aE '^\[(err|exception)\]' "$out" | sed 's/^/    /' || true
    # A failed test may leave settings behind for the next unit.
    redis-cli -p "$PORT" config set maxmemory 0 >/dev/null
    redis-cli -p "$PORT" debug set-active-expire 1 >/dev/null
    redis-cli -p "$PORT" config set min-replicas-to-write 0 >/dev/null
    redis-cli -p "$PORT" replicaof no one >/dev/null
done
echo "logs: $WORK/*.txt"
