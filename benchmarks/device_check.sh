#!/usr/bin/env bash
# GPU check for a session lent a GPU machine: one short script, run from the repository root there
# with the machine's own python3 (its JAX with CUDA, equinox, optimistix, lineax, optax, diffrax):
#   1. the versions and devices JAX sees;
#   2. SVBMC on two moons (κ = 8) with all $SEEDS seeds as one vmapped program on the GPU: first a
#      short calibration (budget 10, in $OUT/calibration/svbmc/), then the full budget of 200
#      (in $OUT/svbmc/), each limited so that a slow step still leaves the other's results;
#   3. a few float64 numerics test files on the GPU, if time is left.
# Usage (device tool, where OUT is set):  bash benchmarks/device_check.sh
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/device_check}
SEEDS=${SEEDS:-20}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c "
import jax, equinox, optimistix, lineax, optax
print({m.__name__: m.__version__ for m in (jax, equinox, optimistix, lineax, optax)}, jax.devices())"

svbmc_vmapped() {  # time limit (s), output dir, extra arguments
    local start=$(date +%s)
    timeout "$1" python3 benchmarks/svbmc_problems.py --problems two_moons_vsbq --seeds "$SEEDS" --vmap-seeds \
        --output-dir "$2" "${@:3}" 2>&1 | grep -v "^two_moons_vsbq {" | tail -n 6
    echo "svbmc two moons $*: exit ${PIPESTATUS[0]}, $(($(date +%s) - start)) s"
}
svbmc_vmapped "${CALIBRATION_TIMEOUT:-180}" "$OUT/calibration" --budget 10
svbmc_vmapped "${SVBMC_TIMEOUT:-300}" "$OUT"

timeout "${TEST_TIMEOUT:-60}" python3 -m pytest -q -x -p no:cacheprovider \
    tests/test_mixtures.py tests/test_elbo.py tests/test_sampling.py 2>&1 | tail -n 5
