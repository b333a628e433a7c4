#!/usr/bin/env bash
# ceph-down.sh: stops a cluster started by ceph-up.sh.
#
#   ceph-down.sh [--purge] DIR [DAEMON...]
#
# With no DAEMON: unmounts every FUSE mount under DIR (ceph-fuse mounts a test left behind),
# deepest first, waiting for the ceph-fuse process of each (the one with the mount point among
# its arguments) to exit; stops the --owner watcher; then stops
# every daemon: RGW, then the MDS (after it has flushed its journal), then the OSD and the mgr,
# then the mon (each step's daemons need the later steps' to shut down quickly and without
# losing data). DAEMON names some of mon.a mgr.x osd.0 mds.a client.rgw.a to stop only those
# (fault tests); `ceph-up.sh DIR` starts them again.
#
# Each process is found by its pid file and checked to be the one started with DIR/ceph.conf,
# sent SIGTERM (again if it respawns meanwhile: the MDS may, see ceph-up.sh's start_daemon), and
# SIGKILL if it is still there after CEPHTEST_STOP_TIMEOUT seconds (default 10; ceph-mds may need
# it); the script returns once every one has exited, 2-4 s for all (the MDS takes the longest).
# Then, as a safety net, any process of the stopped daemons' programs (ceph-mon, ceph-mgr,
# ceph-osd, ceph-mds, radosgw) still running with DIR/ceph.conf as an argument is stopped the
# same way, with a line "stray process PID of DIR ..." on stderr and in log/cephtest.log: that
# is a bug in these scripts to fix. Other clusters' daemons name their own ceph.conf and are
# never touched; neither are this cluster's clients (ceph-fuse, the ceph CLI).
# The data stays, so `ceph-up.sh DIR` restarts the cluster where it was.
#
# --purge: afterwards removes DIR and releases its ports. Refused for a directory that
# ceph-up.sh did not make (no DIR/.cephtest).
#
# Exit status: 0 when nothing of the cluster runs any more, 1 otherwise.
set -euo pipefail

die() {
  echo "ceph-down.sh: $*" >&2
  exit 1
}

purge=false
while [ $# -gt 0 ]; do
  case $1 in
  --purge)
    purge=true
    shift
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
[ $# -ge 1 ] || die "usage: ceph-down.sh [--purge] DIR [DAEMON...]"
[ -d "$1" ] || die "$1: no such directory"
dir=$(cd -- "$1" && pwd -P)
shift
[ -f "$dir/.cephtest" ] || die "$dir: not a directory made by ceph-up.sh (no .cephtest)"
conf=$dir/ceph.conf
stop_timeout=${CEPHTEST_STOP_TIMEOUT:-10}
case $stop_timeout in '' | *[!0-9]*) die "CEPHTEST_STOP_TIMEOUT must be a whole number" ;; esac

all="client.rgw.a mds.a osd.0 mgr.x mon.a"
if [ $# -eq 0 ]; then
  names=$all
  everything=true
else
  for name in "$@"; do
    case " $all " in *" $name "*) ;; *) die "unknown daemon $name (one of: $all)" ;; esac
  done
  names="$*"
  everything=false
  $purge && die "--purge stops everything: name no daemon with it"
fi

# gone PID: the process has exited (a zombie counts: whoever reaps it is not us).
gone() {
  local state
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null) || return 0
  [ -z "$state" ] || [ "$state" = Z ]
}

# pid_of NAME: as in ceph-up.sh, the pid from the pid file if that process has our ceph.conf.
pid_of() {
  local pidfile=$dir/run/$1.pid pid
  [ -s "$pidfile" ] || return 1
  read -r pid <"$pidfile" || return 1
  case $pid in '' | *[!0-9]*) return 1 ;; esac
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$conf" || return 1
  gone "$pid" && return 1
  echo "$pid"
}

# Daemons being stopped: their log and how much of it there was at SIGTERM (see wait_gone).
declare -A daemon_log=() log_seen=()

# watch_log PID NAME: wait_gone is to follow NAME's log while PID stops.
watch_log() {
  daemon_log[$1]=$dir/log/$2.log
  log_seen[$1]=$(stat -c %s "$dir/log/$2.log" 2>/dev/null || echo 0)
}

