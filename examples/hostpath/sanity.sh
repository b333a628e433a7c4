#!/usr/bin/env bash
# Runs the upstream csi-sanity v5.6.0 binary against a freshly started hostpath driver, with the
# command line docs/proving-a-driver.md gives ("The upstream csi-sanity binary"), and fails on any failure other than
# the documented csi-sanity Topology artefact.
#
#   examples/hostpath/sanity.sh mount|block
#
# Needs root (the node specs mount and attach loop devices for real) and csi-sanity, installed with
#   go install github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@v5.6.0
# The verdict comes from csi-sanity's JUnit report, read by internal/junitcheck, not from its exit
# status (1 for the documented failure too) or its console summary.
set -euo pipefail
cd "$(dirname "$0")/../.."

access=${1:-}
case "$access" in
  mount|block) ;;
  *) echo "usage: $0 mount|block" >&2; exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
  echo "$0: csi-sanity's node specs mount and attach loop devices: run as root" >&2
  exit 1
fi
sanity=$(command -v csi-sanity || true)
if [ -z "$sanity" ] && [ -x "$(go env GOPATH)/bin/csi-sanity" ]; then
  sanity="$(go env GOPATH)/bin/csi-sanity"
fi
if [ -z "$sanity" ]; then
  echo "$0: csi-sanity not found; install it with: go install github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@v5.6.0" >&2
  exit 1
fi

# Everything of this run lives in one fresh directory: socket, state, csi-sanity's mount and
# staging directories. mktemp's short path keeps the socket under the 107-byte limit.
dir=$(mktemp -d)
pid=""
cleanup() {
  status=$?
  # Best effort from here on: a grep that finds nothing must not change the exit status.
  set +e +o pipefail
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  # A failed spec can leave mounts and loop devices behind; release them before removing the
  # directory, and never remove it through a mount that is still there.
  grep -F " $dir" /proc/self/mountinfo | awk '{print $5}' | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  losetup -a 2>/dev/null | grep -F "$dir" | cut -d: -f1 | while read -r l; do
    losetup -d "$l" 2>/dev/null || true
  done
  if grep -qF " $dir" /proc/self/mountinfo; then
    echo "$0: mounts remain under $dir; left in place" >&2
  else
    rm -rf "$dir"
  fi
  exit "$status"
}
trap cleanup EXIT

# Built first, so that the process started below is the driver itself (go run would put itself
# between this script and the driver's exit status).
go build -o "$dir/hostpath" ./examples/hostpath
endpoint="unix://$dir/sock/csi.sock"
"$dir/hostpath" --endpoint "$endpoint" --state-dir "$dir/state" --max-volumes-per-node 16 \
  --log-level warn 2>"$dir/hostpath.log" &
pid=$!

# csi-sanity waits up to a minute for the socket itself; a driver that exits at start-up is
# reported at once instead.
for _ in $(seq 600); do
  [ -S "$dir/sock/csi.sock" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "$0: hostpath exited at start-up:" >&2
    cat "$dir/hostpath.log" >&2
    exit 1
  fi
  sleep 0.1
done

echo "== csi-sanity v5.6.0, access type $access, against $endpoint"
rc=0
"$sanity" \
  --csi.endpoint "$endpoint" \
  --csi.mountdir "$dir/target" --csi.stagingdir "$dir/staging" \
  --csi.testvolumemutableparameters examples/hostpath/testdata/mutable-parameters.yaml \
  --csi.testnodevolumeattachlimit \
  --csi.testvolumeaccesstype "$access" \
  --csi.junitfile "$dir/junit.xml" >"$dir/sanity.log" 2>&1 || rc=$?
# ginkgo's console summary, for the log; the verdict is junitcheck's.
sed 's/\x1b\[[0-9;]*m//g' "$dir/sanity.log" | grep -E '^(Ran [0-9]+ of|SUCCESS!|FAIL!)' || true

# A graceful stop must work too: SIGTERM, exit 0, socket removed.
kill -TERM "$pid"
hp=0
wait "$pid" || hp=$?
pid=""
verdict=0
go run ./internal/junitcheck -report "$dir/junit.xml" -exit "$rc" -min-passed 101 || verdict=$?
if [ "$verdict" != 0 ]; then
  echo "---- csi-sanity output" >&2
  sed 's/\x1b\[[0-9;]*m//g' "$dir/sanity.log" >&2
  echo "---- hostpath log" >&2
  cat "$dir/hostpath.log" >&2
  exit 1
fi
if [ "$hp" != 0 ] || [ -e "$dir/sock/csi.sock" ]; then
  echo "$0: hostpath did not stop cleanly on SIGTERM (exit $hp)" >&2
  cat "$dir/hostpath.log" >&2
  exit 1
fi
echo "== hostpath ($access) conforms: csi-sanity v5.6.0 shows only the documented failure"
