"""A NumPyro model as a log density on one flat unconstrained vector θ ∈ R^D, with the maps
between θ and the model's sample sites, for `svbmc`, `bvbmc` and `svgd`.

Needs NumPyro (`pip install 'gpcompose[contrib]'`).
"""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

try:
    from numpyro.handlers import seed, substitute, trace
    from numpyro.infer.initialization import init_to_uniform
    from numpyro.infer.util import constrain_fn, potential_energy, unconstrain_fn
except ImportError as error:
    raise ImportError(
        "gpcompose.contrib.numpyro needs NumPyro: install it with `pip install 'gpcompose[contrib]'` "
        "(or `pip install numpyro`)."
    ) from error


def _initial_trace(model: Callable, model_args: tuple, model_kwargs: dict, key: PRNGKeyArray) -> dict:
    """One trace of `model` with every continuous latent site at NumPyro's `init_to_uniform` point
    (a uniform draw in (−2, 2) per unconstrained coordinate; no prior sample is drawn).

    Raises a `ValueError` if the model has a discrete latent sample site, or no latent sample site
    at all (every site observed).
    """
    initialised = substitute(seed(model, rng_seed=key), substitute_fn=init_to_uniform)
    model_trace = trace(initialised).get_trace(*model_args, **model_kwargs)
    latent = {name: site for name, site in model_trace.items() if site["type"] == "sample" and not site["is_observed"]}
    discrete = sorted(name for name, site in latent.items() if site["fn"].support.is_discrete)
    if discrete:
        raise ValueError(
            f"`model` has discrete latent sample sites {discrete}: the bridge needs continuous latent sites only "
            "(marginalise the discrete ones out, e.g. with `numpyro.factor`)."
        )
    if not latent:
        observed = sorted(name for name, site in model_trace.items() if site["type"] == "sample")
        raise ValueError(
            f"`model` has no latent sample site (its sample sites {observed} are all observed): there is no "
            "posterior to approximate."
        )
    return model_trace


