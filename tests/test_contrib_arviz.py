import importlib
import sys

import numpy as np
import pytest

from gpcompose.contrib.arviz import to_inference_data


def test_dict_of_sites_round_trips_by_chain():
    rng = np.random.default_rng(0)
    samples = {"scale": rng.gamma(2.0, size=12), "weights": rng.dirichlet(np.ones(3), size=12)}
    inference_data = to_inference_data(samples, num_chains=3)
    posterior = inference_data.posterior
    assert list(posterior.data_vars) == ["scale", "weights"]
    assert posterior["scale"].shape == (3, 4) and posterior["weights"].shape == (3, 4, 3)
    assert posterior.sizes["chain"] == 3 and posterior.sizes["draw"] == 4
    # chain c holds draws 4c … 4c + 3
    np.testing.assert_array_equal(posterior["scale"].values[1], samples["scale"][4:8])
    np.testing.assert_array_equal(posterior["weights"].values.reshape(12, 3), samples["weights"])
    only_scale = to_inference_data(samples, site_names=["scale"])
    assert list(only_scale.posterior.data_vars) == ["scale"]
    np.testing.assert_array_equal(only_scale.posterior["scale"].values[0], samples["scale"])


def test_array_of_draws_with_and_without_names():
    draws = np.random.default_rng(1).normal(size=(10, 2))
    named = to_inference_data(draws, site_names=["mean", "log_scale"], num_chains=2).posterior
    assert list(named.data_vars) == ["mean", "log_scale"]
    np.testing.assert_array_equal(named["log_scale"].values.reshape(-1), draws[:, 1])
    vector = to_inference_data(draws).posterior
    assert list(vector.data_vars) == ["x"] and vector["x"].shape == (1, 10, 2)
    np.testing.assert_array_equal(vector["x"].values[0], draws)
    with_dims = to_inference_data(draws, dims={"x": ["parameter"]}, coords={"parameter": ["a", "b"]}).posterior
    assert list(with_dims["parameter"].values) == ["a", "b"]


def test_errors():
    draws = np.zeros((10, 2))
    with pytest.raises(ValueError, match="`num_chains` must be a positive int"):
        to_inference_data(draws, num_chains=0)
    with pytest.raises(ValueError, match=r"multiple of num_chains = 3"):
        to_inference_data(draws, num_chains=3)
    with pytest.raises(ValueError, match="`site_names` must hold 2 distinct names"):
        to_inference_data(draws, site_names=["a"])
    with pytest.raises(ValueError, match=r"shape \(num_draws, D\)"):
        to_inference_data(np.zeros(10))
    with pytest.raises(ValueError, match=r"`site_names` \['b'\] are not in `samples`"):
        to_inference_data({"a": np.zeros(4)}, site_names=["b"])
    with pytest.raises(ValueError, match="same number of draws"):
        to_inference_data({"a": np.zeros(4), "b": np.zeros(6)})


def test_import_without_arviz_names_the_extra(monkeypatch):
    for module in [name for name in sys.modules if name == "arviz" or name.startswith("arviz.")]:
        monkeypatch.setitem(sys.modules, module, None)  # an import of any of them now fails
    monkeypatch.delitem(sys.modules, "gpcompose.contrib.arviz")
    with pytest.raises(ImportError, match=r"pip install 'gpcompose\[contrib\]'"):
        importlib.import_module("gpcompose.contrib.arviz")
