"""2-D Poisson solves on ptxlab's kernels: ``lap_h p = b`` with the
5-point Laplacian on the interior of an ``(ny, nx)`` grid and Dirichlet
values on the boundary (taken from ``p0``'s boundary cells)."""

from __future__ import annotations

import numpy as np

from . import _native
from ._arrays import BACKENDS, PRECISIONS, check_choice, gpu_ordinal, like, real_2d

#: The solve methods of this build of the lab: the iterative ones, then the
#: direct spectral solve.
METHODS = tuple(_native.poisson_methods()) + ("spectral",)

#: The boundary conditions of the spectral solve.
BOUNDARIES = ("dirichlet", "neumann")


def solve(
    b,
    h,
    p0=None,
    method="multigrid",
    tol=1e-8,
    precision="f64",
    backend="gpu",
    maxiter=50,
    device=None,
    return_info=False,
    boundary="dirichlet",
):
    """Solves ``(p[i-1,j] + p[i+1,j] + p[i,j-1] + p[i,j+1] - 4 p[i,j]) / h^2
    = b[i,j]`` on the interior cells of the ``(ny, nx)`` grid (rows, then
    columns: ``x`` is the fastest-varying index), with the boundary cells of
    ``p0`` (zeros by default) held fixed, until ``||b - lap_h p|| / ||b||``
    over the interior is below ``tol`` or after ``maxiter`` cycles
    (iterations for ``"pcg"``).

    ``method`` is one of :data:`METHODS` (``"multigrid"``: V-cycles;
    ``"pcg"``: conjugate gradients preconditioned by one V-cycle).
    ``"spectral"``: a direct solve by fast sine transforms, or cosine
    transforms with ``boundary="neumann"``, where ``p0``'s boundary cells
    hold the outward normal derivative and ``b`` must sum to the boundary
    flux; ``tol`` and ``maxiter`` do not apply to it, and on
    ``backend="cpu"`` it runs dense transforms in f64, for grids up to a few
    hundred cells a side).
    ``precision="f32"`` runs the cycles in f32 and keeps the field in f64.
    Returns the field (float64, the kind of array ``b`` is) and, with
    ``return_info=True``, also a dict (``iterations``, ``rel_residual``,
    ``converged``, ``ms``, ``history``).
    """
    if method not in METHODS:
        raise ValueError(
            f"method={method!r} is not a solver of this build; the methods are "
            + ", ".join(map(repr, METHODS))
        )
    precision = check_choice("precision", precision, PRECISIONS)
    backend = check_choice("backend", backend, BACKENDS)
    if isinstance(h, bool) or not isinstance(h, (int, float, np.integer, np.floating)):
        raise TypeError(f"h must be a number (the grid spacing); got {type(h).__name__}")
    if not (np.isfinite(h) and h > 0):
        raise ValueError(f"h = {h}; the grid spacing must be a positive finite number")
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)):
        raise TypeError(f"tol must be a number; got {type(tol).__name__}")
    if isinstance(maxiter, bool) or not isinstance(maxiter, (int, np.integer)):
        raise TypeError(f"maxiter must be an int; got {type(maxiter).__name__}")
    ordinal = gpu_ordinal(backend, device, b, p0)
    bb = real_2d("b", b)
    if p0 is None:
        pp = np.zeros_like(bb)
    else:
        pp = real_2d("p0", p0)
        if pp.shape != bb.shape:
            raise ValueError(f"p0 has shape {pp.shape} and b has {bb.shape}; they must have the same shape")
    ny, nx = bb.shape
    if method == "spectral":
        boundary = check_choice("boundary", boundary, BOUNDARIES)
        field, info = _native.poisson_spectral(
            bb.tobytes(), pp.tobytes(), nx, ny, float(h), boundary, precision, backend, ordinal
        )
        p = like(b, np.frombuffer(field, dtype=np.float64).reshape(ny, nx))
        return (p, info) if return_info else p
    if boundary != "dirichlet":
        raise ValueError(
            f"boundary={boundary!r} needs method='spectral'; the iterative methods hold "
            "Dirichlet values"
        )
    field, info = _native.poisson_solve(
        bb.tobytes(),
        pp.tobytes(),
        nx,
        ny,
        float(h),
        method,
        float(tol),
        int(maxiter),
        precision,
        backend,
        ordinal,
    )
    p = like(b, np.frombuffer(field, dtype=np.float64).reshape(ny, nx))
    return (p, info) if return_info else p
