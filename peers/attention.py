"""Attention peers: torch.nn.functional.scaled_dot_product_attention with each
of its backends (cuDNN, flash = FlashAttention-2, memory-efficient), where
available, at the shapes of `ptxlab bench` (lab/attention/host/
bench.rs), BF16 (and FP16 at the first shape), non-causal and causal.

The inputs are the ones the Rust rows use: a hash of the element index
(`hash_value` in lab/attention/host/cpu.rs, repeated here with
torch's int64 arithmetic), rounded to the 16-bit type. The error is measured
the same way too: against an f64 reference on the first and last head, every
64th query row and the last one; relative error by norm, and the largest
absolute error over the largest reference value ("max").

Grouped-query attention (`gqa_shapes`, as bench_gqa_shapes in bench.rs): K
and V have fewer heads than Q, query head h reading K/V head h // (H / H_kv).
torch runs it natively with `enable_gqa=True` on each backend that takes it;
a backend that does not is timed on K and V expanded by `repeat_interleave`
first (the expansion inside the timed call: the same problem, fairly timed),
which the variant's name says.

Sliding window (`window_shapes`, as bench_window_shapes in bench.rs): query i
sees keys |i - j| < W (and j <= i when causal). torch has no window flag: SDPA
takes the band as a boolean `attn_mask` (on the backends that take a mask), and
`flex_attention` takes it as a compiled block mask that skips whole tiles.

Packed variable-length batches (`packed_lengths`, as bench_packed_lengths in
bench.rs): sequences one after the other, Q, K, V as (T, H, D), each sequence
attending only to itself (causal within it). torch's `varlen_attn` takes the
offsets directly where this torch has it; `flex_attention` takes the sequence
of each token as a compiled block mask (tiles across sequences skipped)."""
import math

from common import try_import, time_cuda

W = "attention"


def shapes(quick):
    """(batch, heads, seq, dim), as bench_shapes in bench.rs."""
    return [(1, 8, 2048, 128)] if quick else [(4, 16, 8192, 128), (4, 32, 8192, 64), (2, 16, 4096, 256)]


def backward_shapes(quick):
    """(batch, heads, seq, dim), as bench_backward_shapes in bench.rs."""
    return [(1, 8, 2048, 128)] if quick else [(4, 16, 8192, 128), (4, 16, 8192, 64), (4, 16, 8192, 256), (2, 16, 4097, 128)]


def gqa_shapes(quick):
    """(batch, heads, kv_heads, seq, dim), as bench_gqa_shapes in bench.rs."""
    return [(1, 8, 2, 2048, 128)] if quick else [(2, 32, 8, 4096, 128), (1, 32, 8, 8192, 128)]


def window_shapes(quick):
    """(batch, heads, seq, dim, window), as bench_window_shapes in bench.rs."""
    return [(1, 8, 2048, 128, 256)] if quick else [(4, 16, 8192, 128, 1024)]


def packed_lengths(quick):
    """(heads, dim, sequence lengths), as bench_packed_lengths in bench.rs."""
    if quick:
        return 8, 128, [1000, 77, 511, 460]
    return 16, 128, [4096, 1024, 3000, 517, 2048, 8192, 777, 1500, 4000, 333, 2222, 1111, 640, 2500,
                     101, 1787]


def packed_label(h, d, lens, causal):
    """Packed::label of packed.rs: `varlen B=16 H=16 T=32768 (101-8192) D=128 causal`."""
    lo, hi = min(lens), max(lens)
    span = f"{lo}-{hi}" if lo != hi else f"{hi}"
    return f"varlen B={len(lens)} H={h} T={sum(lens)} ({span}) D={d}" + (" causal" if causal else "")


def packed_flop(h, d, lens, causal):
    """Packed::flops: the sequences' own (4 H D L^2, halved when causal)."""
    return sum(4.0 * h * d * l * l / (2 if causal else 1) for l in lens)


def size_label(b, h, s, d, causal, kv_heads=None, window=None):
    """Shape::label of types.rs: `B=2 H=32 Hkv=8 S=4096 D=128 causal window=1024`."""
    kv = "" if kv_heads is None or kv_heads == h else f" Hkv={kv_heads}"
    w = "" if window is None else f" window={window}"
    return f"B={b} H={h}{kv} S={s} D={d}" + (" causal" if causal else "") + w


