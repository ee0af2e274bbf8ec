import jax
import pytest

# Tests run in float64 with strict dtype promotion and no implicit rank promotion, so
# that silent up-casts and broadcasting mistakes fail loudly (as in equinox's suite).
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def getkey():
    """Fresh, deterministic PRNG keys: `getkey()` returns a new key at each call."""
    keys = iter(jax.random.split(jax.random.key(20261122), 10_000))
    return lambda: next(keys)
