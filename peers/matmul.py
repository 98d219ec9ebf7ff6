"""Matmul peers: torch.matmul FP32 with TF32 off (the SGEMM ladder's peer,
and the accuracy the 3xTF32 rows must match) and on (the speed of the
3xTF32 rows' closest library peer), BF16 and FP16 (cuBLAS, the tensor-core
ladder's peers) at 4096^3, 8192^3 and the material's shape, each with its
error against the f64 product of the same inputs; torch._scaled_mm (FP8
E4M3 with per-tensor scales, BF16 out: the FP8 GEMM's peer) at the FP8
rows' shapes, and with DeepGEMM's block scales (1x128 for A, 128x128 for
B) where this torch takes them (else a dequantise-then-BF16-matmul row,
labelled so); matmul then column sum, the fused algebra A.sum(0) @ B, and
CuPy's einsum('ij,jk->k').

Sizes carry the words that make a problem its own (lab/common/src/report/
problem.rs): `block-scaled` for block scales (compared only with the Rust
block-scaled rows) and `fast-accum` for use_fast_accum=True (a less
accurate accumulation: another computation, compared with no Rust row)."""
from common import try_import, time_cuda

W = "matmul"


def _row(variant, backend, size, t, throughput=None, unit="", rel_err=None, precision="f32"):
    d = {"workload": W, "variant": variant, "backend": backend, "size": size, "precision": precision, **t}
    if throughput is not None:
        d["throughput"] = throughput
        d["unit"] = unit
    if rel_err is not None:
        d["rel_err"] = rel_err
    return d


def _torch(quick):
    torch, why = try_import("torch")
    if torch is None or not torch.cuda.is_available():
        return [{"workload": W, "variant": "torch", "backend": "torch", "skipped": why or "torch has no CUDA device"}]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    shapes = [(2048, 2048, 2048)] if quick else [(4096, 4096, 4096), (8192, 8192, 8192), (10000, 7000, 5000)]
    g = torch.Generator(device="cuda").manual_seed(0)

    def rel(got, want):
        return float((got.double() - want).norm() / want.norm())

    for m, n, k in shapes:
        a = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
        b = torch.rand(k, n, device="cuda", generator=g) * 2 - 1
        size = f"{m}^3" if m == n == k else f"({m}x{k})({k}x{n})"
        flop = 2 * m * n * k
        reps = 10 if flop > 2e11 else 30
        want = a.double() @ b.double()
        for allow, label in [(False, "torch.matmul FP32, TF32 off"), (True, "torch.matmul FP32, TF32 on")]:
            torch.backends.cuda.matmul.allow_tf32 = allow
            err = rel(torch.matmul(a, b), want)
            t = time_cuda(lambda: torch.matmul(a, b), reps=reps, warmup=3)
            rows.append(_row(label, "torch", size, t, flop / (t["median_ms"] * 1e-3) / 1e9, "GFLOP/s", err))
        torch.backends.cuda.matmul.allow_tf32 = False
        del want
        for dtype, name, label in [(torch.bfloat16, "bf16", "BF16"), (torch.float16, "f16", "FP16")]:
            ah, bh = a.to(dtype), b.to(dtype)
            want = ah.double() @ bh.double()
            err = rel(torch.matmul(ah, bh), want)
            del want
            t = time_cuda(lambda: torch.matmul(ah, bh), reps=max(reps, 20), warmup=5)
            rows.append(_row(f"torch.matmul {label} (cuBLAS)", "torch", size, t,
                             flop / (t["median_ms"] * 1e-3) / 1e9, "GFLOP/s", err, precision=name))
        del a, b
        torch.cuda.empty_cache()
    m, n, k = (4000, 3000, 2000) if quick else (10000, 7000, 5000)
    size = f"({m}x{k})({k}x{n})"
    a = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
    b = torch.rand(k, n, device="cuda", generator=g) * 2 - 1
    want = (a.double().sum(0) @ b.double())
    bytes_ = 4.0 * (m * k + k * n)
    for name, fn in [("torch matmul then sum(0)", lambda: torch.matmul(a, b).sum(0)),
                     ("torch A.sum(0) @ B", lambda: a.sum(0) @ b)]:
        got = fn().double()
        err = float((got - want).norm() / want.norm())
        t = time_cuda(fn, reps=10 if "then" in name else 50, warmup=3)
        rows.append(_row(name, "torch", size, t, bytes_ / (t["median_ms"] * 1e-3) / 1e9, "GB/s", err))
    return rows


