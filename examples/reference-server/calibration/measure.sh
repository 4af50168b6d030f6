#!/usr/bin/env bash
# Measure the reference vLLM: the calibration sweep, then two separate Poisson runs.
#   usage: ./measure.sh sweep|poisson|all [URL] [LIGHT_RATE] [HEAVY_RATE] [SEED]
# Needs the server (../../../../shared/reference-server/serve.sh, model "tiny").
# Each bench call has its own seed: prompts never repeat across calls (the prefix cache
# would otherwise serve them), and `llmsizer simulate --seed` draws the same Poisson
# arrivals as the call with that seed (one point per call, so its workload is drawn first).
set -euo pipefail
phase=${1:-all}; url=${2:-http://127.0.0.1:8011}; light=${3:-1}; heavy=${4:-5}; seed=${5:-1}
cd "$(dirname "$0")"
bench="llmsizer bench --base-url $url --model tiny --isl 512 --osl 128 --server-metrics"
conditions() { echo "$1: $(date -u +%FT%TZ) loadavg $(cut -d' ' -f1-3 /proc/loadavg)" >>conditions.txt; }

if [[ $phase == sweep || $phase == all ]]; then
  conditions "sweep start (seed $seed)"
  $bench --concurrency 1,2,4,8,16 --num-prompts 96 --seed "$seed" \
    --json sweep.json --records sweep.jsonl || echo "sweep: some requests failed"
fi
if [[ $phase == poisson || $phase == all ]]; then
  conditions "light start: $light req/s (seed $((seed + 1)))"
  $bench --request-rate "$light" --num-prompts 240 --seed $((seed + 1)) \
    --json poisson-light.json --records poisson-light.jsonl || echo "light: some requests failed"
  conditions "heavy start: $heavy req/s (seed $((seed + 2)))"
  $bench --request-rate "$heavy" --num-prompts 300 --seed $((seed + 2)) \
    --json poisson-heavy.json --records poisson-heavy.jsonl || echo "heavy: some requests failed"
fi
conditions "end"
