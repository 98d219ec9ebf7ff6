"""Lomb-Scargle batch peers: 10^4 light curves of 250-350 samples (ragged,
300 on average) over 1000 days, 10^4 angular frequencies linspace(0.01, 10)
shared by every curve, astropy's defaults (floating mean, centred data,
standard normalization) with uncertainties dy. The curves are made with the
recipe of the Rust bench (`lomb::survey_batch`): a sinusoid of period 2 to
50 days, noise, dy uniform in [0.5, 1.5).

* astropy looped over curves, method 'cython' (exact) and 'fast'
  (Press-Rybicki, approximate), one core, timed on a few curves and scaled;
* nifty-ls batched: its batched mode needs every curve on the same times,
  so a second batch of 10^4 curves on one set of 300 times (the Rust bench
  runs that one too), on every core (finufft) and on the GPU (cufinufft
  through CuPy, where it loads; host arrays in and out, as its users call
  it); and nifty-ls looped over the ragged curves (scaled);
* CuPy fast math looped: the material's kernel (SciPy's definition, no
  weights or floating mean: less work than the others do) with
  `--use_fast_math`, one launch per curve, timed with CUDA events around the
  whole loop.
"""
import os
import time

from common import announce, timing_stats, try_import, time_cuda

W = "lomb-scargle"
CURVES = 10_000
N_LO, N_HI = 250, 350
SPAN = 1000.0
NF = 10_000
F0, F1 = 0.01, 10.0


