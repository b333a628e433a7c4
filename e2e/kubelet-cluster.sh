#!/usr/bin/env bash
# kubelet-cluster.sh: a one-node Kubernetes v1.36.1 with a kubelet on this machine, running the
# csikit hostpath driver from deploy/kubernetes/hostpath unchanged, as pods, with kube-proxy
# (iptables mode) and CoreDNS (the kube-dns Service at 10.0.0.10) for Services and their names;
# the bucket-pod case adds memorys3 from deploy/kubernetes/memorys3 unchanged with the COSI
# v0.2.2 CRDs and controller. Everything runs as processes of one `go test` (TestPods in this
# directory) and is removed when it ends.
#
#   sudo e2e/kubelet-cluster.sh test [CASE]   run the pods tests (all, or the one named CASE,
#                                             e.g. block, snapshot-restore, bucket-pod)
#   sudo e2e/kubelet-cluster.sh up            bring the cluster up with the driver ready and keep
#                                             it until Ctrl-C; it prints KUBECONFIG=... for kubectl
#   sudo e2e/kubelet-cluster.sh clean         remove what a run killed before its clean-up left:
#                                             pod processes, shims, mounts, network namespaces,
#                                             loop devices, the bridge, kube-proxy's rules,
#                                             the iptables rules, the node's sshd and its keys
#   sudo e2e/kubelet-cluster.sh stop-kubelet  stop the kubelet of the cluster `up` holds (SIGTERM,
#                                             SIGKILL after 30 s), leaving its pods running
#   sudo e2e/kubelet-cluster.sh start-kubelet start it again and wait until the node is Ready
#   sudo e2e/kubelet-cluster.sh restart-kubelet  both
#   sudo e2e/kubelet-cluster.sh kubelet-state print active, inactive (stopped) or failed (crashed)
#
# The four kubelet commands ask the `up` process through its socket <run dir>/control.sock
# ($CSIKIT_E2E_CONTROL, else the one /tmp/csikit-pods-*/control.sock there is), with curl.
# With CSIKIT_E2E_SSH=1, `up` also runs an sshd on the node IP's port 22 (openssh-server) that
# takes only a key it generates, for root, and runs each session's command with the shims of
# e2e/node-ssh (systemctl, sudo) first on PATH, their systemctl calling these commands: what
# Kubernetes' [Disruptive] storage specs do to a node over SSH. It prints KUBE_SSH_KEY_PATH=...
# and KUBE_SSH_USER=root for e2e.test.
#
# What it needs (Debian 12 package names):
#   apt-get install containerd runc containernetworking-plugins iptables busybox-static etcd-server
# and curl (openssh-server too for CSIKIT_E2E_SSH), and root. It builds kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy, CoreDNS, the CSI sidecars, the
# COSI controller and sidecar and the programs of e2e/tools/node from the Go module proxy into
# /var/cache/csikit-e2e ($CSIKIT_E2E_CACHE) the first time: tens of minutes on two cores, seconds
# afterwards. No registry is needed: the images are built from those binaries and imported
# into the run's own containerd under the names the manifests use.
#
# It takes over /var/lib/kubelet and /var/lib/csikit-hostpath (emptied at the start), the
# interface csikite2e0 (10.88.0.1/16, the node IP), one iptables nat rule and kube-proxy's
# KUBE-* chains (removed with kube-proxy --cleanup at the end); it refuses to start
# when another kubelet's mounts or the interface exist.
#
# Your own csikit driver, with `up`: build its image as an OCI or Docker archive, import it with
#   ctr --address <the containerd socket printed> --namespace k8s.io images import driver.tar
# then `kubectl apply` your manifests with the printed KUBECONFIG. CSIKIT_E2E_KEEP=1 keeps the
# run's directory (logs/*.log of every process) after a successful run too.
set -euo pipefail
cd "$(dirname "$0")"

# control METHOD PATH: one request to the kubelet switch of the cluster `up` holds; prints
# the kubelet's state afterwards.
control() {
  local sock=${CSIKIT_E2E_CONTROL:-}
  if [ -z "$sock" ]; then
    local s
    for s in /tmp/csikit-pods-*/control.sock; do
      [ -S "$s" ] || continue
      [ -z "$sock" ] || { echo "several clusters' sockets ($sock, $s): set CSIKIT_E2E_CONTROL" >&2; exit 1; }
      sock=$s
    done
    [ -n "$sock" ] || { echo "no cluster is up (no /tmp/csikit-pods-*/control.sock); start one with $0 up" >&2; exit 1; }
  fi
  curl --silent --show-error --fail-with-body --max-time 600 --unix-socket "$sock" -X "$1" "http://kubelet-cluster$2"
}
case "${1:-}" in
stop-kubelet) control POST /kubelet/stop; exit ;;
start-kubelet) control POST /kubelet/start; exit ;;
restart-kubelet) control POST /kubelet/restart; exit ;;
kubelet-state) control GET /kubelet/state; exit ;;
esac