def window_pairs(s, causal, window):
    """Query-key pairs inside the band (Shape::flops of types.rs counts
    4 B H D per pair): query i sees keys |i - j| < window, j <= i when causal."""
    return sum((i + 1 if causal else min(s, i + window)) - max(0, i - window + 1) for i in range(s))


def band(torch, s, causal, window):
    """The boolean mask of the window (True: the key is seen), (s, s)."""
    i = torch.arange(s, device="cuda")
    keep = (i[:, None] - i[None, :]).abs() < window
    if causal:
        keep &= i[None, :] <= i[:, None]
    return keep


def hashed(torch, tensor, shape):
    """hash_value of cpu.rs for every index of `shape`, as float32."""
    m32 = 0xFFFFFFFF
    n = math.prod(shape)
    i = torch.arange(n, device="cuda", dtype=torch.int64)
    x = (i * 0x9E3779B1 + (tensor + 1) * 0x85EBCA77) & m32
    del i
    x = x ^ (x >> 16)
    x = (x * 0x045D9F3B) & m32
    x = x ^ (x >> 16)
    x = (x * 0x045D9F3B) & m32
    x = x ^ (x >> 16)
    u = x.to(torch.float64) / 4294967296.0
    del x
    v = ((2.0 * u - 1.0) * math.sqrt(3.0)).to(torch.float32)
    return v.reshape(shape)


def sample_rows(s):
    rows = list(range(0, s, 64))
    if rows[-1] != s - 1:
        rows.append(s - 1)
    return rows


def reference(torch, q, k, v, causal, scale, heads, window=None):
    """f64 attention on the sampled rows of the given (b, h) query heads
    (query head h reads K/V head h // (H / H_kv)), with the window's band
    when there is one."""
    out = []
    group = q.shape[1] // k.shape[1]
    for b, h in heads:
        rows = torch.tensor(sample_rows(q.shape[2]), device="cuda")
        qd = q[b, h, rows].double()
        kh = h // group
        s = (qd @ k[b, kh].double().T) * scale
        cols = torch.arange(k.shape[2], device="cuda")
        if causal:
            s = s.masked_fill(cols[None, :] > rows[:, None], float("-inf"))
        if window is not None:
            s = s.masked_fill((cols[None, :] - rows[:, None]).abs() >= window, float("-inf"))
        p = torch.softmax(s, dim=-1)
        out.append(p @ v[b, kh].double())
    return torch.cat(out)


def picked(torch, o, heads, s):
    rows = torch.tensor(sample_rows(s), device="cuda")
    return torch.cat([o[b, h, rows].double() for b, h in heads])


def run(quick):
    torch, why = try_import("torch")
    if torch is None or not torch.cuda.is_available():
        return [{"workload": W, "variant": "torch sdpa", "backend": "torch",
                 "skipped": why or "torch has no CUDA device"}]
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    backends = [("cuDNN", SDPBackend.CUDNN_ATTENTION),
                ("flash (FlashAttention-2)", SDPBackend.FLASH_ATTENTION),
                ("memory-efficient", SDPBackend.EFFICIENT_ATTENTION)]
    rows = []
    for si, (b, h, s, d) in enumerate(shapes(quick)):
        qf = hashed(torch, 0, (b, h, s, d))
        kf = hashed(torch, 1, (b, h, s, d))
        vf = hashed(torch, 2, (b, h, s, d))
        dtypes = [(torch.bfloat16, "bf16"), (torch.float16, "f16")] if si == 0 else [(torch.bfloat16, "bf16")]
        for dtype, pname in dtypes:
            q, k, v = qf.to(dtype), kf.to(dtype), vf.to(dtype)
            scale = 1.0 / math.sqrt(d)
            heads = [(0, 0)] + ([(b - 1, h - 1)] if b * h > 1 else [])
            for causal in (False, True):
                size = f"B={b} H={h} S={s} D={d}" + (" causal" if causal else "")
                flop = 4.0 * b * h * s * s * d / (2.0 if causal else 1.0)
                want = reference(torch, q, k, v, causal, scale, heads)
                peak = want.abs().max()
                for label, be in backends:
                    variant = f"torch sdpa {label}"
                    try:
                        with sdpa_kernel([be]):
                            fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
                            o = fn()
                            got = picked(torch, o, heads, s)
                            rel = float((got - want).norm() / want.norm())
                            mx = float((got - want).abs().max() / peak)
                            del o
                            t = time_cuda(fn, reps=20, warmup=3)
                    except Exception as e:  # a backend that does not take this shape or GPU
                        rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                                     "precision": pname,
                                     "skipped": f"{type(e).__name__}: {e}".splitlines()[0][:200]})
                        continue
                    rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                                 "precision": pname, **t,
                                 "throughput": flop / (t["median_ms"] * 1e-3) / 1e9, "unit": "GFLOP/s",
                                 "rel_err": rel, "note": f"max {mx:.1e}"})
                del want
            del q, k, v
        del qf, kf, vf
        torch.cuda.empty_cache()
    rows += run_backward(torch, quick, backends[:2])
    rows += run_gqa(torch, quick, backends)
    rows += run_window(torch, quick, backends)
    rows += run_varlen(torch, quick)
    return rows


