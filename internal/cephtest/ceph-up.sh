#!/usr/bin/env bash
# ceph-up.sh: a one-node Ceph for tests, as plain processes (no systemd), all on 127.0.0.1.
#
#   ceph-up.sh [--owner PID] [DIR]
#
# In a fresh DIR (missing or empty; a new directory under ${TMPDIR:-/tmp} if DIR is left out) it
# creates and starts: 1 mon (mon.a), 1 mgr (mgr.x, with its always-on `volumes` module), 1 OSD
# (osd.0, bluestore on a sparse file), 1 MDS (mds.a) serving the CephFS filesystem "cephfs", and
# RGW (client.rgw.a, beast frontend), with cephx on and every pool of size 1. It creates an RGW
# user with the caps `users=*;buckets=*` for the admin ops API, waits until the cluster is
# healthy (HEALTH_OK with the OSD up, every PG active+clean, the MDS active; the volumes module
# answering `ceph fs subvolumegroup ls`; RGW answering HTTP), and writes what a client needs
# into DIR. About 10 s on two cores.
# In a DIR that holds a cluster already (DIR/cluster.json exists) it starts again every daemon
# that is not running, on the same data, ports and keys, and waits the same way: that is how
# the cluster restarts after ceph-down.sh (stop + start = restart; about 5 s).
#
# It installs nothing: it needs the Debian packages ceph-mon ceph-mgr ceph-osd ceph-mds radosgw
# ceph-common (and python3, python3-rados, util-linux, coreutils, which they bring). It exits 3
# when one is missing, 1 on any other failure; a failed start stops every daemon of the cluster
# and keeps DIR (its log/ holds every daemon's log) for a look.
#
# Ports: each cluster claims a block of 40 consecutive ports on 127.0.0.1 below the kernel's
# ephemeral range, checked free when claimed and recorded under /tmp/cephtest-ports-$UID/ until
# `ceph-down.sh --purge` releases them, so clusters started side by side (two test binaries)
# never share a port; a restart keeps its block. Block: base = mon msgr2, base+1 = mon msgr1,
# base+2 = RGW HTTP, base+3..base+39 = the range the mgr, OSD and MDS bind in.
#
# --owner PID: the cluster belongs to process PID. A watcher (its pid in DIR/run/watcher.pid)
# runs `ceph-down.sh --purge DIR` when PID exits, so a test binary that dies (a test timeout,
# SIGKILL) leaves no daemon, mount or directory behind, during a bring-up too: the watcher
# starts before the first daemon, and kills a bring-up still running before it stops the rest.
#
# Environment: CEPHTEST_TIMEOUT (seconds, default 180) bounds the wait for health;
# CEPHTEST_OSD_SIZE (bytes, default 10 GiB) is the size of the sparse file the OSD lives on.
#
# Files in DIR (keys and the files holding them are mode 0600, DIR is 0700):
#   cluster.json  everything below, for programs (format "version": 1, documented in
#                 internal/cephtest/cephtest.go: type Info)
#   cluster.env   the same as shell assignments, for `. DIR/cluster.env`:
#                 CEPH_CONF CEPH_FSID CEPH_MON_HOST CEPH_ADMIN_NAME CEPH_ADMIN_KEY CEPH_KEYRING
#                 CEPHFS_NAME CEPHFS_METADATA_POOL CEPHFS_DATA_POOL RGW_ENDPOINT RGW_ADMIN_USER
#                 RGW_ACCESS_KEY RGW_SECRET_KEY CEPHTEST_PORT_BASE
#                 (CEPH_CONF in the environment is enough for `ceph`, `rados`, `ceph-fuse`).
#   ceph.conf     mon_host, fsid, and keyring = DIR/keyring/$name.keyring for every entity
#   keyring/      client.admin.keyring and one keyring per daemon
#   bin/          copies of ceph-up.sh and ceph-down.sh: DIR/bin/ceph-down.sh DIR always works
#   run/ log/     pid files and admin sockets; daemon logs
#   mon/ mgr/ osd/ mds/ rgw/   daemon data (osd/0/block is the sparse bluestore file)
# stdout: the one line DIR, once the cluster is healthy. Progress goes to stderr.
set -euo pipefail

