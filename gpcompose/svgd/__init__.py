"""Stein variational gradient descent (Liu & Wang 2016) on particles that are any pytree:
particle kernels, the Stein direction with the kernelised Stein discrepancy, and the
`SVGD` init/step algorithm."""

from ._direction import stein_variational_direction as stein_variational_direction
from ._kernels import RBF as RBF
from ._kernels import AbstractParticleKernel as AbstractParticleKernel
from ._kernels import median_squared_lengthscale as median_squared_lengthscale
from ._svgd import SVGD as SVGD
from ._svgd import SVGDInfo as SVGDInfo
from ._svgd import SVGDState as SVGDState