def run_varlen(torch, quick):
    """The packed variable-length rows, BF16, non-causal and causal:
    `varlen_attn` (where this torch has it) on (T, H, D) with the offsets,
    and flex_attention on (1, H, T, D) with the sequences as its block mask
    (the layout change outside the timed call), then the backward of each
    (`.backward()` timed alone). Errors on the first and the last sequence
    (heads 0 and H-1, every 64th row and the last) against f64, as the Rust
    rows measure them; the gradients on sequence 0, head 0."""
    h, d, lens = packed_lengths(quick)
    try:
        # The backward is timed by replaying one graph (retain_graph), which
        # compiled backwards that donate their buffers refuse.
        torch._functorch.config.donated_buffer = False
    except AttributeError:
        pass
    t_all = sum(lens)
    cu = [0]
    for n in lens:
        cu.append(cu[-1] + n)
    q, k, v, g = (hashed(torch, t, (t_all, h, d)).to(torch.bfloat16) for t in range(4))
    scale = 1.0 / math.sqrt(d)
    doc = torch.repeat_interleave(torch.arange(len(lens), device="cuda"), torch.tensor(lens, device="cuda"))
    cu_t = torch.tensor(cu, device="cuda", dtype=torch.int32)
    rows = []
    for causal in (False, True):
        size = packed_label(h, d, lens, causal)
        flop = packed_flop(h, d, lens, causal)
        want = []
        for b in (0, len(lens) - 1):
            x = [t[cu[b]:cu[b + 1]].transpose(0, 1).unsqueeze(0) for t in (q, k, v)]
            want.append(reference(torch, *x, causal, scale, [(0, 0), (0, h - 1)]))
        variants = []
        try:
            variants.append(("torch varlen_attn", varlen_call(torch, cu_t, max(lens), causal, scale), False, None))
        except Exception as e:  # an older torch, or a signature this code does not know
            variants.append(("torch varlen_attn", None, False, f"{type(e).__name__}: {e}".splitlines()[0][:200]))
        try:
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention

            # Two functions, not one with the mask kind as a default
            # argument: torch.compile keys its cache on the code object and
            # would run the first mask's graph for the second.
            def same_sequence(b, hh, qi, kj):
                return doc[qi] == doc[kj]

            def same_sequence_causal(b, hh, qi, kj):
                return (doc[qi] == doc[kj]) & (kj <= qi)
            keep = same_sequence_causal if causal else same_sequence
            mask = create_block_mask(keep, B=None, H=None, Q_LEN=t_all, KV_LEN=t_all, device="cuda")
            fx = torch.compile(flex_attention)
            variants.append(("torch flex_attention (compiled, document mask)",
                             lambda q, k, v, m=mask: fx(q, k, v, block_mask=m, scale=scale), True, None))
        except Exception as e:
            variants.append(("torch flex_attention (compiled, document mask)", None, True,
                             f"{type(e).__name__}: {e}".splitlines()[0][:200]))
        for variant, call, bhsd, why in variants:
            if call is None:
                rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                             "precision": "bf16", "skipped": why})
                continue
            try:
                # flex takes (1, H, T, D): the layout change is made once, outside the timing.
                xs = [t.transpose(0, 1).unsqueeze(0).contiguous() if bhsd else t for t in (q, k, v, g)]
                packed = (lambda o: o[0].transpose(0, 1)) if bhsd else (lambda o: o)
                fn = lambda: call(*xs[:3])
                o = packed(fn())
                got, ref = [], []
                for i, b in enumerate((0, len(lens) - 1)):
                    ob = o[cu[b]:cu[b + 1]].transpose(0, 1).unsqueeze(0)
                    got.append(picked(torch, ob, [(0, 0), (0, h - 1)], lens[b]))
                    ref.append(want[i])
                got, ref = torch.cat(got), torch.cat(ref)
                rel = float((got - ref).norm() / ref.norm())
                mx_err = float((got - ref).abs().max() / ref.abs().max())
                del o
                t = time_cuda(fn, reps=20, warmup=3)
                rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                             "precision": "bf16", **t,
                             "throughput": flop / (t["median_ms"] * 1e-3) / 1e9, "unit": "GFLOP/s",
                             "rel_err": rel, "note": f"max {mx_err:.1e}"})
                try:
                    rows.append(varlen_backward(torch, call, xs, bhsd, cu, causal, scale, variant, size, flop))
                except Exception as e:  # a forward without a backward here
                    rows.append({"workload": W, "variant": variant + " backward", "backend": "torch",
                                 "size": size + " backward", "precision": "bf16",
                                 "skipped": f"{type(e).__name__}: {e}".splitlines()[0][:200]})
            except Exception as e:
                rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                             "precision": "bf16", "skipped": f"{type(e).__name__}: {e}".splitlines()[0][:200]})
    del q, k, v, g
    torch.cuda.empty_cache()
    return rows


