"""FFT peers: cuFFT through cupy.fft and torch.fft at the Rust bench's problems.

Sizes, labels and the GFLOP/s figure (5 N log2 N per complex transform, N the
points of one 2-D transform or of one row) are those of
lab/fft/host/bench.rs, so the report pairs the rows. Each peer's
result is checked against numpy.fft in f64 (relative error by norm).
"""
import math

from common import time_cuda, try_import


def problems(quick):
    """(rows, n, 2-D, precision) of the Rust bench, in its order."""
    big = 1024 if quick else 4096
    long = (1 << 20) if quick else (1 << 24)
    odd = (1023, 1025) if quick else (4095, 4097)
    return [
        (big, big, True, "f32"),
        (big, big, True, "f64"),
        (1, long, False, "f32"),
        (odd[0], odd[1], True, "f32"),
    ]


def label(rows, n, two_d):
    return f"{rows}x{n} {'2-D' if two_d else '1-D'} c2c"


def flops(rows, n, two_d):
    pts = rows * n
    return 5.0 * pts * (math.log2(pts) if two_d else math.log2(n))


def reference(np, x, two_d):
    x = x.astype(np.complex128)
    return np.fft.fft2(x) if two_d else np.fft.fft(x, axis=-1)


def rel_err(np, got, want):
    return float(np.linalg.norm(got.astype(np.complex128) - want) / np.linalg.norm(want))


def run(quick):
    import numpy as np

    rows = []
    cupy, why_cupy = try_import("cupy")
    torch, why_torch = try_import("torch")
    if torch is not None and not torch.cuda.is_available():
        torch, why_torch = None, "torch has no CUDA device"
    if cupy is None:
        rows.append({"variant": "cupy.fft (cuFFT)", "backend": "cupy", "skipped": why_cupy})
    if torch is None:
        rows.append({"variant": "torch.fft (cuFFT)", "backend": "torch", "skipped": why_torch})
    rng = np.random.default_rng(1)
    for (r, n, two_d, prec) in problems(quick):
        cdt = np.complex64 if prec == "f32" else np.complex128
        shape = (r, n)
        x = (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(cdt)
        want = reference(np, x, two_d)
        size = label(r, n, two_d)
        common = dict(size=size, precision=prec, unit="GFLOP/s")
        if cupy is not None:
            xd = cupy.asarray(x)
            f = (lambda: cupy.fft.fft2(xd)) if two_d else (lambda: cupy.fft.fft(xd, axis=-1))
            err = rel_err(np, cupy.asnumpy(f()), want)
            t = time_cuda(f)
            rows.append(dict(variant="cupy.fft (cuFFT)", backend="cupy", rel_err=err,
                             throughput=flops(r, n, two_d) / (t["median_ms"] * 1e-3) / 1e9,
                             **common, **t))
            del xd
            cupy.get_default_memory_pool().free_all_blocks()
        if torch is not None:
            xt = torch.from_numpy(x).cuda()
            f = (lambda: torch.fft.fft2(xt)) if two_d else (lambda: torch.fft.fft(xt, dim=-1))
            err = rel_err(np, f().cpu().numpy(), want)
            t = time_cuda(f)
            rows.append(dict(variant="torch.fft (cuFFT)", backend="torch", rel_err=err,
                             throughput=flops(r, n, two_d) / (t["median_ms"] * 1e-3) / 1e9,
                             **common, **t))
            del xt
            torch.cuda.empty_cache()
    return rows
