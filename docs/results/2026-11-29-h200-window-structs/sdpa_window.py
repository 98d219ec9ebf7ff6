"""torch SDPA with the sliding window's band as a boolean mask, at the
shape of the ptxlab rows of this call (B=4 H=16 S=8192 D=128, W=1024), BF16,
forward, each backend that takes a mask; the inputs and the error measure of
peers/attention.py (f64 reference on sampled rows)."""
import math, sys, os
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "peers"))
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
import attention as pa
from common import time_cuda

b, h, s, d, window = 4, 16, 8192, 128, 1024
q, k, v = (pa.hashed(torch, t, (b, h, s, d)).to(torch.bfloat16) for t in range(3))
scale = 1.0 / math.sqrt(d)
heads = [(0, 0), (b - 1, h - 1)]
for causal in (False, True):
    size = pa.size_label(b, h, s, d, causal, window=window)
    flop = 4.0 * b * h * d * pa.window_pairs(s, causal, window)
    want = pa.reference(torch, q, k, v, causal, scale, heads, window)
    mask = pa.band(torch, s, causal, window)
    for label, be in [("cuDNN", SDPBackend.CUDNN_ATTENTION), ("memory-efficient", SDPBackend.EFFICIENT_ATTENTION),
                      ("flash", SDPBackend.FLASH_ATTENTION)]:
        try:
            with sdpa_kernel([be]):
                fn = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
                got = pa.picked(torch, fn(), heads, s)
                rel = float((got - want).norm() / want.norm())
                t = time_cuda(fn, reps=20, warmup=3)
            print(f"{size} | torch sdpa {label} band mask | median {t['median_ms']:.3f} ms (min {t['min_ms']:.3f}, max {t['max_ms']:.3f}) | {flop / t['median_ms'] / 1e9:.1f} TFLOP/s | rel {rel:.2e}")
        except Exception as e:
            print(f"{size} | torch sdpa {label} band mask | skipped: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