# respawned PID: the daemon has respawned since the last look. A Ceph daemon respawns by
# exec'ing itself (the MDS does when, shutting down on SIGTERM, a last write of its purge queue
# fails with ESHUTDOWN and it takes that for being blocklisted); the new image, with the same
# pid since ceph-up.sh runs daemons in the foreground, knows nothing of the signal. It logs
# "ceph version ..., process ceph-mds, pid PID" as it starts; the old one's last line,
# "respawning with exe ...", may not reach the log before the exec.
respawned() {
  local f=${daemon_log[$1]:-} size new
  [ -n "$f" ] || return 1
  size=$(stat -c %s "$f" 2>/dev/null) || return 1
  [ "$size" -gt "${log_seen[$1]}" ] || return 1
  new=$(tail -c "+$((log_seen[$1] + 1))" "$f" 2>/dev/null) || true
  log_seen[$1]=$size
  [[ $new == *"respawning with exe"* || $new == *", pid $1"$'\n'* ]]
}

# wait_gone TIMEOUT PID...: waits until every PID has exited, at most TIMEOUT seconds, sending
# SIGTERM again to one that respawned; prints the pids still running.
wait_gone() {
  local until=$((SECONDS + $1)) left pid
  shift
  while :; do
    left=""
    for pid in "$@"; do
      gone "$pid" && continue
      left="$left $pid"
      if respawned "$pid"; then
        log "pid $pid respawned after SIGTERM: SIGTERM again"
        kill -TERM "$pid" 2>/dev/null || true
      fi
    done
    if [ -z "$left" ] || [ $SECONDS -ge $until ]; then
      echo "$left"
      return 0
    fi
    sleep 0.1
  done
}

# terminate LABEL PID...: SIGTERM, then SIGKILL after the bound, then waits for the exit.
terminate() {
  local label=$1 left
  shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  # shellcheck disable=SC2086,SC2046 # pids are words
  left=$(wait_gone "$stop_timeout" "$@")
  if [ -n "$left" ]; then
    log "$label: SIGKILL to pid(s)$left, still running ${stop_timeout}s after SIGTERM"
    # shellcheck disable=SC2086 # pids are words
    kill -KILL $left 2>/dev/null || true
    # shellcheck disable=SC2086
    left=$(wait_gone 10 $left)
    [ -z "$left" ] || failed="$failed$left"
  fi
}

failed=""
start_time=$SECONDS
log() {
  local line
  line="ceph-down.sh: [$((SECONDS - start_time))s] $*"
  echo "$line" >&2
  if [ -d "$dir/log" ]; then echo "$(date +%FT%T) $line" >>"$dir/log/cephtest.log"; fi
}

# ceph-fuse pids serving MOUNTPOINT (an argument of their command line).
fuse_pids() {
  local mp=$1 p
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = ceph-fuse ] || continue
    if tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qxF -- "$mp"; then
      echo "${p#/proc/}"
    fi
  done
}

