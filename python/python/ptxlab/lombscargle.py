"""astropy's ``LombScargle`` on ptxlab's kernels, and batches of curves.

Frequencies are in cycles per unit of ``t``, as in astropy; the lab works
in angular frequency (``w = 2 pi f``), and this module converts. The sums
are computed exactly at every frequency (astropy's ``method="cython"`` or
``"slow"`` results); astropy's ``method`` names are accepted for
compatibility and do not change the result.
"""

from __future__ import annotations

import numpy as np

from . import _native
from ._arrays import BACKENDS, PRECISIONS, check_choice, gpu_ordinal, like, real_1d, to_host

NORMALIZATIONS = tuple(_native.lomb_normalizations())
# astropy's method names (each gives the exact sums here).
ASTROPY_METHODS = ("auto", "slow", "chi2", "cython", "fast", "fastchi2", "scipy", "fastnifty", "fastnifty_chi2")


def _frequency(frequency) -> tuple[np.ndarray, tuple]:
    f = np.asarray(to_host(frequency))
    shape = f.shape
    f = real_1d("frequency", f.reshape(-1), allow_scalar=True)
    if f.size == 0:
        raise ValueError("frequency is empty; give at least one frequency")
    bad = f <= 0
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(
            f"frequency[{i}] = {f[i]}; frequencies must be positive (cycles per unit of t)"
        )
    return f, shape


def _run(t, y, dy, offsets, f, fit_mean, center_data, normalization, backend, precision, device, best_only=False):
    out = _native.lomb_batch(
        t.tobytes(),
        y.tobytes(),
        None if dy is None else dy.tobytes(),
        np.asarray(offsets, dtype=np.uint64).tobytes(),
        (2.0 * np.pi * f).tobytes(),
        bool(fit_mean),
        bool(center_data),
        normalization,
        backend,
        precision,
        int(device),
        best_only,
    )
    curves = len(offsets) - 1
    if best_only:
        peaks = np.frombuffer(out, dtype=np.float64).reshape(2, curves)
        return peaks[0].astype(np.int64), peaks[1].copy()
    dtype = np.float64 if precision == "f64" else np.float32
    return np.frombuffer(out, dtype=dtype).reshape(curves, f.size)


