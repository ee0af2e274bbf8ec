"""`public_jit`: Python numbers become arrays (no recompilation for a new value), a default
left out and passed explicitly share one program, and named static arguments stay static."""

import re

import equinox as eqx
import jax.numpy as jnp
import pytest

from gpcompose._jit import public_jit


def test_new_scalar_values_and_explicit_defaults_reuse_one_trace():
    @public_jit()
    @eqx.debug.assert_max_traces(max_traces=1)
    def shifted(x, shift, scale=None):
        return x + shift if scale is None else scale * (x + shift)

    x = jnp.arange(3.0)
    assert jnp.array_equal(shifted(x, 1.0), x + 1.0)
    assert jnp.array_equal(shifted(x, 2.0), x + 2.0)
    assert jnp.array_equal(shifted(x, 3.0, None), x + 3.0)
    assert jnp.array_equal(shifted(x, shift=4.0, scale=None), x + 4.0)


def test_static_argnames_and_numeric_defaults_stay_python_numbers():
    @public_jit(static_argnames=("count",))
    def repeated(x, count, copies=2):
        assert isinstance(count, int) and isinstance(copies, int)
        return jnp.tile(x, count * copies)

    assert repeated(jnp.ones(2), 3).shape == (12,)


def test_run_time_errors_name_the_public_function_or_the_class_of_self():
    from gpcompose._errors import error_if

    @public_jit()
    def check(x):
        return error_if(x, jnp.any(x < 0), "`x` must be non-negative.")

    class Checker(eqx.Module):
        @public_jit()
        def check(self, x):
            return check(error_if(x, jnp.any(x > 10), "`x` must be at most 10."))

    class Subclass(Checker):
        pass

    prefix = f"{__name__}.test_run_time_errors_name_the_public_function_or_the_class_of_self.<locals>"
    with pytest.raises(eqx.EquinoxRuntimeError, match=re.escape(f"{prefix}.check: `x` must be non-negative.")):
        check(-jnp.ones(2))
    with pytest.raises(eqx.EquinoxRuntimeError, match=re.escape(f"{prefix}.Subclass.check: `x` must be at most")):
        Subclass().check(20 * jnp.ones(2))
    # the innermost public function names the error
    with pytest.raises(eqx.EquinoxRuntimeError, match=re.escape(f"{prefix}.check: `x` must be non-negative.")):
        Subclass().check(-jnp.ones(2))
