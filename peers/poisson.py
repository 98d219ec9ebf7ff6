"""Peers of the Poisson / Jacobi ladder: the material's formulations in CuPy,
PyTorch (eager and torch.compile) and Numba (basic and 16x16 shared-memory
kernels), f32, ms per iteration (one Jacobi sweep), at 2000^2 (and 4096^2
unless quick).

Convention as in the Rust kernels: p_new = 0.25 (pW + pE + pN + pS) - k b on
interior cells, Dirichlet boundary (boundary cells copied), ping-pong buffers,
k = h^2 / 4 with h = 1 / (n - 1).
"""
import math

from common import time_cuda, try_import

SWEEPS_PER_CALL = 20


def _sizes(quick):
    return [2000] if quick else [2000, 4096]


def _row(variant, backend, n, timing, **extra):
    per = {k: timing[k] / SWEEPS_PER_CALL for k in ("median_ms", "min_ms", "max_ms")}
    row = {
        "workload": "poisson",
        "variant": variant,
        "backend": backend,
        "size": f"{n}x{n}",
        "precision": "f32",
        "reps": timing["reps"],
        "throughput": n * n / (per["median_ms"] * 1e-3) / 1e9,
        "unit": "GCells/s",
        **per,
    }
    row.update(extra)
    return row


def _skip(variant, backend, reason):
    return {"workload": "poisson", "variant": variant, "backend": backend, "skipped": reason}


def _inputs(xp, n):
    """Deterministic p0 and b in [-0.5, 0.5) (the shape the material uses)."""
    i = xp.arange(n * n, dtype=xp.int64)
    p = ((i * 2654435761) % 1000).astype(xp.float32) / 1000.0 - 0.5
    b = ((i * 40503) % 1000).astype(xp.float32) / 1000.0 - 0.5
    return p.reshape(n, n), b.reshape(n, n)


def _rel_err(got, want):
    import numpy as np
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def _reference(p0, b, k, sweeps):
    """NumPy f64 reference for the correctness column."""
    import numpy as np
    p = np.array(p0, dtype=np.float64)
    bb = np.array(b, dtype=np.float64)
    for _ in range(sweeps):
        q = p.copy()
        q[1:-1, 1:-1] = 0.25 * (p[1:-1, :-2] + p[1:-1, 2:] + p[:-2, 1:-1] + p[2:, 1:-1]) - k * bb[1:-1, 1:-1]
        p = q
    return p


def run_cupy(quick):
    cp, why = try_import("cupy")
    if cp is None:
        return [_skip("CuPy array slicing", "cupy", why)]
    rows = []
    for n in _sizes(quick):
        k = 0.25 / (n - 1) ** 2
        p0, b = _inputs(cp, n)
        bufs = [p0.copy(), p0.copy()]
        state = {"i": 0}

        def sweep():
            src, dst = bufs[state["i"] % 2], bufs[(state["i"] + 1) % 2]
            # The material's formulation: slices of the whole array.
            dst[1:-1, 1:-1] = 0.25 * (src[1:-1, :-2] + src[1:-1, 2:] + src[:-2, 1:-1] + src[2:, 1:-1]) - k * b[1:-1, 1:-1]
            state["i"] += 1

        def many():
            for _ in range(SWEEPS_PER_CALL):
                sweep()

        check = None
        if n == 2000:
            bufs[0][...] = p0
            bufs[1][...] = p0
            state["i"] = 0
            for _ in range(3):
                sweep()
            check = _rel_err(cp.asnumpy(bufs[state["i"] % 2]), _reference(cp.asnumpy(p0), cp.asnumpy(b), k, 3))
        t = time_cuda(many, reps=20 if quick else 50, warmup=2)
        rows.append(_row("CuPy array slicing", "cupy", n, t, rel_err=check))
    return rows


def run_torch(quick):
    torch, why = try_import("torch")
    if torch is None:
        return [_skip("torch eager", "torch", why), _skip("torch.compile", "torch", why)]
    if not torch.cuda.is_available():
        return [_skip("torch eager", "torch", "torch.cuda.is_available() is False"),
                _skip("torch.compile", "torch", "torch.cuda.is_available() is False")]
    rows = []

    def step(src, dst, b, k):
        dst[1:-1, 1:-1] = 0.25 * (src[1:-1, :-2] + src[1:-1, 2:] + src[:-2, 1:-1] + src[2:, 1:-1]) - k * b[1:-1, 1:-1]
        return dst

    compiled = None
    compile_reason = None
    try:
        compiled = torch.compile(step)
    except Exception as e:  # no compiler backend
        compile_reason = f"torch.compile unavailable: {type(e).__name__}: {e}".splitlines()[0]

    for n in _sizes(quick):
        k = 0.25 / (n - 1) ** 2
        i = torch.arange(n * n, dtype=torch.int64, device="cuda")
        p0 = (((i * 2654435761) % 1000).float() / 1000.0 - 0.5).reshape(n, n)
        b = (((i * 40503) % 1000).float() / 1000.0 - 0.5).reshape(n, n)
        for name, fn in (("torch eager", step), ("torch.compile", compiled)):
            if fn is None:
                rows.append(_skip(name, "torch", compile_reason or "not available"))
                continue
            bufs = [p0.clone(), p0.clone()]

            def many(fn=fn, bufs=bufs):
                for j in range(SWEEPS_PER_CALL):
                    fn(bufs[j % 2], bufs[(j + 1) % 2], b, k)

            try:
                import time
                t0 = time.perf_counter()
                many()
                torch.cuda.synchronize()
                first = (time.perf_counter() - t0) * 1e3
                check = None
                if n == 2000:
                    c = [p0.clone(), p0.clone()]
                    for j in range(3):
                        fn(c[j % 2], c[(j + 1) % 2], b, k)
                    check = _rel_err(c[1].cpu().numpy(), _reference(p0.cpu().numpy(), b.cpu().numpy(), k, 3))
                t = time_cuda(many, reps=20 if quick else 50, warmup=2)
                rows.append(_row(name, "torch", n, t, first_ms=first, rel_err=check))
            except Exception as e:
                rows.append(_skip(name, "torch", f"{type(e).__name__}: {e}".splitlines()[0]))
    return rows


