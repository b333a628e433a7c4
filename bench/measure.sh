#!/usr/bin/env bash
# Runs every benchmark BENCHMARKS.md quotes, in the order of its table, and keeps each one's
# output in a directory of its own (the first argument, default a new temporary one). The machine
# should be otherwise idle; each stage prints its time. The 100,000-volume runs (BENCHMARKS.md,
# "hostpath", "At 100,000 volumes") are left out: they take an hour each and are listed there.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d)}
mkdir -p "$out"
echo "results in $out"

run() { # run NAME DIR ARGS...: one go test -bench invocation, timed
  local name=$1 dir=$2
  shift 2
  local start=$SECONDS
  echo "== $name"
  (cd "$dir" && go test -run '^$' "$@") >"$out/$name.txt" 2>&1 || { echo "FAILED: see $out/$name.txt"; return 1; }
  echo "-- $name: $((SECONDS - start))s"
}

run chain         bench -bench 'BenchmarkChainControllerPublish$/interleaved' -count 5 .
run gocsi         bench -bench 'BenchmarkInProcessChainInterleaved$' -benchmem -count 3 .
run metrics       bench -bench 'BenchmarkChainMetrics$' -count 3 .
run tracing       bench -bench 'BenchmarkChainTracing$' -benchtime 20000x -count 3 .
run redaction     bench -bench 'BenchmarkLogCreateVolumeInterleaved$|BenchmarkLogCreateVolume$|BenchmarkDebugOff$' -benchmem -count 5 .
run locks         bench -bench 'BenchmarkLock' -benchmem -count 3 .
run packages      . -bench . -benchmem -count 3 ./idempotency/ ./internal/pagetoken/ ./middleware/... ./secrets/
run s3-put        examples/memorys3 -bench 'BenchmarkS3/PUT-signed' -benchtime 300x -count 5 ./s3server
run s3-all        examples/memorys3 -bench 'BenchmarkS3' -benchtime 300x -count 3 ./s3server
run cosi-cycle    examples/memorys3 -bench 'BenchmarkCOSICycle' -benchtime 1000x -count 3 ./bucketdriver
run cosi-memdriver driver/plugin -bench 'BenchmarkCOSICycle' -benchtime 1000x -count 3 .
run hostpath-list examples/hostpath -bench 'BenchmarkListVolumes10k$' -benchtime 50x -count 3 .
run hostpath-durable examples/hostpath -bench 'BenchmarkDurableOps$' -benchtime 1000x -count 3 .
run hostpath-scale examples/hostpath -bench 'BenchmarkScale' -benchtime 1x .
run vg-modify     examples/hostpath -bench 'BenchmarkModifyVolumeGroupMembership' -benchmem -benchtime 3s -count 3 ./hostpath
echo "done: $out"