class LombScargle:
    """astropy's ``LombScargle(t, y, dy, fit_mean, center_data, nterms,
    normalization)`` with the same defaults and results, run on a GPU
    (``backend="gpu"``), the lab's CPU simulator of the same kernels
    (``"sim"``) or the lab's f64 CPU reference (``"cpu"``), in ``"f64"`` or
    ``"f32"``.

    ``t``, ``y`` and ``dy`` are NumPy arrays, or torch/CuPy arrays (then the
    power comes back as the same kind of array on their device). ``dy`` may
    be a scalar. Only ``nterms=1`` is computed by the lab.
    """

    def __init__(
        self,
        t,
        y,
        dy=None,
        fit_mean=True,
        center_data=True,
        nterms=1,
        normalization="standard",
        backend="gpu",
        precision="f64",
        device=None,
    ):
        if isinstance(nterms, bool) or not isinstance(nterms, (int, np.integer)) or nterms < 1:
            raise ValueError(f"nterms={nterms!r}; give a whole number of terms, at least 1")
        if nterms != 1:
            raise ValueError(
                f"nterms={nterms}: ptxlab computes the single-term periodogram only (nterms=1); "
                "use astropy.timeseries.LombScargle for more terms"
            )
        self.normalization = check_choice("normalization", normalization, NORMALIZATIONS)
        self.backend = check_choice("backend", backend, BACKENDS)
        self.precision = check_choice("precision", precision, PRECISIONS)
        self.fit_mean = bool(fit_mean)
        self.center_data = bool(center_data)
        self.nterms = 1
        self._template = t
        self.device = gpu_ordinal(self.backend, device, t, y, dy)
        self.t = real_1d("t", t)
        self.y = real_1d("y", y)
        if self.t.size != self.y.size:
            raise ValueError(f"t has {self.t.size} values and y has {self.y.size}; they must have the same length")
        if self.t.size < 2:
            raise ValueError(f"{self.t.size} samples; give at least 2")
        if dy is None:
            self.dy = None
        else:
            d = real_1d("dy", dy, allow_scalar=True)
            if d.size == 1:
                d = np.full(self.t.size, d[0])
            if d.size != self.t.size:
                raise ValueError(f"dy has {d.size} values and t has {self.t.size}; give one per sample or a scalar")
            if (d <= 0).any():
                i = int(np.argmax(d <= 0))
                raise ValueError(f"dy[{i}] = {d[i]}; every uncertainty must be above 0")
            self.dy = d

    def autofrequency(
        self,
        samples_per_peak=5,
        nyquist_factor=5,
        minimum_frequency=None,
        maximum_frequency=None,
        return_freq_limits=False,
    ):
        """astropy's frequency grid: spacing ``1 / (baseline samples_per_peak)``
        from half of it up to ``nyquist_factor`` times the average Nyquist
        frequency (or the limits given)."""
        baseline = self.t.max() - self.t.min()
        if not baseline > 0:
            raise ValueError("every sample has the same time; the baseline is 0 and there is no frequency grid")
        n_samples = self.t.size
        df = 1.0 / baseline / samples_per_peak
        if minimum_frequency is None:
            minimum_frequency = 0.5 * df
        if maximum_frequency is None:
            avg_nyquist = 0.5 * n_samples / baseline
            maximum_frequency = nyquist_factor * avg_nyquist
        nf = 1 + int(np.round((maximum_frequency - minimum_frequency) / df))
        if return_freq_limits:
            return minimum_frequency, minimum_frequency + df * (nf - 1)
        return minimum_frequency + df * np.arange(nf)

    def power(
        self,
        frequency,
        normalization=None,
        method="auto",
        assume_regular_frequency=False,
        method_kwds=None,
    ):
        """The periodogram at ``frequency`` (cycles per unit of t, positive;
        any shape: the power has the same shape)."""
        check_choice("method", method, ASTROPY_METHODS)
        norm = self.normalization if normalization is None else check_choice(
            "normalization", normalization, NORMALIZATIONS
        )
        f, shape = _frequency(frequency)
        p = _run(
            self.t,
            self.y,
            self.dy,
            [0, self.t.size],
            f,
            self.fit_mean,
            self.center_data,
            norm,
            self.backend,
            self.precision,
            self.device,
        )
        return like(self._template, p.reshape(shape))

    def autopower(
        self,
        method="auto",
        method_kwds=None,
        normalization=None,
        samples_per_peak=5,
        nyquist_factor=5,
        minimum_frequency=None,
        maximum_frequency=None,
    ):
        """``(frequency, power)`` on :meth:`autofrequency`'s grid."""
        frequency = self.autofrequency(
            samples_per_peak=samples_per_peak,
            nyquist_factor=nyquist_factor,
            minimum_frequency=minimum_frequency,
            maximum_frequency=maximum_frequency,
        )
        power = self.power(frequency, normalization=normalization, method=method, method_kwds=method_kwds)
        return like(self._template, frequency), power


def _curves(curves, dy, offsets):
    """Flat ``(t, y, dy, offsets)`` from a ragged list of curves or from
    flat arrays with offsets."""
    if offsets is not None:
        if not isinstance(curves, (tuple, list)) or len(curves) not in (2, 3):
            raise TypeError("with offsets, curves is (t, y) or (t, y, dy): flat arrays, curve after curve")
        t = real_1d("t", curves[0])
        y = real_1d("y", curves[1])
        d = curves[2] if len(curves) == 3 else dy
        d = None if d is None else real_1d("dy", d)
        o = np.asarray(offsets)
        if o.ndim != 1 or not np.issubdtype(o.dtype, np.integer):
            raise TypeError(f"offsets must be a 1-D integer array (curves + 1 values); got dtype {o.dtype}, shape {o.shape}")
        if (o < 0).any():
            raise ValueError("offsets must not be negative")
        return t, y, d, o.astype(np.uint64), curves[0]
    if not isinstance(curves, (list, tuple)) or len(curves) == 0:
        raise TypeError("curves is a non-empty list of (t, y) or (t, y, dy) tuples, or flat arrays with offsets=")
    if dy is not None:
        raise TypeError("give dy inside each curve, (t, y, dy), or with flat arrays and offsets=")
    ts, ys, ds, o = [], [], [], [0]
    with_dy = None
    for c, cur in enumerate(curves):
        if isinstance(cur, dict):
            cur = (cur["t"], cur["y"], cur.get("dy"))
        if not isinstance(cur, (tuple, list)) or len(cur) not in (2, 3):
            raise TypeError(f"curve {c} is {type(cur).__name__}; each curve is (t, y) or (t, y, dy)")
        has = len(cur) == 3 and cur[2] is not None
        if with_dy is None:
            with_dy = has
        elif with_dy != has:
            raise ValueError(f"curve {c} {'has' if has else 'lacks'} dy unlike curve 0; give dy for every curve or none")
        t = real_1d(f"curve {c} t", cur[0], check_finite=False)
        y = real_1d(f"curve {c} y", cur[1], check_finite=False)
        if t.size != y.size:
            raise ValueError(f"curve {c}: t has {t.size} values and y has {y.size}; they must have the same length")
        ts.append(t)
        ys.append(y)
        if has:
            d = real_1d(f"curve {c} dy", cur[2], allow_scalar=True, check_finite=False)
            ds.append(np.full(t.size, d[0]) if d.size == 1 else d)
        o.append(o[-1] + t.size)
    o = np.asarray(o, dtype=np.uint64)
    flat = {"t": np.concatenate(ts), "y": np.concatenate(ys)}
    if with_dy:
        flat["dy"] = np.concatenate(ds)
    # Finiteness once over the flat arrays; the message names the curve.
    for name, a in flat.items():
        bad = ~np.isfinite(a)
        if bad.any():
            i = int(np.argmax(bad))
            c = int(np.searchsorted(o, i, side="right")) - 1
            raise ValueError(
                f"curve {c} {name}[{i - int(o[c])}] = {a[i]} is not finite; every value must be a finite number"
            )
    first = curves[0]["t"] if isinstance(curves[0], dict) else curves[0][0]
    return flat["t"], flat["y"], flat.get("dy"), o, first