die() {
  echo "ceph-up.sh: $*" >&2
  exit 1
}

owner=""
while [ $# -gt 0 ]; do
  case $1 in
  --owner)
    [ $# -ge 2 ] || die "--owner needs a pid"
    owner=$2
    shift 2
    ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  --)
    shift
    break
    ;;
  -*) die "unknown option $1 (see --help)" ;;
  *) break ;;
  esac
done
[ $# -le 1 ] || die "usage: ceph-up.sh [--owner PID] [DIR]"
if [ -n "$owner" ] && ! [ -d "/proc/$owner" ]; then
  die "--owner $owner: no such process"
fi

missing=""
for tool in ceph:ceph-common ceph-authtool:ceph-common monmaptool:ceph-common rados:ceph-common \
  radosgw-admin:ceph-common ceph-mon:ceph-mon ceph-mgr:ceph-mgr ceph-osd:ceph-osd ceph-mds:ceph-mds \
  radosgw:radosgw python3:python3 flock:util-linux setsid:util-linux timeout:coreutils; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || missing="$missing ${tool#*:}"
done
# The rados binding of the ceph CLI's own interpreter (mon_commands below).
if [ -z "$missing" ] && ! /usr/bin/python3 -c 'import rados' 2>/dev/null; then
  missing=" python3-rados"
fi
if [ -n "$missing" ]; then
  echo "ceph-up.sh: missing Debian packages:$missing" >&2
  exit 3
fi

timeout_s=${CEPHTEST_TIMEOUT:-180}
osd_size=${CEPHTEST_OSD_SIZE:-10737418240}
case $timeout_s$osd_size in *[!0-9]*) die "CEPHTEST_TIMEOUT and CEPHTEST_OSD_SIZE must be whole numbers" ;; esac

if [ $# -eq 1 ]; then
  mkdir -p -- "$1"
  dir=$(cd -- "$1" && pwd -P)
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/cephtest.XXXXXX")
fi
# Every path lands in ceph.conf and in shell assignments: keep it to characters both take as is.
case $dir in
*[!A-Za-z0-9._/+-]*) die "$dir: the directory's path may hold only letters, digits and . _ / + -" ;;
esac
chmod 0700 "$dir"
# Keys, keyrings and what holds them are the owner's only; so is everything else in DIR.
umask 077

conf=$dir/ceph.conf
script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
daemons="mon.a mgr.x osd.0 mds.a client.rgw.a"
start_time=$SECONDS

# log: progress on stderr, and in log/cephtest.log, which keeps every start and stop.
log() {
  local line
  line="ceph-up.sh: [$((SECONDS - start_time))s] $*"
  echo "$line" >&2
  if [ -d "$dir/log" ]; then echo "$(date +%FT%T) $line" >>"$dir/log/cephtest.log"; fi
}

# cephcli runs the ceph CLI against this cluster as client.admin, never for long.
cephcli() { timeout 30 ceph -c "$conf" --connect-timeout 10 "$@"; }

# pid_of NAME prints the pid of the daemon NAME if it runs, from its pid file, checking that the
# process is the one started with this cluster's ceph.conf (a pid may have been reused).
pid_of() {
  local pidfile=$dir/run/$1.pid pid
  [ -s "$pidfile" ] || return 1
  read -r pid <"$pidfile" || return 1
  case $pid in '' | *[!0-9]*) return 1 ;; esac
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$conf" || return 1
  echo "$pid"
}

