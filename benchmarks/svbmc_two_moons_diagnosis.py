"""Why SVBMC misses the document's two-moons row on the radial-scale-0.01 variant: two
measurements that need no SVBMC run.

1. **Coverage of the initial sets.** For each seed's initial set (4 slice-sampling chains ×
   250 evaluations, `svbmc_problems.two_moons`) and each moon (x₁ > 0, weight 1/3;
   x₁ < 0, weight 2/3): the fraction of 2000 reference draws of that moon whose nearest
   initial evaluation within 20D of the set's best value (the ones SVBMC trains on) lies
   closer than `--coverage-radius` (default 0.05, five radial widths). Printed beside the
   MMTV and ΔLML of the same seed's SVBMC run from a results file (`--runs`), with the
   rank correlation between the worse moon's coverage and MMTV.
2. **Floor of the variational family.** The K-component VBMC mixture (axis-aligned, and
   rotated with `--rotated`) fitted to the *exact* log density by maximising the Monte Carlo
   ELBO, Σ_k w_k E_{N_k}[log p(x) − log q(x)] with reparameterised per-component draws and
   Adam (cosine-decayed step), from means at random reference draws: the KL(q‖p) and
   MMTV that no surrogate can beat with that family and K. Run for both radial scales.

Usage:
    python benchmarks/svbmc_two_moons_diagnosis.py \
        --runs benchmarks/results/svbmc/7c52138-h200/two_moons_paper.json
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
import svbmc_problems  # noqa: E402
from _common import add_output_dir_and_quick, utc_timestamp, write_json  # noqa: E402

from gpcompose.mixtures import VBMCMixture  # noqa: E402
from gpcompose.problems import TwoMoons  # noqa: E402
from gpcompose.problems.metrics import mmtv  # noqa: E402


def moon_coverage(X, y, reference, radius, trim):
    """Fraction of the reference draws of each moon (x₁ > 0, x₁ < 0) within `radius` of an
    initial evaluation whose value is within `trim` of the best."""
    kept = X[y > np.max(y) - trim]
    nearest = np.sqrt(((reference[:, None, :] - kept[None, :, :]) ** 2).sum(-1)).min(axis=1)
    close = nearest < radius
    return float(close[reference[:, 0] > 0].mean()), float(close[reference[:, 0] < 0].mean())


def rank_correlation(a, b):
    ranks = [np.argsort(np.argsort(v)) for v in (a, b)]
    return float(np.corrcoef(*ranks)[0, 1])


def coverage_table(runs_path, seeds, radius):
    runs = {run["seed"]: run for run in json.loads(Path(runs_path).read_text())["runs"]}
    problem = svbmc_problems.two_moons(0.01)
    rows = []
    for seed in seeds:
        data_key, _, _, reference_key = svbmc_problems.seed_keys(seed)
        X, y = map(np.asarray, problem.initial_set(data_key))
        reference = np.asarray(problem.reference_samples(reference_key, 2000))
        minor, major = moon_coverage(X, y, reference, radius, trim=20 * X.shape[1])
        run = runs.get(seed, {})
        rows.append(
            dict(
                seed=seed,
                coverage_minor=minor,
                coverage_major=major,
                mmtv=run.get("mmtv"),
                delta_lml=run.get("delta_lml"),
            )
        )
    scored = [row for row in rows if row["mmtv"] is not None]
    correlation = rank_correlation(
        [min(row["coverage_minor"], row["coverage_major"]) for row in scored], [row["mmtv"] for row in scored]
    )
    return rows, correlation


def family_floor(radial_scale, num_components, rotated, num_steps, draws_per_component, seed=0):
    """KL(q‖p) and MMTV of the VBMC family fitted to the exact two-moons density."""
    target = TwoMoons(radial_scale=radial_scale, concentration=8.0)
    init_key, key, reference_key, sample_key, elbo_key = jax.random.split(jax.random.key(seed), 5)
    reference = target.reference_samples(reference_key, 20_000)
    mixture = VBMCMixture(
        logits=jnp.zeros(num_components),
        means=reference[jax.random.choice(init_key, reference.shape[0], (num_components,), replace=False)],
        log_sigma=jnp.full(num_components, jnp.log(radial_scale)),
        log_lambda=jnp.zeros(2),
        mask=jnp.ones(num_components, bool),
        lambda_offdiagonal=jnp.zeros(1) if rotated else None,
    )

    def elbo(mixture, key):
        noise = jax.random.normal(key, (num_components, draws_per_component, 2))
        scales = mixture.component_scales
        if rotated:
            offsets = jnp.einsum("kde,kse->ksd", scales, noise)
        else:
            offsets = scales[:, None, :] * noise
        points = (mixture.component_means[:, None, :] + offsets).reshape(-1, 2)
        log_ratio = (jax.vmap(target.log_density)(points) - mixture.log_prob(points)).reshape(num_components, -1)
        return jnp.sum(jax.nn.softmax(mixture.logits) * jnp.mean(log_ratio, axis=1))

    params, static = eqx.partition(mixture, eqx.is_inexact_array)
    optimizer = optax.adam(optax.cosine_decay_schedule(0.01, num_steps))

    @jax.jit
    def step(carry, key):
        params, opt_state = carry
        grads = jax.grad(lambda p: -elbo(eqx.combine(p, static), key))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), None

    (params, _), _ = jax.lax.scan(step, (params, optimizer.init(params)), jax.random.split(key, num_steps))
    mixture = eqx.combine(params, static)
    final_elbo = jnp.mean(jax.vmap(lambda k: elbo(mixture, k))(jax.random.split(elbo_key, 50)))
    samples = mixture.sample(sample_key, 20_000)
    return dict(
        radial_scale=radial_scale,
        num_components=num_components,
        rotated=rotated,
        kl=float(target.log_normalizer - final_elbo),
        mmtv=float(mmtv(samples, reference)),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, required=True, help="a two_moons_paper.json of svbmc_problems.py")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--coverage-radius", type=float, default=0.05)
    parser.add_argument("--num-components", type=int, default=30)
    parser.add_argument("--steps", type=int, default=6000)
    add_output_dir_and_quick(parser)
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.steps = 2, 50

    start = time.perf_counter()
    rows, correlation = coverage_table(args.runs, range(args.seeds), args.coverage_radius)
    print("| seed | coverage x₁ > 0 (weight 1/3) | coverage x₁ < 0 (weight 2/3) | MMTV | ΔLML |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['seed']} | {row['coverage_minor']:.2f} | {row['coverage_major']:.2f} | "
            f"{row['mmtv']:.3f} | {row['delta_lml']:.3f} |"
        )
    print(f"rank correlation (worse moon's coverage, MMTV): {correlation:.2f}")

    floors = [
        family_floor(scale, args.num_components, rotated, args.steps, draws_per_component=64)
        for scale in (0.01, 0.1)
        for rotated in (False, True)
    ]
    print("| radial scale | family | K | KL(q‖p) | MMTV |\n|---|---|---:|---:|---:|")
    for floor in floors:
        family = "rotated" if floor["rotated"] else "axis-aligned"
        print(
            f"| {floor['radial_scale']} | {family} | {floor['num_components']} | "
            f"{floor['kl']:.3f} | {floor['mmtv']:.3f} |"
        )

    write_json(
        args.output_dir / "svbmc" / "two_moons_diagnosis.json",
        dict(
            timestamp=utc_timestamp(),
            runs=str(args.runs),
            coverage_radius=args.coverage_radius,
            coverage=rows,
            rank_correlation=correlation,
            floors=floors,
            steps=args.steps,
            seconds=time.perf_counter() - start,
        ),
    )


if __name__ == "__main__":
    main()