def varlen_call(torch, cu_t, longest, causal, scale):
    """torch's `varlen_attn` on (T, H, D) with the offsets, the causal mask
    by whichever keyword this torch's signature has (`is_causal`, or a
    `window_size` of (-1, 0)); raises when it has neither."""
    import inspect

    from torch.nn.attention.varlen import varlen_attn
    params = inspect.signature(varlen_attn).parameters
    kw = {"scale": scale} if "scale" in params else {}
    if "is_causal" in params:
        kw["is_causal"] = causal
    elif "window_size" in params:
        kw["window_size"] = (-1, 0) if causal else (-1, -1)
    elif causal:
        raise TypeError(f"varlen_attn{inspect.signature(varlen_attn)} takes no causal mask")
    return lambda q, k, v: varlen_attn(q, k, v, cu_t, cu_t, longest, longest, **kw)


def varlen_backward(torch, call, xs, bhsd, cu, causal, scale, variant, size, flop):
    """The backward of a packed `call` (`.backward()` timed alone); errors of
    dQ, dK, dV on sequence 0, head 0, against f64 autograd."""
    n = cu[1]
    sel = (lambda t: t[0, 0, :n]) if bhsd else (lambda t: t[:n, 0])
    qd, kd, vd = (sel(x).double().detach().requires_grad_() for x in xs[:3])
    s = (qd @ kd.T) * scale
    if causal:
        i = torch.arange(n, device="cuda")
        s = s.masked_fill(i[None, :] > i[:, None], float("-inf"))
    (torch.softmax(s, dim=-1) @ vd).backward(sel(xs[3]).double())
    want = (qd.grad, kd.grad, vd.grad)
    del s, qd, kd, vd
    qq, kk, vv = (x.detach().requires_grad_() for x in xs[:3])
    o = call(qq, kk, vv)
    o.backward(xs[3], retain_graph=True)
    errs = [float((sel(x.grad).double() - w).norm() / w.norm()) for x, w in zip((qq, kk, vv), want)]

    def step():
        for x in (qq, kk, vv):
            x.grad = None
        o.backward(xs[3], retain_graph=True)
    t = time_cuda(step, reps=10, warmup=2)
    del o
    return {"workload": W, "variant": variant + " backward", "backend": "torch", "size": size + " backward",
            "precision": "bf16", **t,
            "throughput": 2.5 * flop / (t["median_ms"] * 1e-3) / 1e9, "unit": "GFLOP/s",
            "rel_err": max(errs),
            "note": f"dQ {errs[0]:.1e} dK {errs[1]:.1e} dV {errs[2]:.1e} (sequence 0, head 0)"}


def flex_window(torch, s, causal, window):
    """torch's flex_attention, compiled, with the window as its block mask
    (tiles outside the band skipped), or the reason it cannot run."""
    def keep(b, h, qi, kj):
        seen = (qi - kj).abs() < window
        return seen & (kj <= qi) if causal else seen
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        mask = create_block_mask(keep, B=None, H=None, Q_LEN=s, KV_LEN=s, device="cuda")
        fn = torch.compile(flex_attention)
    except Exception as e:  # an older torch, or no compiler for it here
        return None, f"{type(e).__name__}: {e}".splitlines()[0][:200]
    return (lambda q, k, v, scale: fn(q, k, v, block_mask=mask, scale=scale)), None


