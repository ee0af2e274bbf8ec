"""The VSBQ reference samples of the two-moons target (`gpcompose.problems.TwoMoons` with s = 0.1), read
from the data folder of the benchmarks."""

from pathlib import Path

import numpy as np


def load_two_moons_reference_samples(data_dir: str | Path) -> np.ndarray:
    """The VSBQ reference samples of the s = 0.1 variant, `<data_dir>/vsbq/bimodal_reference_samples.csv`.

    Returns a NumPy float64 array of shape (10000, 2) (the file's header row `x1,x2` is skipped).
    """
    path = Path(data_dir) / "vsbq" / "bimodal_reference_samples.csv"
    samples = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64)
    if samples.ndim != 2 or samples.shape[1] != 2:
        raise ValueError(f"Expected two columns in {path}, got an array of shape {samples.shape}.")
    return samples
