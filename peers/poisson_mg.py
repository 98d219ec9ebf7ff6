"""Peers of the multigrid rung (Poisson to a tolerance): pyamg (smoothed
aggregation + CG, CPU), CuPy's conjugate gradients (GPU), and the direct
spectral solve a CuPy user writes for a uniform rectangle (DST-I through
`cupy.fft.rfft` of the odd extension, divide by the 5-point eigenvalues,
inverse; f64 and f32), on the same problem as `ptxlab bench --only
poisson-mg`.

The problem: an n x n grid, h = 1 / (n - 1), zero Dirichlet values and a
zero start, b[i] = ((i * 40503) mod 1000) / 1000 - 0.5 on the interior (i the
row-major index over the whole grid). The discrete equation lap_h p = b on
the interior is A p = -h^2 b with A = pyamg.gallery.poisson((n-2, n-2)) (4 on
the diagonal, -1 off it), so ||-h^2 b - A x|| / ||h^2 b|| is exactly the
relative residual ||b - lap_h x|| / ||b|| the Rust rows stop on.

Times: pyamg's set-up and solve separately (wall clock, time.perf_counter),
the solve's per-iteration history from its callback; CuPy's CG with CUDA
events around the call. A row's time to 1e-6 is read off the history of the
same solve when the solve went further.
"""
import math
import time

from common import announce, timing_stats, try_import

SIZES = [1025, 4096]


def _row(variant, backend, n, ms, **extra):
    row = {
        "workload": "poisson-mg",
        "variant": variant,
        "backend": backend,
        "size": f"{n}x{n}",
        "precision": "f64",
        **timing_stats([ms]),
    }
    row.update(extra)
    return row


def _skip(variant, backend, reason, n=None):
    r = {"workload": "poisson-mg", "variant": variant, "backend": backend, "skipped": reason}
    if n is not None:
        r["size"] = f"{n}x{n}"
    return r


def _problem(np, n):
    """(rhs of A x = rhs, ||rhs||): rhs = -h^2 b over the interior, row-major."""
    i = np.arange(n * n, dtype=np.int64).reshape(n, n)
    b = ((i * 40503) % 1000).astype(np.float64) / 1000.0 - 0.5
    h = 1.0 / (n - 1)
    rhs = (-h * h * b[1:-1, 1:-1]).ravel()
    return rhs, float(np.linalg.norm(rhs))


def _first_below(history, tol):
    for t, r in history:
        if r < tol:
            return t
    return None


def run_pyamg(quick):
    np, why = try_import("numpy")
    pyamg, why2 = try_import("pyamg")
    if np is None or pyamg is None:
        return [_skip("pyamg smoothed aggregation + CG", "pyamg", why or why2)]
    rows = []
    for n in SIZES[:1] if quick else SIZES:
        tol = 1e-10 if n <= 1025 else 1e-8
        announce(f"pyamg smoothed-aggregation set-up and CG solve to {tol:.0e}, {n}^2, on the CPU",
                 6 * (n / 1025) ** 2, "BENCHMARKS.md: 4096^2 set-up 50-65 s + solve 32-44 s on a 16-core H100 host")
        A = pyamg.gallery.poisson((n - 2, n - 2), format="csr")
        rhs, nb = _problem(np, n)
        t0 = time.perf_counter()
        ml = pyamg.smoothed_aggregation_solver(A)
        setup_ms = (time.perf_counter() - t0) * 1e3
        res = []
        stamps = []
        t1 = time.perf_counter()
        x = ml.solve(rhs, tol=tol, accel="cg", maxiter=200, residuals=res,
                     callback=lambda xk: stamps.append((time.perf_counter() - t1) * 1e3))
        solve_ms = (time.perf_counter() - t1) * 1e3
        true_rel = float(np.linalg.norm(rhs - A @ x)) / nb
        rel = [r / nb for r in res]
        # residuals[0] is the start; each callback follows one iteration.
        history = [[0.0, rel[0]]] + [[t, r] for t, r in zip(stamps, rel[1:])]
        hist = [(h[0], h[1]) for h in history]
        note = (f"{len(res) - 1} iterations; set-up {setup_ms / 1e3:.1f} s not in the time "
                f"({len(ml.levels)} levels, operator complexity {ml.operator_complexity():.2f}); "
                f"pyamg {pyamg.__version__}, scipy on the CPU")
        for t in ([1e-6, 1e-8, 1e-10] if tol <= 1e-10 else [1e-6, 1e-8]):
            ms = solve_ms if t == tol else _first_below(hist, t)
            if ms is None:
                continue
            rows.append(_row(f"pyamg smoothed aggregation + CG to {t:.0e} (solve)", "pyamg", n, ms,
                             rel_err=true_rel if t == tol else None,
                             note=note if t == tol else f"read off the history of the solve to {tol:.0e}",
                             history=history if t == tol else None))
        rows.append(_row("pyamg smoothed aggregation set-up", "pyamg", n, setup_ms, note="not part of the solve times"))
    rows.append(_skip("pyamg smoothed aggregation + CG", "pyamg",
                      "8192^2 not run: about 4x the 4096^2 set-up and solve (minutes of device time)", 8192))
    return rows


