"""Attention decoding peers: a PyTorch paged decode at the shapes of
`ptxlab bench` (lab/attention/host/decode/bench.rs): one new query
row per sequence, H query heads on H_kv K/V heads, a cache of 16-token
pages listed by a block table, BF16.

* "torch gather + sdpa": the paged cache gathered into contiguous K and V
  by the block table (`k_cache[table]`), then
  `scaled_dot_product_attention(..., attn_mask=lengths, enable_gqa=True)`;
  the gather is inside the timed call (it is what paging costs torch).
* "torch sdpa, contiguous cache (no paging)": where every sequence has the
  same length, SDPA over K and V already contiguous, `enable_gqa=True`, no
  mask: what torch reaches without pages, the gather outside the timing.

The inputs are the ones the Rust rows use: the hash of the element index
(`hash_value` in lab/attention/host/cpu.rs) for Q (tensor 0,
(B, 1, H, D)), the K cache (tensor 1) and the V cache (tensor 2), both
(num_pages, 16, H_kv, D) over every slot, rounded to BF16; the block table
of `scatter_table` in decode/problem.rs (page p of sequence b is page
a (p B + b) mod N, N = B max_pages, a the first integer from 0.618034 N up
coprime to N). Throughput is GB/s of the same byte count as the Rust rows
(every cached K and V row once, plus Q and O), so the rows compare times.
The error is measured as the Rust rows': against an f64 reference on the
first, middle and last sequences, query heads 0, G - 1, H / 2 and H - 1;
relative error by norm and the largest error over the largest value."""
import math

from common import try_import, time_cuda

W = "attention-decode"
PAGE = 16
CHUNK = 1 << 26


def shapes(quick):
    """(batch, heads, kv_heads, dim, kv_lens), as bench_shapes in bench.rs."""
    if quick:
        return [(4, 32, 8, 128, [4096] * 4)]
    return [
        (8, 32, 8, 128, [4096] * 8),
        (8, 32, 8, 128, [32768] * 8),
        (8, 32, 8, 128, [131072] * 8),
        (64, 32, 8, 128, [4096] * 64),
        (32, 32, 4, 128, [16384] * 32),
        (16, 32, 8, 128, [8192 * i for i in range(1, 17)]),
        (16, 32, 8, 64, [8192] * 16),
        (8, 32, 4, 256, [16384] * 8),
    ]


def size_label(b, h, hkv, d, lens):
    """DecodeShape::label of problem.rs (q_len 1, pages of 16)."""
    lo, hi = min(lens), max(lens)
    kv = f"kv={hi}" if lo == hi else f"kv={lo}..{hi} (mean {sum(lens) // b})"
    return f"B={b} H={h} Hkv={hkv} q=1 {kv} D={d} P={PAGE}"


def hashed_bf16(torch, tensor, shape):
    """hash_value of cpu.rs for every index of `shape`, rounded to BF16,
    computed in chunks (the caches reach 10^9 elements)."""
    m32 = 0xFFFFFFFF
    n = math.prod(shape)
    out = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    for s in range(0, n, CHUNK):
        i = torch.arange(s, min(n, s + CHUNK), device="cuda", dtype=torch.int64)
        x = (i * 0x9E3779B1 + (tensor + 1) * 0x85EBCA77) & m32
        x = x ^ (x >> 16)
        x = (x * 0x045D9F3B) & m32
        x = x ^ (x >> 16)
        x = (x * 0x045D9F3B) & m32
        x = x ^ (x >> 16)
        u = x.to(torch.float64) / 4294967296.0
        out[s:s + len(i)] = ((2.0 * u - 1.0) * math.sqrt(3.0)).to(torch.float32).to(torch.bfloat16)
    return out.reshape(shape)


def scatter_multiplier(n):
    """scatter_multiplier of problem.rs."""
    a = n * 618034 // 1000000
    while math.gcd(a, n) != 1:
        a += 1
    return a


