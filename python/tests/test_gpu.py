"""GPU tests: torch and CuPy inputs, zero-copy results. Each skips with the
reason when there is no GPU, torch or CuPy."""

import numpy as np
import pytest

import ptxlab
from conftest import gpu_available, light_curve

HAVE_GPU, WHY = gpu_available()
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"no GPU: {WHY}")


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


@needs_gpu
def test_gpu_lombscargle_matches_the_cpu_reference():
    t, y, dy = light_curve()
    f = np.linspace(0.01, 2.0, 4096)
    want = ptxlab.LombScargle(t, y, dy, backend="cpu").power(f)
    for prec, tol in (("f64", 1e-9), ("f32", 1e-4)):
        got = ptxlab.LombScargle(t, y, dy, backend="gpu", precision=prec).power(f)
        assert np.max(np.abs(got - want)) / np.max(want) < tol


@needs_gpu
def test_torch_lombscargle_returns_torch_on_the_same_device():
    torch = _torch()
    t, y, dy = light_curve()
    f = np.linspace(0.01, 2.0, 512)
    tt, yy, dd = (torch.tensor(a, device="cuda") for a in (t, y, dy))
    got = ptxlab.LombScargle(tt, yy, dd).power(f)
    assert isinstance(got, torch.Tensor) and got.device == tt.device
    want = ptxlab.LombScargle(t, y, dy, backend="cpu").power(f)
    assert np.max(np.abs(got.cpu().numpy() - want)) / np.max(want) < 1e-9
    with pytest.raises(ValueError, match="device"):
        ptxlab.LombScargle(tt, yy, dd, device=tt.device.index + 1)


@needs_gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("causal", [False, True])
def test_torch_attention_matches_sdpa_without_a_copy(dtype, causal):
    torch = _torch()
    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(2, 4, 192, 64, device="cuda", dtype=dt, generator=g) for _ in range(3))
    ptrs = [x.data_ptr() for x in (q, k, v)]
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        o = ptxlab.attention(q, k, v, causal=causal)
    s.synchronize()
    assert [x.data_ptr() for x in (q, k, v)] == ptrs
    assert o.dtype == dt and o.device == q.device and o.is_contiguous()
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    assert (o.float() - want).abs().max().item() < (3e-2 if dtype == "bfloat16" else 5e-3)


