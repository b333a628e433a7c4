#!/usr/bin/env bash
# storage-suite.sh: Kubernetes v1.36.1's storage e2e suite for external drivers (e2e.test,
# focus External.Storage) against csikit hostpath, deployed as pods from deploy/kubernetes/hostpath
# unchanged on the one-node kubelet cluster of kubelet-cluster.sh (or, with SUITE_DRIVER=cephfs,
# against examples/cephfs from deploy/kubernetes/cephfs and a one-node Ceph on this machine).
# One command, end to end:
#
#   sudo e2e/storage-suite.sh [OUT]
#   sudo SUITE_DRIVER=cephfs e2e/storage-suite.sh [OUT]
#
# 1. builds e2e.test and agnhost from k8s.io/kubernetes v1.36.1 (the module e2e/tools/kube) and
#    the ginkgo CLI (same module) into /var/cache/csikit-e2e/kubernetes-v1.36.1
#    ($CSIKIT_E2E_CACHE moves it), once: about 2 min each on a warm Go module cache;
# 2. brings the cluster up (kubelet-cluster.sh up) with agnhost and an nginx stand-in next to
#    busybox, under the names e2e.test v1.36.1 asks for (test/utils/image/manifest.go), through
#    $CSIKIT_E2E_EXTRA_IMAGES;
# 3. writes the test-driver definition with `csictl kubernetes-testdriver` from what the running
#    driver advertises (OUT/driver/testdriver.json), plus the flags CSI cannot tell (below);
# 4. runs the suite (ginkgo with $STORAGE_PROCS processes, or e2e.test alone, serially, with 1),
#    report in OUT/report (junit_*.xml), log in OUT/suite.log, then prints
#    passed / failed / skipped and each failure's spec and first error line;
# 5. stops the cluster (SIGTERM to kubelet-cluster.sh up, which removes what it made).
#
# OUT defaults to /tmp/csikit-storage-suite-<time>. Environment:
#   STORAGE_SET      all (default): STORAGE_FOCUS and STORAGE_SKIP below;
#                    ci: the named specs of e2e/storage-suite-ci.txt, one or two per test suite
#                    of External.Storage for a filesystem and a block pattern (what CI runs)
#                    second: what "all" leaves out, the specs tagged [Slow], [Serial] or
#                    [Disruptive] (selected by ginkgo label; STORAGE_FOCUS narrows them), less
#                    the specs named below, in two passes: [Slow] and
#                    [Serial] ones with ginkgo and $STORAGE_PROCS processes (ginkgo runs the
#                    [Serial] ones last, alone: k8s' framework gives them ginkgo's Serial
#                    decorator), then [Disruptive] ones with e2e.test alone (nothing marks them
#                    Serial for ginkgo, and they stop the kubelet). The disruptive specs stop
#                    and start kubelet over SSH: the cluster runs its sshd (CSIKIT_E2E_SSH=1,
#                    see kubelet-cluster.sh; Debian: openssh-server) and e2e.test gets its
#                    KUBE_SSH_KEY_PATH and KUBE_SSH_USER. Reports in OUT/report/<pass>, logs in
#                    OUT/suite-<pass>.log
#   STORAGE_FOCUS    ginkgo focus               (default External.Storage)
#   STORAGE_SKIP     ginkgo skip                (default Disruptive|Serial|Feature:SELinux|Windows|\[Slow\]
#                                               and the two specs named below)
#   STORAGE_PROCS    parallel ginkgo processes  (default 4; 1 runs e2e.test alone, serially)
#   STORAGE_TIMEOUT  whole-suite timeout        (default 40m; second: 60m for each pass)
#   TESTDRIVER_FLAGS replaces the csictl flags below for another driver's definition
#   SUITE_DRIVER     hostpath (default) or cephfs: the driver deployed and tested (see the
#                    driver selection below; cephfs also needs the Ceph packages, ceph-fuse,
#                    librados-dev and libcephfs-dev)
#
# Needs what kubelet-cluster.sh needs (Debian: containerd runc containernetworking-plugins
# iptables busybox-static etcd-server), Go, and root. Exit status: the suite's.
#
# The definition is written from the two sockets of the split deployment: the node plugin's
# (kubelet's plugins directory) and the controller's (its pod's socket-dir emptyDir, reached
# through a short symlink: the path is longer than a unix socket address may be). hostpath's
# flags: --block (it serves raw block volumes), --single-node (a volume lives on one node),
# --fs-resize-from-source-not-supported (directory volumes report the host's file system, so a
# restore or clone into a larger claim cannot show the larger size), --fs-type '' (the default
# StorageClass makes directory volumes) and --fs-type xfs (an XFS image file; not ext4, whose
# online growth needs CAP_SYS_RESOURCE, which this VM withholds even from root), --fs-group
# (CSIDriver fsGroupPolicy: File), --inline-volume '' (CSIDriver lists Ephemeral),
# --modify-param iops=3000 --modify-param throughput=125 (hostpath's default mutable
# parameters: a VolumeAttributesClass for the volume-modify specs), --max-file-size 100Mi
# (volumeIO's file sizes), --stress-* (small [Slow] stress tests: 3 pods, 2 restarts,
# 2 snapshots each), and for the second set --min-size 300Mi (below).
set -euo pipefail
cd "$(dirname "$0")"
e2e_dir=$PWD
repo=$(cd .. && pwd)