unmount_fuse() {
  local mp pids
  # mountinfo: field 5 is the mount point (octal escapes for blanks), the fs type follows " - ".
  while IFS= read -r mp; do
    mp=$(printf '%b' "$mp")
    case $mp in "$dir" | "$dir"/*) ;; *) continue ;; esac
    pids=$(fuse_pids "$mp")
    log "unmounting $mp"
    umount "$mp" 2>/dev/null || fusermount -u "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null ||
      fusermount -uz "$mp" 2>/dev/null || {
      echo "ceph-down.sh: could not unmount $mp" >&2
      failed="$failed $mp"
    }
    # shellcheck disable=SC2086 # pids are words
    terminate "ceph-fuse for $mp" $pids
  done < <(awk '{ for (i = 7; $i != "-"; i++) ; if ($(i + 1) ~ /^fuse/) print length($5) " " $5 }' \
    /proc/self/mountinfo | sort -rn | cut -d' ' -f2-)
}

if $everything; then
  unmount_fuse
  if [ -s "$dir/run/watcher.pid" ]; then
    read -r watcher <"$dir/run/watcher.pid" || watcher=""
    # The watcher runs this script when the owner exits: it must not stop itself.
    if [ -n "$watcher" ] && [ "$watcher" != $$ ] && [ "$watcher" != "$PPID" ] && ! gone "$watcher" &&
      tr '\0' '\n' <"/proc/$watcher/cmdline" 2>/dev/null | grep -qx cephtest-watcher; then
      terminate watcher "$watcher"
    fi
    rm -f "$dir/run/watcher.pid"
  fi
fi

# In steps: RGW first (with the OSD gone, its shutdown hangs until SIGKILL); then the MDS, after
# it has written its journal out (below), and with the mgr still there (without it the MDS
# takes twice as long to exit); then the OSD and the mgr; the mon last.
for phase in client.rgw.a mds.a osd.0,mgr.x mon.a; do
  pids=""
  labels=""
  for name in $names; do
    case ,$phase, in *",$name,"*) ;; *) continue ;; esac
    rm -f "$dir/run/$name.pid.expected"
    if [ "$name" = mds.a ] && pid_of mds.a >/dev/null && pid_of osd.0 >/dev/null; then
      # An MDS answers a client before its journal is on the OSD and does not write it out
      # when it gets SIGTERM: the last few seconds of metadata changes (the volumes module's
      # rename of a new subvolume's .meta.tmp to .meta) would be lost.
      timeout 15 ceph --admin-daemon "$dir/run/mds.a.asok" flush journal >/dev/null 2>&1 ||
        log "could not flush mds.a's journal: its last changes may be lost"
    fi
    if pid=$(pid_of "$name"); then
      pids="$pids $pid"
      labels="$labels $name"
      watch_log "$pid" "$name"
    fi
  done
  # shellcheck disable=SC2086 # pids are words
  terminate "${labels# }" $pids
  [ -z "$labels" ] || log "stopped${labels}"
done

# strays: processes of the stopped daemons that the pid files did not lead to (none, unless a
# daemon escaped them): one of the daemons' programs with this cluster's ceph.conf as an
# argument. Another cluster's daemons name their own ceph.conf; clients of this one
# (ceph-fuse, the ceph CLI) are not daemons and are left alone, as are this script's callers.
strays() {
  local f pid argv0 prog name ancestors=" " p=$$ programs=""
  while [ "$p" -gt 1 ] 2>/dev/null; do
    ancestors="$ancestors$p "
    # The parent follows the state, after the command's name in parentheses (blanks allowed).
    p=$(sed 's/.*) [A-Za-z] \([0-9]*\) .*/\1/' "/proc/$p/stat" 2>/dev/null) || break
  done
  for name in $names; do
    case $name in
    mon.*) programs="$programs ceph-mon" ;;
    mgr.*) programs="$programs ceph-mgr" ;;
    osd.*) programs="$programs ceph-osd" ;;
    mds.*) programs="$programs ceph-mds" ;;
    client.rgw.*) programs="$programs radosgw" ;;
    esac
  done
  # grep -z: the lines are the NUL-separated arguments; -x -F: one is exactly $conf.
  for f in $(grep -lzxF -- "$conf" /proc/[0-9]*/cmdline 2>/dev/null || true); do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    case $ancestors in *" $pid "*) continue ;; esac
    gone "$pid" && continue
    # argv[0], not comm: a respawning daemon's comm is "exe" for a moment.
    IFS= read -r -d '' argv0 <"$f" 2>/dev/null || continue
    prog=${argv0##*/}
    case " $programs " in *" $prog "*) echo "$pid" ;; esac
  done
}

# The safety net: a daemon still running after its pid file's process exited is a bug in these
# scripts; stop it all the same, and say so where CI logs show it.
stray=$(strays)
if [ -n "$stray" ]; then
  for pid in $stray; do
    log "stray process $pid of $dir after the stop: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null); stopping it"
  done
  # shellcheck disable=SC2086 # pids are words
  terminate "stray process(es)" $stray
fi

for name in $names; do
  pid_of "$name" >/dev/null || rm -f "$dir/run/$name.pid"
done

if [ -n "$failed" ]; then
  die "still running or mounted:$failed"
fi
if $purge; then
  base=$(sed -n 's/^CEPHTEST_PORT_BASE=//p' "$dir/cluster.env" 2>/dev/null || true)
  if [ -z "$base" ]; then
    base=$(sed -n 's/^mon_host = \[v2:127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$conf" 2>/dev/null || true)
  fi
  claim=/tmp/cephtest-ports-$(id -u)/$base
  if [ -n "$base" ] && [ "$(cat "$claim" 2>/dev/null)" = "$dir" ]; then
    rm -f "$claim"
  fi
  rm -rf -- "$dir"
fi
