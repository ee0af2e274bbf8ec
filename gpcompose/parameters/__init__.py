"""Hyperparameters stored unconstrained, with priors, partitioning and flattening.

Every kernel, mean and likelihood field that is a hyperparameter holds an
`AbstractParameter`. Plain numbers given to constructors become `Positive` or `Real`;
wrap one in `Fixed` to exclude it from fitting.
"""

from ._parameter import AbstractParameter as AbstractParameter
from ._positive import Positive as Positive
from ._real import Fixed as Fixed, Real as Real
from ._tree import (
    as_positive as as_positive,
    as_real as as_real,
    flatten as flatten,
    is_parameter as is_parameter,
    log_prior as log_prior,
    partition as partition,
    trainable_spec as trainable_spec,
    value_of as value_of,
)
