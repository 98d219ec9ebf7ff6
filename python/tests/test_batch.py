"""lombscargle_batch on a ragged batch against astropy per curve."""

import numpy as np
import pytest
from astropy.timeseries import LombScargle as AstropyLS

import ptxlab
from conftest import light_curve


def ragged(k=5):
    return [light_curve(n=40 + 17 * c, seed=10 + c, period=2.0 + c) for c in range(k)]


@pytest.mark.parametrize("backend", ["sim", "cpu"])
@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_ragged_batch_matches_astropy(backend, precision):
    curves = ragged()
    # A regular grid (the lab's rotation kernel) and an irregular one (direct).
    for f in (np.linspace(0.02, 1.5, 257), np.sort(np.random.default_rng(0).uniform(0.02, 1.5, 101))):
        p, best = ptxlab.lombscargle_batch(curves, f, backend=backend, precision=precision, return_best_period=True)
        assert p.shape == (len(curves), f.size)
        tol = 1e-9 if precision == "f64" else 2e-4
        for c, (t, y, dy) in enumerate(curves):
            want = AstropyLS(t, y, dy).power(f, method="cython")
            assert np.max(np.abs(p[c] - want)) / np.max(want) < tol, (c, backend, precision)
            assert best[c] == pytest.approx(1 / f[np.argmax(want)])


def test_flat_arrays_with_offsets_equal_the_list():
    curves = ragged(3)
    f = np.linspace(0.05, 1.0, 64)
    t = np.concatenate([c[0] for c in curves])
    y = np.concatenate([c[1] for c in curves])
    dy = np.concatenate([c[2] for c in curves])
    offsets = np.cumsum([0] + [len(c[0]) for c in curves])
    a = ptxlab.lombscargle_batch((t, y, dy), f, offsets=offsets, backend="cpu")
    b = ptxlab.lombscargle_batch(curves, f, backend="cpu")
    np.testing.assert_array_equal(a, b)


def test_batch_errors_name_the_curve():
    curves = ragged(3)
    f = np.linspace(0.05, 1.0, 16)
    t, y, dy = curves[1]
    with pytest.raises(ValueError, match="curve 1"):
        ptxlab.lombscargle_batch([curves[0], (t, y[:-1], dy)], f, backend="cpu")
    with pytest.raises(ValueError, match="at least 2"):
        ptxlab.lombscargle_batch([curves[0], (t[:1], y[:1], dy[:1])], f, backend="cpu")
    with pytest.raises(ValueError, match="offsets"):
        ptxlab.lombscargle_batch((t, y), f, offsets=np.array([0, 5, len(t) + 3]), backend="cpu")
    with pytest.raises(ValueError, match="curve 0"):
        c0 = curves[0]
        ptxlab.lombscargle_batch([(c0[0], np.full_like(c0[1], 2.0), c0[2])], f, backend="sim")
    with pytest.raises(TypeError):
        ptxlab.lombscargle_batch("not curves", f)


def test_non_finite_values_name_the_curve_and_the_index():
    curves = ragged(3)
    f = np.linspace(0.05, 1.0, 16)
    t, y, dy = (a.copy() for a in curves[2])
    y[5] = np.nan
    with pytest.raises(ValueError, match=r"curve 2 y\[5\] = nan is not finite"):
        ptxlab.lombscargle_batch([curves[0], curves[1], (t, y, dy)], f, backend="cpu")
    dy = dy.copy()
    dy[0] = np.inf
    with pytest.raises(ValueError, match=r"curve 0 dy\[0\] = inf is not finite"):
        ptxlab.lombscargle_peaks([(curves[0][0], curves[0][1], dy[: len(curves[0][0])])], f, backend="cpu")


@pytest.mark.parametrize("backend", ["sim", "cpu"])
@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_peaks_are_the_batch_best_periods_and_powers(backend, precision):
    curves = ragged(4)
    f = np.linspace(0.02, 1.5, 193)
    p, best = ptxlab.lombscargle_batch(curves, f, backend=backend, precision=precision, return_best_period=True)
    got, peak = ptxlab.lombscargle_peaks(curves, f, backend=backend, precision=precision)
    np.testing.assert_array_equal(got, best)
    np.testing.assert_array_equal(peak, np.max(p, axis=1).astype(np.float64))
    assert got.dtype == np.float64 and peak.shape == (4,)
