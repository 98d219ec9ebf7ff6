"""What a Python call costs over its kernel, and batch throughput from
Python against the CLI's, on one GPU.

    python3 python/bench/overhead.py [--ptxlab PATH] [--json out.json] [--no-batch]

Per-call overhead: a small problem is called many times from Python (torch
tensors on the current stream, no synchronisation inside the loop), the
wall time per call is the loop's time over the calls, and the kernel time
per call is what the CUDA profiler (CUPTI, through ``torch.profiler``)
records for ptxlab's kernels in the same loop. The overhead is the
difference: what the wrapper, the argument checks and the launch add. The
same loop of the torch operation is the yardstick. Attention is measured
on one set of tensors (every call after the first finds its plan kept and
its tensor maps uploaded before) and on sets taken in turn (the kept plan
bound to other addresses: with 4 sets their tensor maps are found in the
runtime's cache of uploaded maps, with 32 sets they are not: each call
encodes and uploads its three maps).

Batch throughput: ``ptxlab.lombscargle_batch`` on NumPy arrays with the
best periods (the whole call: the curves' preparation, the copies both
ways, the kernel) against ``ptxlab lomb-scargle --curves`` on the same
curves and grid, from its inputs in memory to its best periods (its "time
to the written result" less its input reading; it runs the kernel twice,
a first run and one timed repetition).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _wall_per_call(fn, calls, sync):
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t) / calls


def _kernel_per_call(fn, calls, sync, match):
    """Mean device time per call of the kernels whose name contains one of
    ``match``, from CUPTI through torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        sync()
    total_us = 0.0
    names = set()
    for e in prof.events():
        if e.device_type.name == "CUDA" and any(m in e.name for m in match):
            total_us += e.device_time if hasattr(e, "device_time") else e.cuda_time
            names.add(e.name)
    return total_us * 1e-6 / calls, sorted(names)


def overhead_rows(calls):
    import torch

    import ptxlab

    sync = torch.cuda.synchronize
    g = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    a = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16, generator=g)

    def qkv():
        return tuple(torch.randn(1, 2, 128, 64, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))

    q, k, v = qkv()
    sdpa = torch.nn.functional.scaled_dot_product_attention
    attn = ["attention", "flash", "attn"]
    cases = [
        ("matmul bf16 128x128x128", lambda: ptxlab.matmul(a, b), lambda: a @ b, ["matmul"]),
        ("attention bf16 1x2x128x64", lambda: ptxlab.attention(q, k, v), lambda: sdpa(q, k, v), attn),
    ]
    for n in (4, 32):
        sets = [qkv() for _ in range(n)]
        ours, theirs = itertools.cycle(sets), itertools.cycle(sets)
        cases.append(
            (
                f"attention bf16 1x2x128x64, {n} tensor sets in turn",
                lambda it=ours: ptxlab.attention(*next(it)),
                lambda it=theirs: sdpa(*next(it)),
                attn,
            )
        )
    for name, ours, theirs, match in cases:
        wall = [_wall_per_call(ours, calls, sync) for _ in range(5)]
        kern, names = _kernel_per_call(ours, calls, sync, match)
        torch_wall = [_wall_per_call(theirs, calls, sync) for _ in range(5)]
        w = statistics.median(wall)
        rows.append(
            {
                "case": name,
                "ptxlab_wall_us": w * 1e6,
                "ptxlab_wall_spread_us": [min(wall) * 1e6, max(wall) * 1e6],
                "ptxlab_kernel_us": kern * 1e6,
                "overhead_us": (w - kern) * 1e6,
                "kernels": names,
                "torch_wall_us": statistics.median(torch_wall) * 1e6,
                "calls": calls,
            }
        )
    return rows


def batch_row(exe, curves, nf, reps):
    import ptxlab

    rng = np.random.default_rng(7)
    n = rng.integers(100, 400, size=curves)
    off = np.concatenate([[0], np.cumsum(n)])
    t = np.concatenate([np.sort(rng.uniform(0, 100, k)) for k in n])
    y = np.sin(2 * np.pi * t / 3.7) + rng.normal(0, 0.5, t.size)
    start, step = 0.05, 0.001
    f = start + step * np.arange(nf)

    def call():
        return ptxlab.lombscargle_batch((t, y), f, offsets=off, precision="f32", return_best_period=True)

    call()
    times = []
    for _ in range(reps):
        s = time.perf_counter()
        call()
        times.append(time.perf_counter() - s)
    py_ms = statistics.median(times) * 1e3
    cli = []
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "curves.npz"
        np.savez(path, t=t, y=y, offsets=off)
        cmd = [exe, "lomb-scargle", "--curves", str(path), "--start", str(start), "--step", str(step),
               "--n", str(nf), "--precision", "f32", "--check", "none", "--reps", "1", "--top", "1"]
        for _ in range(3):
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            m = re.search(r"time to the written result: ([0-9.]+) ms \(inputs read in ([0-9.]+) ms; "
                          r".* ([0-9.]+) ms; best periods", out)
            if m:
                total, read, kernel = (float(g) for g in m.groups())
                cli.append((total - read, kernel))
    job = statistics.median(c[0] for c in cli) if cli else float("nan")
    kernel = statistics.median(c[1] for c in cli) if cli else float("nan")
    return {
        "case": f"lombscargle_batch f32, best periods: {curves} curves x {nf} freqs",
        "python_ms": py_ms,
        "python_spread_ms": [min(times) * 1e3, max(times) * 1e3],
        "cli_job_ms": job,
        "cli_first_kernel_ms": kernel,
        "python_over_cli": py_ms / job,
        "cli_output_tail": out.strip().splitlines()[-3:],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ptxlab", default="ptxlab", help="the ptxlab binary for the CLI's batch figure")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--curves", type=int, default=20000)
    ap.add_argument("--freqs", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--no-batch", action="store_true", help="the per-call overhead only (no CLI needed)")
    a = ap.parse_args()
    rows = overhead_rows(a.calls)
    for r in rows:
        print(
            f"{r['case']}: ptxlab {r['ptxlab_wall_us']:.1f} us/call (kernel {r['ptxlab_kernel_us']:.1f}, "
            f"overhead {r['overhead_us']:.1f}); torch {r['torch_wall_us']:.1f} us/call"
        )
    import torch

    from ptxlab import _native

    kept, hits, misses, held = _native.attention_plan_cache(torch.cuda.current_device())
    cache = {"kept": kept, "hits": hits, "misses": misses, "device_bytes": held}
    print(f"attention plans: {kept} kept ({held} device bytes), {hits} calls found theirs, {misses} made one")
    out = {"overhead": rows, "attention_plans": cache}
    if not a.no_batch:
        br = batch_row(a.ptxlab, a.curves, a.freqs, a.reps)
        print(
            f"{br['case']}: Python {br['python_ms']:.1f} ms, CLI {br['cli_job_ms']:.1f} ms after reading its "
            f"inputs (first kernel run {br['cli_first_kernel_ms']:.1f} ms), ratio {br['python_over_cli']:.3f}"
        )
        out["batch"] = br
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
