"""Why nifty-ls's cufinufft backend disagreed with its finufft backend."""
import numpy as np
import cufinufft, finufft, cupy as cp
import nifty_ls
rng = np.random.default_rng(1)
for dt in (np.float64, np.float32):
    ct = np.complex128 if dt == np.float64 else np.complex64
    x = rng.uniform(-np.pi, np.pi, 500).astype(dt)
    c = (rng.standard_normal(500) + 1j * rng.standard_normal(500)).astype(ct)
    N = 64
    k = np.arange(-N // 2, N // 2)
    ref = np.exp(1j * np.outer(k, x)) @ c.astype(np.complex128)
    f_cpu = finufft.nufft1d1(x, c, N, eps=1e-9 if dt == np.float64 else 1e-5)
    f_gpu2 = cufinufft.nufft1d1(cp.asarray(x), cp.asarray(c), (N,), eps=1e-9 if dt == np.float64 else 1e-5).get()
    e = lambda a: float(np.max(np.abs(a - ref)) / np.max(np.abs(ref)))
    print(dt.__name__, "nufft1d1 type 1, 500 pts, 64 modes: finufft err", e(f_cpu), "cufinufft err", e(f_gpu2))
t = np.sort(rng.uniform(0, 100, 300))
y = np.sin(2 * np.pi * t / 7.3) + 0.3 * rng.standard_normal(300)
for kw in ({}, dict(fit_mean=False, center_data=False, normalization="psd")):
    for dt in (np.float64, np.float32):
        a = nifty_ls.lombscargle(t.astype(dt), y.astype(dt), Nf=2000, backend="finufft", **kw).power
        b = nifty_ls.lombscargle(t.astype(dt), y.astype(dt), Nf=2000, backend="cufinufft", **kw).power
        print("nifty-ls", kw or "defaults", dt.__name__, "max|gpu-cpu|/max cpu", float(np.max(np.abs(b - a)) / np.max(np.abs(a))), "argmax cpu/gpu", int(np.argmax(a)), int(np.argmax(b)))
# the peer's exact call: 114 samples x 2^20 freqs
x = np.load("../tests/fixtures/lomb/material_x.npy"); yy = np.load("../tests/fixtures/lomb/material_y.npy")
F0, F1, NF = 0.01, 10.0, 1 << 20
for be in ("finufft", "cufinufft"):
    p = nifty_ls.lombscargle(x, yy, fmin=F0 / (2 * np.pi), fmax=F1 / (2 * np.pi), Nf=NF, fit_mean=False, center_data=False, normalization="psd", backend=be).power
    print(be, "peer call: max", float(p.max()), "argmax", int(p.argmax()), "sum", float(p.sum()))
