"""Dense linear algebra shared by every GP state: Cholesky with a jitter policy,
triangular and positive-definite solves, log-determinants, and rank-1 modifications of a
Cholesky factor on fixed-size arrays.

**Jitter policy.** `cholesky(A)` first factorises `A` itself, then `A + j_k I` with the
escalating sequence

    j_k = s · j_0 · 10^(k−1),  k = 1, …, 6,

where `s = mean(|diag A|)` makes the jitter relative to the scale of the matrix and
`j_0` is `1e-10` in float64 (up to 1e-5) and `1e-6` in float32 (up to 1e-1). The first
attempt whose factor is finite wins, so a well-posed matrix is factorised exactly. If
every attempt fails the factor is replaced by the finite placeholder
`diag(sqrt(|diag A| + j_max))` and `result` is `RESULTS.cholesky_failed`: the caller gets
a flag, never a NaN. A factor that needed a jitter above `JITTER_LEVEL · s` is a factor of
a materially different matrix: its `result` is `RESULTS.jitter_above_level`. Gradients
flow through the factor by the standard Cholesky JVP (the jitter is treated as a
constant), so the policy costs one factorisation in the common case and stays
differentiable under `jit`, `vmap` and `grad`.

**Fixed-capacity convention.** Factors of padded buffers hold identity rows and columns
in unused slots. `cholesky_append` fills the first unused slot in O(n²); it requires that
every slot after it is still an identity row.

**Batches on the CPU.** Under `vmap`, a Cholesky factorisation or triangular solve whose
matrix is batched runs as a `lax.map` of one-matrix LAPACK calls on the CPU, and as one
batched call on other platforms (`lax.platform_dependent`, chosen at lowering). jaxlib's
CPU kernels split a batch over XLA's intra-op thread pool and block the calling pool
thread until the pieces finish; XLA runs independent operations on the same pool, so a
few batched kernels at once can block every thread and the program never returns, while
a one-matrix call runs inline. The rule is a `jax.custom_batching.custom_vmap`, which
cannot be transposed, so it wraps only calls that are never differentiated:
`solve_triangular` is a `lax.custom_linear_solve` (ẋ = L⁻¹(ḃ − L̇x), transposed by the
transposed solve) and the Cholesky JVP solves through `solve_triangular`. Every
derivative, in either mode and in any order with `vmap`, thus reaches LAPACK one matrix at
a time. (lineax's solves batch their solver with `vmap` and throw on non-finite tangents,
which would stop a whole batch for one member whose matrix overflowed; these stay
finite-or-NaN, and the member's result code reports it.)
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap
from jaxtyping import Array, Bool, Float, Int

from ._errors import RESULTS

_MAX_ATTEMPTS = 7

JITTER_LEVEL = 1e-6
"""The largest jitter, relative to s = mean(|diag A|), that leaves the factorised matrix
the same for modelling purposes; `cholesky` reports a larger one as
`RESULTS.jitter_above_level`.

