#!/usr/bin/env bash
# Start the reference vLLM as measure.sh expects it: vLLM's own CPU binding puts the engine's
# worker (the model) on core 0 and reserves the last core for the rest; this script also
# moves the API server and the engine core (the scheduler, which busy-waits on the worker)
# onto that reserved core, so nothing else runs beside the model's threads.
#   usage: PID=$(./serve.sh [DIR] [PORT] [vLLM flags...] | tail -1); ...; kill $PID
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pid=$("$here/../../../../shared/reference-server/serve.sh" "$@" | tail -1)
frontend=$(($(nproc) - 1))
for p in "$pid" $(pgrep -P "$pid"); do
  [[ $(cat "/proc/$p/comm") == VLLM::Worker ]] || taskset -a -pc "$frontend" "$p" >/dev/null
done
echo "$pid"
