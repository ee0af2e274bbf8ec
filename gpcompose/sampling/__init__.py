"""Pathwise (decoupled random-feature) posterior samples of a GP and their extrema."""

from ._base import AbstractSamples as AbstractSamples
from ._extrema import SampleExtrema as SampleExtrema
from ._extrema import sample_extrema as sample_extrema
from ._pathwise import PathwiseSamples as PathwiseSamples
from ._pathwise import pathwise as pathwise
