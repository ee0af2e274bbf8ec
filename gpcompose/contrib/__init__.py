"""Bridges to other libraries, each behind an optional dependency (`pip install 'gpcompose[contrib]'`).

- `gpcompose.contrib.numpyro`: a NumPyro model as a log density on a flat unconstrained vector
  (with the log-Jacobian) and the maps between that vector and the model's sample sites, for
  `svbmc`, `bvbmc` and `svgd`.
- `gpcompose.contrib.arviz`: posterior samples as an ArviZ `InferenceData`.

`import gpcompose` does not import these modules; importing one without its library raises an
`ImportError` that names the extra to install.
"""
