"""Stein variational Gaussian processes (Pinder, Nemeth & Leslie): SVGD over GP
hyperparameters (and whitened latents) for the conjugate, whitened non-Gaussian and
sparse minibatched models, with particle-mixture predictions."""

from ._algorithm import SteinGP as SteinGP
from ._conjugate import ConjugateModel as ConjugateModel
from ._default_priors import with_default_priors as with_default_priors
from ._fit import fit as fit
from ._fit import make_model as make_model
from ._model import AbstractSteinGPModel as AbstractSteinGPModel
from ._model import SteinGPParticle as SteinGPParticle
from ._result import SteinGPResult as SteinGPResult
from ._result import mixture_moments as mixture_moments
from ._sparse import SparseWhitenedModel as SparseWhitenedModel
from ._whitened import WhitenedModel as WhitenedModel
