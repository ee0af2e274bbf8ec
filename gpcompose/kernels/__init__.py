"""Covariance functions: single-point `evaluate`, vmapped `gram`/`cross`/`diagonal`,
algebra by `+` and `*`, and spectral sampling for random features."""

from ._algebra import Product as Product
from ._algebra import Sum as Sum
from ._base import AbstractKernel as AbstractKernel
from ._constant import Constant as Constant
from ._constant import White as White
from ._dot_product import Linear as Linear
from ._dot_product import Polynomial as Polynomial
from ._matern import (
    AbstractMatern as AbstractMatern,
)
from ._matern import (
    Matern12 as Matern12,
)
from ._matern import (
    Matern32 as Matern32,
)
from ._matern import (
    Matern52 as Matern52,
)
from ._matern import matern_correlation as matern_correlation
from ._periodic import Periodic as Periodic
from ._product_matern import ProductMatern as ProductMatern
from ._random_features import RandomFourierFeatures as RandomFourierFeatures
from ._random_features import random_features as random_features
from ._rational_quadratic import RationalQuadratic as RationalQuadratic
from ._squared_exponential import SquaredExponential as SquaredExponential
from ._stationary import (
    AbstractSpectralKernel as AbstractSpectralKernel,
)
from ._stationary import (
    AbstractStationaryKernel as AbstractStationaryKernel,
)
from ._stationary import squared_distances as squared_distances
