"""Hyperparameters stored unconstrained, with priors, partitioning and flattening.

Every kernel, mean and likelihood field that is a hyperparameter holds an
`AbstractParameter` (`Positive`, `Real`, `Interval`, `Fixed`). Plain numbers given to
constructors become `Positive` or `Real`;
wrap one in `Fixed` to exclude it from fitting.
"""

from ._interval import Interval as Interval
from ._parameter import AbstractParameter as AbstractParameter
from ._positive import Positive as Positive
from ._real import Fixed as Fixed
from ._real import Real as Real
from ._sample import sample_unconstrained as sample_unconstrained
from ._sample import with_prior_draws as with_prior_draws
from ._tree import (
    as_positive as as_positive,
)
from ._tree import (
    as_real as as_real,
)
from ._tree import (
    flatten as flatten,
)
from ._tree import (
    is_parameter as is_parameter,
)
from ._tree import (
    log_prior as log_prior,
)
from ._tree import (
    partition as partition,
)
from ._tree import (
    positive_converter as positive_converter,
)
from ._tree import (
    satisfies_constraints as satisfies_constraints,
)
from ._tree import (
    trainable_spec as trainable_spec,
)
from ._tree import (
    value_of as value_of,
)