if [ "$(id -u)" != 0 ]; then
  echo "run as root: the kubelet cluster mounts file systems" >&2
  exit 1
fi

out=${1:-/tmp/csikit-storage-suite-$(date -u +%Y%m%dT%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
set_name=${STORAGE_SET:-all}
focus=${STORAGE_FOCUS:-External.Storage}
# "should not mount / map unused volumes in a pod" (volumeMode, filesystem and block) runs nsenter
# into the mount namespace of the host's PID 1 from a privileged pod, which a VM that confines
# its root cannot do (here even root gets "cannot open /proc/1/ns/mnt: Permission denied"): an environment limit,
# skipped by name so that any other failure still fails the run.
skip=${STORAGE_SKIP:-'Disruptive|Serial|Feature:SELinux|Windows|\[Slow\]|should not mount / map unused volumes in a pod'}
if [ "$set_name" = ci ] && [ -z "${STORAGE_SKIP:-}" ]; then
  # The CI list names its specs, [Slow] ones included.
  skip='should not mount / map unused volumes in a pod'
fi
if [ "$set_name" = second ] && [ -z "${STORAGE_SKIP:-}" ]; then
  # subPath's "should unmount if pod is gracefully / force deleted while kubelet is down"
  # ([Disruptive]) list the node's mounts before and after through a privileged pod that runs
  # nsenter into PID 1's mount namespace (storage/utils HostExec): the limit named above.
  # provisioning's "should provision storage with any volume data source" ([Serial]) deploys
  # registry.k8s.io/sig-storage/hello-populator:v1.0.1 and volume-data-source-validator:v1.0.0,
  # which no registry serves this machine and which cannot be built here (the module proxy
  # refuses kubernetes-csi/lib-volume-populator and volume-data-source-validator, 403): its
  # pods would stay in ImagePullBackOff.
  skip='Feature:SELinux|Windows|should not mount / map unused volumes in a pod|subPath should unmount if pod is (gracefully|force) deleted while kubelet is down|provisioning should provision storage with any volume data source'
fi
[ "$set_name" != second ] || export CSIKIT_E2E_SSH=1
procs=${STORAGE_PROCS:-4}
timeout=${STORAGE_TIMEOUT:-40m}
[ "$set_name" != second ] || timeout=${STORAGE_TIMEOUT:-60m}
cache=${CSIKIT_E2E_CACHE:-/var/cache/csikit-e2e}/kubernetes-v1.36.1
# ---- driver selection: SUITE_DRIVER=hostpath (default) or cephfs ---------------------------
# Each driver sets: driver (its CSI name); cluster_up (the command that brings the kubelet
# cluster up with the driver deployed from deploy/kubernetes/<driver> and prints KUBECONFIG=...
# until SIGTERM); and default_flags (the csictl kubernetes-testdriver flags CSI cannot tell).
case "${SUITE_DRIVER:-hostpath}" in
hostpath)
  driver=hostpath.csikit.dev
  cluster_up=(./kubelet-cluster.sh up)
  default_flags=(--block --single-node --fs-resize-from-source-not-supported --fs-type '' --fs-type xfs --fs-group --inline-volume ''
    --modify-param iops=3000 --modify-param throughput=125 --max-file-size 100Mi
    --stress-pods 3 --stress-restarts 2 --stress-snapshots 2)
  # The xfs test pattern is [Slow] as a whole, so only the second set meets it: hostpath makes
  # an xfs volume no smaller than mkfs.xfs allows (300 MiB) and its snapshot as large, which a
  # restore into a claim of the suite's default 1Mi may not undercut (external-provisioner
  # refuses a claim smaller than its snapshot's restoreSize).
  [ "$set_name" != second ] || default_flags+=(--min-size 300Mi)
  ;;
cephfs)
  # TestCephFSPods (e2e/cephfs_pods_test.go) starts a one-node Ceph (internal/cephtest), the
  # kubelet cluster with deploy/kubernetes/cephfs and the Secret and ConfigMap a user creates,
  # and holds it until SIGTERM; it prints CEPH_CLUSTER=DIR (DIR/cluster.env: the monitors).
  # Needs the Ceph packages, ceph-fuse, librados-dev and libcephfs-dev besides the cluster's.
  driver=cephfs.csikit.dev
  cephfs_bin="$(mktemp -d)/e2e.test"
  (cd "$e2e_dir" && go test -c -o "$cephfs_bin" .)
  cluster_up=(env CSIKIT_E2E_HOLD=1 "$cephfs_bin" -test.v -test.count=1 -test.timeout=0 -test.run '^TestCephFSPods$')
  # Every call that acts on Ceph carries the Secret of deploy/kubernetes/cephfs/classes.yaml;
  # the suite makes classes of its own, so they name it too. --capability capacity=false:
  # cephfs answers GetCapacity, but the deployment does not track capacity (CSIDriver
  # storageCapacity: false, no --enable-capacity), as GetCapacity carries no secrets.
  # --multi-node: CephFS volumes are ReadWriteMany. --modify-param: maxFiles, cephfs's one
  # mutable parameter (a file quota), for the VolumeAttributesClass specs. --stress-*: the
  # [Slow] stress specs (volumes, snapshots, and, the class binding at once, volume modify)
  # at hostpath's small scale. --max-file-size with --min-size: volumeIO writes files of 1 MiB
  # and 100 MiB through ceph-fuse into a claim whose quota holds them (a quota costs nothing).
  default_flags=(--fs-type '' --fs-group --multi-node --capability capacity=false --modify-param maxFiles=100000
    --stress-pods 3 --stress-restarts 2 --stress-snapshots 2 --max-file-size 100Mi --min-size 256Mi)
  for kind in provisioner node-stage controller-expand; do
    default_flags+=(--storage-class-param "csi.storage.k8s.io/$kind-secret-name=csikit-cephfs"
      --storage-class-param "csi.storage.k8s.io/$kind-secret-namespace=csikit-cephfs")
  done
  default_flags+=(--snapshot-class-param csi.storage.k8s.io/snapshotter-secret-name=csikit-cephfs
    --snapshot-class-param csi.storage.k8s.io/snapshotter-secret-namespace=csikit-cephfs)
  ;;
