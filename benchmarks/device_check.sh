#!/usr/bin/env bash
# GPU check for a session lent a GPU machine: one short script, run from the repository root there
# with the machine's own python3 (its JAX with CUDA, equinox, optimistix, lineax, optax, diffrax):
#   1. the versions and devices JAX sees;
#   2. SVBMC with all $SEEDS seeds as one vmapped program on the GPU (`svbmc_problems.py --vmap-seeds`)
#      for each problem of $PROBLEMS, results in $OUT/svbmc/<problem>.json, each problem limited to
#      $SVBMC_TIMEOUT seconds so that a slow one still leaves the others' results; with $SVBMC_FLAGS set
#      (e.g. "--probe-fallback-mountain") each problem runs a second time with those flags, results in
#      $OUT/flagged/svbmc/<problem>.json (the same seeds and initial sets: a paired comparison);
#   3. the SteinGP UCI protocol (`steingp_uci.py`: 5 splits, J = 2, 5, 10, 20, 1000 steps) for each data set of
#      $STEINGP_DATASETS (none by default; the sets too slow for 2 CPU cores, e.g. "concrete energy
#      wine_quality_red breast_cancer"), results in $OUT/steingp/steingp_uci_<set>.json (written after every
#      fit), each set limited to $STEINGP_TIMEOUT seconds; needs .device_data/uci and .device_data/classification;
#      a name ending in _deduplicated (e.g. wine_quality_red_deduplicated) runs that set with --deduplicate;
#   4. the BO regret grid (`bes_regret.py`: every method, 30 seeds vmapped, M = 200 samples and the `BOOptions`
#      search defaults, bounds exact and misspecified by η² = 0.3, 0.5, 1) for each function of $BES_FUNCTIONS
#      (none by default; e.g. "forrester branin rosenbrock mccormick hartmann3 alpine1 gsobol"), results in
#      $OUT/bes/bes_regret_grid.json (rewritten after every cell), each function limited to $BES_TIMEOUT seconds;
#   5. float64 numerics test files on the GPU ($TESTS; none: skipped), limited to $TEST_TIMEOUT seconds.
# Measured on an H200 (2026-11-26): two moons 53 s compile + 43 s run for 20 seeds, Rosenbrock 50 + 79 s;
# the three test files below did not finish in 200 s with -n 6 (compilation-bound), so they run last.
#
# Problems that read data (Lotka–Volterra, timing) need ../shared/data, which does not travel: copy it
# into an ignored folder first and carry that folder, e.g. here
#   mkdir -p .device_data && cp -r ../shared/data/lotka_volterra ../shared/data/vsbq .device_data/
#   echo /.device_data/ >> .git/info/exclude
# then call the device tool with carry=[".device_data"] and
#   PROBLEMS="lotka_volterra_cmaes timing rosenbrock_truncated" bash benchmarks/device_check.sh
# The rows issue 4 still lacks on 20 seeds (2026-12-01): timing_noisy (N_f = 900, n_active = 25; its noise is traced
# in since then), rosenbrock_truncated and lotka_volterra_mcmc; a device call lasts at most 10 minutes, so one
# problem a call, e.g.  PROBLEMS=timing_noisy SVBMC_TIMEOUT=540 TESTS=none bash benchmarks/device_check.sh
# Usage (device tool, where OUT is set):  bash benchmarks/device_check.sh
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/device_check}
SEEDS=${SEEDS:-20}
PROBLEMS=${PROBLEMS:-two_moons_vsbq rosenbrock}
DATA_DIR=${DATA_DIR:-.device_data}
TESTS=${TESTS:-tests/test_mixtures.py tests/test_linalg.py tests/test_sparse.py}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c "
import jax, equinox, optimistix, lineax, optax
print({m.__name__: m.__version__ for m in (jax, equinox, optimistix, lineax, optax)}, jax.devices())"

for problem in $PROBLEMS; do
    for flags in "" ${SVBMC_FLAGS:+"$SVBMC_FLAGS"}; do
        start=$(date +%s)
        # shellcheck disable=SC2086  # $flags: several flags, split on purpose
        timeout "${SVBMC_TIMEOUT:-300}" python3 benchmarks/svbmc_problems.py --problems "$problem" --seeds "$SEEDS" \
            --vmap-seeds --data-dir "$DATA_DIR" --output-dir "$OUT${flags:+/flagged}" $flags 2>&1 |
            grep -v "^$problem {" | tail -n 4
        echo "svbmc $problem ${flags:-(defaults)}: exit ${PIPESTATUS[0]}, $(($(date +%s) - start)) s"
    done
done

for dataset in ${STEINGP_DATASETS:-}; do
    start=$(date +%s)
    source_set=${dataset%_deduplicated}
    deduplicate=()
    [ "$source_set" != "$dataset" ] && deduplicate=(--deduplicate)
    timeout "${STEINGP_TIMEOUT:-240}" python3 benchmarks/steingp_uci.py --datasets "$source_set" \
        ${deduplicate[@]+"${deduplicate[@]}"} --data-dir "$DATA_DIR" --output-dir "$OUT/steingp" \
        --name "steingp_uci_$dataset" 2>&1 | tail -n 8
    echo "steingp_uci $dataset: exit ${PIPESTATUS[0]}, $(($(date +%s) - start)) s"
done

for function in ${BES_FUNCTIONS:-}; do
    start=$(date +%s)
    timeout "${BES_TIMEOUT:-240}" python3 benchmarks/bes_regret.py --functions "$function" --seeds 30 --samples 200 \
        --candidates 500 --starts 5 --steps 50 --misspecification 0,0.3,0.5,1 --output-dir "$OUT/bes" \
        --name bes_regret_grid 2>&1 | grep "median final regret" | tail -n 20
    echo "bes_regret $function: exit ${PIPESTATUS[0]}, $(($(date +%s) - start)) s"
done

# one process per file, no preallocation: several processes share the GPU's memory; TESTS=none skips this step
if [ "$TESTS" != none ]; then
    XLA_PYTHON_CLIENT_PREALLOCATE=false timeout "${TEST_TIMEOUT:-120}" python3 -m pytest -q -rf -p no:cacheprovider \
        -p no:benchmark -n 3 $TESTS 2>&1 | tail -n 8
fi
