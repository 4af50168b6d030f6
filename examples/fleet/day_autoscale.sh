#!/usr/bin/env bash
# A day of chat traffic on an autoscaled fleet against a fleet fixed at the peak.
#
# Load: the Azure LLM inference conversation trace (2023-11-16, one hour; Splitwise, ISCA'24,
# CC-BY-4.0): its arrival gaps (divided by their mean, tiled) and lengths (in order, tiled),
# under the `chat` daily profile scaled to a peak of 4 req/s (an assumed shape, stated in
# llmsizer.fleet.day: 20 % of the peak at 04:00, the peak at 16:00). Deployment: Llama 3.1
# 70B, FP8 weights and KV cache, TP4 on L40S, vLLM preset, least-outstanding routing. Fixed
# fleet: 3 instances. Autoscaled: 1 to 3 instances, target 24 requests in flight per
# instance (KEDA's vLLM metric), decisions every 30 s, 10 min cool-down; a new instance
# serves after reading its weights at a stated 2 GB/s (a lower bound: engine start-up beyond
# the read is left out). SLO: TTFT <= 2 s. Price: $3 per GPU-hour (illustrative, not a quote).
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/llmsizer day \
    --model llama-3.1-70b --gpu l40s --tp 4 --precision fp8 --kv-cache-dtype fp8 \
    --max-model-len 16384 \
    --trace ../shared/traces/AzureLLMInferenceTrace_conv.csv \
    --peak-rps 4 --profile chat --hours 24 \
    --instances 3 --target-in-flight 24 --interval-s 30 --cooldown-s 600 --storage-gb-s 2 \
    --ttft-ms 2000 --usd-per-gpu-hour 3 \
    --json examples/fleet/day_autoscale.json --plot examples/fleet/day_autoscale.png \
    --overwrite > examples/fleet/day_autoscale.txt
