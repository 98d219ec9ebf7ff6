"""Helpers shared by the peer scripts: event timing, the statistics of a
set of timings, availability checks, and progress announcements for
`ptxlab bench` (JSON lines on stdout, like the rows)."""
import importlib
import json
import math


def timing_stats(samples_ms):
    """Median, min, max and count of timings in ms, defined as ptxlab's own
    `Timing::from_samples` (toolkit/runtime/src/timing.rs) defines them: sorted, the
    middle sample for an odd count, the mean of the two middle samples for
    an even count, NaN for none. Every peer reports its timings through
    this one function, so its rows and ptxlab's rows are the same
    statistic."""
    s = sorted(float(x) for x in samples_ms)
    n = len(s)
    if n == 0:
        return {"median_ms": math.nan, "min_ms": math.nan, "max_ms": math.nan, "reps": 0}
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {"median_ms": med, "min_ms": s[0], "max_ms": s[-1], "reps": n}


def try_import(name):
    """Returns (module, None) or (None, one-line reason)."""
    try:
        return importlib.import_module(name), None
    except Exception as e:  # ImportError, CUDA init errors...
        return None, f"{name} not importable: {type(e).__name__}: {e}".splitlines()[0]


def time_cuda(fn, reps=50, warmup=5, sync=None):
    """Median/min/max ms of fn() with CUDA events (torch if present, else CuPy)."""
    torch, _ = try_import("torch")
    samples = []
    for _ in range(warmup):
        fn()
    if torch is not None and torch.cuda.is_available():
        for _ in range(reps):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            samples.append(a.elapsed_time(b))
    else:
        import cupy
        for _ in range(reps):
            a = cupy.cuda.Event()
            b = cupy.cuda.Event()
            a.record()
            fn()
            b.record()
            b.synchronize()
            samples.append(cupy.cuda.get_elapsed_time(a, b))
    return timing_stats(samples)


def announce(text, expected_s=None, basis=None):
    """Says, before a long step, what it is and about how long it takes.

    `ptxlab bench --peers` prints it as a progress line (unless --quiet):
    `expected_s` is an estimate from earlier measurements (`basis` says
    which), so a quiet minute of pyamg's set-up is not mistaken for a hang.
    """
    line = {"note": text}
    if expected_s is not None:
        line["expected_s"] = float(expected_s)
    if basis:
        line["basis"] = basis
    print(json.dumps(line), flush=True)
