"""torch.matmul at the shapes of examples/gemm_shapes.rs, timed the same two
ways: back to back (events around each of REPS calls, one synchronisation at
the end) and one call at a time (events around one call, then a
synchronisation, as peers/common.py's time_cuda does). Usage:
python3 torch_shapes.py REPS [half|fp32] M,N,K ..."""
import statistics
import sys

import torch


def times(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    evs = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        evs.append((a, b))
    torch.cuda.synchronize()
    b2b = [a.elapsed_time(b) for a, b in evs]
    one = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        one.append(a.elapsed_time(b))
    return b2b, one


def main():
    reps = int(sys.argv[1])
    which = sys.argv[2]
    torch.backends.cuda.matmul.allow_tf32 = False
    for s in sys.argv[3:]:
        m, n, k = (int(x) for x in s.split(","))
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
        b = torch.rand(k, n, device="cuda", generator=g) * 2 - 1
        kinds = [(torch.bfloat16, "bf16"), (torch.float16, "f16")] if which == "half" else [(torch.float32, "f32 (TF32 off)")]
        for dtype, name in kinds:
            ah, bh = a.to(dtype).contiguous(), b.to(dtype).contiguous()
            b2b, one = times(lambda: torch.matmul(ah, bh), reps)
            tf = lambda ms: 2 * m * n * k / (ms * 1e-3) / 1e12
            mb, mo = statistics.median(b2b), statistics.median(one)
            print(f"ROW\ttorch {name}\t{m}x{n}x{k}\t\tb2b {mb:.4f} ({min(b2b):.4f}-{max(b2b):.4f}) ms {tf(mb):.1f} TFLOP/s"
                  f"\tone {mo:.4f} ({min(one):.4f}-{max(one):.4f}) ms {tf(mo):.1f} TFLOP/s", flush=True)
            del ah, bh
        del a, b
        torch.cuda.empty_cache()


main()