def run_window(torch, quick, backends):
    """The sliding-window rows, BF16: SDPA with the band as a boolean
    `attn_mask` on each backend that takes a mask (every score computed,
    then masked), flex_attention with the band as its block mask, then the
    backward of each (`.backward()` timed alone), errors measured as the
    other rows'. FLOPs count the pairs inside the band (as Shape::flops)."""
    from torch.nn.attention import sdpa_kernel
    import torch.nn.functional as F

    rows = []
    for b, h, s, d, window in window_shapes(quick):
        q, k, v, g = (hashed(torch, t, (b, h, s, d)).to(torch.bfloat16) for t in range(4))
        scale = 1.0 / math.sqrt(d)
        heads = [(0, 0)] + ([(b - 1, h - 1)] if b * h > 1 else [])
        for causal in (False, True):
            size = size_label(b, h, s, d, causal, window=window)
            flop = 4.0 * b * h * d * window_pairs(s, causal, window)
            want = reference(torch, q, k, v, causal, scale, heads, window)
            peak = want.abs().max()
            mask = band(torch, s, causal, window)
            variants = [(f"torch sdpa {label} band mask", be,
                         lambda q, k, v, scale: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale))
                        for label, be in backends]
            flex, why = flex_window(torch, s, causal, window)
            variants.append(("torch flex_attention (compiled, block mask)", None, flex))
            for variant, be, call in variants:
                if call is None:
                    rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                                 "precision": "bf16", "skipped": why})
                    continue
                try:
                    with sdpa_kernel([be]) if be is not None else _nothing():
                        fn = lambda: call(q, k, v, scale)
                        o = fn()
                        got = picked(torch, o, heads, s)
                        rel = float((got - want).norm() / want.norm())
                        mx = float((got - want).abs().max() / peak)
                        del o
                        t = time_cuda(fn, reps=20, warmup=3)
                        rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                                     "precision": "bf16", **t,
                                     "throughput": flop / (t["median_ms"] * 1e-3) / 1e9, "unit": "GFLOP/s",
                                     "rel_err": rel, "note": f"max {mx:.1e}"})
                        try:
                            rows.append(window_backward(torch, call, q, k, v, g, causal, scale, window,
                                                        variant, size, flop))
                        except Exception as e:  # a forward that has no backward here
                            rows.append({"workload": W, "variant": variant + " backward", "backend": "torch",
                                         "size": size + " backward", "precision": "bf16",
                                         "skipped": f"{type(e).__name__}: {e}".splitlines()[0][:200]})
                except Exception as e:  # a backend that does not take a mask or this shape
                    rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                                 "precision": "bf16",
                                 "skipped": f"{type(e).__name__}: {e}".splitlines()[0][:200]})
            del want, mask
        del q, k, v, g
        torch.cuda.empty_cache()
    return rows


class _nothing:
    """A context manager that does nothing (flex_attention picks no SDPA backend)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def window_backward(torch, call, q, k, v, g, causal, scale, window, variant, size, flop):
    """The backward of `call` (`.backward()` timed alone), errors of dQ, dK,
    dV on head (0, 0) against f64 autograd with the band."""
    qd, kd, vd = (x[0, 0].double().detach().requires_grad_() for x in (q, k, v))
    s = (qd @ kd.T) * scale
    s = s.masked_fill(~band(torch, s.shape[0], causal, window), float("-inf"))
    (torch.softmax(s, dim=-1) @ vd).backward(g[0, 0].double())
    want = (qd.grad, kd.grad, vd.grad)
    del s, qd, kd, vd
    qq, kk, vv = (x.detach().requires_grad_() for x in (q, k, v))
    o = call(qq, kk, vv, scale)
    o.backward(g, retain_graph=True)
    errs = [float((x.grad[0, 0].double() - w).norm() / w.norm()) for x, w in zip((qq, kk, vv), want)]

    def step():
        for x in (qq, kk, vv):
            x.grad = None
        o.backward(g, retain_graph=True)
    t = time_cuda(step, reps=10, warmup=2)
    del o
    return {"workload": W, "variant": variant + " backward", "backend": "torch", "size": size + " backward",
            "precision": "bf16", **t,
            "throughput": 2.5 * flop / (t["median_ms"] * 1e-3) / 1e9, "unit": "GFLOP/s",
            "rel_err": max(errs),
            "note": f"dQ {errs[0]:.1e} dK {errs[1]:.1e} dV {errs[2]:.1e} (head 0)"}


def sdpa_gqa(torch, F, q, k, v, causal, scale, native):
    """SDPA with grouped K/V heads: `enable_gqa=True`, or (not `native`) K
    and V expanded to Q's heads by `repeat_interleave` in the call."""
    if native:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=True)
    g = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1),
                                          is_causal=causal, scale=scale)