# start_daemon NAME: starts the daemon in the foreground (-f) of a session of its own, in the
# background of this script, and returns once it has written its pid file; its stdio goes to
# log/NAME.out, never to the caller's pipes.
# Why -f: a Ceph daemon "respawns" by exec'ing itself (the MDS does when it finds itself
# blocklisted or removed from the map, which a SIGTERM can provoke during its own shutdown:
# its purge queue's last write fails with ESHUTDOWN). Daemonized, the respawned image forks a
# new daemon and the pid the pid file named exits: ceph-down.sh then took that exit for the
# daemon's and left the new one running. In the foreground a respawn keeps the pid, so the pid
# file names the daemon for its whole life.
# The old pid file stays until the daemon rewrites it: Ceph locks it, so a second daemon of the
# same name refuses to start while an earlier one (one ceph-down.sh failed to stop) holds it.
start_daemon() {
  local name=$1 cmd job status until
  if pid_of "$name" >/dev/null; then
    return 0
  fi
  case $name in
  mon.*) cmd=(ceph-mon -i "${name#mon.}") ;;
  mgr.*) cmd=(ceph-mgr -i "${name#mgr.}") ;;
  osd.*) cmd=(ceph-osd -i "${name#osd.}") ;;
  mds.*) cmd=(ceph-mds -i "${name#mds.}") ;;
  client.rgw.*) cmd=(radosgw -n "$name") ;;
  *) die "unknown daemon $name" ;;
  esac
  cmd+=(-f -c "$conf")
  case $name in
  client.rgw.*)
    # radosgw writes no pid file in the foreground: the shell that becomes it does.
    # shellcheck disable=SC2016 # expanded by that shell
    cmd=(bash -c 'echo $$ >"$1" && exec "${@:2}"' cephtest-rgw "$dir/run/$name.pid" "${cmd[@]}")
    ;;
  esac
  setsid "${cmd[@]}" </dev/null >>"$dir/log/$name.out" 2>&1 &
  job=$!
  # The daemon writes its pid file first thing, before it reads its data or binds a port.
  until=$((SECONDS + 30))
  until pid_of "$name" >/dev/null; do
    if ! kill -0 "$job" 2>/dev/null; then
      # setsid execs the daemon in place (so this is the daemon's exit), unless it had to fork.
      status=0
      wait "$job" || status=$?
      [ "$status" = 0 ] || fail "$name did not start (exit $status)"
    fi
    [ $SECONDS -lt $until ] || fail "$name wrote no pid file within 30 s"
    sleep 0.05
  done
}