*)
  echo "SUITE_DRIVER=${SUITE_DRIVER}: want hostpath or cephfs" >&2
  exit 2
  ;;
esac
# ---- end of driver selection --------------------------------------------------------------
# The names e2e.test v1.36.1 uses (k8s.io/kubernetes/test/utils/image/manifest.go). The storage
# specs run agnhost (subPath's mounttest) and, in "should allow exec of files on the volume",
# nginx only for its /bin/sh; multiVolume's concurrent-access specs run glibc-dns-testing only
# for a shell and dd, sha256sum and the like: busybox stands in for both, the glibc one with
# GNU dd (its block-volume specs write with oflag=nocache, which busybox's dd lacks) and dash as
# /bin/sh (busybox's shell runs its own dd whatever PATH says).
agnhost_image=registry.k8s.io/e2e-test-images/agnhost:2.63.0
nginx_image=registry.k8s.io/e2e-test-images/nginx:1.15-4
glibc_image=registry.k8s.io/e2e-test-images/glibc-dns-testing:2.0.0
busybox=$(command -v busybox) || { echo "busybox (Debian: apt-get install busybox-static)" >&2; exit 1; }
gnu_dd=/usr/bin/dd dash=/usr/bin/dash
[ -x "$gnu_dd" ] || { echo "GNU dd at $gnu_dd (Debian: coreutils)" >&2; exit 1; }
[ -x "$dash" ] || { echo "dash at $dash (Debian: dash)" >&2; exit 1; }
mkdir -p "$cache"

stamp() { echo "== $(date -u +%H:%M:%S) $*"; }

# build NAME CMD...: runs CMD in e2e/tools/kube unless $cache/NAME exists, and says how long it took.
build() {
  local name=$1
  shift
  if [ -x "$cache/$name" ]; then
    stamp "$name: cached ($cache/$name)"
    return
  fi
  local start=$SECONDS
  (cd "$e2e_dir/tools/kube" && GOWORK=off GOFLAGS=-mod=readonly "$@")
  stamp "$name: built in $((SECONDS - start)) s"
}

ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld="$ld -X $p.gitVersion=v1.36.1 -X $p.gitMajor=1 -X $p.gitMinor=36 -X $p.gitTreeState=clean"
done
build e2e.test go test -c -ldflags "$ld" -o "$cache/e2e.test" k8s.io/kubernetes/test/e2e
build agnhost env CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$cache/agnhost" k8s.io/kubernetes/test/images/agnhost
if [ "$procs" -gt 1 ]; then
  build ginkgo go build -o "$cache/ginkgo" github.com/onsi/ginkgo/v2/ginkgo
