"""Posterior samples as an ArviZ `InferenceData` (its `posterior` group), for ArviZ's summaries,
diagnostics and plots.

Needs ArviZ (`pip install 'gpcompose[contrib]'`).
"""

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from jaxtyping import ArrayLike, Float

try:
    with warnings.catch_warnings():
        # ArviZ ≥ 0.22 announces its 1.0 refactor with a FutureWarning on the first import of
        # each day; it is about ArviZ's future API, not about this use of `from_dict`.
        warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor", category=FutureWarning)
        import arviz
except ImportError as error:
    raise ImportError(
        "gpcompose.contrib.arviz needs ArviZ: install it with `pip install 'gpcompose[contrib]'` "
        "(or `pip install arviz`)."
    ) from error


def _by_chain(name: str, value: np.ndarray, num_chains: int) -> np.ndarray:
    """(S, *shape) draws → (num_chains, S / num_chains, *shape), chain c holding draws
    c·S/num_chains … (c + 1)·S/num_chains − 1."""
    if value.ndim == 0 or value.shape[0] % num_chains != 0:
        raise ValueError(
            f"`samples[{name!r}]` must have a leading draw axis whose length is a multiple of "
            f"num_chains = {num_chains}, got shape {value.shape}."
        )
    return value.reshape(num_chains, value.shape[0] // num_chains, *value.shape[1:])


def to_inference_data(
    samples: Mapping[str, ArrayLike] | Float[ArrayLike, "S D"],
    *,
    site_names: Sequence[str] | None = None,
    num_chains: int = 1,
    coords: Mapping[str, Sequence] | None = None,
    dims: Mapping[str, Sequence[str]] | None = None,
) -> "arviz.InferenceData":
    """An `arviz.InferenceData` whose `posterior` group holds `samples`.

    **Arguments:**

    - `samples`: either a dict of site values, each with a leading draw axis S (e.g. from
      `NumPyroLogDensity.to_constrained` or `numpyro.infer.MCMC.get_samples()`), or an (S, D)
      array of draws (e.g. `result.posterior.sample(key, S)` of `bvbmc.fit`/`svbmc.fit`).
    - `site_names`: for a dict, the sites to export (default: all, in the dict's order); for an
      array, the names of its D columns, one scalar variable each (default: one variable `"x"`
      of shape (D,)).
    - `num_chains`: the S draws are split into this many chains of S/num_chains consecutive
      draws (chain-major order, as `MCMC.get_samples(group_by_chain=False)` returns them).
    - `coords`, `dims`: passed to `arviz.from_dict` (names of the sites' own axes).

    A variable of shape (S, *shape) becomes (chain, draw, *shape) = (num_chains, S/num_chains, *shape).
    """
    if not isinstance(num_chains, int) or isinstance(num_chains, bool) or num_chains < 1:
        raise ValueError(f"`num_chains` must be a positive int, got {num_chains!r}.")
    if isinstance(samples, Mapping):
        names = list(samples) if site_names is None else list(site_names)
        unknown = sorted(set(names) - set(samples))
        if unknown:
            raise ValueError(f"`site_names` {unknown} are not in `samples` (it has {sorted(samples)}).")
        variables = {name: np.asarray(samples[name]) for name in names}
    else:
        draws = np.asarray(samples)
        if draws.ndim != 2:
            raise ValueError(f"`samples` must be a dict or an array of shape (num_draws, D), got shape {draws.shape}.")
        if site_names is None:
            variables = {"x": draws}
        else:
            names = list(site_names)
            if len(names) != draws.shape[1] or len(set(names)) != len(names):
                raise ValueError(
                    f"`site_names` must hold {draws.shape[1]} distinct names, one per column of `samples` "
                    f"(shape {draws.shape}), got {names}."
                )
            variables = {name: draws[:, column] for column, name in enumerate(names)}
    lengths = {name: value.shape[0] if value.ndim else None for name, value in variables.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"Every site in `samples` must have the same number of draws, got {lengths}.")
    posterior = {name: _by_chain(name, value, num_chains) for name, value in variables.items()}
    return arviz.from_dict(posterior=posterior, coords=coords, dims=dims)