def block_table(torch, b, lens):
    """scatter_table of problem.rs: (table (B, max_pages) int64 on the GPU,
    pages in the cache, max_pages)."""
    mp = max(-(-l // PAGE) for l in lens)
    n = b * mp
    a = scatter_multiplier(n)
    t = torch.full((b, mp), -1, dtype=torch.int64)
    for s in range(b):
        p = torch.arange(-(-lens[s] // PAGE), dtype=torch.int64)
        t[s, : len(p)] = (a * (p * b + s)) % n
    return t.cuda(), n, mp


def reference(torch, q, kc, vc, table, lens, scale, rows):
    """f64 decoding of the given (sequence, head) rows."""
    h, hkv = q.shape[2], kc.shape[2]
    g = h // hkv
    out = []
    for s, head in rows:
        pages = -(-lens[s] // PAGE)
        idx = table[s, :pages]
        k = kc[idx].reshape(-1, hkv, kc.shape[3])[: lens[s], head // g].double()
        v = vc[idx].reshape(-1, hkv, vc.shape[3])[: lens[s], head // g].double()
        p = torch.softmax((k @ q[s, 0, head].double()) * scale, dim=0)
        out.append(p @ v)
    return torch.stack(out)


def sample_rows(b, h, g):
    seqs = sorted(set([0, b // 2, b - 1]))
    heads = sorted(set([0, g - 1, h // 2, h - 1]))
    return [(s, x) for s in seqs for x in heads]


def run(quick):
    torch, why = try_import("torch")
    if torch is None or not torch.cuda.is_available():
        return [{"workload": W, "variant": "torch gather + sdpa", "backend": "torch",
                 "skipped": why or "torch has no CUDA device"}]
    import torch.nn.functional as F

    rows = []
    for b, h, hkv, d, lens in shapes(quick):
        size = size_label(b, h, hkv, d, lens)
        table, n, mp = block_table(torch, b, lens)
        q = hashed_bf16(torch, 0, (b, 1, h, d))
        kc = hashed_bf16(torch, 1, (n, PAGE, hkv, d))
        vc = hashed_bf16(torch, 2, (n, PAGE, hkv, d))
        scale = 1.0 / math.sqrt(d)
        nbytes = 2.0 * sum(lens) * hkv * d * 2.0 + 2.0 * q.numel() * 2.0
        pick = sample_rows(b, h, h // hkv)
        want = reference(torch, q, kc, vc, table, lens, scale, pick)
        peak = want.abs().max()
        lens_t = torch.tensor(lens, device="cuda")
        length = mp * PAGE
        mask = (torch.arange(length, device="cuda")[None, :] < lens_t[:, None])[:, None, None, :]
        qh = q.transpose(1, 2)  # (B, H, 1, D)

        def gathered():
            idx = table.clamp(min=0)
            k = kc[idx].reshape(b, length, hkv, d).transpose(1, 2)
            v = vc[idx].reshape(b, length, hkv, d).transpose(1, 2)
            return F.scaled_dot_product_attention(qh, k, v, attn_mask=mask, scale=scale,
                                                  enable_gqa=True)

        variants = [("torch gather + sdpa", gathered)]
        if min(lens) == max(lens):
            # Built outside the timing; freed with `variants` below.
            idx = table.clamp(min=0)
            kk = kc[idx].reshape(b, length, hkv, d)[:, : lens[0]].transpose(1, 2).contiguous()
            vv = vc[idx].reshape(b, length, hkv, d)[:, : lens[0]].transpose(1, 2).contiguous()
            variants.append(("torch sdpa, contiguous cache (no paging)",
                             lambda: F.scaled_dot_product_attention(qh, kk, vv, scale=scale,
                                                                    enable_gqa=True)))
        for variant, fn in variants:
            try:
                o = fn()  # (B, H, 1, D)
                got = torch.stack([o[s, x, 0].double() for s, x in pick])
                rel = float((got - want).norm() / want.norm())
                mx = float((got - want).abs().max() / peak)
                del o
                t = time_cuda(fn, reps=20, warmup=3)
            except Exception as e:  # out of memory, or a backend that refuses the shape
                rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                             "precision": "bf16",
                             "skipped": f"{type(e).__name__}: {e}".splitlines()[0][:200]})
                continue
            rows.append({"workload": W, "variant": variant, "backend": "torch", "size": size,
                         "precision": "bf16", **t,
                         "throughput": nbytes / (t["median_ms"] * 1e-3) / 1e9, "unit": "GB/s",
                         "rel_err": rel, "note": f"max {mx:.1e}"})
        del q, kc, vc, table, mask, variants, fn
        kk = vv = None
        torch.cuda.empty_cache()
    return rows