# Numba needs a shared array's shape as a compile-time constant: a module
# global is frozen at compile time, an expression on a closure variable is not.
_TILE_HALO = 16 + 2


def run_numba(quick):
    numba, why = try_import("numba")
    if numba is None:
        return [_skip("Numba basic", "numba", why), _skip("Numba shared 16x16", "numba", why)]
    try:
        from numba import cuda, float32
        if not cuda.is_available():
            raise RuntimeError("numba.cuda.is_available() is False")
    except Exception as e:
        r = f"{type(e).__name__}: {e}".splitlines()[0]
        return [_skip("Numba basic", "numba", r), _skip("Numba shared 16x16", "numba", r)]
    import numpy as np

    @cuda.jit
    def basic(p, b, out, k):
        # The material's basic kernel: one thread per cell, global memory.
        x, y = cuda.grid(2)
        ny, nx = p.shape
        if x < nx and y < ny:
            if x == 0 or y == 0 or x == nx - 1 or y == ny - 1:
                out[y, x] = p[y, x]
            else:
                out[y, x] = 0.25 * (p[y, x - 1] + p[y, x + 1] + p[y - 1, x] + p[y + 1, x]) - k * b[y, x]

    T = 16

    @cuda.jit
    def shared(p, b, out, k):
        # The material's shared-memory version: a 16x16 tile plus a halo.
        s = cuda.shared.array((_TILE_HALO, _TILE_HALO), dtype=float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        x, y = cuda.grid(2)
        ny, nx = p.shape
        inside = x < nx and y < ny
        if inside:
            s[ty + 1, tx + 1] = p[y, x]
            if tx == 0 and x > 0:
                s[ty + 1, 0] = p[y, x - 1]
            if tx == T - 1 and x + 1 < nx:
                s[ty + 1, T + 1] = p[y, x + 1]
            if ty == 0 and y > 0:
                s[0, tx + 1] = p[y - 1, x]
            if ty == T - 1 and y + 1 < ny:
                s[T + 1, tx + 1] = p[y + 1, x]
        cuda.syncthreads()
        if inside:
            if x == 0 or y == 0 or x == nx - 1 or y == ny - 1:
                out[y, x] = s[ty + 1, tx + 1]
            else:
                out[y, x] = 0.25 * (s[ty + 1, tx] + s[ty + 1, tx + 2] + s[ty, tx + 1] + s[ty + 2, tx + 1]) - k * b[y, x]

    rows = []
    for n in _sizes(quick):
        k = np.float32(0.25 / (n - 1) ** 2)
        i = np.arange(n * n, dtype=np.int64)
        p0 = (((i * 2654435761) % 1000).astype(np.float32) / 1000.0 - 0.5).reshape(n, n)
        bh = (((i * 40503) % 1000).astype(np.float32) / 1000.0 - 0.5).reshape(n, n)
        b = cuda.to_device(bh)
        for name, kern, block in (("Numba basic", basic, (32, 8)), ("Numba shared 16x16", shared, (T, T))):
            grid = (math.ceil(n / block[0]), math.ceil(n / block[1]))
            bufs = [cuda.to_device(p0), cuda.to_device(p0)]

            def many(kern=kern, grid=grid, block=block, bufs=bufs):
                for j in range(SWEEPS_PER_CALL):
                    kern[grid, block](bufs[j % 2], b, bufs[(j + 1) % 2], k)

            try:
                import time
                t0 = time.perf_counter()
                kern[grid, block](bufs[0], b, bufs[1], k)
                cuda.synchronize()
                first = (time.perf_counter() - t0) * 1e3
                check = None
                if n == 2000:
                    c = [cuda.to_device(p0), cuda.to_device(p0)]
                    for j in range(3):
                        kern[grid, block](c[j % 2], b, c[(j + 1) % 2], k)
                    check = _rel_err(c[1].copy_to_host(), _reference(p0, bh, float(k), 3))
                t = time_cuda(many, reps=20 if quick else 50, warmup=2)
                rows.append(_row(name, "numba", n, t, first_ms=first, rel_err=check))
            except Exception as e:
                rows.append(_skip(name, "numba", f"{type(e).__name__}: {e}".splitlines()[0]))
    return rows


def run(quick: bool) -> list:
    rows = []
    for f in (run_cupy, run_torch, run_numba):
        try:
            rows.extend(f(quick))
        except Exception as e:  # one failing peer must not hide the others
            rows.append(_skip(f.__name__, "python", f"{type(e).__name__}: {e}".splitlines()[0]))
    return rows


if __name__ == "__main__":
    import json
    import sys
    for r in run("--quick" in sys.argv):
        print(json.dumps(r))
