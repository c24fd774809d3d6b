#!/usr/bin/env bash
# One call of a lent GPU machine (the `device` tool): suite runs, each kept as it ends, then tests, all inside
# a deadline, so that a short lease always brings back whatever finished.
#
#   bash benchmarks/device_session.sh SECONDS RUNS STAGES TEST_RESERVE [PYTEST ARGS...]
#
# SECONDS: the deadline from now (under the call's timeout_s). RUNS: suite runs at most, each of STAGES
# (comma-separated, as --only takes them; "all" for every stage), no cold-start processes; the first run alone
# times torch.compile (inductor's GPU compiles cost minutes; TORCH_COMPILE_FIRST=0 skips it there too). A run starts only if the last one's length fits
# before the deadline, TEST_RESERVE seconds kept for the tests. Then pytest with the
# remaining time (interrupted with SIGINT at the deadline: it still prints its failures). DEVICE=cpu tries it here.
# Results under $OUT: gpu.txt (the machine), runs/runN.json (each run's figures: combine them here with
# `python -m benchmarks --combine runs/run*.json --write`), suite.log (tables and stage times), tests.log.
set -u
seconds=$1 runs=$2 stages=$3 reserve=$4
shift 4
end=$(( $(date +%s) + seconds ))
left() { echo $(( end - $(date +%s) )); }
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p "$OUT/runs"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import jax, torch, numpy; print('jax', jax.__version__, jax.devices(), 'torch', torch.__version__,
torch.cuda.is_available(), 'numpy', numpy.__version__)"
  nproc; uptime
} > "$OUT/gpu.txt" 2>&1

last=0
for i in $(seq 1 "$runs"); do
  [ "$(left)" -gt $(( last + reserve )) ] || { echo "run $i not started: $(left) s left" >> "$OUT/suite.log"; break; }
  only=()
  [ "$stages" = all ] || only=(--only "$stages")
  t0=$(date +%s)
  FGRAPH_BENCH_TORCH_COMPILE=$([ "$i" -eq 1 ] && echo "${TORCH_COMPILE_FIRST:-1}" || echo 0) timeout -s INT $(( $(left) - reserve )) \
    python3 benchmarks/run.py --device "${DEVICE:-gpu}" --cold-repeats 0 "${only[@]}" \
    --rows-json "$OUT/runs/run$i.json" >> "$OUT/suite.log" 2>&1
  rc=$?
  last=$(( $(date +%s) - t0 ))
  echo "suite run $i: rc $rc in $last s" >> "$OUT/suite.log"
  [ $rc -eq 0 ] || break
done

[ $# -gt 0 ] || exit 0
export CI=true XLA_PYTHON_CLIENT_PREALLOCATE=false
t0=$(date +%s)
timeout -s INT -k 30 $(( $(left) > 30 ? $(left) : 30 )) python3 -m pytest -p no:cacheprovider -o addopts="" -q -rfE \
  --dist worksteal "$@" > "$OUT/tests.log" 2>&1
echo "pytest: rc $? in $(( $(date +%s) - t0 )) s" >> "$OUT/tests.log"
