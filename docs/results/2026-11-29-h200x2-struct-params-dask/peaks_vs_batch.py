"""One Dask partition's call (3125 curves of 100-300 samples, 4096 frequencies, f64) from
Python: lombscargle_peaks (peaks on the GPU) against lombscargle_batch with the best periods
(the whole power array copied back), same curves, same answers; min and median of 7 calls."""
import statistics, sys, time, numpy as np
sys.path.insert(0, "python/bench")
from dask_gpus import make_curves
import ptxlab
recs = make_curves([0], 3125, 100, 300)
curves = [(r["t"], r["y"], r["dy"]) for r in recs]
f = np.linspace(0.01, 2.0, 4096)
def timed(fn):
    fn(); ts = []
    for _ in range(7):
        t0 = time.perf_counter(); r = fn(); ts.append(time.perf_counter() - t0)
    return r, min(ts) * 1e3, statistics.median(ts) * 1e3
(bp, pk), a_min, a_med = timed(lambda: ptxlab.lombscargle_peaks(curves, f))
(pw, bb), b_min, b_med = timed(lambda: ptxlab.lombscargle_batch(curves, f, return_best_period=True))
same = np.array_equal(bp, bb) and np.array_equal(pk, pw.max(axis=1))
print(f"lombscargle_peaks: {a_min:.1f} ms min, {a_med:.1f} ms median; lombscargle_batch + best periods: "
      f"{b_min:.1f} ms min, {b_med:.1f} ms median; {b_med / a_med:.2f}x; same best periods and peak powers: {same}")
for prec in ("f32",):
    (bp32, _), m32, d32 = timed(lambda: ptxlab.lombscargle_peaks(curves, f, precision=prec))
    print(f"lombscargle_peaks {prec}: {m32:.1f} ms min, {d32:.1f} ms median; best periods equal to f64's: "
          f"{np.mean(bp32 == bp):.4f} of curves")
sys.exit(0 if same else 1)
