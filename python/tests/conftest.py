"""Shared inputs of the tests: uneven sample times with gaps, as a survey
takes them."""

import numpy as np
import pytest


def light_curve(n=120, seed=1, span=40.0, period=3.7, gaps=True):
    """``(t, y, dy)``: a sinusoid with noise at uneven times over ``span``
    with two gaps (no samples in 30-45% and 70-80% of the span)."""
    r = np.random.default_rng(seed)
    t = np.sort(r.uniform(0.0, span, 4 * n))
    if gaps:
        keep = ~(((t > 0.30 * span) & (t < 0.45 * span)) | ((t > 0.70 * span) & (t < 0.80 * span)))
        t = t[keep]
    t = np.sort(r.choice(t, n, replace=False)) + 5000.0
    y = 1.5 + np.sin(2 * np.pi * t / period + 0.3) + 0.4 * r.standard_normal(n)
    dy = r.uniform(0.2, 0.8, n)
    return t, y, dy


@pytest.fixture(scope="session")
def curve():
    return light_curve()


def gpu_available():
    import ptxlab

    try:
        ptxlab.LombScargle([0.0, 1.0, 2.0], [0.0, 1.0, 0.5], backend="gpu").power([0.1])
        return True, ""
    except RuntimeError as e:
        return False, str(e).splitlines()[0]
