"""Bijections between bounded boxes and the unbounded space where SVBMC, VBMC and BVBMC
run inference, with log-Jacobians, the affine whitening of that space, and push-forwards
of Gaussian mixtures through them."""

from ._bounded import BoundedTransform as BoundedTransform
from ._transformed_mixture import TransformedMixture as TransformedMixture
from ._whitened import WhitenedTransform as WhitenedTransform