# fail prints the reason and the end of every daemon's log, stops what this run started and
# exits; the directory stays for a look. The last line names the reason again: a caller that
# keeps only the end of stderr (internal/cephtest keeps 16 KiB, and the logs' tails alone can
# be longer) still says why.
fail() {
  local f
  # Cleanup must run to its end: a second signal (Ctrl-C reaches the whole process group, so
  # the daemons' stopper gets it too) would otherwise abandon the daemons this run started.
  trap '' TERM INT
  echo "ceph-up.sh: $*" >&2
  for f in "$dir"/log/*.log "$dir"/log/*.out; do
    [ -s "$f" ] || continue
    echo "---- tail of $f" >&2
    tail -n 15 "$f" >&2
  done
  "$script_dir/ceph-down.sh" "$dir" >&2 || true
  echo "ceph-up.sh: failed ($*); logs and data kept in $dir" >&2
  exit 1
}

# Cancelled (a test binary's context, Ctrl-C): stop what this run started.
trap 'fail "interrupted"' TERM INT

# wait_until DESCRIPTION COMMAND...: runs COMMAND every half second until it succeeds, failing
# at the deadline or as soon as a daemon has died.
deadline=$((SECONDS + timeout_s))
wait_until() {
  local what=$1 name
  shift
  # In a subshell: a function's redirections stay in force while a trap runs inside it, so a
  # cancel landing mid-check made fail print its reason, and the daemons' logs, to /dev/null.
  until ("$@") >/dev/null 2>&1; do
    for name in $daemons; do
      if [ -f "$dir/run/$name.pid.expected" ] && ! pid_of "$name" >/dev/null; then
        fail "$name exited while waiting for $what"
      fi
    done
    if [ $SECONDS -ge $deadline ]; then
      cephcli health detail >&2 || true
      fail "timed out after ${timeout_s}s waiting for $what"
    fi
    sleep 0.5
  done
}

wait_healthy() {
  wait_until "HEALTH_OK" cluster_ready
  log "HEALTH_OK, the OSD up, every PG active+clean, the MDS active"
  wait_until "the mgr volumes module" volumes_answer
  log "the volumes module answers"
  wait_until "RGW on 127.0.0.1:$rgw_port" rgw_answers
  log "RGW answers"
}

# cluster_ready: HEALTH_OK alone is not enough: right after a start the mgr has no PG states
# to report yet, and the health says OK before the OSD is even up.
cluster_ready() {
  cephcli status --format json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)
pgs = s["pgmap"]
clean = sum(x["count"] for x in pgs.get("pgs_by_state", []) if x["state_name"] == "active+clean")
active_mds = [r for r in s["fsmap"].get("by_rank", []) if r.get("status") == "up:active"]
sys.exit(0 if s["health"]["status"] == "HEALTH_OK" and s["osdmap"]["num_up_osds"] == 1
         and s["osdmap"]["num_in_osds"] == 1 and pgs["num_pgs"] > 0 and clean == pgs["num_pgs"]
         and active_mds and s["mgrmap"]["available"] else 1)'
}
volumes_answer() { cephcli fs subvolumegroup ls cephfs; }
rgw_answers() {
  python3 - "$rgw_port" <<'EOF'
import sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
EOF
}

# claim_ports picks a free block of 40 ports and records the claim (see the header).
claim_ports() {
  local claims
  claims=/tmp/cephtest-ports-$(id -u)
  mkdir -p "$claims"
  (
    flock 9
    python3 - "$claims" "$dir" <<'EOF'
import os, random, socket, sys
claims, me = sys.argv[1], sys.argv[2]
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
bases = list(range(10000, low - 40, 40))
random.shuffle(bases)

def claimed(base):
    try:
        owner = open(os.path.join(claims, str(base))).read().strip()
    except FileNotFoundError:
        return False
    # A claim whose cluster directory is gone is stale (its owner died without --purge).
    return owner != me and os.path.exists(os.path.join(owner, ".cephtest"))

def free(base):
    for port in range(base, base + 40):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        finally:
            s.close()
    return True

for base in bases:
    if not claimed(base) and free(base):
        with open(os.path.join(claims, str(base)), "w") as f:
            f.write(me + "\n")
        print(base)
        sys.exit(0)
sys.exit("no free block of 40 ports below %d" % low)
EOF
  ) 9>"$claims/lock"
}

write_conf() {
  local base=$1
  cat >"$conf" <<EOF
# Written by ceph-up.sh for a one-node test cluster; every path is inside $dir.
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$base,v1:127.0.0.1:$((base + 1))]
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_port_min = $((base + 3))
ms_bind_port_max = $((base + 39))
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
keyring = $dir/keyring/\$name.keyring
run_dir = $dir/run
crash_dir = $dir/crash
admin_socket = $dir/run/\$name.asok
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
# The test machine's disk may be fuller than Ceph's defaults (30 %, 5 %) like.
mon_data_avail_warn = 1
mon_data_avail_crit = 0
# Faster than a production cluster, for a cluster of one of each: the mon commits changes
# (new pools, maps) every 0.1 s instead of every second, and the mgr learns and reports PG
# states every second instead of every five.
paxos_propose_interval = 0.1
mgr_stats_period = 1
mon_mgr_digest_period = 1

[client]
log_file = $dir/log/\$name.log

[mon]
mon_data = $dir/mon/\$id
log_file = $dir/log/\$name.log
# The cluster and audit logs (ceph -w), by default in /var/log/ceph for every cluster at once.
mon_cluster_log_file = default=$dir/log/ceph.\$channel.log cluster=$dir/log/ceph.log
pid_file = $dir/run/\$name.pid

[mgr]
mgr_data = $dir/mgr/\$id
log_file = $dir/log/\$name.log
pid_file = $dir/run/\$name.pid

[osd]
osd_data = $dir/osd/\$id
osd_objectstore = bluestore
bluestore_block_create = true
bluestore_block_size = $osd_size
osd_memory_target = 1073741824
log_file = $dir/log/\$name.log
pid_file = $dir/run/\$name.pid

[mds]
mds_data = $dir/mds/\$id
# A restarted MDS waits this long for the clients of its previous life (default 45 s).
mds_reconnect_timeout = 5
# On SIGTERM the MDS waits up to one beacon interval for the mon (default 4 s), then for its
# metrics pinger to wake (default every 5 s): a stop took up to 10 s.
mds_beacon_interval = 1
mds_ping_interval = 1
log_file = $dir/log/\$name.log
pid_file = $dir/run/\$name.pid

[client.rgw.a]
rgw_data = $dir/rgw/a
rgw_frontends = beast endpoint=127.0.0.1:$((base + 2))
log_file = $dir/log/\$name.log
pid_file = $dir/run/\$name.pid
EOF
}

# write_info writes cluster.json and cluster.env (both 0600: they hold keys). The keys travel
# in the environment, which only the owner can read, not in a command line, which anyone can.
write_info() {
  (
    umask 077
    ADMIN_KEY=$admin_key RGW_SECRET=$rgw_secret \
      python3 - "$dir" "$fsid" "$port_base" "$rgw_user" "$rgw_access" <<'EOF'
import json, os, shlex, sys
d, fsid, base, rgw_user, access = sys.argv[1:]
admin_key, secret = os.environ["ADMIN_KEY"], os.environ["RGW_SECRET"]
base = int(base)
info = {
    "version": 1,
    "dir": d,
    "conf": os.path.join(d, "ceph.conf"),
    "fsid": fsid,
    "mon_host": "[v2:127.0.0.1:%d,v1:127.0.0.1:%d]" % (base, base + 1),
    "port_base": base,
    "admin": {"name": "client.admin", "key": admin_key,
              "keyring": os.path.join(d, "keyring", "client.admin.keyring")},
    "cephfs": {"name": "cephfs", "metadata_pool": "cephfs.cephfs.meta",
               "data_pool": "cephfs.cephfs.data"},
    "rgw": {"endpoint": "http://127.0.0.1:%d" % (base + 2), "admin_user": rgw_user,
            "access_key": access, "secret_key": secret},
    "daemons": ["mon.a", "mgr.x", "osd.0", "mds.a", "client.rgw.a"],
}
for name in ("cluster.json", "cluster.env"):
    tmp = os.path.join(d, name + ".tmp")
    with open(tmp, "w") as f:
        if name == "cluster.json":
            json.dump(info, f, indent=2)
            f.write("\n")
        else:
            env = {
                "CEPH_CONF": info["conf"], "CEPH_FSID": fsid, "CEPH_MON_HOST": info["mon_host"],
                "CEPH_ADMIN_NAME": "client.admin", "CEPH_ADMIN_KEY": admin_key,
                "CEPH_KEYRING": info["admin"]["keyring"], "CEPHFS_NAME": "cephfs",
                "CEPHFS_METADATA_POOL": info["cephfs"]["metadata_pool"],
                "CEPHFS_DATA_POOL": info["cephfs"]["data_pool"],
                "RGW_ENDPOINT": info["rgw"]["endpoint"], "RGW_ADMIN_USER": rgw_user,
                "RGW_ACCESS_KEY": access, "RGW_SECRET_KEY": secret,
                "CEPHTEST_PORT_BASE": str(base),
            }
            f.write("# Written by ceph-up.sh; source it: . %s\n" % os.path.join(d, name))
            for k, v in env.items():
                f.write("%s=%s\n" % (k, shlex.quote(v)))
    os.chmod(tmp, 0o600)
    os.rename(tmp, os.path.join(d, name))
EOF
  )
}

# start_watcher: see --owner in the header. The watcher compares the owner's start time too, so
# a reused pid does not keep the cluster alive. It starts before the first daemon: an owner that
# dies during a bring-up (a test binary's timeout) must not leave the daemons started so far.
# Then it stops this bring-up first (DIR/run/ceph-up.pid), so that no daemon starts after the
# stop.
start_watcher() {
  [ -n "$owner" ] || return 0
  local stat
  stat=$(cat "/proc/$$/stat")
  stat=${stat##*) }
  echo "$$ $(echo "$stat" | awk '{print $20}')" >"$dir/run/ceph-up.pid"
  trap 'rm -f "$dir/run/ceph-up.pid"' EXIT
  if [ -s "$dir/run/watcher.pid" ] && kill -0 "$(cat "$dir/run/watcher.pid")" 2>/dev/null; then
    return 0
  fi
  local started
  stat=$(cat "/proc/$owner/stat") || die "--owner $owner: no such process"
  stat=${stat##*) }
  started=$(echo "$stat" | awk '{print $20}')
  # shellcheck disable=SC2016 # expanded by the watcher's shell
  setsid bash -c '
    echo $$ >"$3/run/watcher.pid"
    alive() {
      local s
      s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
      s=${s##*) }
      set -- "$2" $s
      [ "$2" != Z ] && [ "${21}" = "$1" ]
    }
    while alive "$1" "$2"; do sleep 1; done
    echo "owner $1 exited: stopping the cluster and removing $3"
    if read -r up up_started <"$3/run/ceph-up.pid" 2>/dev/null && alive "$up" "$up_started"; then
      echo "stopping ceph-up.sh (pid $up) first: it is still bringing the cluster up"
      kill -KILL "$up"
      while alive "$up" "$up_started"; do sleep 0.1; done
    fi
    exec "$3/bin/ceph-down.sh" --purge "$3"
  ' cephtest-watcher "$owner" "$started" "$dir" </dev/null >>"$dir/log/watcher.log" 2>&1 &
}

if [ -f "$dir/cluster.json" ]; then
  # A restart: the same ports, keys and data.
  if ! [ -f "$dir/.cephtest" ] || ! [ -f "$conf" ]; then
    die "$dir: not a directory made by ceph-up.sh"
  fi
  port_base=$(sed -n 's/^CEPHTEST_PORT_BASE=//p' "$dir/cluster.env")
  rgw_port=$((port_base + 2))
  log "starting the daemons that are not running in $dir"
  start_watcher
  for name in $daemons; do
    touch "$dir/run/$name.pid.expected"
    start_daemon "$name"
  done
  wait_healthy
  echo "$dir"
  exit 0
fi

if [ -n "$(ls -A "$dir")" ]; then
  die "$dir is neither empty nor a cluster made by ceph-up.sh (no cluster.json)"
fi
touch "$dir/.cephtest"
mkdir -p "$dir"/{bin,keyring,run,log,crash,mon/a,mgr/x,osd/0,mds/a,rgw/a}
cp "$script_dir/ceph-up.sh" "$script_dir/ceph-down.sh" "$dir/bin/"
chmod 0755 "$dir/bin/ceph-up.sh" "$dir/bin/ceph-down.sh"
chmod 0700 "$dir/keyring"
start_watcher

port_base=$(claim_ports) || die "could not claim ports"
rgw_port=$((port_base + 2))
fsid=$(cat /proc/sys/kernel/random/uuid)
write_conf "$port_base"
log "cluster $fsid in $dir, ports $port_base-$((port_base + 39))"

# Every key is made here and handed to the mon's mkfs, which enters them all with their caps:
# no round trip to the mon per daemon.
new_key() {
  local name=$1
  shift
  ceph-authtool --create-keyring "$dir/keyring/$name.keyring" --gen-key -n "$name" "$@" >/dev/null
}
new_key mon. --cap mon 'allow *'
mv "$dir/keyring/mon..keyring" "$dir/keyring/mon.a.keyring"
new_key client.admin --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *'
new_key mgr.x --cap mon 'allow profile mgr' --cap osd 'allow *' --cap mds 'allow *'
new_key osd.0 --cap mon 'allow profile osd' --cap mgr 'allow profile osd' --cap osd 'allow *'
new_key mds.a --cap mon 'allow profile mds' --cap osd 'allow rwx' --cap mds 'allow *' --cap mgr 'allow profile mds'
new_key client.rgw.a --cap mon 'allow rw' --cap osd 'allow rwx' --cap mgr 'allow rw'
cat "$dir"/keyring/*.keyring >"$dir/run/mkfs.keyring"
admin_key=$(ceph-authtool -p -n client.admin "$dir/keyring/client.admin.keyring")
monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$port_base,v1:127.0.0.1:$((port_base + 1))]" \
  "$dir/run/monmap" >/dev/null
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/run/monmap" --keyring "$dir/run/mkfs.keyring" \
  >>"$dir/log/mon.a.out" 2>&1 || fail "ceph-mon --mkfs failed"
rm -f "$dir/run/mkfs.keyring" "$dir/run/monmap"
touch "$dir/run/mon.a.pid.expected"
start_daemon mon.a

# The OSD's store is made while the mon takes the commands below; the mgr, the MDS (a standby
# until the filesystem exists) and RGW (it makes its pools once the OSD is up) start at once.
osd_uuid=$(cat /proc/sys/kernel/random/uuid)
ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$osd_uuid" >>"$dir/log/osd.0.out" 2>&1 &
osd_mkfs=$!
for name in mgr.x mds.a client.rgw.a; do
  touch "$dir/run/$name.pid.expected"
  start_daemon "$name"
done
# mon_commands: one connection for several mon commands, each line of stdin a command in JSON
# (the ceph CLI costs a Python start-up each), in the ceph CLI's own interpreter, which has the
# rados binding.
mon_commands() {
  /usr/bin/python3 -c '
import json, sys
import rados
cluster = rados.Rados(conffile=sys.argv[1], name="client.admin")
cluster.connect(timeout=30)
for line in sys.stdin:
    ret, _, err = cluster.mon_command(line, b"", timeout=60)
    if ret != 0:
        sys.exit("%s: %s (%d)" % (line.strip(), err, ret))
cluster.shutdown()' "$conf" >>"$dir/log/cephtest.log" 2>&1
}
mon_commands <<EOF || fail "ceph osd new failed (log/cephtest.log)"
{"prefix": "osd new", "uuid": "$osd_uuid", "id": 0}
EOF
wait "$osd_mkfs" || fail "ceph-osd --mkfs failed"
touch "$dir/run/osd.0.pid.expected"
start_daemon osd.0
mon_commands <<EOF || fail "creating the CephFS filesystem failed (log/cephtest.log)"
{"prefix": "osd pool create", "pool": "cephfs.cephfs.meta"}
{"prefix": "osd pool create", "pool": "cephfs.cephfs.data"}
{"prefix": "fs new", "fs_name": "cephfs", "metadata": "cephfs.cephfs.meta", "data": "cephfs.cephfs.data"}
{"prefix": "fs set", "fs_name": "cephfs", "var": "standby_count_wanted", "val": "0"}
EOF

wait_healthy

rgw_user=csikit-admin
user_json=$(timeout 60 radosgw-admin -c "$conf" user create --uid="$rgw_user" \
  --display-name="csikit test admin" --caps='users=*;buckets=*' 2>>"$dir/log/radosgw-admin.out") ||
  fail "radosgw-admin user create failed"
read -r rgw_access rgw_secret < <(python3 -c '
import json, sys
k = json.load(sys.stdin)["keys"][0]
print(k["access_key"], k["secret_key"])' <<<"$user_json") || fail "no keys in radosgw-admin's answer"
write_info
log "ready"
echo "$dir"