class NumPyroLogDensity(eqx.Module):
    """The unnormalised posterior of a NumPyro model on one flat unconstrained vector θ ∈ R^D.

    Every continuous latent sample site z_s is mapped to the real line by NumPyro's bijection
    T_s = `biject_to(support_s)` (identity for real sites, exp for positive ones, a sigmoid for
    intervals, stick-breaking for simplices, …), and the unconstrained values of all sites, raveled
    with `jax.flatten_util.ravel_pytree` (sites in sorted name order), form θ. The log density is

        log p̃(θ) = log p(T(θ), data) + Σ_s log |det ∂T_s/∂θ_s| = −U(θ),

    the change-of-variables density of the posterior in unconstrained space (Stan Reference
    Manual, "Constraint transforms"), where U is NumPyro's `potential_energy` (what NUTS samples
    from). `numpyro.param` sites are held at their initial values. Draws of θ from any
    approximation of p̃ (an SVBMC or BVBMC mixture, SVGD particles) map back to draws of the
    sites by `to_constrained`; `to_unconstrained` maps site values (e.g. NUTS draws or a chosen
    initial point) to θ.

    `log_density(x)` takes one point of shape (D,) and is jitted (once per input dtype); it composes
    with `jax.vmap`, `jax.grad` and `jax.jit` (of a function that calls it, or `eqx.filter_jit`: the
    module itself holds arrays, so `jax.jit(log_density)` cannot hash it), so it serves the
    traceable `gpcompose.run_traceable`, `svgd.SVGD` and the black-box `gpcompose.run_black_box` alike.

    !!! Example
        ```python
        log_density = NumPyroLogDensity(model, key=jax.random.key(0), model_args=(data,))
        result = gpcompose.bvbmc.fit(log_density, X0, key=key, budget=40)  # X0: (N, log_density.dimension)
        sites = log_density.sample_constrained(result.posterior, key, 1000)  # {"tau": (1000,), ...}
        ```

    **Fields:**

    - `model`: the NumPyro model, seeded with the constructor's key and with its `param` sites
      substituted; `model_args`, `model_kwargs`: its arguments (data included).
    - `initial_sites`: the unconstrained value of each latent site at NumPyro's initial point (a
      uniform draw in (−2, 2) per coordinate, `init_to_uniform`); it fixes the names, shapes and
      order of θ.
    - `constrained_shapes`: the shape of each latent site's value (e.g. K for a K-simplex, whose
      unconstrained part has K − 1 coordinates).
    """

    model: Callable = eqx.field(static=True)
    model_args: tuple[Any, ...]
    model_kwargs: dict[str, Any]
    initial_sites: dict[str, Array]
    constrained_shapes: dict[str, tuple[int, ...]]

    def __init__(
        self,
        model: Callable,
        *,
        key: PRNGKeyArray,
        model_args: tuple[Any, ...] = (),
        model_kwargs: dict[str, Any] | None = None,
    ):
        """Trace `model(*model_args, **model_kwargs)` once, with `key` for NumPyro's initial point.

        Raises a `ValueError` if the model has a discrete latent sample site or no latent site.
        """
        if not callable(model):
            raise ValueError(f"`model` must be a callable NumPyro model, got {type(model).__name__}.")
        if not isinstance(model_args, tuple):
            raise ValueError(f"`model_args` must be a tuple, got {type(model_args).__name__}.")
        model_kwargs = {} if model_kwargs is None else dict(model_kwargs)
        model_trace = _initial_trace(model, model_args, model_kwargs, key)
        latent_values = {
            name: site["value"]
            for name, site in model_trace.items()
            if site["type"] == "sample" and not site["is_observed"]
        }
        param_values = {name: site["value"] for name, site in model_trace.items() if site["type"] == "param"}
        # As `numpyro.infer.util.initialize_model` prepares a model for its potential: `param` sites held
        # at their traced values, and a default key for any site that would still draw.
        self.model = seed(substitute(model, data=param_values), rng_seed=key)
        self.model_args = model_args
        self.model_kwargs = model_kwargs
        self.initial_sites = unconstrain_fn(self.model, model_args, model_kwargs, latent_values)
        self.constrained_shapes = {name: tuple(jnp.shape(value)) for name, value in latent_values.items()}

    @property
    def dimension(self) -> int:
        """D, the length of θ."""
        return sum(jnp.size(leaf) for leaf in jax.tree.leaves(self.initial_sites))

    @property
    def initial_point(self) -> Float[Array, " D"]:
        """θ at NumPyro's initial point (`initial_sites` raveled)."""
        return ravel_pytree(self.initial_sites)[0]

    def _unravel(self, x: Array) -> dict[str, Array]:
        """The unconstrained site values of one θ of shape (D,), in the dtype of `x`."""
        prototype = jax.tree.map(lambda leaf: leaf.astype(x.dtype), self.initial_sites)
        return ravel_pytree(prototype)[1](x)

    def _check_points(self, x: Float[ArrayLike, "*batch D"], name: str, single: bool) -> Float[Array, "*batch D"]:
        """`x` as a floating array of shape (D,) (`single`) or (*batch, D)."""
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(self.initial_point.dtype)
        wrong = x.shape != (self.dimension,) if single else (x.ndim == 0 or x.shape[-1] != self.dimension)
        if wrong:
            expected = f"({self.dimension},)" if single else f"(..., {self.dimension})"
            raise ValueError(f"`{name}` must have shape {expected} (D = {self.dimension}), got shape {x.shape}.")
        return x

    @eqx.filter_jit
    def __call__(self, x: Float[ArrayLike, " D"]) -> Float[Array, ""]:
        """log p̃(θ) = −U(θ) at one unconstrained point `x` of shape (D,)."""
        sites = self._unravel(self._check_points(x, "x", single=True))
        return -potential_energy(self.model, self.model_args, self.model_kwargs, sites)

    @eqx.filter_jit
    def _constrain_rows(self, rows: Float[Array, "N D"]) -> dict[str, Array]:
        def constrain(row):
            sites = self._unravel(row)
            return constrain_fn(self.model, self.model_args, self.model_kwargs, sites, return_deterministic=True)

        return jax.vmap(constrain)(rows)

    def to_constrained(self, x: Float[ArrayLike, "*batch D"]) -> dict[str, Array]:
        """The site values T(θ) of unconstrained points `x` of shape (*batch, D) (one point, or
        e.g. (J, D) SVGD particles or (S, D) mixture draws): a dict of arrays of shape
        (*batch, *site_shape), with the model's `numpyro.deterministic` sites too."""
        x = self._check_points(x, "x", single=False)
        batch_shape = x.shape[:-1]
        sites = self._constrain_rows(x.reshape(-1, self.dimension))
        return jax.tree.map(lambda leaf: leaf.reshape(batch_shape + leaf.shape[1:]), sites)

    @eqx.filter_jit
    def _unconstrain_rows(self, rows: dict[str, Array]) -> Float[Array, "N D"]:
        def unconstrain(point):
            return ravel_pytree(unconstrain_fn(self.model, self.model_args, self.model_kwargs, point))[0]

        return jax.vmap(unconstrain)(rows)

    def to_unconstrained(self, sites: dict[str, Float[ArrayLike, "..."]]) -> Float[Array, "*batch D"]:
        """θ = T⁻¹(z) of site values `sites` (a dict with every latent site, each of shape
        (*batch, *site_shape) with one common batch shape; other entries, such as deterministic
        sites, are ignored): an array of shape (*batch, D). The inverse of `to_constrained`."""
        if not isinstance(sites, dict):
            raise ValueError(f"`sites` must be a dict of site values, got {type(sites).__name__}.")
        missing = sorted(set(self.constrained_shapes) - set(sites))
        if missing:
            raise ValueError(f"`sites` lacks the latent sites {missing} (it has {sorted(sites)}).")
        values = {name: jnp.asarray(sites[name]) for name in self.constrained_shapes}
        batch_shapes = {}
        for name, value in values.items():
            site_shape = self.constrained_shapes[name]
            batch_ndim = value.ndim - len(site_shape)
            if batch_ndim < 0 or value.shape[batch_ndim:] != site_shape:
                raise ValueError(f"`sites[{name!r}]` must have shape (*batch, *{site_shape}), got {value.shape}.")
            batch_shapes[name] = value.shape[:batch_ndim]
        batch_shape = next(iter(batch_shapes.values()))
        if any(shape != batch_shape for shape in batch_shapes.values()):
            raise ValueError(f"The sites in `sites` must share one batch shape, got {batch_shapes}.")
        rows = {name: value.reshape((-1, *self.constrained_shapes[name])) for name, value in values.items()}
        return self._unconstrain_rows(rows).reshape(*batch_shape, self.dimension)

    def sample_constrained(self, posterior: Any, key: PRNGKeyArray, num_samples: int) -> dict[str, Array]:
        """`num_samples` draws θ ~ `posterior` (an approximation on the unconstrained space with
        `sample(key, num_samples) -> (num_samples, D)`, e.g. the `GaussianMixture` of
        `bvbmc.fit`/`svbmc.fit`) mapped to site values: a dict of (num_samples, *site_shape) arrays."""
        if not callable(getattr(posterior, "sample", None)):
            raise ValueError(
                f"`posterior` must have a `sample(key, num_samples)` method, got {type(posterior).__name__}."
            )
        return self.to_constrained(posterior.sample(key, num_samples))
