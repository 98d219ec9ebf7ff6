#!/usr/bin/env python3
"""Runs the Python peers (CuPy, PyTorch, Numba) of the chosen workloads.

Each workload has a module here (poisson.py, lomb_scargle.py, ...; lomb-scargle has two, the
single curve and the batches) with
`run(quick: bool) -> list[dict]`. Every dict becomes one JSON line on stdout,
which `ptxlab bench --peers` turns into table rows next to the Rust rows.
Keys: workload, variant, backend, size, precision, median_ms, min_ms, max_ms,
reps, first_ms, throughput, unit, rel_err, registers; or `skipped` with a
one-line reason (a package that is not installed).

Progress lines are JSON too: `{"step": ...}` when a module starts (the bench
times each step until the next) and `{"note": ..., "expected_s": ...}` from
`common.announce` before a long peer (pyamg, CuPy CG, nifty-ls); `{"done":
..., "rows": N, "elapsed_s": ...}` when a module ends.
"""
import argparse
import importlib
import json
import os
import sys
import time
import traceback

MODULES = {
    "poisson": "poisson",
    "poisson-mg": "poisson_mg",
    "lomb-scargle": ["lomb_scargle", "lomb_batch"],
    "vector-add": "vector_add",
    "primitives": "primitives",
    "diffusion": "diffusion",
    "matmul": "matmul",
    "attention": "attention",
    "attention-decode": "attention_decode",
    "fusion": "fusion",
    "fft": "fft",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default=",".join(MODULES))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import numpy as np
        if not hasattr(np, "row_stack"):
            np.row_stack = np.vstack  # Numba imports it; NumPy 2.x removed it.
    except ImportError as e:
        print(json.dumps({"workload": "peers", "variant": "numpy", "backend": "python", "skipped": f"numpy not importable: {e}"}))
        return
    for w in args.workloads.split(","):
        names = MODULES.get(w)
        for name in [names] if isinstance(names, str) else names or []:
            if not os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")):
                continue
            print(json.dumps({"step": f"{w} peers: peers/{name}.py"}), flush=True)
            start, n = time.perf_counter(), 0
            try:
                mod = importlib.import_module(name)
                for row in mod.run(args.quick):
                    row.setdefault("workload", w)
                    print(json.dumps(row), flush=True)
                    n += 1
                print(json.dumps({"done": f"peers/{name}.py", "rows": n,
                                  "elapsed_s": time.perf_counter() - start}), flush=True)
            except Exception as e:  # one failing peer must not hide the others
                print(json.dumps({"workload": w, "variant": f"peer script {name}", "backend": "python",
                                  "skipped": f"{type(e).__name__}: {e}".splitlines()[0]}), flush=True)
                traceback.print_exc(file=sys.stderr)


if __name__ == "__main__":
    main()