def _fp8_shapes(quick):
    """The FP8 rows' shapes (lab/matmul/host/fp8_bench.rs)."""
    if quick:
        return [(2048, 2048, 2048)]
    return [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 4096, 4096), (4096, 7168, 16384)]


def _scaled_mm(quick):
    """torch._scaled_mm with per-tensor scales: A (m x k) and B^T (n x k)
    quantised to float8_e4m3fn with scale = amax / 448 (the FP8 GEMM's
    default), B passed column-major as the function requires, BF16 out.
    Default accumulation (use_fast_accum=False: cuBLAS promotes partial
    sums to f32, as the Rust kernel does) and fast accumulation. Error
    against the f64 product of the dequantised inputs."""
    torch, why = try_import("torch")
    if torch is None or not torch.cuda.is_available():
        return [{"workload": W, "variant": "torch._scaled_mm", "backend": "torch",
                 "skipped": why or "torch has no CUDA device"}]
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return [{"workload": W, "variant": "torch._scaled_mm", "backend": "torch",
                 "skipped": f"torch {torch.__version__} has no _scaled_mm/float8_e4m3fn"}]
    if torch.cuda.get_device_capability() < (8, 9):
        return [{"workload": W, "variant": "torch._scaled_mm", "backend": "torch",
                 "skipped": "FP8 needs compute capability 8.9 or newer"}]
    g = torch.Generator(device="cuda").manual_seed(1)
    rows = []

    def quantize(x):
        scale = (x.abs().max() / 448.0).float()
        return (x / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), scale

    for m, n, k in _fp8_shapes(quick):
        size = f"{m}^3" if m == n == k else f"({m}x{k})({k}x{n})"
        flop = 2 * m * n * k
        a, sa = quantize(torch.rand(m, k, device="cuda", generator=g) * 2 - 1)
        bt, sb = quantize(torch.rand(n, k, device="cuda", generator=g) * 2 - 1)
        b = bt.t()  # k x n, column-major: what _scaled_mm takes

        def call(fast):
            r = torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                 use_fast_accum=fast)
            return r[0] if isinstance(r, tuple) else r  # torch < 2.5 also returned amax

        want = (a.double() * sa.double()) @ (b.double() * sb.double())
        for fast, label, words in [(False, "torch._scaled_mm FP8 e4m3 (cuBLAS)", ""),
                                   (True, "torch._scaled_mm FP8 e4m3, fast accum (cuBLAS)",
                                    " fast-accum")]:
            got = call(fast).double()
            err = float((got - want).norm() / want.norm())
            del got
            t = time_cuda(lambda: call(fast), reps=30 if flop > 2e11 else 50, warmup=5)
            rows.append(_row(label, "torch", size + words, t, flop / (t["median_ms"] * 1e-3) / 1e9,
                             "GFLOP/s", err, precision="fp8"))
        del a, bt, b, want
        torch.cuda.empty_cache()
    return rows + _scaled_mm_block(torch, quick)


def _fp8_block_shapes(quick):
    """The block-scaled FP8 rows' shapes (fp8_block_shapes in
    lab/matmul/host/fp8_bench.rs)."""
    if quick:
        return [(2048, 2048, 2048)]
    return [(4096, 4096, 4096), (8192, 8192, 8192)]