def run_cupy(quick):
    cp, why = try_import("cupy")
    if cp is None:
        return [_skip("CuPy CG", "cupy", why)]
    np, _ = try_import("numpy")
    pyamg, _ = try_import("pyamg")
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as csl
    import scipy.sparse as ssp
    rows = []
    for n in SIZES[:1] if quick else SIZES:
        m = n - 2
        if pyamg is not None:
            A_host = pyamg.gallery.poisson((m, m), format="csr")
        else:
            e = np.ones(m)
            T = ssp.diags([-e[:-1], 2 * e, -e[:-1]], [-1, 0, 1])
            I = ssp.identity(m)
            A_host = (ssp.kron(I, T) + ssp.kron(T, I)).tocsr()
        A = csp.csr_matrix(A_host.astype(np.float64))
        rhs_h, nb = _problem(np, n)
        rhs = cp.asarray(rhs_h)
        tols = [1e-6, 1e-8] if n <= 1025 else [1e-8]
        announce(f"CuPy CG to {', '.join(f'{t:.0e}' for t in tols)}, {n}^2" + (", then an instrumented run" if n <= 1025 else ""),
                 6 if n <= 1025 else 20, "BENCHMARKS.md: 4096^2 to 1e-8 in 10.6-18.3 s, 1025^2 in 1.9 s, on an H100")
        for tol in tols:
            it = [0]

            def count(xk):
                it[0] += 1

            cp.cuda.Device().synchronize()
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            x, info = csl.cg(A, rhs, rtol=tol, maxiter=100000, callback=count)
            b.record()
            b.synchronize()
            ms = cp.cuda.get_elapsed_time(a, b)
            true_rel = float(cp.linalg.norm(rhs - A @ x)) / nb
            rows.append(_row(f"CuPy cupyx.scipy.sparse.linalg.cg to {tol:.0e}", "cupy", n, ms,
                             rel_err=true_rel,
                             note=f"{it[0]} iterations (info {info}), unpreconditioned, CSR SpMV; cupy {cp.__version__}"))
        if n <= 1025:
            # The history, from a second run whose callback measures the residual
            # every 20 iterations (its time includes those checks).
            hist = [[0.0, 1.0]]
            k = [0]
            t0 = time.perf_counter()

            def record(xk):
                k[0] += 1
                if k[0] % 20 == 0:
                    r = float(cp.linalg.norm(rhs - A @ xk)) / nb
                    hist.append([(time.perf_counter() - t0) * 1e3, r])

            csl.cg(A, rhs, rtol=1e-8, maxiter=100000, callback=record)
            rows.append(_row("CuPy CG residual history (instrumented run, to 1e-8)", "cupy", n,
                             hist[-1][0], history=hist,
                             note="residual measured every 20 iterations; the checks are in these times"))
    rows.append(_skip("CuPy CG", "cupy", "8192^2 not run: about 8x the 4096^2 time (minutes)", 8192))
    return rows