fi

stamp "cluster: starting (log $out/cluster.log)"
CSIKIT_E2E_EXTRA_IMAGES="$agnhost_image=$cache/agnhost $nginx_image=$busybox $glibc_image=$busybox,$gnu_dd,/bin/sh=$dash" CSIKIT_E2E_KEEP="${CSIKIT_E2E_KEEP:-}" CSIKIT_E2E_SSH="${CSIKIT_E2E_SSH:-}" \
  "${cluster_up[@]}" >"$out/cluster.log" 2>&1 &
cluster=$!
stop_cluster() {
  if kill -0 "$cluster" 2>/dev/null; then
    stamp "cluster: stopping"
    kill -TERM "$cluster" 2>/dev/null || true
    wait "$cluster" || true
  fi
}
trap stop_cluster EXIT

start=$SECONDS
until grep -q '^KUBECONFIG=' "$out/cluster.log"; do
  if ! kill -0 "$cluster" 2>/dev/null; then
    echo "the cluster did not come up; the end of $out/cluster.log:" >&2
    tail -n 30 "$out/cluster.log" >&2
    exit 1
  fi
  if [ $((SECONDS - start)) -gt 1800 ]; then
    echo "the cluster was not up after 30 min; see $out/cluster.log" >&2
    exit 1
  fi
  sleep 2
done
export KUBECONFIG
KUBECONFIG=$(sed -n 's/^KUBECONFIG=//p' "$out/cluster.log" | head -n 1)
stamp "cluster: up in $((SECONDS - start)) s (KUBECONFIG=$KUBECONFIG)"
if grep -q '^KUBE_SSH_KEY_PATH=' "$out/cluster.log"; then
  # The node's sshd, for the specs that stop and start kubelet (e2e/framework/ssh reads these).
  export KUBE_SSH_KEY_PATH KUBE_SSH_USER
  KUBE_SSH_KEY_PATH=$(sed -n 's/^KUBE_SSH_KEY_PATH=//p' "$out/cluster.log" | head -n 1)
  KUBE_SSH_USER=$(sed -n 's/^KUBE_SSH_USER=//p' "$out/cluster.log" | head -n 1)
  stamp "cluster: sshd for $KUBE_SSH_USER with the key $KUBE_SSH_KEY_PATH"
fi

socket=/var/lib/kubelet/plugins/$driver/csi.sock
if [ -n "${TESTDRIVER_FLAGS:-}" ]; then
  read -r -a flags <<<"$TESTDRIVER_FLAGS"
else
  flags=("${default_flags[@]}")