def run_gqa(torch, quick, backends):
    """The grouped-query rows, BF16: the forward with each backend, then at
    the first shape the backward (cuDNN and flash, `.backward()` timed
    alone), errors measured as the ungrouped rows'."""
    from torch.nn.attention import sdpa_kernel
    import torch.nn.functional as F

    rows = []
    for gi, (b, h, hkv, s, d) in enumerate(gqa_shapes(quick)):
        q = hashed(torch, 0, (b, h, s, d)).to(torch.bfloat16)
        k = hashed(torch, 1, (b, hkv, s, d)).to(torch.bfloat16)
        v = hashed(torch, 2, (b, hkv, s, d)).to(torch.bfloat16)
        scale = 1.0 / math.sqrt(d)
        heads = [(0, 0)] + ([(b - 1, h - 1)] if b * h > 1 else [])
        for causal in (False, True):
            size = size_label(b, h, s, d, causal, hkv)
            flop = 4.0 * b * h * s * s * d / (2.0 if causal else 1.0)
            want = reference(torch, q, k, v, causal, scale, heads)
            peak = want.abs().max()
            for label, be in backends:
                row = None
                for native in (True, False):
                    variant = f"torch sdpa {label}" + (" enable_gqa" if native else " K/V repeat_interleave")
                    try:
                        with sdpa_kernel([be]):
                            fn = lambda: sdpa_gqa(torch, F, q, k, v, causal, scale, native)
                            o = fn()
                            got = picked(torch, o, heads, s)
                            rel = float((got - want).norm() / want.norm())
                            mx = float((got - want).abs().max() / peak)
                            del o
                            t = time_cuda(fn, reps=20, warmup=3)
                    except Exception as e:  # a backend that does not take this shape or GPU
                        row = {"workload": W, "variant": variant, "backend": "torch", "size": size,
                               "precision": "bf16",
                               "skipped": f"{type(e).__name__}: {e}".splitlines()[0][:200]}
                        continue
                    row = {"workload": W, "variant": variant, "backend": "torch", "size": size,
                           "precision": "bf16", **t,
                           "throughput": flop / (t["median_ms"] * 1e-3) / 1e9, "unit": "GFLOP/s",
                           "rel_err": rel, "note": f"max {mx:.1e}"}
                    break
                rows.append(row)
            del want
            if gi == 0:
                rows += gqa_backward(torch, q, k, v, causal, scale, size, flop, backends[:2])
        del q, k, v
        torch.cuda.empty_cache()
    return rows