def _batch_args(curves, frequency, dy, offsets, normalization, backend, precision, device):
    """The checked arguments of a batch call: the choices, the flat curves
    with their offsets and the array that names the device, the device's
    ordinal, and the 1-D frequency grid."""
    normalization = check_choice("normalization", normalization, NORMALIZATIONS)
    backend = check_choice("backend", backend, BACKENDS)
    precision = check_choice("precision", precision, PRECISIONS)
    t, y, d, o, template = _curves(curves, dy, offsets)
    ordinal = gpu_ordinal(backend, device, template)
    f, shape = _frequency(frequency)
    if len(shape) > 1:
        raise ValueError(f"frequency has shape {shape}; give a 1-D grid shared by every curve")
    return normalization, backend, precision, t, y, d, o, template, ordinal, f


def lombscargle_batch(
    curves,
    frequency,
    dy=None,
    offsets=None,
    fit_mean=True,
    center_data=True,
    normalization="standard",
    backend="gpu",
    precision="f64",
    return_best_period=False,
    device=None,
):
    """Periodograms of many curves on one frequency grid, in one launch.

    ``curves`` is a list of ``(t, y)`` or ``(t, y, dy)`` tuples (ragged
    lengths), or flat arrays ``(t, y)`` / ``(t, y, dy)`` with ``offsets``
    (``curves + 1`` indices: curve ``c`` is samples
    ``offsets[c]:offsets[c + 1]``). ``frequency`` is in cycles per unit of t.
    Returns the ``(curves, frequencies)`` power array, and with
    ``return_best_period=True`` also each curve's best period (``1 / f`` at
    its highest power; NaN for a curve without a finite value).
    """
    normalization, backend, precision, t, y, d, o, template, ordinal, f = _batch_args(
        curves, frequency, dy, offsets, normalization, backend, precision, device
    )
    p = _run(t, y, d, o, f, fit_mean, center_data, normalization, backend, precision, ordinal)
    power = like(template, p)
    if not return_best_period:
        return power
    return power, like(template, best_period(p, f))


def lombscargle_peaks(
    curves,
    frequency,
    dy=None,
    offsets=None,
    fit_mean=True,
    center_data=True,
    normalization="standard",
    backend="gpu",
    precision="f64",
    device=None,
):
    """Each curve's best period and its power, as :func:`lombscargle_batch`
    with ``return_best_period=True`` would find them (the highest finite
    power, the first of equal ones; NaN for a curve without one), without
    the ``(curves, frequencies)`` power array: the peaks are found next to
    the kernel's output, and only two values per curve come back. Returns
    ``(best_period, peak_power)``, float64 NumPy arrays of one value per
    curve."""
    normalization, backend, precision, t, y, d, o, _, ordinal, f = _batch_args(
        curves, frequency, dy, offsets, normalization, backend, precision, device
    )
    idx, peak = _run(t, y, d, o, f, fit_mean, center_data, normalization, backend, precision, ordinal, best_only=True)
    best = np.full(idx.size, np.nan)
    found = idx >= 0
    best[found] = 1.0 / f[idx[found]]
    return best, peak


def best_period(power: np.ndarray, frequency: np.ndarray) -> np.ndarray:
    """``1 / frequency`` at each row's highest finite power (NaN for a row
    without one)."""
    p = np.where(np.isfinite(power), power, -np.inf)
    i = np.argmax(p, axis=1)
    best = 1.0 / np.asarray(frequency, dtype=np.float64)[i]
    best[~np.isfinite(p[np.arange(p.shape[0]), i])] = np.nan
    return best
