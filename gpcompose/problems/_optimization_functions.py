"""The synthetic test functions of bounded BO (Nguyen, Deisenroth & Osborne 2021, Table 1)
in JAX, with their standard domains and known extrema.

Definitions: Surjanovic & Bingham's library (sfu.ca/~ssurjano); the minimum is the
published one, the maximum on the box ours (a grid search refined by L-BFGS-B). Alpine1
is the SFU version with the absolute value; gSobol uses a_i = 1 on [0, 1]^d.
"""

import math
from collections.abc import Callable

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float


class OptimizationFunction(eqx.Module):
    """A test function f on the box [`lower`, `upper`] (tuples) with its known `minimum` and `maximum`."""

    name: str = eqx.field(static=True)
    function: Callable[[Float[Array, " D"]], Float[Array, ""]] = eqx.field(static=True)
    lower: tuple[float, ...] = eqx.field(static=True)
    upper: tuple[float, ...] = eqx.field(static=True)
    minimum: float = eqx.field(static=True)
    maximum: float = eqx.field(static=True)

    @property
    def dimension(self) -> int:
        """The input dimension D, the length of the box bounds."""
        return len(self.lower)

    def __call__(self, x: Float[Array, " D"]) -> Float[Array, ""]:
        return self.function(x)


def _forrester(x):
    return (6.0 * x[0] - 2.0) ** 2 * jnp.sin(12.0 * x[0] - 4.0)


def _branin(x):
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (x[1] - b * x[0] ** 2 + c * x[0] - 6.0) ** 2 + 10.0 * (1 - t) * jnp.cos(x[0]) + 10.0


def _rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _mccormick(x):
    return jnp.sin(x[0] + x[1]) + (x[0] - x[1]) ** 2 - 1.5 * x[0] + 2.5 * x[1] + 1.0


_HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_HARTMANN_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_HARTMANN_P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]])


def _hartmann3(x):
    exponent = -jnp.sum(jnp.asarray(_HARTMANN_A) * (x[None, :] - jnp.asarray(_HARTMANN_P)) ** 2, axis=1)
    return -jnp.sum(jnp.asarray(_HARTMANN_ALPHA) * jnp.exp(exponent))


def _alpine1(x):
    return jnp.sum(jnp.abs(x * jnp.sin(x) + 0.1 * x))


def _g_sobol(x):
    return jnp.prod((jnp.abs(4.0 * x - 2.0) + 1.0) / 2.0)


def optimization_functions() -> dict[str, OptimizationFunction]:
    """The test functions of Nguyen et al. (2021) by name: forrester (1-D), branin, rosenbrock, mccormick (2-D),
    hartmann3 (3-D), alpine1, gsobol (5-D)."""
    return {
        "forrester": OptimizationFunction("forrester", _forrester, (0.0,), (1.0,), -6.02074, 15.8297),
        "branin": OptimizationFunction("branin", _branin, (-5.0, 0.0), (10.0, 15.0), 0.397887, 308.129),
        "rosenbrock": OptimizationFunction("rosenbrock", _rosenbrock, (-2.048,) * 2, (2.048,) * 2, 0.0, 3905.93),
        "mccormick": OptimizationFunction("mccormick", _mccormick, (-1.5, -3.0), (4.0, 4.0), -1.9133, 44.098),
        "hartmann3": OptimizationFunction("hartmann3", _hartmann3, (0.0,) * 3, (1.0,) * 3, -3.86278, -3.8e-5),
        "alpine1": OptimizationFunction("alpine1", _alpine1, (-10.0,) * 5, (10.0,) * 5, 0.0, 43.576),
        "gsobol": OptimizationFunction("gsobol", _g_sobol, (0.0,) * 5, (1.0,) * 5, 0.03125, 7.594),
    }
