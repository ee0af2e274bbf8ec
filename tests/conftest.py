import gc
import importlib.util
import os

# The suite's time is mostly XLA compilation of programs that then run for milliseconds:
# LLVM's optimisation passes cost more than they save here (measured on 3 files: −31 % CPU
# time; whole suite 17 min 07 s → 13 min 13 s on 2 cores), and so do the HLO passes that XLA:CPU's
# FAST_COMPILE preset leaves out (one SVBMC `init` of tests/svbmc_targets.py: backend compile
# 28.5 s → 19.9 s, init + two ask/tell 50.5 s → 39.3 s, alone on this 2-core CPU; the ELBO moves
# by 6e-4, within its sd), and so does XLA:CPU's newer MLIR "fusion emitter" code generation,
# against the older LLVM IR emitters (the same `init`: backend compile 14.5–14.9 s → 10.3–11.2 s,
# its ELBO equal to 6 digits; test_svbmc.py alone 295 s → 223 s). Set before the first computation
# creates the backend. XLA's CPU fast-math is off either way.
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "")
    + " --xla_backend_optimization_level=0 --xla_cpu_opt_preset=CPU_OPT_PRESET_FAST_COMPILE"
    + " --xla_cpu_use_fusion_emitters=false"
).strip()
# One OpenBLAS thread per LAPACK call (XLA's CPU LAPACK kernels call scipy's OpenBLAS): the kernels
# already run on several pool threads, and nested OpenBLAS threads on top of them oversubscribe
# the 2 cores (benchmarks/aaci_convergence.py measured a 200 × 200 Cholesky at 220 ms against
# 1.2 ms under load).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pathlib  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import jax  # noqa: E402
import pytest  # noqa: E402

# The package of the benchmark scripts, `benchmarks/benchmark_problems`, is not installed with gpcompose;
# the tests of its code import it as `benchmark_problems`, as the scripts do. Appended, so that the
# folder's scripts shadow no installed module.
BENCHMARKS_DIR = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCHMARKS_DIR) not in sys.path:
    sys.path.append(str(BENCHMARKS_DIR))

# XLA's persistent compilation cache, one directory per test run: the controlling process makes
# it before the xdist workers start (they inherit the variable) and removes it at the end
# (`pytest_unconfigure`). A program that one worker compiled, or that a file compiles again after
# `release_compiled_programs`, is read back instead of compiled (16 files in one process: 434 s →
# 407 s; whole suite 1081 s → 901 s on 2 cores). Programs holding host callbacks (every
# `eqx.error_if`) are never cached, so most of the SVBMC programs still compile as before. JAX
# writes entries unlocked: a worker reading one the other is still writing gets a truncated entry,
# which fails to decompress, and JAX warns and compiles instead (checked: a half-written entry;
# pyproject.toml keeps that warning from failing the test).
CACHE_VARIABLE = "GPCOMPOSE_TEST_XLA_CACHE"
MADE_CACHE_DIRECTORY = "PYTEST_XDIST_WORKER" not in os.environ and CACHE_VARIABLE not in os.environ
if MADE_CACHE_DIRECTORY:
    os.environ[CACHE_VARIABLE] = tempfile.mkdtemp(prefix="gpcompose-test-xla-cache-")
jax.config.update("jax_compilation_cache_dir", os.environ[CACHE_VARIABLE])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)

# Tests run in float64 with strict dtype promotion and no implicit rank promotion, so
# that silent up-casts and broadcasting mistakes fail loudly (as in equinox's suite).
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")


def memory_map_count() -> int:
    """Mappings of this process (Linux: lines of /proc/self/maps; 0 elsewhere)."""
    try:
        with open("/proc/self/maps") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return 0


# XLA's CPU backend JIT-links every kernel of a compiled program into its own three pages
# (code, read-only data, data: three mappings the kernel cannot merge), so a process holding
# ~20 000 compiled kernels reaches Linux's default vm.max_map_count of 65 530 and the next
# compilation's mmap fails inside LLVM: a segmentation fault (measured: one SVBMC `init` is
# ~1 800 kernels, 5 400 mappings; a worker crashed in test_svbmc.py's 12th test). Dropping
# JAX's caches frees them (5 971 → 681 measured); it costs recompiling what later tests share,
# so it happens only once a test leaves more than MAP_COUNT_TO_RELEASE mappings behind (the
# heaviest test adds ~15 000).
MAP_COUNT_TO_RELEASE = 40_000


