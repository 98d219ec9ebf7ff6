"""Lomb-Scargle peers at the material's size (114 samples x 2^20 frequencies):

* SciPy f64 on one CPU core, timed on a subset of the frequencies and scaled;
* astropy (`LombScargle(...).power`, method 'cython', SciPy's definition and
  astropy's defaults, scaled from a subset; method 'fast' on the full grid)
  and nifty-ls (finufft on every core, and cufinufft on the GPU through CuPy;
  SciPy's definition), where installed;
* CuPy RawKernel ladder with the material's launch shape (SM count x 20 blocks
  of 128 threads, grid-stride): baseline (first pass includes the JIT),
  fast math (options=('--use_fast_math',)), maxrregcount 32, launch bounds 128;
  f32 and f64, registers from the kernel's attributes;
* Numba f64 and f32 fastmath, same shape.

And batches (10^4 curves x 300 samples over 1000 days x 10^4 frequencies
`linspace(0.01, 10)`, astropy's defaults with dy; `lomb_batch.py`): astropy
looped, nifty-ls batched (shared times, its batched mode; CPU and GPU) and CuPy fast math
looped (one launch per curve).

Inputs: tests/fixtures/lomb/material_{x,y}.npy (the material's samples, made by
make_fixture.py with NumPy's seed 1234), so every peer and the Rust side use
identical data. Errors are max |err| / max |reference| against SciPy-like f64.
"""
import importlib
import os
import time

from common import timing_stats, try_import, time_cuda

W = "lomb-scargle"
NF = 1 << 20
F0, F1 = 0.01, 10.0
HERE = os.path.dirname(os.path.abspath(__file__))
# In the repository the fixtures are in tests/fixtures; `cargo xtask bundle`
# copies them next to this script.
FIX = next(
    (d for d in (os.path.join(HERE, "fixtures", "lomb"), os.path.join(HERE, "..", "tests", "fixtures", "lomb"))
     if os.path.isdir(d)),
    os.path.join(HERE, "..", "tests", "fixtures", "lomb"),
)

KERNEL = r"""
extern "C" __global__ void LAUNCH_BOUNDS lomb_NAME(const T* __restrict__ x, const T* __restrict__ y,
        const T* __restrict__ freqs, T* __restrict__ pgram, const int n, const int nf) {
    const int stride = blockDim.x * gridDim.x;
    for (int tid = blockIdx.x * blockDim.x + threadIdx.x; tid < nf; tid += stride) {
        const T freq = freqs[tid];
        T xc = 0, xs = 0, cc = 0, ss = 0, cs = 0;
        for (int j = 0; j < n; j++) {
            T c, s;
            SINCOS(freq * x[j], &s, &c);
            xc += y[j] * c; xs += y[j] * s; cc += c * c; ss += s * s; cs += c * s;
        }
        const T tau = ATAN2((T)2 * cs, cc - ss) / ((T)2 * freq);
        T s_tau, c_tau;
        SINCOS(freq * tau, &s_tau, &c_tau);
        const T c_tau2 = c_tau * c_tau, s_tau2 = s_tau * s_tau, cs_tau = (T)2 * c_tau * s_tau;
        pgram[tid] = (T)0.5 * ((c_tau * xc + s_tau * xs) * (c_tau * xc + s_tau * xs)
                                / (c_tau2 * cc + cs_tau * cs + s_tau2 * ss)
                              + (c_tau * xs - s_tau * xc) * (c_tau * xs - s_tau * xc)
                                / (c_tau2 * ss - cs_tau * cs + s_tau2 * cc));
    }
}
"""


def _inputs():
    import numpy as np
    x = np.load(os.path.join(FIX, "material_x.npy"))
    y = np.load(os.path.join(FIX, "material_y.npy"))
    f = np.linspace(F0, F1, NF)
    return x, y, f


def _reference(x, y, f):
    """SciPy's classic definition in f64 NumPy, chunked over frequencies."""
    import numpy as np
    out = np.empty(f.size)
    for a in range(0, f.size, 8192):
        w = f[a:a + 8192][None, :]
        wx = x[:, None] * w
        c, s = np.cos(wx), np.sin(wx)
        yy = y[:, None]
        xc, xs = (yy * c).sum(0), (yy * s).sum(0)
        cc, ss, cs = (c * c).sum(0), (s * s).sum(0), (c * s).sum(0)
        tau = np.arctan2(2 * cs, cc - ss) / (2 * w[0])
        ct, st = np.cos(w[0] * tau), np.sin(w[0] * tau)
        ct2, st2, cst = ct * ct, st * st, 2 * ct * st
        out[a:a + 8192] = 0.5 * ((ct * xc + st * xs) ** 2 / (ct2 * cc + cst * cs + st2 * ss)
                                 + (ct * xs - st * xc) ** 2 / (ct2 * ss - cst * cs + st2 * cc))
    return out