@needs_gpu
@pytest.mark.parametrize("kv_heads", [1, 2])
@pytest.mark.parametrize("causal", [False, True])
def test_torch_attention_with_grouped_kv_heads_matches_sdpa(kv_heads, causal):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(2, 4, 177, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    k, v = (torch.randn(2, kv_heads, 133, 128, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    o = ptxlab.attention(q, k, v, causal=causal)
    rep = 4 // kv_heads
    want = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float().repeat_interleave(rep, dim=1), v.float().repeat_interleave(rep, dim=1),
        is_causal=causal)
    assert o.shape == q.shape
    assert (o.float() - want).abs().max().item() < 3e-2
    with pytest.raises(ValueError, match="dividing"):
        ptxlab.attention(q, k[:, :1].expand(2, 3, 133, 128).contiguous(), v[:, :1].expand(2, 3, 133, 128).contiguous())


@needs_gpu
@pytest.mark.parametrize("window", [1, 40, 500])
@pytest.mark.parametrize("causal", [False, True])
def test_torch_attention_with_a_sliding_window_matches_sdpa_with_the_band_mask(window, causal):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(2)
    q, k, v = (torch.randn(1, 3, 300, 64, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    o = ptxlab.attention(q, k, v, causal=causal, window=window)
    i = torch.arange(300, device="cuda")
    keep = (i[:, None] - i[None, :]).abs() < window
    if causal:
        keep &= i[None, :] <= i[:, None]
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=keep)
    assert (o.float() - want).abs().max().item() < 3e-2
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="window"):
            ptxlab.attention(q, k, v, window=bad)


@needs_gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize(
    "d,sq,skv",
    [
        (64, 160, 160),  # a Hopper rung on an H200 (tensor maps of each call's addresses)
        (128, 77, 133),  # odd lengths
        (48, 40, 33),  # rung 1 (a head dim the fused rungs do not take) with an odd Skv: V padded per call
    ],
)
def test_torch_attention_of_one_shape_on_many_tensors_reads_each_calls_tensors(dtype, d, sq, skv):
    """One problem shape called again and again reuses the kept plan; every
    call must still read its own tensors: new ones at other addresses,
    views that do not start their allocation, and old ones whose values
    changed in place. A plan (or tensor map) that kept an earlier call's
    addresses or values gives another call's result and fails here."""
    torch = _torch()
    from ptxlab import _native

    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(5)
    dev = torch.cuda.current_device()
    _native.attention_plan_cache(dev, clear=True)
    _, hits0, misses0, _ = _native.attention_plan_cache(dev)

    def fresh(offset):
        # The view `offset` heads into a larger tensor (offset > 0: an
        # address inside the allocation).
        def one(s):
            return torch.randn(1, 2 + offset, s, d, device="cuda", dtype=dt, generator=g)[:, offset:]

        return one(sq), one(skv), one(skv)

    def reference(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())

    sets = [fresh(i % 2) for i in range(4)]
    assert all(x.is_contiguous() for s in sets for x in s)
    # Every set alive at once: no two share an address.
    assert len({x.data_ptr() for s in sets for x in s}) == 3 * len(sets)
    calls = sets + [sets[0], sets[2]]
    outs = [ptxlab.attention(q, k, v) for q, k, v in calls]
    wants = [reference(q, k, v) for q, k, v in calls]
    # New values, written in place at the addresses of an earlier call.
    for x in sets[1]:
        x.copy_(torch.randn(x.shape, device="cuda", dtype=dt, generator=g))
    outs.append(ptxlab.attention(*sets[1]))
    wants.append(reference(*sets[1]))
    # Rung 1 (d = 48) rounds the scores to 16 bits too.
    tol = {"bfloat16": 3e-2, "float16": 5e-3}[dtype] * (2 if d == 48 else 1)
    for o, want in zip(outs, wants):
        assert (o.float() - want).abs().max().item() < tol
    # The results of different tensors differ far beyond the tolerance, so
    # a call that read another call's tensors cannot pass.
    for a in range(len(outs)):
        for b in range(a + 1, len(outs)):
            same = (wants[a] - wants[b]).abs().max().item() == 0
            assert same or (wants[a] - wants[b]).abs().max().item() > 5 * tol
    kept, hits, misses, _ = _native.attention_plan_cache(dev)
    assert kept == 1 and misses - misses0 == 1 and hits - hits0 == len(outs) - 1
    kept, *_ = _native.attention_plan_cache(dev, clear=True)
    assert kept == 0


def _cu(lengths):
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return out


@needs_gpu
@pytest.mark.parametrize("kv_heads", [4, 2])
@pytest.mark.parametrize("causal", [False, True])
def test_torch_attention_varlen_matches_sdpa_on_each_sequence(causal, kv_heads):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(3)
    lq = [77, 133, 19, 300, 1]
    # Causal: equal lengths (query i sees keys j <= i of its sequence);
    # otherwise other key lengths than query lengths.
    lk = lq if causal else [133, 77, 90, 5, 64]
    cu_q, cu_k = _cu(lq), _cu(lk)
    q = torch.randn(cu_q[-1], 4, 64, device="cuda", dtype=torch.bfloat16, generator=g)
    k, v = (torch.randn(cu_k[-1], kv_heads, 64, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    ptrs = [x.data_ptr() for x in (q, k, v)]
    # The offsets as the caller's int32 tensor (FlashAttention's layout).
    o = ptxlab.attention_varlen(
        q, k, v, torch.tensor(cu_q, dtype=torch.int32, device="cuda"), None if causal else cu_k, causal=causal
    )
    assert [x.data_ptr() for x in (q, k, v)] == ptrs
    assert o.shape == q.shape and o.dtype == q.dtype and o.device == q.device
    rep = 4 // kv_heads
    for b in range(len(lq)):
        sq = slice(cu_q[b], cu_q[b + 1])
        sk = slice(cu_k[b], cu_k[b + 1])
        qs = q[sq].transpose(0, 1)[None].float()
        ks, vs = (x[sk].transpose(0, 1)[None].float().repeat_interleave(rep, dim=1) for x in (k, v))
        want = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, is_causal=causal)
        got = o[sq].transpose(0, 1)[None].float()
        assert (got - want).abs().max().item() < 3e-2, f"sequence {b}"
    # The packed plan is kept for the next call of the same batch, and a
    # dense call of the same base shape (one sequence of 77) does not take it.
    from ptxlab import _native

    dev = q.device.index
    _native.attention_plan_cache(dev, clear=True)
    _, hits0, misses0, _ = _native.attention_plan_cache(dev)
    q1, k1, v1 = q[:77], k[:77], v[:77]
    o1 = ptxlab.attention_varlen(q1, k1, v1, [0, 77], causal=causal)
    o2 = ptxlab.attention_varlen(q1, k1, v1, [0, 77], causal=causal)
    od = ptxlab.attention(*(x.transpose(0, 1)[None].contiguous() for x in (q1, k1, v1)), causal=causal)
    _, hits, misses, _ = _native.attention_plan_cache(dev)
    assert (hits - hits0, misses - misses0) == (1, 2)
    assert torch.equal(o1, o2)
    assert (od[0].transpose(0, 1).float() - o1.float()).abs().max().item() < 3e-2
    with pytest.raises(ValueError, match="increase"):
        ptxlab.attention_varlen(q, k, v, [0, 77, 77, cu_q[-1]], [0, 5, 9, cu_k[-1]])
    with pytest.raises(ValueError, match="token count"):
        ptxlab.attention_varlen(q, k, v, cu_q[:-1], None)
    with pytest.raises(ValueError, match="3-D"):
        ptxlab.attention_varlen(q[None], k, v, cu_q)


@needs_gpu
def test_torch_matmul_writes_the_callers_tensor():
    torch = _torch()
    a = torch.randn(300, 200, device="cuda", dtype=torch.float16)
    b = torch.randn(200, 260, device="cuda", dtype=torch.float16)
    c = ptxlab.matmul(a, b)
    want = a.float() @ b.float()
    assert c.shape == (300, 260) and c.dtype == torch.float16
    assert ((c.float() - want).abs().max() / want.abs().max()).item() < 1e-2
    with pytest.raises(TypeError, match="dtype"):
        ptxlab.matmul(a.float(), b.float())
    with pytest.raises(TypeError):
        ptxlab.matmul(a.cpu(), b.cpu())


@needs_gpu
def test_cupy_matmul():
    try:
        import cupy
    except ImportError:
        pytest.skip("CuPy is not installed")
    a = cupy.random.standard_normal((128, 96)).astype(cupy.float16)
    b = cupy.random.standard_normal((96, 64)).astype(cupy.float16)
    c = ptxlab.matmul(a, b)
    assert isinstance(c, cupy.ndarray)
    want = a.astype(cupy.float32) @ b.astype(cupy.float32)
    assert float(cupy.abs(c.astype(cupy.float32) - want).max() / cupy.abs(want).max()) < 1e-2


def test_numpy_is_refused_by_the_gpu_only_functions():
    a = np.zeros((4, 4), dtype=np.float16)
    with pytest.raises(TypeError, match="torch or CuPy"):
        ptxlab.matmul(a, a)
    with pytest.raises(TypeError, match="torch or CuPy"):
        ptxlab.attention(a, a, a)
    with pytest.raises(TypeError, match="torch or CuPy"):
        ptxlab.attention_varlen(a, a, a, [0, 4])
