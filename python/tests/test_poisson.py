"""ptxlab.poisson.solve against SciPy's sparse direct solve of the same
5-point system, on an odd grid with a non-zero boundary."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import ptxlab
from ptxlab import poisson


def scipy_solve(b, p0, h):
    """Direct solve of lap_h p = b on the interior, Dirichlet values from p0."""
    ny, nx = b.shape
    mx, my = nx - 2, ny - 2
    ex = sp.diags([np.ones(mx - 1), -2 * np.ones(mx), np.ones(mx - 1)], [-1, 0, 1])
    ey = sp.diags([np.ones(my - 1), -2 * np.ones(my), np.ones(my - 1)], [-1, 0, 1])
    a = (sp.kron(sp.identity(my), ex) + sp.kron(ey, sp.identity(mx))) / h**2
    rhs = b[1:-1, 1:-1].copy()
    rhs[:, 0] -= p0[1:-1, 0] / h**2
    rhs[:, -1] -= p0[1:-1, -1] / h**2
    rhs[0, :] -= p0[0, 1:-1] / h**2
    rhs[-1, :] -= p0[-1, 1:-1] / h**2
    p = p0.copy()
    p[1:-1, 1:-1] = spla.spsolve(a.tocsr(), rhs.ravel()).reshape(my, mx)
    return p


def problem(ny=37, nx=45):
    h = 1.0 / (max(nx, ny) - 1)
    yy, xx = np.meshgrid(np.arange(ny) * h, np.arange(nx) * h, indexing="ij")
    b = np.sin(3 * xx) * np.cos(2 * yy) + 0.5
    p0 = np.zeros((ny, nx))
    p0[0, :] = 1.0 + xx[0, :]
    p0[-1, :] = np.cos(4 * xx[-1, :])
    p0[:, 0] = 0.25
    p0[:, -1] = -0.5 + yy[:, -1]
    return b, p0, h


@pytest.mark.parametrize("backend", ["sim", "cpu"])
@pytest.mark.parametrize("method", ["multigrid", "pcg"])
@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_solve_matches_scipy_on_an_odd_grid(backend, method, precision):
    b, p0, h = problem()
    # f32 holds b and the boundary in f32: the reference solves the same
    # rounded problem.
    r = (lambda a: a) if precision == "f64" else (lambda a: a.astype(np.float32).astype(np.float64))
    want = scipy_solve(r(b), r(p0), h)
    p, info = poisson.solve(b, h, p0=p0, method=method, tol=1e-9, precision=precision, backend=backend,
                            return_info=True)
    assert info["converged"], info
    assert info["rel_residual"] < 1e-9
    assert p.shape == b.shape and p.dtype == np.float64
    # The boundary is p0's; the interior is the direct solve's.
    np.testing.assert_array_equal(p[0], r(p0)[0])
    np.testing.assert_array_equal(p[:, -1], r(p0)[:, -1])
    assert np.max(np.abs(p - want)) / np.max(np.abs(want)) < 1e-7


@pytest.mark.parametrize("backend", ["sim", "cpu"])
@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_spectral_matches_scipy_on_an_odd_grid(backend, precision):
    b, p0, h = problem()
    r = (lambda a: a) if precision == "f64" or backend == "cpu" else (
        lambda a: a.astype(np.float32).astype(np.float64))
    want = scipy_solve(r(b), r(p0), h)
    p, info = poisson.solve(b, h, p0=p0, method="spectral", precision=precision, backend=backend,
                            return_info=True)
    assert info["method"] == "spectral" and info["converged"], info
    assert p.shape == b.shape and p.dtype == np.float64
    np.testing.assert_array_equal(p[-1], r(p0)[-1])
    err = np.max(np.abs(p - want)) / np.max(np.abs(want))
    assert err < (1e-10 if r(b) is b else 1e-5), err
    # In f32 the residual of the rounded field is amplified by 1/h^2: the
    # error against the direct solve above is the accuracy check.
    assert info["rel_residual"] < (1e-10 if r(b) is b else 2e-3)


def test_poisson_errors():
    b, p0, h = problem(9, 11)
    with pytest.raises(ValueError, match="method"):
        poisson.solve(b, h, method="spectral-typo", backend="cpu")
    with pytest.raises(ValueError, match="same shape"):
        poisson.solve(b, h, p0=p0[:-1], backend="cpu")
    with pytest.raises(ValueError, match="2-D"):
        poisson.solve(b.ravel(), h, backend="cpu")
    with pytest.raises(ValueError, match="h"):
        poisson.solve(b, -1.0, backend="cpu")
    with pytest.raises(ValueError, match="tol"):
        poisson.solve(b, h, tol=0.0, backend="cpu")
    bad = b.copy()
    bad[3, 4] = np.inf
    with pytest.raises(ValueError, match=r"b\[3, 4\]"):
        poisson.solve(bad, h, backend="cpu")
    with pytest.raises(ValueError):
        poisson.solve(np.zeros((2, 2)), h, backend="cpu")
    with pytest.raises(ValueError, match="boundary"):
        poisson.solve(b, h, method="spectral", boundary="periodic", backend="cpu")
    with pytest.raises(ValueError, match="spectral"):
        poisson.solve(b, h, boundary="neumann", backend="cpu")
    assert all(m in poisson.METHODS for m in ("multigrid", "pcg", "spectral"))
    assert ptxlab.poisson is poisson