def _err(got, ref):
    import numpy as np
    got = np.asarray(got, dtype=np.float64)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def _scipy(x, y, quick):
    sig, why = try_import("scipy.signal")
    if sig is None:
        return [{"workload": W, "variant": "SciPy f64, 1 core", "backend": "scipy", "skipped": why}]
    import numpy as np
    sub = 2048 if quick else 16384
    f = np.linspace(F0, F1, sub)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    t = time.perf_counter()
    sig.lombscargle(x, y, f)
    ms = (time.perf_counter() - t) * 1e3 * NF / sub
    return [{"workload": W, "variant": f"SciPy f64, 1 core (scaled from {sub} freqs)", "backend": "scipy",
             "size": f"{x.size} samples x 2^20 freqs", "precision": "f64", **timing_stats([ms])}]


def _cupy(x, y, ref, quick):
    cp, why = try_import("cupy")
    if cp is None:
        return [{"workload": W, "variant": "cupy", "backend": "cupy", "skipped": why}]
    import numpy as np
    rows = []
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grid, block = (sms * 20,), (128,)
    reps = 10 if quick else 50
    precisions = [("f32", np.float32, "float", "sincosf", "atan2f")]
    if not quick:
        precisions.append(("f64", np.float64, "double", "sincos", "atan2"))
    variants = [("baseline", (), ""), ("fast math", ("--use_fast_math",), ""),
                ("maxrregcount 32", ("--maxrregcount=32",), ""),
                ("fast math + launch bounds 128", ("--use_fast_math",), "__launch_bounds__(128)")]
    for prec, dt, ctype, sincos, atan2 in precisions:
        dx, dy = cp.asarray(x.astype(dt)), cp.asarray(y.astype(dt))
        df = cp.asarray(np.linspace(F0, F1, NF).astype(dt))
        out = cp.empty(NF, dtype=dt)
        for i, (label, opts, lb) in enumerate(variants):
            if prec == "f64" and "fast" in label:
                continue
            name = f"{prec}_{i}"
            src = f"typedef {ctype} T;\n" + (KERNEL.replace("LAUNCH_BOUNDS", lb).replace("NAME", name)
                                               .replace("SINCOS", sincos).replace("ATAN2", atan2))
            k = cp.RawKernel(src, f"lomb_{name}", options=opts)
            args = (dx, dy, df, out, np.int32(x.size), np.int32(NF))
            t = time.perf_counter()
            k(grid, block, args)
            cp.cuda.Device().synchronize()
            first = (time.perf_counter() - t) * 1e3
            timing = time_cuda(lambda: k(grid, block, args), reps=reps)
            regs = k.attributes.get("num_regs")
            rows.append({"workload": W, "variant": f"CuPy {label}", "backend": "cupy",
                         "size": f"{x.size} samples x 2^20 freqs", "precision": prec, "first_ms": first,
                         "registers": regs, "rel_err": _err(cp.asnumpy(out), ref), **timing})
    return rows


def _numba(x, y, ref, quick):
    cuda_mod, why = try_import("numba.cuda")
    if cuda_mod is None:
        return [{"workload": W, "variant": "numba", "backend": "numba", "skipped": why}]
    import math
    import numpy as np
    from numba import cuda
    if not cuda.is_available():
        return [{"workload": W, "variant": "numba", "backend": "numba", "skipped": "numba: no CUDA device"}]

    def make(F):
        # Every constant typed as F: in Numba an untyped 2 or 0.5 next to a
        # float32 promotes the expression to float64 (the material's lesson).
        zero, two, half = F(0), F(2), F(0.5)

        def body(x, y, freqs, pgram):
            start = cuda.grid(1)
            stride = cuda.gridsize(1)
            for tid in range(start, freqs.shape[0], stride):
                freq = freqs[tid]
                xc = zero
                xs = zero
                cc = zero
                ss = zero
                cs = zero
                for j in range(x.shape[0]):
                    c = math.cos(freq * x[j])
                    s = math.sin(freq * x[j])
                    xc += y[j] * c
                    xs += y[j] * s
                    cc += c * c
                    ss += s * s
                    cs += c * s
                tau = math.atan2(two * cs, cc - ss) / (two * freq)
                c_tau = math.cos(freq * tau)
                s_tau = math.sin(freq * tau)
                c_tau2 = c_tau * c_tau
                s_tau2 = s_tau * s_tau
                cs_tau = two * c_tau * s_tau
                a = c_tau * xc + s_tau * xs
                b = c_tau * xs - s_tau * xc
                pgram[tid] = half * (a * a / (c_tau2 * cc + cs_tau * cs + s_tau2 * ss)
                                     + b * b / (c_tau2 * ss - cs_tau * cs + s_tau2 * cc))
        return body

    rows = []
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    grid, block = sms * 20, 128
    reps = 10 if quick else 50
    cases = [("f32 fastmath", np.float32, True)]
    if not quick:
        cases.insert(0, ("f64", np.float64, False))
    for label, dt, fast in cases:
        from numba import float32, float64
        k = cuda.jit(fastmath=fast)(make(float64 if dt == np.float64 else float32))
        dx, dy = cuda.to_device(x.astype(dt)), cuda.to_device(y.astype(dt))
        df = cuda.to_device(np.linspace(F0, F1, NF).astype(dt))
        out = cuda.device_array(NF, dtype=dt)
        t = time.perf_counter()
        k[grid, block](dx, dy, df, out)
        cuda.synchronize()
        first = (time.perf_counter() - t) * 1e3
        timing = time_cuda(lambda: k[grid, block](dx, dy, df, out), reps=reps)
        regs = None
        try:
            regs = list(k.get_regs_per_thread().values())[0]
        except Exception:  # older/newer Numba spell it differently
            pass
        rows.append({"workload": W, "variant": f"Numba {label}", "backend": "numba",
                     "size": f"{x.size} samples x 2^20 freqs", "precision": "f64" if dt == np.float64 else "f32",
                     "first_ms": first, "registers": regs, "rel_err": _err(out.copy_to_host(), ref), **timing})
    return rows