fi
# The controller pod's socket: the pod directory that runs csi-provisioner has it in its
# socket-dir emptyDir (deploy/kubernetes/<driver>/controller.yaml).
controller_socket=""
for _ in $(seq 150); do
  for sock in /var/lib/kubelet/pods/*/volumes/kubernetes.io~empty-dir/socket-dir/csi.sock; do
    pod=${sock%%/volumes/*}
    if [ -S "$sock" ] && [ -d "$pod/containers/csi-provisioner" ]; then controller_socket=$sock; fi
  done
  [ -n "$controller_socket" ] && break
  sleep 2
done
if [ -z "$controller_socket" ]; then
  echo "the controller pod's socket did not appear under /var/lib/kubelet/pods in 5 minutes" >&2
  exit 1
fi
link=$(mktemp -d /tmp/csikit-ctl.XXXXXX)
ln -s "$(dirname "$controller_socket")" "$link/c"
if ! (cd "$repo" && go run ./cmd/csictl --endpoint "unix://$socket" kubernetes-testdriver "$out/driver" \
  --controller-endpoint "unix://$link/c/csi.sock" "${flags[@]}") >"$out/testdriver.txt" 2>&1; then
  cat "$out/testdriver.txt" >&2
  rm -rf "$link"
  exit 1
fi
rm -rf "$link"
cat "$out/testdriver.txt"

args=(-kubeconfig "$KUBECONFIG" -storage.testdriver="$out/driver/testdriver.json" -provider local)
# run_pass NAME PROCS SKIP LABELS FOCUS...: one run of the suite, the specs matching any FOCUS,
# not SKIP, and (unless empty) the ginkgo label filter LABELS, report in OUT/report
# (OUT/report/NAME with a NAME), log in OUT/suite.log (suite-NAME.log); its status is added to rc.
rc=0
run_pass() {
  local name=$1 n=$2 skip=$3 labels=$4 report=$out/report log=$out/suite.log f status=0
  shift 4
  if [ -n "$name" ]; then report=$out/report/$name log=$out/suite-$name.log; fi
  local ginkgo_focus=() e2e_focus=()
  for f in "$@"; do
    ginkgo_focus+=(--focus="$f")
    e2e_focus+=(-ginkgo.focus="$f")
  done
  stamp "suite: set $set_name${name:+, pass $name} ($# focus expression(s)${labels:+, labels $labels}), skip '$skip', $n process(es), timeout $timeout (log $log)"
  local start=$SECONDS
  if [ "$n" -gt 1 ]; then
    "$cache/ginkgo" --procs="$n" "${ginkgo_focus[@]}" --skip="$skip" --label-filter="$labels" --timeout="$timeout" -v --no-color \
      "$cache/e2e.test" -- "${args[@]}" -report-dir "$report" >"$log" 2>&1 || status=$?
  else
    "$cache/e2e.test" "${args[@]}" -report-dir "$report" "${e2e_focus[@]}" -ginkgo.skip="$skip" -ginkgo.label-filter="$labels" \
      -ginkgo.timeout="$timeout" -ginkgo.v -ginkgo.no-color >"$log" 2>&1 || status=$?
  fi
  stamp "suite: ${name:+pass $name }ended in $((SECONDS - start)) s, status $status"
  [ "$rc" != 0 ] || rc=$status
}
# The specs: one focus (and the skip) for "all", or every line of storage-suite-ci.txt as a
# focus of its own (a spec runs when it matches any) for "ci", or the two passes of "second".
case "$set_name" in
all) run_pass "" "$procs" "$skip" "" "$focus" ;;
ci)
  focuses=()
  while IFS= read -r line; do
    case "$line" in '' | '#'*) continue ;; esac
    focuses+=("External Storage \\[Driver: [^]]*\\] $line")
  done <"$e2e_dir/storage-suite-ci.txt"
  run_pass "" "$procs" "$skip" "" "${focuses[@]}"
  ;;
second)
  # Kubernetes' framework makes each [Slow], [Serial] and [Disruptive] tag a ginkgo label too.
  run_pass slow-serial "$procs" "$skip" '(Slow || Serial) && !Disruptive' "$focus"
  run_pass disruptive 1 "$skip" 'Disruptive' "$focus"
  ;;
*)
  echo "STORAGE_SET=$set_name: want all, ci or second" >&2
  exit 2
  ;;
esac

# The counts, each failure with its first line and each run-time skip reason, from the junit
# report e2e.test writes (ginkgo merges the processes' results into junit_01.xml), of every pass.
# Specs the focus and skip expressions leave out are listed there as skipped with no reason:
# they are counted apart ("not selected", once per pass).
python3 - "$out/report" <<'EOF' | tee "$out/summary.txt"
import collections, glob, sys, xml.etree.ElementTree as ET
passed, failed, skipped, unselected = 0, [], collections.Counter(), 0
for f in sorted(glob.glob(sys.argv[1] + "/**/junit*.xml", recursive=True)):
    for tc in ET.parse(f).getroot().iter("testcase"):
        name = tc.get("name", "")
        fail = tc.find("failure")
        if fail is None:
            fail = tc.find("error")
        skip = tc.find("skipped")
        if not name.startswith("[It] "):
            # Suite-level nodes ([SynchronizedBeforeSuite], [ReportAfterSuite] ...): only their failures.
            if fail is not None:
                failed.append((name, (fail.text or "").strip().splitlines()[0] if (fail.text or "").strip() else ""))
            continue
        name = name.removeprefix("[It] ")
        if fail is not None:
            text = [l for l in (fail.get("message") or fail.text or "").splitlines() if l.strip()]
            failed.append((name, text[0].strip() if text else ""))
        elif skip is not None:
            msg = skip.get("message", "")
            if msg == "skipped":
                unselected += 1
            else:
                skipped[msg.removeprefix("skipped - ")] += 1
        else:
            passed += 1
print(f"passed {passed}, failed {len(failed)}, skipped {sum(skipped.values())} (not selected: {unselected})")
for name, line in failed:
    print(f"FAIL {name}\n     {line}")
for reason, n in skipped.most_common():
    print(f"SKIP {n:3d} {reason}")
EOF
exit "$rc"
