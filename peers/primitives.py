"""Peers of the parallel primitives: sums (torch.sum, cupy.sum), histograms
(torch.bincount / torch.histc, cupy.bincount) and Monte-Carlo pi (CuPy's
drop-in version: two random arrays, a compare, a sum; the same in torch; and
Numba's xoroshiro128+ kernel, one atomic per block as in the material).

Sizes match the Rust rows: sums of 2^20, 2^24, 2^28 f32 (quick: 2^20, 2^24),
f64 and i32 at 2^24; histograms of 2^24 u8 keys into 256 bins; pi at 1e8
samples. Throughput of sums and histograms is bytes read per second.
"""
import math

from common import time_cuda, try_import


def _sum_sizes(quick):
    return [1 << 20, 1 << 24] if quick else [1 << 20, 1 << 24, 1 << 28]


def _row(workload, variant, backend, size, precision, t, **extra):
    r = dict(workload=workload, variant=variant, backend=backend, size=str(size), precision=precision)
    r.update(extra)
    r.update(t)
    return r


def _torch_rows(torch, quick):
    rows = []
    dev = "cuda"
    for n in _sum_sizes(quick):
        x = torch.rand(n, device=dev, dtype=torch.float32) * 1.5 - 0.5
        out = torch.empty((), device=dev, dtype=torch.float32)
        t = time_cuda(lambda: torch.sum(x, 0, out=out))
        ref = float(x.double().sum().item())
        err = abs(float(out.item()) - ref) / abs(ref)
        rows.append(_row("reduce", "torch.sum", "torch", n, "f32", t,
                         throughput=4 * n / (t["median_ms"] * 1e-3) / 1e9, unit="GB/s", rel_err=err))
        del x
    n = 1 << 24
    for name, dtype, size in (("f64", torch.float64, 8), ("i32", torch.int32, 4)):
        if dtype == torch.int32:
            x = torch.randint(-1000, 1001, (n,), device=dev, dtype=torch.int32)
            fn = lambda: torch.sum(x, dtype=torch.int32)  # noqa: E731
        else:
            x = torch.rand(n, device=dev, dtype=dtype) * 1.5 - 0.5
            fn = lambda: torch.sum(x)  # noqa: E731
        t = time_cuda(fn)
        rows.append(_row("reduce", "torch.sum", "torch", n, name, t,
                         throughput=size * n / (t["median_ms"] * 1e-3) / 1e9, unit="GB/s"))
        del x
    keys = torch.randint(0, 256, (n,), device=dev, dtype=torch.uint8)
    t = time_cuda(lambda: torch.bincount(keys, minlength=256))
    rows.append(_row("histogram", "torch.bincount (256 bins)", "torch", n, "u8", t,
                     throughput=n / (t["median_ms"] * 1e-3) / 1e9, unit="GB/s"))
    kf = keys.float()
    t = time_cuda(lambda: torch.histc(kf, bins=256, min=0, max=256))
    rows.append(_row("histogram", "torch.histc (256 bins, float keys)", "torch", n, "f32 keys", t,
                     throughput=4 * n / (t["median_ms"] * 1e-3) / 1e9, unit="GB/s"))
    del keys, kf
    n = 100_000_000

    def pi():
        x = torch.rand(n, device=dev)
        y = torch.rand(n, device=dev)
        return ((x * x + y * y) < 1.0).sum()

    t = time_cuda(pi, reps=20, warmup=3)
    est = 4.0 * float(pi().item()) / n
    rows.append(_row("monte-carlo-pi", "torch drop-in (two rand arrays, compare, sum)", "torch",
                     "1e+08 samples", "u64 hits", t, throughput=n / (t["median_ms"] * 1e-3) / 1e9,
                     unit="Gsamples/s", rel_err=abs(est - math.pi) / math.pi))
    return rows


