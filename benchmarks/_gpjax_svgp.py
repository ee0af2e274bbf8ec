"""GPJax's SVGP as a baseline of `aaci_convergence.py` (the issue's "GPJax's SVGP as well").

The model is GPJax's own (`gpjax` ≥ 1.0, in the `bench` extra): `WhitenedVariationalGaussian`
over a `NonConjugateModel` with an `RBF` kernel (ARD lengthscales), a `Zero` mean and GPJax's
`StudentT` likelihood, trained by one Adam on `gpjax.objectives.elbo` (q's mean and root covariance
and every hyperparameter, the minibatch expectation by GPJax's Gauss–Hermite integrator, scaled by
N/|B| through `Dataset(n_total=N)`). It starts from the hyperparameters of the other methods
and keeps what they keep fixed: the inducing inputs Z and the Student-t ν are wrapped in
`paramax.non_trainable` (a stop-gradient, so Adam's update of them is zero). The minibatches are the
other methods' (`minibatch`, uniform with replacement as in GPJax's own `fit`).

For the test metrics, q(v) and the hyperparameters are read back into gpcompose's model, so every
method is scored by the same predictive code (the whitened parametrisation is the same, u = L_K v;
only the Cholesky jitter of K_ZZ may differ, GPJax's prior jitter 10⁻⁶ against ours).

GPJax has no Laplace or Matérn-3/2 likelihood and its `Bernoulli` uses the probit link, so only the
Student-t problems (`casp`) have this baseline.
"""

import equinox as eqx
import gpjax
import optax
import paramax
from _common import strong_types

import gpcompose
from gpcompose.parameters import Fixed


def gpjax_model(model, Z):
    """GPJax's SVGP with gpcompose's (kernel, Student-t likelihood, zero mean) `model` as its start."""
    kernel, likelihood, _ = model
    if not isinstance(likelihood, gpcompose.likelihoods.StudentT):
        raise ValueError(
            "the GPJax baseline needs a Student-t likelihood: GPJax has no Laplace or Matérn-3/2 "
            "likelihood and its Bernoulli uses the probit link"
        )
    prior = gpjax.gps.Prior(
        mean_function=gpjax.mean_functions.Zero(),
        kernel=gpjax.kernels.RBF(lengthscale=kernel.lengthscale.value, variance=kernel.variance.value),
    )
    student_t = gpjax.likelihoods.StudentT(
        degrees_of_freedom=likelihood.degrees_of_freedom.value,
        scale=likelihood.scale.value,
    )
    family = gpjax.variational_families.WhitenedVariationalGaussian(model=prior * student_t, inducing_inputs=Z)
    return eqx.tree_at(
        lambda family: (family.inducing_inputs, family.model.likelihood.degrees_of_freedom),
        family,
        replace_fn=paramax.non_trainable,
    )


def gpcompose_view(family, natural_from_moments):
    """(q(v) in natural parameters, (kernel, likelihood, mean)) of a GPJax `family` in gpcompose's terms."""
    family = paramax.unwrap(family)
    natural = natural_from_moments(family.variational_mean[:, 0], family.variational_root_covariance)
    kernel = family.model.prior.kernel
    likelihood = family.model.likelihood
    model = (
        gpcompose.kernels.SquaredExponential(kernel.lengthscale, kernel.variance),
        gpcompose.likelihoods.StudentT(Fixed(likelihood.degrees_of_freedom), likelihood.scale),
        gpcompose.means.Zero(),
    )
    return natural, model


class GPJaxState(eqx.Module):
    family: eqx.Module
    optimizer_state: optax.OptState


def gpjax_svgp_adam(model, Z, X, y, batch_size, learning_rate, minibatch, natural_from_moments):
    """(init, step, to_natural) of GPJax's SVGP trained by Adam, in `aaci_convergence`'s protocol
    (its `minibatch` and `natural_from_moments` passed in)."""
    optimizer = optax.adam(learning_rate)
    num_data = X.shape[0]

    def init():
        family = strong_types(gpjax_model(model, Z))  # so that the jitted step compiles once
        return strong_types(GPJaxState(family, optimizer.init(eqx.filter(family, eqx.is_inexact_array))))

    def step(state, key, X, y):
        X_batch, y_batch = minibatch(key, X, y, batch_size)
        batch = gpjax.Dataset(X=X_batch, y=y_batch[:, None], n_total=num_data)
        gradient = eqx.filter_grad(lambda family: -gpjax.objectives.elbo(family, batch))(state.family)
        updates, optimizer_state = optimizer.update(
            gradient, state.optimizer_state, eqx.filter(state.family, eqx.is_inexact_array)
        )
        return GPJaxState(eqx.apply_updates(state.family, updates), optimizer_state)

    def to_natural(state):
        return gpcompose_view(state.family, natural_from_moments)

    return init, step, to_natural