def _torch(x, y, ref, quick):
    torch, why = try_import("torch")
    if torch is None or not torch.cuda.is_available():
        return [{"workload": W, "variant": "torch", "backend": "torch",
                 "skipped": why or "torch.cuda.is_available() is False"}]
    import numpy as np

    def pgram(dx, dy, df, out, chunk=1 << 16):
        # Array formulation (what a PyTorch user writes): a (samples x chunk)
        # phase matrix per chunk of frequencies, then column sums.
        for a in range(0, df.numel(), chunk):
            w = df[a:a + chunk]
            wx = dx[:, None] * w[None, :]
            c, s = torch.cos(wx), torch.sin(wx)
            yy = dy[:, None]
            xc, xs = (yy * c).sum(0), (yy * s).sum(0)
            cc, ss, cs = (c * c).sum(0), (s * s).sum(0), (c * s).sum(0)
            tau = torch.atan2(2 * cs, cc - ss) / (2 * w)
            ct, st = torch.cos(w * tau), torch.sin(w * tau)
            ct2, st2, cst = ct * ct, st * st, 2 * ct * st
            out[a:a + chunk] = 0.5 * ((ct * xc + st * xs) ** 2 / (ct2 * cc + cst * cs + st2 * ss)
                                      + (ct * xs - st * xc) ** 2 / (ct2 * ss - cst * cs + st2 * cc))

    rows = []
    reps = 5 if quick else 20
    cases = [("eager", torch.float32, False), ("torch.compile", torch.float32, True)]
    if not quick:
        cases.append(("eager", torch.float64, False))
    for label, dt, compiled in cases:
        prec = "f32" if dt == torch.float32 else "f64"
        try:
            dx = torch.tensor(x, device="cuda", dtype=dt)
            dy = torch.tensor(y, device="cuda", dtype=dt)
            df = torch.tensor(np.linspace(F0, F1, NF), device="cuda", dtype=dt)
            out = torch.empty(NF, device="cuda", dtype=dt)
            fn = torch.compile(pgram) if compiled else pgram
            t = time.perf_counter()
            fn(dx, dy, df, out)
            torch.cuda.synchronize()
            first = (time.perf_counter() - t) * 1e3
            timing = time_cuda(lambda: fn(dx, dy, df, out), reps=reps, warmup=2)
            rows.append({"workload": W, "variant": f"torch {label}", "backend": "torch",
                         "size": f"{x.size} samples x 2^20 freqs", "precision": prec, "first_ms": first,
                         "rel_err": _err(out.cpu().numpy(), ref), **timing})
        except Exception as e:
            rows.append({"workload": W, "variant": f"torch {label} {prec}", "backend": "torch",
                         "skipped": f"{type(e).__name__}: {e}".splitlines()[0]})
    return rows


def _host_timing(fn, reps):
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    return timing_stats(samples)


