#!/usr/bin/env bash
# Measure the reference vLLM in rounds: each round is the calibration sweep, then the two
# Poisson runs that validate it, so that the machine's drift (this VM's speed wanders by tens
# of percent over minutes) falls on calibration and validation alike.
#   usage: ./measure.sh [URL] [LIGHT_RATE] [HEAVY_RATE] [ROUNDS] [SEED]
# Needs the server started by ./serve.sh (the model's worker alone on core 0, the rest on
# the last core) and root or CAP_SYS_NICE for --realtime (the client runs ahead of the
# server's processes; see ../README.md). The client runs on the last core, off the model's.
# Each bench call has its own seed: prompts never repeat across calls (the prefix cache
# would otherwise serve them), and `llmsizer simulate --seed` draws the same Poisson
# arrivals as the call with that seed (one point per call, so its workload is drawn first).
set -euo pipefail
url=${1:-http://127.0.0.1:8011}; light=${2:-1}; heavy=${3:-6}; rounds=${4:-3}; seed=${5:-100}
cd "$(dirname "$0")"
log=$PWD/conditions.txt
bench="taskset -c $(($(nproc) - 1)) llmsizer bench --base-url $url --model tiny --isl 512 --osl 128 --server-metrics --realtime"
conditions() { echo "$1: $(date -u +%FT%TZ) loadavg $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log"; }

for r in $(seq 1 "$rounds"); do
  s=$((seed + 10 * r))
  mkdir -p "round$r"
  (
    cd "round$r"
    conditions "round $r sweep (seed $s)"
    $bench --concurrency 1,2,4,8,16 --num-prompts 48 --seed "$s" \
      --json sweep.json --records sweep.jsonl.gz || echo "sweep: some requests failed"
    conditions "round $r light: $light req/s (seed $((s + 1)))"
    $bench --request-rate "$light" --num-prompts 60 --seed $((s + 1)) \
      --json poisson-light.json --records poisson-light.jsonl.gz || echo "light: some requests failed"
    conditions "round $r heavy: $heavy req/s (seed $((s + 2)))"
    $bench --request-rate "$heavy" --num-prompts 240 --seed $((s + 2)) \
      --json poisson-heavy.json --records poisson-heavy.jsonl.gz || echo "heavy: some requests failed"
  )
done
conditions "end"
