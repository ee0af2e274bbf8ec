"""Prior mean functions."""

from ._base import AbstractMean as AbstractMean
from ._constant import Constant as Constant
from ._constant import Zero as Zero
from ._negative_quadratic import NegativeQuadratic as NegativeQuadratic