def gqa_backward(torch, q, k, v, causal, scale, size, flop, backends):
    """torch's grouped-query backward (`.backward()` timed alone), errors of
    dQ on query head (0, 0) and of dK, dV on K/V head (0, 0) (summed over
    its query heads) against f64 autograd, as the Rust row measures."""
    from torch.nn.attention import sdpa_kernel
    import torch.nn.functional as F

    b, h, s, d = q.shape
    g_heads = h // k.shape[1]
    g = hashed(torch, 3, (b, h, s, d)).to(torch.bfloat16)
    qd = q[0, :g_heads].double().detach().requires_grad_()
    kd, vd = (x[0, 0].double().detach().requires_grad_() for x in (k, v))
    sc = (qd @ kd.T) * scale
    if causal:
        mask = torch.arange(s, device="cuda")[None, :] > torch.arange(s, device="cuda")[:, None]
        sc = sc.masked_fill(mask, float("-inf"))
    (torch.softmax(sc, dim=-1) @ vd).backward(g[0, :g_heads].double())
    want = (qd.grad[0], kd.grad, vd.grad)
    del sc, qd, kd, vd
    rows = []
    for label, be in backends:
        row = None
        for native in (True, False):
            variant = f"torch sdpa {label}" + (" enable_gqa" if native else " K/V repeat_interleave") + " backward"
            try:
                with sdpa_kernel([be]):
                    qq, kk, vv = (x.detach().requires_grad_() for x in (q, k, v))
                    o = sdpa_gqa(torch, F, qq, kk, vv, causal, scale, native)
                    o.backward(g, retain_graph=True)
                    errs = [float((x.grad[0, 0].double() - w).norm() / w.norm())
                            for x, w in zip((qq, kk, vv), want)]

                    def step():
                        for x in (qq, kk, vv):
                            x.grad = None
                        o.backward(g, retain_graph=True)
                    t = time_cuda(step, reps=10, warmup=2)
                    del o
            except Exception as e:  # a backend that does not take this shape or GPU
                row = {"workload": W, "variant": variant, "backend": "torch", "size": size + " backward",
                       "precision": "bf16", "skipped": f"{type(e).__name__}: {e}".splitlines()[0][:200]}
                continue
            row = {"workload": W, "variant": variant, "backend": "torch", "size": size + " backward",
                   "precision": "bf16", **t,
                   "throughput": 2.5 * flop / (t["median_ms"] * 1e-3) / 1e9, "unit": "GFLOP/s",
                   "rel_err": max(errs),
                   "note": f"dQ {errs[0]:.1e} dK {errs[1]:.1e} dV {errs[2]:.1e} (head 0)"}
            break
        rows.append(row)
    del g
    return rows


def grad_reference(torch, q, k, v, g, causal, scale):
    """f64 dQ, dK, dV of head (0, 0), by autograd in f64."""
    qd, kd, vd = (x[0, 0].double().detach().requires_grad_() for x in (q, k, v))
    s = (qd @ kd.T) * scale
    if causal:
        n, m = s.shape
        mask = torch.arange(m, device="cuda")[None, :] > torch.arange(n, device="cuda")[:, None]
        s = s.masked_fill(mask, float("-inf"))
    o = torch.softmax(s, dim=-1) @ vd
    o.backward(g[0, 0].double())
    return qd.grad, kd.grad, vd.grad


def run_backward(torch, quick, backends):
    """torch's backward (`.backward()` timed alone, the forward's graph
    kept), BF16, at the backward shapes; TFLOP/s as 2.5x the forward's
    FLOPs (FlashAttention's convention, as the Rust rows); the relative
    error by norm of each gradient on head (0, 0) against f64, as the Rust
    rows measure theirs."""
    from torch.nn.attention import sdpa_kernel
    import torch.nn.functional as F

    rows = []
    for b, h, s, d in backward_shapes(quick):
        shape = (b, h, s, d)
        q, k, v, g = (hashed(torch, t, shape).to(torch.bfloat16) for t in range(4))
        scale = 1.0 / math.sqrt(d)
        for causal in (False, True):
            size = f"B={b} H={h} S={s} D={d}" + (" causal" if causal else "") + " backward"
            flop = 2.5 * 4.0 * b * h * s * s * d / (2.0 if causal else 1.0)
            want = grad_reference(torch, q, k, v, g, causal, scale)
            for label, be in backends:
                variant = f"torch sdpa {label} backward"
                try:
                    with sdpa_kernel([be]):
                        qq, kk, vv = (x.detach().requires_grad_() for x in (q, k, v))
                        o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal, scale=scale)
                        o.backward(g, retain_graph=True)
                        errs = [float((x.grad[0, 0].double() - w).norm() / w.norm())
                                for x, w in zip((qq, kk, vv), want)]

                        def step():
                            for x in (qq, kk, vv):
                                x.grad = None
                            o.backward(g, retain_graph=True)
                        t = time_cuda(step, reps=10, warmup=2)
                        del o
                except Exception as e:  # a backend that does not take this shape or GPU
                    rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                                 "precision": "bf16",
                                 "skipped": f"{type(e).__name__}: {e}".splitlines()[0][:200]})
                    continue
                rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                             "precision": "bf16", **t,
                             "throughput": flop / (t["median_ms"] * 1e-3) / 1e9, "unit": "GFLOP/s",
                             "rel_err": max(errs),
                             "note": f"dQ {errs[0]:.1e} dK {errs[1]:.1e} dV {errs[2]:.1e} (head 0)"})
            del want
        del q, k, v, g
        torch.cuda.empty_cache()
    return rows