def _dst1(cp, v, axis):
    """DST-I of `v` along `axis` (length m): S_k = sum_j v_j sin(pi j k / (m + 1)),
    k = 1..m, from the rfft of the odd extension [0, v, 0, -reversed(v)]."""
    v = cp.moveaxis(v, axis, -1)
    m = v.shape[-1]
    z = cp.zeros(v.shape[:-1] + (1,), dtype=v.dtype)
    ext = cp.concatenate([z, v, z, -v[..., ::-1]], axis=-1)
    s = -cp.fft.rfft(ext, axis=-1).imag[..., 1:m + 1] / 2
    return cp.moveaxis(s.astype(v.dtype, copy=False), -1, axis)


def spectral_solve(cp, b, h):
    """The exact discrete solution of lap_h p = b on the interior of `b`
    (zero Dirichlet values): DST-I on both axes, divide by the eigenvalues
    -4/h^2 (sin^2(pi j / 2(nx-1)) + sin^2(pi k / 2(ny-1))), DST-I back
    (its own inverse up to 2 / (m + 1) per axis). Returns the whole grid."""
    ny, nx = b.shape
    my, mx = ny - 2, nx - 2
    dt = b.dtype
    f = _dst1(cp, _dst1(cp, b[1:-1, 1:-1], 1), 0)
    sx = cp.sin(cp.pi * cp.arange(1, mx + 1, dtype=dt) / (2 * (nx - 1))) ** 2
    sy = cp.sin(cp.pi * cp.arange(1, my + 1, dtype=dt) / (2 * (ny - 1))) ** 2
    lam = (-4.0 / (h * h)) * (sy[:, None] + sx[None, :])
    u = _dst1(cp, _dst1(cp, f / lam, 1), 0) * (4.0 / ((mx + 1) * (my + 1)))
    p = cp.zeros_like(b)
    p[1:-1, 1:-1] = u
    return p


def run_spectral(quick):
    cp, why = try_import("cupy")
    if cp is None:
        return [_skip("CuPy spectral solve (DST-I via rfft of the odd extension, direct)", "cupy", why)]
    rows = []
    for n in ([1025] if quick else [1025, 4096, 8192]):
        h = 1.0 / (n - 1)
        i = cp.arange(n * n, dtype=cp.int64).reshape(n, n)
        b64 = ((i * 40503) % 1000).astype(cp.float64) / 1000.0 - 0.5
        b64[0, :] = 0
        b64[-1, :] = 0
        b64[:, 0] = 0
        b64[:, -1] = 0
        del i
        for dt in (cp.float64, cp.float32):
            b = b64.astype(dt)
            p = spectral_solve(cp, b, h)  # warm-up: plans, kernels
            cp.cuda.Device().synchronize()
            ms = []
            for _ in range(3 if n >= 8192 else 5):
                a, e = cp.cuda.Event(), cp.cuda.Event()
                a.record()
                p = spectral_solve(cp, b, h)
                e.record()
                e.synchronize()
                ms.append(cp.cuda.get_elapsed_time(a, e))
            # Relative residual in f64 of the returned field.
            p64 = p.astype(cp.float64)
            lap = (p64[1:-1, :-2] + p64[1:-1, 2:] + p64[:-2, 1:-1] + p64[2:, 1:-1]
                   - 4 * p64[1:-1, 1:-1]) / (h * h)
            rel = float(cp.linalg.norm(b64[1:-1, 1:-1] - lap) / cp.linalg.norm(b64[1:-1, 1:-1]))
            name = "f64" if dt == cp.float64 else "f32"
            row = _row("CuPy spectral solve (DST-I via rfft of the odd extension, direct)", "cupy",
                       n, math.nan, rel_err=rel,
                       note=f"median of {len(ms)} (CUDA events), warm-up first; exact discrete "
                            f"solution up to rounding; cupy {cp.__version__}")
            row["precision"] = name
            row.update(timing_stats(ms))
            rows.append(row)
            del p, p64, lap, b
        del b64
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def run(quick):
    return run_spectral(quick) + run_pyamg(quick) + run_cupy(quick)
