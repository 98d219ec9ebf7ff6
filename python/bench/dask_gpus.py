"""Batched periodograms over a Dask Bag of light curves on 1..N GPUs: the
throughput of ``ptxlab.dask.lombscargle_batch`` with one
``dask.distributed`` worker per GPU (``ptxlab.dask.gpu_cluster``).

    python3 python/bench/dask_gpus.py [--gpus 1,2] [--curves 100000]
        [--partitions 32] [--samples 100,300] [--freqs 4096]
        [--backend gpu|sim|cpu] [--reps 3] [--json out.json]

For each GPU count: a cluster of that many workers, the curves made on the
workers (partition ``p`` from seed ``p`` on worker ``p mod gpus``, so every
cluster holds the same curves, evenly spread) and kept there, a warm-up call
on every worker (ptxlab's module load), then ``--reps`` timed runs: every
partition's ``lombscargle_peaks`` call, its records kept on its worker
(the throughput reported, and its speed-up over the first GPU count), then
the records gathered on the client (reported beside it). Medians, with min
and max.

Each run is checked: every curve's best period against its true period
(a sine with noise; the fraction found within 2% is printed, and must be
above 95%), the best periods equal across GPU counts, and the first
partition's best periods against ``backend="cpu"`` (the f64 reference,
equal to the GPU's within 1e-9 relative).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np


def make_curves(seeds, per, nmin, nmax):
    """The records of the partitions ``seeds``: ``per`` curves each, ragged
    lengths in ``[nmin, nmax]``, uneven times over 100 days with a gap,
    a sine of a random period in [0.5, 10] days plus noise."""
    recs = []
    for s in seeds:
        rng = np.random.default_rng(1000 + s)
        for c in range(per):
            n = int(rng.integers(nmin, nmax + 1))
            t = np.sort(np.concatenate([rng.uniform(0, 40, n // 2), rng.uniform(60, 100, n - n // 2)]))
            period = rng.uniform(0.5, 10.0)
            y = 1.5 * np.sin(2 * np.pi * t / period + rng.uniform(0, 6.3)) + rng.normal(0, 0.5, n)
            recs.append({"id": s * per + c, "t": t, "y": y, "dy": np.full(n, 0.5), "period": period})
    return recs


def warm(backend, freqs):
    """One small call on a worker: the module load and the first launch."""
    import ptxlab

    rng = np.random.default_rng(0)
    t = np.sort(rng.uniform(0, 10, 64))
    ptxlab.lombscargle_batch([(t, np.sin(t))], freqs[:64], backend=backend)
    return True


def forget(client, coll):
    """Releases a persisted collection's results and waits until no worker
    holds them, so the next run of the same graph (the same keys) computes
    again instead of finding them in memory."""
    keys = {str(k) for k in coll.__dask_keys__()}
    client.cancel(coll)
    for _ in range(200):
        if not keys & {str(k) for k in client.who_has()}:
            return
        time.sleep(0.05)
    sys.exit("the results of a run were not released within 10 s")


def run(gpus, args, freqs):
    import dask.bag as db
    from distributed import Client, wait

    from ptxlab import dask as pdask

    per = args.curves // args.partitions
    with pdask.gpu_cluster(gpus) as cluster, Client(cluster) as client:
        client.wait_for_workers(gpus)
        # Partition p is made on worker p mod gpus and stays there.
        names = sorted(client.scheduler_info()["workers"])
        lo, hi = args.samples
        parts = [
            client.submit(make_curves, [p], per, lo, hi, workers=[names[p % len(names)]], pure=False)
            for p in range(args.partitions)
        ]
        wait(parts)
        curves = db.from_delayed(parts)
        placed = {}
        for keys in client.who_has(parts).values():
            for w in keys:
                placed[w] = placed.get(w, 0) + 1
        client.run(warm, args.backend, freqs)
        times, gathered, out = [], [], None
        for _ in range(args.reps):
            t0 = time.perf_counter()
            # The periodograms, each partition's records kept on its worker...
            res = pdask.lombscargle_batch(curves, freqs, backend=args.backend).persist()
            wait(res)
            t1 = time.perf_counter()
            # ...then gathered on the client.
            out = res.compute()
            times.append(t1 - t0)
            gathered.append(time.perf_counter() - t0)
            forget(client, res)
        truth = curves.map(lambda r: (r["id"], r["period"])).compute()
        first = curves.take(per, npartitions=1, compute=True)
    return times, gathered, out, dict(truth), first, placed


def main():
    # The workers inherit this: their INFO lines would bury the results.
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", default="1,2", help="GPU counts, comma-separated")
    ap.add_argument("--curves", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=32)
    ap.add_argument("--samples", default="100,300", help="min,max samples per curve")
    ap.add_argument("--freqs", type=int, default=4096)
    ap.add_argument("--backend", default="gpu", choices=["gpu", "sim", "cpu"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    counts = [int(g) for g in args.gpus.split(",")]
    args.samples = tuple(int(v) for v in args.samples.split(","))
    if args.curves < args.partitions or args.curves % args.partitions:
        sys.exit(f"--curves {args.curves} is not a multiple of --partitions {args.partitions}")
    if min(counts) < 1 or args.reps < 1 or len(args.samples) != 2 or not 4 <= args.samples[0] <= args.samples[1]:
        sys.exit("--gpus counts from 1, --reps from 1, --samples min,max with 4 <= min <= max")
    # A grid from one cycle per 100 days (the baseline) to 2 per day, i.e.
    # periods of 0.5 to 100 days.
    freqs = np.linspace(0.01, 2.0, args.freqs)
    rows, base, best0 = [], None, None
    for g in counts:
        times, gathered, out, truth, first, placed = run(g, args, freqs)
        ids = [r["id"] for r in out]
        best = np.array([r["best_period"] for r in out])
        if ids != sorted(ids) or len(ids) != args.curves:
            sys.exit(f"{g} GPU(s): {len(ids)} records, out of order or missing")
        true = np.array([truth[i] for i in ids])
        found = float(np.mean(np.abs(best - true) <= 0.02 * true))
        if best0 is None:
            best0 = best
        same = bool(np.array_equal(best, best0))
        import ptxlab

        per = args.curves // args.partitions
        _, ref = ptxlab.lombscargle_batch(
            [(r["t"], r["y"], r["dy"]) for r in first], freqs, backend="cpu", return_best_period=True
        )
        ref_err = float(np.max(np.abs(best[:per] - ref) / ref))
        med = statistics.median(times)
        base = base or med
        row = {
            "gpus": g,
            "curves": args.curves,
            "partitions": args.partitions,
            "samples": list(args.samples),
            "freqs": args.freqs,
            "backend": args.backend,
            "median_s": med,
            "min_s": min(times),
            "max_s": max(times),
            "curves_per_s": args.curves / med,
            "gathered_median_s": statistics.median(gathered),
            "speedup": base / med,
            "found_2pct": found,
            "same_as_first_count": same,
            "cpu_ref_rel_err": ref_err,
            "partitions_per_worker": placed,
        }
        rows.append(row)
        print(
            f"{g} GPU(s): {med:.3f} s median (min {min(times):.3f}, max {max(times):.3f}, {args.reps} runs; "
            f"{statistics.median(gathered):.3f} s with the records gathered on the client), "
            f"{args.curves / med:,.0f} curves/s, {base / med:.2f}x; true period within 2%: {found:.1%}; "
            f"same best periods as {counts[0]} GPU(s): {same}; first partition vs CPU f64: {ref_err:.1e}; "
            f"partitions per worker {placed}",
            flush=True,
        )
        if found < 0.95 or not same or ref_err > 1e-9:
            sys.exit(f"{g} GPU(s): check failed (found {found:.3f}, same {same}, CPU reference {ref_err:.1e})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
