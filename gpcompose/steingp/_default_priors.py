import jax
import jax.numpy as jnp
from jaxtyping import PyTree

from ..parameters import Positive, is_parameter
from ..priors import Gamma

# GPflow's default lower bound on positive parameters, used by SteinGP App. 12.
MINIMUM = 1e-6


def with_default_priors(tree: PyTree) -> PyTree:
    """`tree` with every `Positive` parameter that has no prior given SteinGP's defaults.

    SteinGP (Pinder, Nemeth & Leslie 2020, App. 12) puts a Gamma prior with shape 1 and *scale* 2
    (an exponential with mean 2, log p(θ) = −log 2 − θ/2) on every lengthscale and
    variance, the noise variance included, and constrains each by θ = 10⁻⁶ + softplus(u).
    A parameter without a prior is rebuilt with that prior and with `minimum = 10⁻⁶` (its
    value and transform are kept). Parameters with a prior, `Real` and `Fixed` parameters
    are left as they are; give a parameter a prior to opt out.
    """

    def default(node):
        if not isinstance(node, Positive) or node.prior is not None:
            return node
        dtype = node.unconstrained.dtype
        prior = Gamma(jnp.asarray(1.0, dtype), jnp.asarray(2.0, dtype))
        return Positive(node.value, transform=node.transform, minimum=max(node.minimum, MINIMUM), prior=prior)

    return jax.tree.map(default, tree, is_leaf=is_parameter)
