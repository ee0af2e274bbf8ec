import optax

from .._observations import check_prior
from ..likelihoods import AbstractSuperGaussianLikelihood


def check_model(kernel, likelihood, mean, optimizer) -> None:
    """`ValueError` unless the fields of an AACI algorithm have the right types."""
    check_prior(kernel, mean)
    if not isinstance(likelihood, AbstractSuperGaussianLikelihood):
        raise ValueError(
            f"`likelihood` must be an AbstractSuperGaussianLikelihood (e.g. gpcompose.likelihoods.Logistic()), "
            f"got {type(likelihood).__name__}."
        )
    if optimizer is not None and not isinstance(optimizer, optax.GradientTransformation):
        raise ValueError(
            f"`optimizer` must be an optax GradientTransformation or None, got {type(optimizer).__name__}."
        )