def survey(curves, n_lo, n_hi, span, shared, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    lens = np.full(curves, n_lo) if shared else rng.integers(n_lo, n_hi + 1, curves)
    common = np.sort(rng.uniform(0.0, span, n_lo))
    ts, ys, dys = [], [], []
    for c in range(curves):
        t = common if shared else np.sort(rng.uniform(0.0, span, lens[c]))
        period, phase = rng.uniform(2.0, 50.0), rng.uniform(0.0, 2 * np.pi)
        noise = rng.uniform(0.0, 1.0, (4, t.size)).sum(0) - 2.0
        ts.append(t)
        ys.append(np.sin(2 * np.pi * t / period + phase) + 0.6 * noise)
        dys.append(rng.uniform(0.5, 1.5, t.size))
    return ts, ys, dys


def size(ts, what):
    return f"{len(ts)} curves ({what}) x {sum(t.size for t in ts) / len(ts):.0f} samples x 10^4 freqs"


def err(got, ref):
    import numpy as np
    return float(np.max(np.abs(np.asarray(got, dtype=np.float64) - ref)) / np.max(np.abs(ref)))


def row(variant, backend, sz, prec, ms_list, **extra):
    return {"workload": W, "variant": variant, "backend": backend, "size": sz, "precision": prec,
            **timing_stats(ms_list), **extra}


def _astropy(ts, ys, dys, w, quick):
    ls_mod, why = try_import("astropy.timeseries")
    if ls_mod is None:
        return [{"workload": W, "variant": "astropy (batch)", "backend": "astropy", "skipped": why}], None
    import numpy as np
    f = w / (2 * np.pi)
    rows = []
    exact = None
    for method, k in (("cython", 2 if quick else 5), ("fast", 20 if quick else 100)):
        t = time.perf_counter()
        for c in range(k):
            p = ls_mod.LombScargle(ts[c], ys[c], dys[c]).power(f, method=method)
            if c == 0 and method == "cython":
                exact = p
        ms = (time.perf_counter() - t) * 1e3 * len(ts) / k
        extra = {} if method == "cython" else {"rel_err": err(
            ls_mod.LombScargle(ts[0], ys[0], dys[0]).power(f, method="fast"), exact)}
        label = "exact" if method == "cython" else "Press-Rybicki, approximate"
        rows.append(row(f"astropy {method} ({label}), looped over curves, 1 core (scaled from {k} curves)",
                        "astropy", size(ts, "ragged"), "f64", [ms], **extra))
    return rows, exact


def _nifty(ts, ys, dys, shared, w, exact, quick):
    nifty, why = try_import("nifty_ls")
    if nifty is None:
        return [{"workload": W, "variant": "nifty-ls (batch)", "backend": "nifty-ls", "skipped": why}]
    import numpy as np
    announce(f"nifty-ls on {len(ts)} curves: batched f64 and f32, then looped over ragged curves",
             (30 if len(ts) >= 10_000 else 5) * 16 / (os.cpu_count() or 16),
             "BENCHMARKS.md: 10^4 curves batched f32 4.4 s, f64 7.1 s on 16 cores")
    fmin, df = w[0] / (2 * np.pi), (w[1] - w[0]) / (2 * np.pi)
    rows = []
    st, sy, sdy = shared
    y2, dy2 = np.array(sy), np.array(sdy)
    cores = os.cpu_count()
    from lomb_scargle import nifty_gpu_missing
    gpu_why = nifty_gpu_missing()
    backends = [("finufft", f"finufft, {cores} cores", 1 if quick else 3)]
    if gpu_why is None:
        backends.append(("cufinufft", "cufinufft, GPU; host arrays in and out", 3 if quick else 10))
    else:
        rows.append({"workload": W, "variant": "nifty-ls batched (cufinufft, GPU)", "backend": "nifty-ls",
                     "skipped": gpu_why})
    ref0 = _astropy_one(st[0], sy[0], sdy[0], w)
    for backend, label, reps in backends:
        for dt, prec in ((np.float64, "f64"), (np.float32, "f32")):
            args = (st[0].astype(dt), y2.astype(dt))

            def call():
                return nifty.lombscargle(*args, dy=dy2.astype(dt), fmin=fmin, fmax=fmin + df * (NF - 1), Nf=NF,
                                         backend=backend).power

            # Warm-up on 64 curves: plans, thread pools, CuPy's kernels.
            nifty.lombscargle(args[0], args[1][:64], dy=dy2[:64].astype(dt), fmin=fmin, fmax=fmin + df * (NF - 1),
                              Nf=NF, backend=backend)
            ms = []
            for _ in range(reps):
                t = time.perf_counter()
                p = call()
                ms.append((time.perf_counter() - t) * 1e3)
            extra = {"rel_err": err(p[0], ref0)} if ref0 is not None else {}
            rows.append(row(f"nifty-ls {nifty.__version__} batched ({label}, shared times)",
                            "nifty-ls", size(st, "shared times"), prec, ms, **extra))
    k = 50 if quick else 200
    t = time.perf_counter()
    for c in range(k):
        p = nifty.lombscargle(ts[c], ys[c], dy=dys[c], fmin=fmin, fmax=fmin + df * (NF - 1), Nf=NF, backend="finufft").power
        if c == 0 and exact is not None:
            e0 = err(p, exact)
    ms = (time.perf_counter() - t) * 1e3 * len(ts) / k
    extra = {"rel_err": e0} if exact is not None else {}
    rows.append(row(f"nifty-ls {nifty.__version__} looped over ragged curves ({cores} cores, scaled from {k})",
                    "nifty-ls", size(ts, "ragged"), "f64", [ms], **extra))
    return rows


def _astropy_one(t, y, dy, w):
    ls_mod, _ = try_import("astropy.timeseries")
    if ls_mod is None:
        return None
    import numpy as np
    return ls_mod.LombScargle(t, y, dy).power(w / (2 * np.pi), method="cython")


def _cupy(ts, ys, w, quick):
    cp, why = try_import("cupy")
    if cp is None:
        return [{"workload": W, "variant": "CuPy (batch)", "backend": "cupy", "skipped": why}]
    import numpy as np
    from lomb_scargle import KERNEL, _reference
    src = "typedef float T;\n" + (KERNEL.replace("LAUNCH_BOUNDS", "__launch_bounds__(128)")
                                  .replace("NAME", "batch").replace("SINCOS", "sincosf").replace("ATAN2", "atan2f"))
    k = cp.RawKernel(src, "lomb_batch", options=("--use_fast_math",))
    offs = np.concatenate([[0], np.cumsum([t.size for t in ts])])
    dx = cp.asarray(np.concatenate(ts).astype(np.float32))
    dy = cp.asarray(np.concatenate(ys).astype(np.float32))
    df = cp.asarray(w.astype(np.float32))
    out = cp.empty((len(ts), NF), dtype=np.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    grid, block = (sms * 20,), (128,)
    views = [(dx[offs[c]:offs[c + 1]], dy[offs[c]:offs[c + 1]], out[c], np.int32(ts[c].size))
             for c in range(len(ts))]

    def loop():
        for x, y, o, n in views:
            k(grid, block, (x, y, df, o, n, np.int32(NF)))

    timing = time_cuda(loop, reps=1 if quick else 3, warmup=1)
    ref0 = _reference(ts[0], ys[0], w)
    return [{"workload": W, "variant": "CuPy fast math, looped over curves (SciPy's definition, one launch each)",
             "backend": "cupy", "size": size(ts, "ragged"), "precision": "f32",
             "rel_err": err(cp.asnumpy(out[0]), ref0), **timing}]


def run_batch(_x, _y, _ref, quick):
    np, why = try_import("numpy")
    if np is None:
        return [{"workload": W, "variant": "batch peers", "backend": "python", "skipped": why}]
    curves = 1000 if quick else CURVES
    ts, ys, dys = survey(curves, N_LO, N_HI, SPAN, False, 1)
    shared = survey(curves, 300, 300, SPAN, True, 2)
    w = np.linspace(F0, F1, NF)
    rows, exact = _astropy(ts, ys, dys, w, quick)
    for fn in (lambda: _nifty(ts, ys, dys, shared, w, exact, quick), lambda: _cupy(ts, ys, w, quick)):
        try:
            rows.extend(fn())
        except Exception as e:  # one failing peer must not hide the others
            rows.append({"workload": W, "variant": "batch peer", "backend": "python",
                         "skipped": f"{type(e).__name__}: {e}".splitlines()[0]})
    return rows


def run(quick: bool) -> list[dict]:
    """The batch peers' rows (run_peers.py runs this module after lomb_scargle.py)."""
    return run_batch(None, None, None, quick)
