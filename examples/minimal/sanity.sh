#!/usr/bin/env bash
# Runs the upstream csi-sanity binary against examples/minimal as its users would: a freshly built
# driver on a unix socket, real bind mounts (so it must run as root). Prints csi-sanity's summary
# and exits non-zero on any failed spec, on mounts left behind, or on volumes left behind.
#
# Usage (from anywhere in the repository): sudo examples/minimal/sanity.sh
# CSI_SANITY may name the csi-sanity binary; otherwise v5.6.0 is installed with go install.
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
	echo "sanity.sh: minimal bind-mounts volumes; run it as root" >&2
	exit 1
fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/minimal-sanity.XXXXXX)
driver_pid=""
cleanup() {
	if [[ -n $driver_pid ]]; then
		kill "$driver_pid" 2>/dev/null || true
		wait "$driver_pid" 2>/dev/null || true
	fi
	# Whatever a failed spec left mounted is taken off before the directory goes.
	grep -F " $work/" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l || true
	rm -rf "$work"
}
trap cleanup EXIT

sanity=${CSI_SANITY:-}
if [[ -z $sanity ]]; then
	GOBIN="$work/bin" go install github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@v5.6.0
	sanity="$work/bin/csi-sanity"
fi
(cd "$repo" && go build -o "$work/minimal" ./examples/minimal)

# The socket gets a directory of its own, as a deployment gives it: nothing else lives there.
sock="$work/sock/csi.sock"
"$work/minimal" -endpoint "unix://$sock" -root "$work/volumes" -log-level error >"$work/driver.log" 2>&1 &
driver_pid=$!
# Wait for the socket, bounded: the driver creates it once it listens.
for _ in $(seq 100); do
	[[ -S $sock ]] && break
	kill -0 "$driver_pid" 2>/dev/null || { cat "$work/driver.log" >&2; exit 1; }
	sleep 0.1
done
[[ -S $sock ]] || { echo "sanity.sh: the driver did not listen on $sock" >&2; exit 1; }

# --csi.endpoint: the driver's socket. --csi.testvolumeaccesstype=mount: minimal's volumes are
# directories (mount is csi-sanity's default; stated so the run says what it tests).
# --csi.mountdir/--csi.stagingdir: csi-sanity's target and staging paths, under this run's own
# directory instead of the shared /tmp/csi-mount, so concurrent runs cannot collide.
# --csi.testvolumesize: 1 MiB instead of 10 GiB, because minimal refuses (OUT_OF_RANGE) a volume
# larger than the filesystem holding its volumes, here /tmp, which may be a small tmpfs.
status=0
"$sanity" \
	--csi.endpoint="$sock" \
	--csi.testvolumeaccesstype=mount \
	--csi.testvolumesize=1048576 \
	--csi.mountdir="$work/mount" \
	--csi.stagingdir="$work/staging" \
	--ginkgo.no-color >"$work/sanity.log" 2>&1 || status=$?
grep -E '^(Ran [0-9]+ of|SUCCESS!|FAIL!)' "$work/sanity.log" || true
if [[ $status -ne 0 ]]; then
	grep -E '^\s*\[FAIL\]' "$work/sanity.log" | sort -u >&2 || true
	echo "sanity.sh: csi-sanity failed (exit $status); its log follows" >&2
	cat "$work/sanity.log" >&2
	exit 1
fi
if grep -qF " $work/" /proc/self/mountinfo; then
	echo "sanity.sh: mounts left behind:" >&2
	grep -F " $work/" /proc/self/mountinfo >&2
	exit 1
fi
if [[ -n $(ls -A "$work/volumes" 2>/dev/null) ]]; then
	echo "sanity.sh: volumes left behind: $(ls -A "$work/volumes")" >&2
	exit 1
fi
echo "sanity.sh: csi-sanity passed against examples/minimal with real mounts"
