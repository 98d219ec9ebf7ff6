"""ptxlab from Python: the lab's GPU kernels (compiled from Rust, shipped
as cubins inside the wheel) on NumPy, torch and CuPy arrays.

* :class:`LombScargle`: astropy's ``LombScargle`` API (same defaults and
  results), on a GPU, the lab's simulator or its CPU reference;
* :func:`lombscargle_batch`: many (ragged) curves on one grid in one launch,
  and :func:`lombscargle_peaks`: only their best periods and peak powers;
* :mod:`ptxlab.poisson`: ``solve(b, h, ...)`` by multigrid or PCG;
* :func:`attention` (and :func:`attention_varlen` for packed sequences of
  different lengths), :func:`matmul`: BF16/FP16 GPU tensors, without a copy;
* :mod:`ptxlab.dask`: batches over the partitions of a Dask collection.

Every function takes ``backend="gpu"|"sim"|"cpu"`` where the lab has those
backends. Invalid input raises ``TypeError`` or ``ValueError`` with the
lab's message; a missing GPU or driver raises ``RuntimeError``.
"""

from . import _native, poisson
from .lombscargle import LombScargle, best_period, lombscargle_batch, lombscargle_peaks
from .nn import attention, attention_varlen, matmul

__version__ = _native.__version__

__all__ = ["LombScargle", "lombscargle_batch", "lombscargle_peaks", "best_period", "poisson", "attention", "attention_varlen", "matmul", "__version__"]