if [ "$(id -u)" != 0 ]; then
  echo "run as root: kubelet, containerd and the node plugin mount file systems" >&2
  exit 1
fi

case "${1:-test}" in
test)
  run='^TestPods$'
  if [ -n "${2:-}" ]; then run="^TestPods\$/^${2}\$"; fi
  exec go test -count=1 -v -timeout 50m -run "$run" .
  ;;
up)
  # The test holds the cluster until SIGINT or SIGTERM, then tears it down. The test binary
  # runs by itself (not under go test, which would exit on the same Ctrl-C and leave the
  # binary's clean-up writing to a closed pipe).
  bin="$(mktemp -d)/e2e.test"
  go test -c -o "$bin" .
  CSIKIT_E2E_HOLD=1 exec "$bin" -test.v -test.count=1 -test.timeout=0 -test.run '^TestPods$'
  ;;
clean)
  # Pod processes: every cgroup kubelet made (cgroupfs driver) is under kubepods.
  for procs in $(find /sys/fs/cgroup -path '*kubepods*' -name cgroup.procs 2>/dev/null); do
    while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$procs"
  done
  # The shims of the runs' own containerd (its socket lives in the run's directory).
  for pid in $(pgrep -f 'containerd-shim-runc-v2 .*-address /tmp/csikit-pods-' || true); do kill -9 "$pid" 2>/dev/null || true; done
  for pid in $(pgrep -f '^containerd --config /tmp/csikit-pods-' || true); do kill -9 "$pid" 2>/dev/null || true; done
  for pid in $(pgrep -f '^/var/cache/csikit-e2e/.*/kubelet ' || true); do kill -9 "$pid" 2>/dev/null || true; done
  # Only the pods run's kube-proxy and COSI controller (TestCOSILifecycle runs one of its own).
  for pid in $(pgrep -f '^/var/cache/csikit-e2e/.*/(kube-proxy|cosi-controller) --(config|kubeconfig)=/tmp/csikit-pods-' || true); do kill -9 "$pid" 2>/dev/null || true; done
  for dir in /var/lib/kubelet /tmp/csikit-pods-; do
    # (grep finds nothing on a clean machine: not a failure under pipefail.)
    { grep -o " ${dir}[^ ]*" /proc/self/mountinfo || true; } | sort -r | while read -r mp; do umount -l "$mp" 2>/dev/null || true; done
  done
  for ns in /run/netns/cni-*; do
    [ -e "$ns" ] || continue
    # Only namespaces no process uses any more.
    if ! ip netns pids "$(basename "$ns")" 2>/dev/null | grep -q .; then umount -l "$ns" 2>/dev/null || true; rm -f "$ns"; fi
  done
  # hostpath's images; attached inside the node plugin's container, whose copy of the state
  # directory the kernel names from its own root once the container is gone (/volumes/...).
  for dev in $(losetup -nO NAME,BACK-FILE | awk '$2 ~ "^(/var/lib/csikit-hostpath)?/volumes/[0-9a-f][0-9a-f]/vol-[0-9a-f]+[.]img" {print $1}'); do losetup -d "$dev" || true; done
  umount -l /var/lib/csikit-hostpath 2>/dev/null || true
  ip link del csikite2e0 2>/dev/null || true
  # The node's sshd (CSIKIT_E2E_SSH) and its keys.
  for pid in $(pgrep -f '^/usr/sbin/sshd -D -e -f /tmp/csikit-pods-[^/]*/ssh/sshd_config' || true); do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf /tmp/csikit-pods-*/ssh /tmp/csikit-pods-*/control.sock
  # kube-proxy's chains and the jumps to them (every kube-proxy binary of the cache does it).
  for kp in /var/cache/csikit-e2e/kubernetes-*/kube-proxy; do
    [ -x "$kp" ] && { "$kp" --cleanup >/dev/null 2>&1 || true; break; }
  done
  # The pods tests' rules: PREROUTING for the pods' own network, OUTPUT for the host network's
  # (TestCephFSPods: its driver pods are on the host's network).
  for chain in PREROUTING OUTPUT; do
    { iptables -t nat -S "$chain" | grep -- '--comment "csikit-e2e' || true; } | sed 's/^-A/-D/' | while read -r rule; do eval iptables -t nat "$rule"; done
  done
  echo "cleaned; /var/lib/kubelet, /var/lib/csikit-hostpath and /tmp/csikit-pods-* are left for their logs"
  ;;
*)
  sed -n '2,48p' "$0" >&2
  exit 2
  ;;
esac
