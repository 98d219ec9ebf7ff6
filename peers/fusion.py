"""Fusion peers: torch eager unfused pipeline (three kernels) against a
fused one (torch.compile when it works, else a CuPy ElementwiseKernel), and
torch CUDA-graph replay of many tiny kernels against plain launches."""
from common import try_import, time_cuda

W = "fusion"
A, B, C = 1.5, -0.25, 0.5


def _pipeline(quick):
    torch, why = try_import("torch")
    if torch is None or not torch.cuda.is_available():
        return [{"workload": W, "variant": "torch pipeline", "backend": "torch", "skipped": why or "torch has no CUDA device"}]
    n = 1 << (24 if quick else 26)
    x = torch.rand(n, device="cuda") * 2 - 1
    size = f"2^{n.bit_length() - 1}"
    rows = []

    def unfused():
        y = A * x + B
        z = y * y
        return torch.sqrt(z) + C
    t = time_cuda(unfused, reps=20, warmup=3)
    # torch eager: a*x, +b, y*y, sqrt, +c = 5 kernels, 40 bytes per element.
    rows.append({"workload": W, "variant": "torch eager unfused", "backend": "torch", "size": size, "precision": "f32",
                 **t, "throughput": 8.0 * n / (t["median_ms"] * 1e-3) / 1e9, "unit": "GB/s (8 B/element)"})
    try:
        fused = torch.compile(unfused)
        fused()
        t = time_cuda(fused, reps=20, warmup=3)
        rows.append({"workload": W, "variant": "torch.compile fused", "backend": "torch", "size": size, "precision": "f32",
                     **t, "throughput": 8.0 * n / (t["median_ms"] * 1e-3) / 1e9, "unit": "GB/s (8 B/element)"})
    except Exception as e:  # no Triton / compiler
        rows.append({"workload": W, "variant": "torch.compile fused", "backend": "torch",
                     "skipped": f"torch.compile failed: {type(e).__name__}: {e}".splitlines()[0]})
    cp, why = try_import("cupy")
    if cp is None:
        rows.append({"workload": W, "variant": "cupy ElementwiseKernel fused", "backend": "cupy", "skipped": why})
    else:
        k = cp.ElementwiseKernel("float32 x, float32 a, float32 b, float32 c", "float32 w",
                                 "float y = a * x + b; float z = y * y; w = sqrtf(z) + c;", "ptxlab_fused")
        xc = cp.random.default_rng(0).random(n, dtype=cp.float32) * 2 - 1
        wc = cp.empty_like(xc)
        f = lambda: k(xc, cp.float32(A), cp.float32(B), cp.float32(C), wc)
        t = time_cuda(f, reps=20, warmup=3)
        rows.append({"workload": W, "variant": "cupy ElementwiseKernel fused", "backend": "cupy", "size": size,
                     "precision": "f32", **t, "throughput": 8.0 * n / (t["median_ms"] * 1e-3) / 1e9, "unit": "GB/s"})
    return rows


def _graphs(quick):
    torch, why = try_import("torch")
    if torch is None or not torch.cuda.is_available():
        return [{"workload": W, "variant": "torch CUDA graph", "backend": "torch", "skipped": why or "torch has no CUDA device"}]
    kernels = 200 if quick else 1000
    x = torch.zeros(32, device="cuda")

    def many():
        for _ in range(kernels):
            x.add_(1.0)
    rows = []
    t = time_cuda(many, reps=10, warmup=2)
    per = {k: (v / kernels if k.endswith("_ms") else v) for k, v in t.items()}
    rows.append({"workload": W, "variant": "torch plain launches, per kernel", "backend": "torch",
                 "size": f"{kernels} kernels", "precision": "f32", **per, "throughput": per["median_ms"] * 1e3, "unit": "us/kernel"})
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        many()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        many()
    t = time_cuda(g.replay, reps=10, warmup=2)
    per = {k: (v / kernels if k.endswith("_ms") else v) for k, v in t.items()}
    rows.append({"workload": W, "variant": "torch CUDA graph replay, per kernel", "backend": "torch",
                 "size": f"{kernels} kernels", "precision": "f32", **per, "throughput": per["median_ms"] * 1e3, "unit": "us/kernel"})
    return rows


def run(quick: bool) -> list:
    return _pipeline(quick) + _graphs(quick)
