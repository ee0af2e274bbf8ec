"""Smoke test of examples/quickstart.py: on 60 noisy points (noise sd 0.2) the ML-II fits of the
exact and the sparse GP recover the latent sin(3x) + 0.3x to an RMSE below the noise sd (measured
0.134 and 0.126), and the plot is written. A fit at the prior mean is off by the latent function's
sd, 0.8."""

import jax

from .examples_loader import load_example


def test_quickstart_smoke(tmp_path):
    errors = load_example("quickstart").run(jax.random.key(0), out_dir=tmp_path, smoke=True)
    assert (tmp_path / "quickstart.png").is_file()
    assert set(errors) == {"exact", "sparse"}
    for name, error in errors.items():
        assert 0.0 < error < 0.2, (name, error)
