"""ptxlab.attention_varlen from torch against torch's own varlen attention
on the CLI bench's packed batch (16 sequences, 33848 tokens, H=16, D=128,
BF16), CUDA events, warm-up first, median of 20; the per-sequence error
against SDPA in f32 on the first and last sequences."""
import statistics
import sys

import torch

import ptxlab

sys.path.insert(0, "peers")
from attention import varlen_call  # noqa: E402  (the bench's peer call)

L = [0, 4096, 5120, 8120, 8637, 10685, 18877, 19654, 21154, 25154, 25487, 27709, 28820, 29460, 31960, 32061, 33848]
T, H, D = L[-1], 16, 128
g = torch.Generator(device="cuda").manual_seed(0)
q, k, v = (torch.randn(T, H, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
cu = torch.tensor(L, dtype=torch.int32, device="cuda")
longest = max(b - a for a, b in zip(L, L[1:]))


def timed(f, reps=20):
    f()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        e.record()
        e.synchronize()
        ms.append(a.elapsed_time(e))
    return statistics.median(ms), min(ms), max(ms)


flops = lambda causal: sum(4 * (b - a) ** 2 * H * D // (2 if causal else 1) for a, b in zip(L, L[1:]))
for causal in (False, True):
    o = ptxlab.attention_varlen(q, k, v, cu, causal=causal)
    err = 0.0
    for b in (0, len(L) - 2):
        s = slice(L[b], L[b + 1])
        want = torch.nn.functional.scaled_dot_product_attention(
            *(x[s].transpose(0, 1)[None].float() for x in (q, k, v)), is_causal=causal)
        got = o[s].transpose(0, 1)[None].float()
        err = max(err, ((got - want).norm() / want.norm()).item())
    med, lo, hi = timed(lambda: ptxlab.attention_varlen(q, k, v, cu, causal=causal))
    print(f"ptxlab.attention_varlen causal={causal}: median {med:.3f} ms ({lo:.3f}-{hi:.3f}), "
          f"{flops(causal) / med / 1e9:.1f} TFLOP/s, relative error {err:.2e} (first and last sequence vs SDPA f32)")
    try:
        call = varlen_call(torch, cu, longest, causal, None)
        med, lo, hi = timed(lambda: call(q, k, v))
        print(f"torch varlen_attn causal={causal}: median {med:.3f} ms ({lo:.3f}-{hi:.3f})")
    except Exception as e:  # the peer's absence is a line, not a failure
        print(f"torch varlen_attn: skipped ({type(e).__name__}: {e})")