def _scaled_mm_block(torch, quick):
    """Block-scaled FP8 (DeepGEMM's recipe): A (m x k) with one scale per
    row and 128-deep k block, B^T (n x k) with one per 128 x 128 block,
    each block of the random inputs weighted by 2^u (u a whole number in
    [-8, 8], as the Rust rows' inputs) and quantised with its amax / 448.
    torch._scaled_mm takes such scales (torch built with CUDA 12.9 or newer,
    sm_90) as scale_a of shape (m, k/128) stored k-block-major (stride
    (1, m)) and scale_b of shape (k/128, n/128) whose transpose is
    row-major; it infers the recipe from the shapes. Where this torch
    refuses that, or its result is not the block-scaled product (error by
    norm above 1e-2 against the f64 product of the dequantised inputs),
    the row is the fallback a user would write: dequantise both operands
    to BF16 and call torch.matmul, timed together and labelled so."""
    g = torch.Generator(device="cuda").manual_seed(2)
    rows = []
    for m, n, k in _fp8_block_shapes(quick):
        size = (f"{m}^3" if m == n == k else f"({m}x{k})({k}x{n})") + " block-scaled"
        flop = 2 * m * n * k
        kb, nb = k // 128, n // 128

        def blocks(x, rows_per_block):
            r, c = x.shape
            w = torch.randint(-8, 9, (r // rows_per_block, c // 128), device="cuda",
                              generator=g).float().exp2()
            x = x * w.repeat_interleave(rows_per_block, 0).repeat_interleave(128, 1)
            amax = x.abs().unflatten(1, (-1, 128)).unflatten(0, (-1, rows_per_block)) \
                .amax(dim=(1, 3))
            scale = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax))
            full = scale.repeat_interleave(rows_per_block, 0).repeat_interleave(128, 1)
            q = (x / full).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
            return q, scale, full

        a, sa, fa = blocks(torch.rand(m, k, device="cuda", generator=g) * 2 - 1, 1)
        bt, sb, fb = blocks(torch.rand(n, k, device="cuda", generator=g) * 2 - 1, 128)
        want = (a.double() * fa.double()) @ (bt.double() * fb.double()).t()
        del fa, fb
        b = bt.t()
        sa_k = sa.t().contiguous().t()  # (m, kb), stride (1, m)
        sb_k = sb.contiguous().t()      # (kb, nb); its transpose (nb, kb) is row-major
        assert sa_k.shape == (m, kb) and sb_k.shape == (kb, nb)

        def scaled():
            r = torch._scaled_mm(a, b, scale_a=sa_k, scale_b=sb_k, out_dtype=torch.bfloat16)
            return r[0] if isinstance(r, tuple) else r

        why = None
        err = None
        try:
            got = scaled().double()
            err = float((got - want).norm() / want.norm())
            del got
            if err > 1e-2:
                why = f"its blockwise result is off the block-scaled product by {err:.1e}"
        except Exception as e:  # noqa: BLE001 - any refusal means: no blockwise peer here
            first = (str(e).splitlines() or [type(e).__name__])[0][:120]
            why = f"torch {torch.__version__} refuses blockwise scales: {first}"
        if why is None:
            t = time_cuda(scaled, reps=30 if flop > 2e11 else 50, warmup=5)
            rows.append(_row("torch._scaled_mm FP8 e4m3, block scales 1x128/128x128 (cuBLAS)",
                             "torch", size, t, flop / (t["median_ms"] * 1e-3) / 1e9, "GFLOP/s",
                             err, precision="fp8"))
        else:
            sa_full = sa.repeat_interleave(128, 1)
            sb_full = sb.repeat_interleave(128, 0).repeat_interleave(128, 1)

            def dequant_mm():
                ah = (a.float() * sa_full).to(torch.bfloat16)
                bh = (bt.float() * sb_full).to(torch.bfloat16)
                return torch.matmul(ah, bh.t())

            got = dequant_mm().double()
            err = float((got - want).norm() / want.norm())
            del got
            t = time_cuda(dequant_mm, reps=30 if flop > 2e11 else 50, warmup=5)
            rows.append(_row(f"torch dequantise to BF16 + torch.matmul (no blockwise _scaled_mm: {why})",
                             "torch", size, t, flop / (t["median_ms"] * 1e-3) / 1e9, "GFLOP/s",
                             err, precision="fp8"))
            del sa_full, sb_full
        del a, bt, b, want
        torch.cuda.empty_cache()
    return rows


def _cupy(quick):
    cp, why = try_import("cupy")
    if cp is None:
        return [{"workload": W, "variant": "cupy einsum", "backend": "cupy", "skipped": why}]
    m, n, k = (4000, 3000, 2000) if quick else (10000, 7000, 5000)
    rng = cp.random.default_rng(0)
    a = rng.random((m, k), dtype=cp.float32) * 2 - 1
    b = rng.random((k, n), dtype=cp.float32) * 2 - 1
    want = a.astype(cp.float64).sum(0) @ b.astype(cp.float64)
    rows = []
    bytes_ = 4.0 * (m * k + k * n)
    for name, fn in [("cupy einsum('ij,jk->k')", lambda: cp.einsum("ij,jk->k", a, b)),
                     ("cupy (A @ B).sum(0)", lambda: (a @ b).sum(0))]:
        got = fn().astype(cp.float64)
        err = float(cp.linalg.norm(got - want) / cp.linalg.norm(want))
        t = time_cuda(fn, reps=10, warmup=2)
        rows.append(_row(name, "cupy", f"({m}x{k})({k}x{n})", t, bytes_ / (t["median_ms"] * 1e-3) / 1e9, "GB/s", err))
    return rows


def run(quick: bool) -> list:
    return _torch(quick) + _scaled_mm(quick) + _cupy(quick)
