# The SFU and launch references of fast-lean-experiments.md (run on the H100
# with the device's CuPy, `python3 sfu-microbench.py`): the event-timed cost
# of an empty kernel, and a loop with nothing but sin/cos approximations
# (`__sinf`, `__cosf`: 2 MUFU, plus FMUL.RZ, FFMA, FADD per angle) doing the
# same number of SFU operations as the Lomb-Scargle material size (114 x 2^20
# pairs x 2), in the launch shapes of the fast-math rungs.
import cupy as cp, numpy as np
src = r'''
extern "C" __global__ void sfu(const float* in, float* out, int iters, float d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float a0 = in[i], a1 = a0 + 1.f, a2 = a0 + 2.f, a3 = a0 + 3.f;
  float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
  for (int t = 0; t < iters; t++) {
    s0 = fmaf(__sinf(a0), __cosf(a0), s0); a0 += d;
    s1 = fmaf(__sinf(a1), __cosf(a1), s1); a1 += d;
    s2 = fmaf(__sinf(a2), __cosf(a2), s2); a2 += d;
    s3 = fmaf(__sinf(a3), __cosf(a3), s3); a3 += d;
  }
  out[i] = s0 + s1 + s2 + s3;
}
extern "C" __global__ void empty(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 1.f;
}
'''
m = cp.RawModule(code=src)
k = m.get_function('sfu'); e = m.get_function('empty')
dev = cp.cuda.Device(0); sms = dev.attributes['MultiProcessorCount']; clk = dev.attributes['ClockRate'] * 1e3
peak = 16 * sms * clk
def timeit(f, reps=200):
    for _ in range(5): f()
    evs = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(); f(); b.record(); evs.append((a, b))
    evs[-1][1].synchronize()
    ts = [cp.cuda.get_elapsed_time(a, b) * 1e-3 for a, b in evs]
    return float(np.median(ts)), float(np.min(ts))
x = cp.random.rand(1 << 22, dtype=cp.float32); o = cp.empty_like(x)
# A long kernel first, so the host runs ahead of the GPU while the short ones queue.
for blocks, block in [(1, 32), (4096, 128), (8192, 128)]:
    n = blocks * block
    def f(): e((blocks,), (block,), (o, np.int32(n)))
    def g():
        k((2112,), (256,), (x, o, np.int32(2000), np.float32(1e-3), np.int32(1 << 30)))
    g(); t = timeit(f)
    print(f"empty kernel {blocks} x {block}: median {t[0]*1e6:.2f} us, min {t[1]*1e6:.2f} us")
for threads, iters in [(1 << 20, 28), (1 << 19, 57), (1 << 18, 114), (270336, 110)]:
    for block in [128, 256]:
        blocks = (threads + block - 1) // block
        def f(): k((blocks,), (block,), (x, o, np.int32(iters), np.float32(1e-3), np.int32(threads)))
        k((2112,), (256,), (x, o, np.int32(2000), np.float32(1e-3), np.int32(1 << 30)))
        t = timeit(f)
        ops = threads * iters * 8
        print(f"sfu loop {threads} threads x {iters} iters ({ops/2/ (114*(1<<20)):.3f} x material pairs), block {block}: median {t[0]*1e6:.2f} us (min {t[1]*1e6:.2f}), floor {ops/peak*1e6:.2f} us -> {100*ops/peak/t[0]:.1f}%")
