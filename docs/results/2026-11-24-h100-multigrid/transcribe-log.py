#!/usr/bin/env python3
# python3 transcribe-log.py bench-mg.log results-from-log.json
"""Transcribes the tables of a `ptxlab bench` stdout log into a results.json
(ptxlab-results/1). The log's numbers are rounded as printed; the residual
histories are not in the log."""
import json, re, sys

def parse(path, env):
    rows = []
    for line in open(path):
        if not line.startswith("| ") or line.startswith("| variant") or line.startswith("|---"):
            continue
        body = line.strip()[2:]
        parts = body.split(" | ")
        if len(parts) < 13:
            continue
        f = parts[:13]
        note = " | ".join(parts[13:]).rstrip(" |") if len(parts) > 13 else ""
        variant, backend, size, prec, regs, spills, first, med, sp, thr, pct, err, status = [x.strip() for x in f]
        status = status.rstrip(" |").strip()
        r = {"workload": "poisson-mg", "variant": variant, "backend": backend, "size": size, "precision": prec,
             "registers": int(regs) if regs else None, "spills": int(spills) if spills else None,
             "first_ms": float(first) if first else None, "timing": None, "speedup": float(sp) if sp else None,
             "throughput": None, "unit": "", "pct_of_ceiling": float(pct) if pct else None,
             "rel_err": float(err) if err else None}
        m = re.match(r"([0-9.e+-]+) \(([0-9.e+-]+)-([0-9.e+-]+)\)", med)
        if m:
            r["timing"] = {"median_ms": float(m[1]), "min_ms": float(m[2]), "max_ms": float(m[3]), "reps": 0}
        if thr:
            v, u = thr.split(" ", 1)
            r["throughput"], r["unit"] = float(v), u
        if status == "ok":
            r["status"] = {"kind": "ok"}
        elif status.startswith("skipped: "):
            r["status"] = {"kind": "skipped", "detail": status[9:]}
        elif status.startswith("FAILED: "):
            r["status"] = {"kind": "failed", "detail": status[8:]}
        else:
            r["status"] = {"kind": "inaccurate", "detail": status}
        if note:
            r["note"] = note
        rows.append(r)
    return {"schema": "ptxlab-results/1", "environment": env,
            "ceilings": {"copy_gbs": 3010.0, "sfu_per_s": None, "fp32_flops": None}, "rows": rows}

env = {"gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "sm_count": 132, "clock_mhz": 1980,
       "driver_cuda": "13.0", "driver_version": "580.159.04", "rustc": "", "git_sha": "1df747b",
       "date": "2026-11-24 19:10 UTC", "ptx_arch": "sm_80",
       "command": "./ptxlab bench --only poisson-mg --peers --peers-dir peers --out bench-mg (transcribed from bench-mg.log)"}
json.dump(parse(sys.argv[1], env), open(sys.argv[2], "w"), indent=1)
