"""Helpers shared by the peer scripts: event timing, availability checks, and
progress announcements for `ptxlab bench` (JSON lines on stdout, like the rows)."""
import importlib
import json


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
    samples.sort()
    n = len(samples)
    med = samples[n // 2] if n % 2 else 0.5 * (samples[n // 2 - 1] + samples[n // 2])
    return {"median_ms": med, "min_ms": samples[0], "max_ms": samples[-1], "reps": n}


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
