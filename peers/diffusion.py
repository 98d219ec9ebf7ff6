"""Diffusion peers: the material's Numba kernel (8x8 tiles, in place, writes
the Laplacian) at 2000^2, and a race-free ping-pong Numba kernel of the same
shape; torch eager slicing for reference."""
import math
from common import try_import, time_cuda

W = "diffusion"
N = 2000
ALPHA = 0.2


def _numba(quick):
    cuda_mod, why = try_import("numba.cuda")
    if cuda_mod is None:
        return [{"workload": W, "variant": "numba", "backend": "numba", "skipped": why}]
    import numpy as np
    from numba import cuda, float32
    if not cuda.is_available():
        return [{"workload": W, "variant": "numba", "backend": "numba", "skipped": "numba: no CUDA device"}]
    TPB = 8

    @cuda.jit
    def diffuse_inplace(u, lap, alpha):
        # The material's kernel: 8x8 shared tile, halo from global memory,
        # u updated in place (racy across blocks).
        tile = cuda.shared.array((TPB, TPB), dtype=float32)
        i, j = cuda.grid(2)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        ny, nx = u.shape
        inside = i < nx and j < ny
        if inside:
            tile[ty, tx] = u[j, i]
        cuda.syncthreads()
        if inside and 0 < i < nx - 1 and 0 < j < ny - 1:
            c = tile[ty, tx]
            e = tile[ty, tx + 1] if tx + 1 < TPB else u[j, i + 1]
            w = tile[ty, tx - 1] if tx > 0 else u[j, i - 1]
            s = tile[ty + 1, tx] if ty + 1 < TPB else u[j + 1, i]
            n = tile[ty - 1, tx] if ty > 0 else u[j - 1, i]
            l = (e + w) + (n + s) - 4.0 * c
            lap[j, i] = l
            u[j, i] = c + alpha * l

    @cuda.jit
    def diffuse_pingpong(u, lap, un, alpha):
        i, j = cuda.grid(2)
        ny, nx = u.shape
        if i < nx and j < ny:
            if 0 < i < nx - 1 and 0 < j < ny - 1:
                c = u[j, i]
                l = (u[j, i + 1] + u[j, i - 1]) + (u[j - 1, i] + u[j + 1, i]) - 4.0 * c
                lap[j, i] = l
                un[j, i] = c + alpha * l
            else:
                lap[j, i] = 0.0
                un[j, i] = u[j, i]

    rng = np.random.default_rng(1)
    u0 = rng.random((N, N), dtype=np.float32)
    iters = 200 if quick else 2000
    rows = []
    grid8 = (math.ceil(N / TPB), math.ceil(N / TPB))
    u = cuda.to_device(u0)
    lap = cuda.device_array_like(u)
    a = np.float32(ALPHA)

    def run_inplace():
        for _ in range(iters):
            diffuse_inplace[grid8, (TPB, TPB)](u, lap, a)
    t = time_cuda(run_inplace, reps=3, warmup=1)
    per = {key: (v / iters if key.endswith("_ms") else v) for key, v in t.items()}
    rows.append({"workload": W, "variant": f"numba material 8x8 in place (racy), per iteration", "backend": "numba",
                 "size": f"{N}^2", "precision": "f32", **per,
                 "throughput": N * N / (per["median_ms"] * 1e-3) / 1e9, "unit": "GCells/s"})
    bufs = [cuda.to_device(u0), cuda.device_array_like(u)]
    grid = (math.ceil(N / 32), math.ceil(N / 8))

    def run_pp():
        for it in range(iters):
            diffuse_pingpong[grid, (32, 8)](bufs[it % 2], lap, bufs[(it + 1) % 2], a)
    t = time_cuda(run_pp, reps=3, warmup=1)
    per = {key: (v / iters if key.endswith("_ms") else v) for key, v in t.items()}
    rows.append({"workload": W, "variant": "numba ping-pong 32x8, per iteration", "backend": "numba",
                 "size": f"{N}^2", "precision": "f32", **per,
                 "throughput": N * N / (per["median_ms"] * 1e-3) / 1e9, "unit": "GCells/s"})
    return rows


def _torch(quick):
    torch, why = try_import("torch")
    if torch is None or not torch.cuda.is_available():
        return [{"workload": W, "variant": "torch eager", "backend": "torch", "skipped": why or "torch has no CUDA device"}]
    u = torch.rand(N, N, device="cuda")
    lap = torch.zeros_like(u)
    un = u.clone()
    iters = 100 if quick else 1000

    def run():
        nonlocal u, un
        for _ in range(iters):
            c = u[1:-1, 1:-1]
            lap[1:-1, 1:-1] = (u[1:-1, 2:] + u[1:-1, :-2]) + (u[:-2, 1:-1] + u[2:, 1:-1]) - 4.0 * c
            un[1:-1, 1:-1] = c + ALPHA * lap[1:-1, 1:-1]
            u, un = un, u
    t = time_cuda(run, reps=3, warmup=1)
    per = {key: (v / iters if key.endswith("_ms") else v) for key, v in t.items()}
    return [{"workload": W, "variant": "torch eager slicing, per iteration", "backend": "torch", "size": f"{N}^2",
             "precision": "f32", **per, "throughput": N * N / (per["median_ms"] * 1e-3) / 1e9, "unit": "GCells/s"}]


def run(quick: bool) -> list:
    return _numba(quick) + _torch(quick)