def _cupy_rows(cupy, quick):
    rows = []
    for n in _sum_sizes(quick):
        x = cupy.random.random(n, dtype=cupy.float32) * 1.5 - 0.5
        t = time_cuda(lambda: cupy.sum(x))
        ref = float(cupy.sum(x.astype(cupy.float64)))
        err = abs(float(cupy.sum(x)) - ref) / abs(ref)
        rows.append(_row("reduce", "cupy.sum", "cupy", n, "f32", t,
                         throughput=4 * n / (t["median_ms"] * 1e-3) / 1e9, unit="GB/s", rel_err=err))
        del x
    n = 1 << 24
    keys = cupy.random.randint(0, 256, n, dtype=cupy.int32).astype(cupy.uint8)
    t = time_cuda(lambda: cupy.bincount(keys, minlength=256))
    rows.append(_row("histogram", "cupy.bincount (256 bins)", "cupy", n, "u8", t,
                     throughput=n / (t["median_ms"] * 1e-3) / 1e9, unit="GB/s"))
    del keys
    n = 100_000_000

    def pi():
        x = cupy.random.random(n, dtype=cupy.float32)
        y = cupy.random.random(n, dtype=cupy.float32)
        return ((x * x + y * y) < 1.0).sum()

    t = time_cuda(pi, reps=20, warmup=3)
    est = 4.0 * float(pi()) / n
    rows.append(_row("monte-carlo-pi", "cupy drop-in (two random arrays, compare, sum)", "cupy",
                     "1e+08 samples", "u64 hits", t, throughput=n / (t["median_ms"] * 1e-3) / 1e9,
                     unit="Gsamples/s", rel_err=abs(est - math.pi) / math.pi))
    return rows


def _numba_rows():
    from numba import cuda
    from numba.cuda.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32
    import numpy as np

    threads, blocks = 256, 132 * 32
    n = 100_000_000
    total = threads * blocks
    per = (n + total - 1) // total

    @cuda.jit
    def pi_kernel(states, per, hits):
        tid = cuda.grid(1)
        c = 0
        for _ in range(per):
            x = xoroshiro128p_uniform_float32(states, tid)
            y = xoroshiro128p_uniform_float32(states, tid)
            if x * x + y * y < 1.0:
                c += 1
        # Block reduction through shared memory, one atomic per block.
        s = cuda.shared.array(256, dtype=np.int64)
        s[cuda.threadIdx.x] = c
        cuda.syncthreads()
        stride = 128
        while stride > 0:
            if cuda.threadIdx.x < stride:
                s[cuda.threadIdx.x] += s[cuda.threadIdx.x + stride]
            cuda.syncthreads()
            stride //= 2
        if cuda.threadIdx.x == 0:
            cuda.atomic.add(hits, 0, s[0])

    states = create_xoroshiro128p_states(total, seed=1)
    hits = cuda.to_device(np.zeros(1, dtype=np.int64))

    def run():
        pi_kernel[blocks, threads](states, per, hits)

    run()
    cuda.synchronize()
    hits.copy_to_device(np.zeros(1, dtype=np.int64))
    t = time_cuda(run, reps=20, warmup=2)
    hits.copy_to_device(np.zeros(1, dtype=np.int64))
    run()
    samples = per * total
    est = 4.0 * float(hits.copy_to_host()[0]) / samples
    return [_row("monte-carlo-pi", "numba xoroshiro128p (states made once on the host)", "numba",
                 "1e+08 samples", "u64 hits", t, throughput=samples / (t["median_ms"] * 1e-3) / 1e9,
                 unit="Gsamples/s", rel_err=abs(est - math.pi) / math.pi)]


def run(quick):
    rows = []
    torch, why = try_import("torch")
    if torch is None or not torch.cuda.is_available():
        rows.append({"workload": "reduce", "variant": "torch", "backend": "torch",
                     "skipped": why or "torch has no CUDA device"})
    else:
        rows.extend(_torch_rows(torch, quick))
    cupy, why = try_import("cupy")
    if cupy is None:
        rows.append({"workload": "reduce", "variant": "cupy", "backend": "cupy", "skipped": why})
    else:
        rows.extend(_cupy_rows(cupy, quick))
    numba, why = try_import("numba.cuda")
    if numba is None:
        rows.append({"workload": "monte-carlo-pi", "variant": "numba", "backend": "numba", "skipped": why})
    else:
        try:
            rows.extend(_numba_rows())
        except Exception as e:  # no device, or a Numba/CUDA mismatch
            rows.append({"workload": "monte-carlo-pi", "variant": "numba", "backend": "numba",
                         "skipped": f"{type(e).__name__}: {e}".splitlines()[0]})
    return rows
