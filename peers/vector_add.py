"""Vector add peers: torch.add and CuPy's a + b at the Rust sizes (f32)."""
from common import time_cuda, try_import


def run(quick):
    rows = []
    sizes = [1 << 20, 1 << 24] if quick else [1 << 20, 1 << 24, 1 << 28]
    torch, why = try_import("torch")
    if torch is None or not torch.cuda.is_available():
        rows.append({"variant": "torch.add", "backend": "torch", "skipped": why or "torch has no CUDA device"})
    else:
        for n in sizes:
            a = torch.rand(n, device="cuda")
            b = torch.rand(n, device="cuda")
            c = torch.empty_like(a)
            t = time_cuda(lambda: torch.add(a, b, out=c))
            ref = (a.double() + b.double())
            err = float(((c.double() - ref).norm() / ref.norm()).item())
            rows.append(dict(variant="torch.add", backend="torch", size=str(n), precision="f32",
                             throughput=12 * n / (t["median_ms"] * 1e-3) / 1e9, unit="GB/s", rel_err=err, **t))
            del a, b, c
    cupy, why = try_import("cupy")
    if cupy is None:
        rows.append({"variant": "cupy a + b", "backend": "cupy", "skipped": why})
    else:
        for n in sizes:
            a = cupy.random.random(n, dtype=cupy.float32)
            b = cupy.random.random(n, dtype=cupy.float32)
            c = cupy.empty_like(a)
            t = time_cuda(lambda: cupy.add(a, b, out=c))
            rows.append(dict(variant="cupy.add", backend="cupy", size=str(n), precision="f32",
                             throughput=12 * n / (t["median_ms"] * 1e-3) / 1e9, unit="GB/s", **t))
            del a, b, c
    return rows