@pytest.fixture(autouse=True)
def release_compiled_programs_near_the_map_limit():
    yield
    if memory_map_count() > MAP_COUNT_TO_RELEASE:
        release_compiled_programs_now()


def release_compiled_programs_now():
    """Drop JAX's caches of traced and compiled programs and collect them, which unmaps
    their code."""
    jax.clear_caches()
    gc.collect()


@pytest.fixture
def getkey():
    """Fresh, deterministic PRNG keys: `getkey()` returns a new key at each call."""
    keys = iter(jax.random.split(jax.random.key(20261122), 10_000))
    return lambda: next(keys)


@pytest.fixture
def backend_compilations():
    """A list that grows by one entry (its duration, s) at every XLA compilation (or read
    from the persistent cache) during the test: a test asserts that a loop of public calls compiles nothing new once the
    first iteration has compiled its programs."""
    compilations = []

    def listener(event, duration, **kwargs):  # a program read back from the persistent cache counts too
        if event in ("/jax/core/compile/backend_compile_duration", "/jax/compilation_cache/cache_retrieval_time_sec"):
            compilations.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    yield compilations
    jax.monitoring.unregister_event_duration_listener(listener)


# Most of the suite's time is XLA compilation, so a file's tests run in one worker
# (`--dist loadfile`: programs compiled for one test are reused by the next) and the files
# that compile the most start first, so that the workers finish together
# (longest-processing-time-first; measured per-file times, 2 cores, 2026-11-24).
HEAVIEST_FILES_FIRST = (
    "test_svbmc.py",
    "test_example_svbmc_two_moons.py",
    "test_bayesian_quadrature.py",
    "test_quadrature.py",
    "test_bvbmc.py",
    "test_docs_code_blocks.py",
    "test_bo.py",
    "test_boosting.py",
    "test_sparse.py",
    "test_aaci_svi.py",
    "test_steingp.py",
    "test_sampling.py",
    "test_mixtures.py",
    "test_aaci_gibbs.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: position for position, name in enumerate(HEAVIEST_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_configure(config):
    """In the controlling process only (not in xdist workers), import ArviZ once before the workers
    start. ArviZ's first import of each day writes a stamp file through a fixed temporary name;
    two workers importing it at once while collecting race on that file, and the loser's import
    fails with FileNotFoundError (seen in this suite). After one import the stamp holds today's
    date and later imports only read it."""
    if hasattr(config, "workerinput") or importlib.util.find_spec("arviz") is None:
        return
    import gpcompose.contrib.arviz  # noqa: F401  (the import writes the stamp)


def pytest_terminal_summary(terminalreporter):
    """The number of documentation code blocks the run executed (tests/test_docs_code_blocks.py):
    every ```python block of README.md and docs/ runs, one test per file."""
    reports = terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", [])
    files = sorted(
        {report.nodeid.split("[", 1)[1].rstrip("]") for report in reports if "test_code_blocks_run[" in report.nodeid}
    )
    if not files:
        return
    from .test_docs_code_blocks import ROOT, code_blocks

    count = sum(len(code_blocks(ROOT / name)) for name in files)
    terminalreporter.write_line(f"documentation code blocks run: {count} in {len(files)} files")


def pytest_unconfigure(config):
    """The controlling process removes the compilation cache directory it made."""
    if MADE_CACHE_DIRECTORY and not hasattr(config, "workerinput"):
        shutil.rmtree(os.environ[CACHE_VARIABLE], ignore_errors=True)


@pytest.fixture(autouse=True, scope="module")
def release_compiled_programs():
    """After each test file, drop JAX's caches of traced and compiled programs.

    Every compiled XLA:CPU executable keeps memory mappings of its code, and a worker that runs
    a few hundred tests accumulates them: one xdist worker reached 61 850 mappings, near Linux's
    default `vm.max_map_count` of 65 530, and the worker beside it crashed (segmentation fault
    in `backend_compile_and_load` once a mapping failed), which left the whole run hanging.
    Programs are shared within a file (`--dist loadfile`), rarely across files, so this costs
    little recompilation."""
    yield
    release_compiled_programs_now()