A jitter j adds j to every diagonal entry: in a GP, an extra observation-noise variance j on
top of K + D. Up to 1e-6 of the prior variance this is at most GPflow's default jitter
(1e-6) and its default lower bound on a Gaussian likelihood's variance (1e-6), the size
that practice treats as numerically negligible: at a noise-free observation it lets the
posterior standard deviation grow to at most 1e-3 of the prior's. Above it the added noise
is a visible part of the model (1e-5 of the prior variance is a noise standard deviation of
0.3 % of the prior's).
The level is the same in float32, where it equals the first jitter of the escalation: a
float32 matrix that needs more is flagged (float32 is not enough for it)."""

_LEVEL_ROUNDING = 1.001  # a jitter equal to the level up to rounding is at the level, not above


def initial_relative_jitter(dtype) -> float:
    """The first relative jitter `j_0` of the escalation policy for `dtype`."""
    return 1e-10 if jnp.finfo(dtype).bits >= 64 else 1e-6


class CholeskyFactor(eqx.Module):
    """Lower Cholesky factor of `A + jitter · I`, with the outcome of the factorisation:
    `RESULTS.successful` (jitter 0 or at most `JITTER_LEVEL · mean(|diag A|)`),
    `RESULTS.jitter_above_level`, `RESULTS.cholesky_failed` (a placeholder) or, after a
    rank-1 modification, `RESULTS.update_failed`."""

    lower: Float[Array, "n n"]
    jitter: Float[Array, ""]
    result: RESULTS

    @property
    def succeeded(self) -> Bool[Array, ""]:
        """Whether `lower` is a Cholesky factor of A + jitter·I: `result` is `successful` or
        `jitter_above_level` (not a placeholder, not a broken update)."""
        return (self.result == RESULTS.successful) | (self.result == RESULTS.jitter_above_level)


def _one_matrix_per_call_on_cpu(function):
    """`function(matrix)` or `function(matrix, rhs)` (both `(n, ·)` matrices; `function` also
    takes stacks of them), batched under `vmap` as a `lax.map` of one-matrix calls on the
    CPU and as one stacked call elsewhere (module docstring). A batch of right-hand sides
    with one matrix becomes more columns of one call."""
    one_matrix_function = custom_vmap(function)

    @one_matrix_function.def_vmap
    def _rule(axis_size, in_batched, matrix, *right_hand_sides):
        if not in_batched[0]:
            (rhs,) = right_hand_sides
            solution = one_matrix_function(matrix, jnp.moveaxis(rhs, 0, 1).reshape(rhs.shape[1], -1))
            return jnp.moveaxis(solution.reshape(rhs.shape[1], axis_size, -1), 1, 0), True
        right_hand_sides = [
            rhs if batched else jnp.broadcast_to(rhs, (axis_size, *rhs.shape))
            for rhs, batched in zip(right_hand_sides, in_batched[1:])
        ]

        def one_at_a_time(*stacks):
            return jax.lax.map(lambda arguments: one_matrix_function(*arguments), stacks)

        return jax.lax.platform_dependent(matrix, *right_hand_sides, cpu=one_at_a_time, default=function), True

    return one_matrix_function


@_one_matrix_per_call_on_cpu
def _lapack_cholesky(matrix):
    return jnp.linalg.cholesky(matrix)


@_one_matrix_per_call_on_cpu
def _lapack_lower_solve(lower, rhs):
    return jax.lax.linalg.triangular_solve(lower, rhs, left_side=True, lower=True)


@_one_matrix_per_call_on_cpu
def _lapack_lower_transposed_solve(lower, rhs):
    return jax.lax.linalg.triangular_solve(lower, rhs, left_side=True, lower=True, transpose_a=True)


def _factor_with_jitter(matrix, jitter_scale, attempt):
    jitter = jnp.where(attempt == 0, 0.0, jitter_scale * 10.0 ** (attempt - 1))
    lower = _lapack_cholesky(matrix + jitter * jnp.eye(matrix.shape[0], dtype=matrix.dtype))
    return lower, jitter, jnp.all(jnp.isfinite(lower))


@jax.custom_jvp
def _escalating_cholesky(matrix, jitter_scale):
    def keep_trying(carry):
        attempt, _, _, ok = carry
        return (~ok) & (attempt < _MAX_ATTEMPTS - 1)

    def try_next(carry):
        attempt = carry[0] + 1
        return (attempt, *_factor_with_jitter(matrix, jitter_scale, attempt))

    first = (0, *_factor_with_jitter(matrix, jitter_scale, 0))
    _, lower, jitter, ok = jax.lax.while_loop(keep_trying, try_next, first)
    placeholder = jnp.diag(jnp.sqrt(jnp.abs(jnp.diag(matrix)) + jitter))
    lower = jnp.where(ok, lower, placeholder)
    return lower, jitter, ok


@_escalating_cholesky.defjvp
def _escalating_cholesky_jvp(primals, tangents):
    """dL = L Φ(L⁻¹ dA L⁻ᵀ), Φ = lower triangle with halved diagonal (Murray 2016)."""
    matrix, jitter_scale = primals
    matrix_dot, _ = tangents
    lower, jitter, ok = _escalating_cholesky(matrix, jitter_scale)
    matrix_dot = 0.5 * (matrix_dot + matrix_dot.T)
    inner = solve_triangular(lower, solve_triangular(lower, matrix_dot).T).T
    phi = jnp.tril(inner) - 0.5 * jnp.diag(jnp.diag(inner))
    lower_dot = jnp.where(ok, lower @ phi, 0.0)
    return (lower, jitter, ok), (lower_dot, jnp.zeros_like(jitter), np.zeros((), jax.dtypes.float0))


# Compiled once per shape so that eager calls do not re-trace the while loop.
_compiled_escalating_cholesky = jax.jit(_escalating_cholesky)


def cholesky(matrix: Float[Array, "n n"], relative_jitter: float | None = None) -> CholeskyFactor:
    """Lower Cholesky factor of a symmetric positive (semi)definite `matrix`.

    **Arguments:**

    - `matrix`: symmetric `(n, n)` matrix.
    - `relative_jitter`: first non-zero jitter relative to `mean(|diag A|)`; defaults to
      `initial_relative_jitter(dtype)`. It is multiplied by 10 on each further failure.

    **Returns:** a `CholeskyFactor` with `lower`, the `jitter` actually added and a `result`:
    `RESULTS.successful`, `RESULTS.jitter_above_level` (the jitter exceeds
    `JITTER_LEVEL · mean(|diag A|)`) or `RESULTS.cholesky_failed`.
    """
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"`matrix` must be square, got shape {matrix.shape}.")
    if relative_jitter is None:
        relative_jitter = initial_relative_jitter(matrix.dtype)
    mean_diagonal = jax.lax.stop_gradient(jnp.mean(jnp.abs(jnp.diag(matrix))))
    mean_diagonal = jnp.where(mean_diagonal > 0, mean_diagonal, 1.0)
    lower, jitter, ok = _compiled_escalating_cholesky(matrix, mean_diagonal * relative_jitter)
    material = jitter > _LEVEL_ROUNDING * JITTER_LEVEL * mean_diagonal
    result = RESULTS.where(material, RESULTS.jitter_above_level, RESULTS.successful)
    return CholeskyFactor(lower, jitter, RESULTS.where(ok, result, RESULTS.cholesky_failed))


def solve_triangular(
    lower: Float[Array, "n n"], rhs: Float[Array, " n *k"], *, transpose: bool = False
) -> Float[Array, " n *k"]:
    """Solve `L x = b` (or `Lᵀ x = b` with `transpose=True`) for lower-triangular `L`.

    Only the lower triangle of `L` is read. The solve is a `lax.custom_linear_solve` of the
    operator `x ↦ tril(L) x` (or its transpose) by LAPACK's `trsm`, one matrix per call on
    the CPU under `vmap`; derivatives are ẋ = L⁻¹(ḃ − tril(L̇) x) (module docstring).
    """
    solve, transposed_solve = _lapack_lower_solve, _lapack_lower_transposed_solve
    if transpose:
        solve, transposed_solve = transposed_solve, solve

    def operator(vector):
        triangle = jnp.tril(lower)
        return (triangle.T if transpose else triangle) @ vector

    solution = jax.lax.custom_linear_solve(
        operator,
        rhs.reshape(rhs.shape[0], -1),
        solve=lambda _, vector: solve(lower, vector),
        transpose_solve=lambda _, vector: transposed_solve(lower, vector),
    )
    return solution.reshape(rhs.shape)


def cholesky_solve(lower: Float[Array, "n n"], rhs: Float[Array, " n *k"]) -> Float[Array, " n *k"]:
    """Solve `A x = b` given the lower Cholesky factor `L` of the positive-definite `A`."""
    return solve_triangular(lower, solve_triangular(lower, rhs), transpose=True)


def log_determinant(lower: Float[Array, "n n"]) -> Float[Array, ""]:
    """`log det A = 2 Σ log L_ii` for `A = L Lᵀ`."""
    return 2.0 * jnp.sum(jnp.log(jnp.diag(lower)))


def cholesky_append(
    lower: Float[Array, "n n"], column: Float[Array, " n"], index: Int[Array, ""]
) -> tuple[Float[Array, "n n"], Bool[Array, ""]]:
    """Fill the unused slot `index` of a padded Cholesky factor with a new row/column.

    `lower` factorises a matrix whose rows and columns from `index` on are identity
    (unused slots). `column` is the new column of the matrix at `index`; entries after
    `index` are ignored. With `ℓ = L₁₁⁻¹ a` and `d = √(a_index − ‖ℓ‖²)` the new factor has
    row `index` equal to `[ℓᵀ, d]`, the textbook bordered Cholesky step, in O(n²).

    **Returns:** the new factor and `ok`, false when `a_index − ‖ℓ‖² ≤ 0` (the extended
    matrix is not positive definite); the diagonal is then set to 1 to stay finite.
    """
    slots = jnp.arange(lower.shape[0])
    off_diagonal = jnp.where(slots < index, column, 0.0)
    row = solve_triangular(lower, off_diagonal)
    pivot = column[index] - jnp.sum(row**2)
    ok = pivot > 0
    diagonal = jnp.sqrt(jnp.where(ok, pivot, 1.0))
    row = jnp.where(slots == index, diagonal, row)
    return lower.at[index].set(row), ok


def cholesky_update(
    lower: Float[Array, "n n"], vector: Float[Array, " n"], sign: float = 1.0
) -> tuple[Float[Array, "n n"], Bool[Array, ""]]:
    """Factor of `L Lᵀ + sign · v vᵀ` (rank-1 update for `sign=+1`, downdate for `-1`).

    Column-by-column Givens/hyperbolic rotations (Seeger 2004), O(n²) as one `lax.scan`
    over the columns of `L`.

    **Returns:** the new factor and `ok`, false if a downdate lost positive definiteness
    (the offending pivots are replaced by finite values).
    """

    def rotate_column(remaining, inputs):
        column, index = inputs
        pivot = column[index]
        head = remaining[index]
        radius_squared = pivot**2 + sign * head**2
        ok = radius_squared > 0
        radius = jnp.sqrt(jnp.where(ok, radius_squared, pivot**2))
        cosine = radius / pivot
        sine = head / pivot
        below = jnp.arange(column.shape[0]) > index
        new_column = jnp.where(below, (column + sign * sine * remaining) / cosine, 0.0)
        new_column = new_column.at[index].set(radius)
        remaining = jnp.where(below, cosine * remaining - sine * new_column, remaining)
        return remaining, (new_column, ok)

    indices = jnp.arange(lower.shape[0])
    _, (columns, oks) = jax.lax.scan(rotate_column, vector, (lower.T, indices))
    return columns.T, jnp.all(oks)