def _astropy(x, y, ref, quick):
    ts, why = try_import("astropy.timeseries")
    if ts is None:
        return [{"workload": W, "variant": "astropy", "backend": "astropy", "skipped": why}]
    import numpy as np
    rows = []
    size = f"{x.size} samples x 2^20 freqs"
    sub = 2048 if quick else 16384
    w = np.linspace(F0, F1, NF)
    ws = np.linspace(F0, F1, sub)
    for label, kw in (("SciPy's definition (psd, no mean)", dict(fit_mean=False, center_data=False,
                                                                 normalization="psd")),
                      ("astropy's defaults (floating mean)", {})):
        ls = ts.LombScargle(x, y, **kw)
        t = time.perf_counter()
        ls.power(ws / (2 * np.pi), method="cython")
        ms = (time.perf_counter() - t) * 1e3 * NF / sub
        rows.append({"workload": W, "variant": f"astropy cython, {label}, 1 core (scaled from {sub} freqs)",
                     "backend": "astropy", "size": size, "precision": "f64", **timing_stats([ms])})
    ls = ts.LombScargle(x, y, fit_mean=False, center_data=False, normalization="psd")
    p = ls.power(w / (2 * np.pi), method="fast")
    timing = _host_timing(lambda: ls.power(w / (2 * np.pi), method="fast"), 1 if quick else 3)
    rows.append({"workload": W, "variant": "astropy fast (Press-Rybicki, approximate), SciPy's definition",
                 "backend": "astropy", "size": size, "precision": "f64", "rel_err": _err(p, ref), **timing})
    return rows


def _nifty_power(nifty, x, y, backend):
    """nifty-ls's periodogram of one curve on the bench's grid, with SciPy's
    definition (no floating mean, data not centred, `psd`), on `backend`
    (`finufft` on the CPU, `cufinufft` on the GPU)."""
    import numpy as np
    return nifty.lombscargle(x, y, fmin=F0 / (2 * np.pi), fmax=F1 / (2 * np.pi), Nf=NF, fit_mean=False,
                             center_data=False, normalization="psd", backend=backend).power


def _nifty(x, y, ref, quick):
    nifty, why = try_import("nifty_ls")
    if nifty is None:
        return [{"workload": W, "variant": "nifty-ls", "backend": "nifty-ls", "skipped": why}]
    rows = []

    def call():
        return _nifty_power(nifty, x, y, "finufft")

    p = call()
    timing = _host_timing(call, 2 if quick else 5)
    rows.append({"workload": W, "variant": f"nifty-ls {nifty.__version__} (finufft), {os.cpu_count()} cores",
                 "backend": "nifty-ls", "size": f"{x.size} samples x 2^20 freqs", "precision": "f64",
                 "rel_err": _err(p, ref), **timing})
    rows.extend(_nifty_gpu(nifty, x, y, ref, quick))
    return rows


def nifty_gpu_missing():
    """None when nifty-ls's GPU backend (cufinufft through CuPy) loads, else
    the one-line reason it does not (shared by the batch peers)."""
    try:
        importlib.import_module("nifty_ls.cufinufft")
        return None
    except Exception as e:  # ImportError, a missing libcufft, no CUDA device
        return f"nifty-ls cufinufft backend not usable: {type(e).__name__}: {e}".splitlines()[0]


def _nifty_gpu(nifty, x, y, ref, quick):
    """nifty-ls's GPU backend (cufinufft, through CuPy): host arrays in and
    the power back on the host, as its users call it; timed on the host after
    a warm-up call (which builds cufinufft's plan and CuPy's kernels)."""
    import numpy as np
    why = nifty_gpu_missing()
    if why is not None:
        return [{"workload": W, "variant": "nifty-ls (cufinufft, GPU)", "backend": "nifty-ls", "skipped": why}]
    rows = []
    for dt, prec in ((np.float64, "f64"), (np.float32, "f32")):
        xd, yd = x.astype(dt), y.astype(dt)

        def call():
            return _nifty_power(nifty, xd, yd, "cufinufft")

        p = call()
        timing = _host_timing(call, 3 if quick else 10)
        rows.append({"workload": W, "variant": f"nifty-ls {nifty.__version__} (cufinufft, GPU; host arrays in and out)",
                     "backend": "nifty-ls", "size": f"{x.size} samples x 2^20 freqs", "precision": prec,
                     "rel_err": _err(p, ref), **timing})
    return rows

def run(quick: bool) -> list[dict]:
    np_mod, why = try_import("numpy")
    if np_mod is None:
        return [{"workload": W, "variant": "numpy", "backend": "python", "skipped": why}]
    x, y, f = _inputs()
    rows = _scipy(x, y, quick)
    ref = _reference(x, y, f)
    for fn in (_astropy, _nifty, _cupy, _torch, _numba):
        try:
            rows.extend(fn(x, y, ref, quick))
        except Exception as e:  # one failing peer must not hide the others
            rows.append({"workload": W, "variant": fn.__name__.strip("_"), "backend": "python",
                         "skipped": f"{type(e).__name__}: {e}".splitlines()[0]})
    return rows
