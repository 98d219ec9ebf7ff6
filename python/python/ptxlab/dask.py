"""Batched periodograms over the partitions of a Dask collection: each
partition is one :func:`ptxlab.lombscargle_batch` call on the worker that
holds it (one worker per GPU on a ``dask.distributed`` cluster, for example
``LocalCluster(n_workers=gpus, threads_per_worker=1)`` with each worker's
``CUDA_VISIBLE_DEVICES`` set to its GPU)."""

from __future__ import annotations

import numpy as np

from .lombscargle import best_period
from .lombscargle import lombscargle_batch as _batch


def _partition(records, frequency, kwargs):
    records = list(records)
    if not records:
        return []
    curves = []
    ids = []
    for r in records:
        if isinstance(r, dict):
            ids.append(r.get("id"))
            curves.append((r["t"], r["y"], r["dy"]) if r.get("dy") is not None else (r["t"], r["y"]))
        else:
            ids.append(None)
            curves.append(tuple(r))
    power = _batch(curves, frequency, **kwargs)
    best = best_period(np.asarray(power), np.asarray(frequency))
    return [{"id": i, "best_period": float(p), "peak_power": float(np.nanmax(row)) if np.isfinite(row).any() else float("nan")}
            for i, p, row in zip(ids, best, np.asarray(power))]


def lombscargle_batch_bag(bag, frequency, **kwargs):
    """Maps every partition of a ``dask.bag.Bag`` of curves (``(t, y)``,
    ``(t, y, dy)`` or dicts with ``"t"``, ``"y"``, optional ``"dy"`` and
    ``"id"``) to :func:`ptxlab.lombscargle_batch`; returns a Bag of
    ``{"id", "best_period", "peak_power"}`` records, one per curve, in
    order. ``kwargs`` go to ``lombscargle_batch`` (``backend``,
    ``precision``, ``normalization``, ...)."""
    try:
        import dask.bag  # noqa: F401
    except ImportError as e:  # pragma: no cover - exercised without dask
        raise ImportError("ptxlab.dask needs dask: pip install 'dask[bag]'") from e
    if "return_best_period" in kwargs:
        raise TypeError("ptxlab.dask computes the best periods itself; leave return_best_period out")
    f = np.asarray(frequency, dtype=np.float64)
    return bag.map_partitions(_partition, f, kwargs)


def lombscargle_batch_frame(ddf, frequency, id="id", t="t", y="y", dy=None, **kwargs):
    """Maps every partition of a Dask DataFrame in long form (one row per
    sample: a curve id column, time, value and optional uncertainty
    columns; each curve's rows within one partition) to
    :func:`ptxlab.lombscargle_batch`; returns a Dask DataFrame with one row
    per curve: ``id``, ``best_period``, ``peak_power``."""
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover
        raise ImportError("ptxlab.dask with DataFrames needs pandas and dask[dataframe]") from e

    def part(df):
        if len(df) == 0:
            return pd.DataFrame({"id": [], "best_period": [], "peak_power": []})
        recs = []
        for key, g in df.groupby(id, sort=False):
            r = {"id": key, "t": g[t].to_numpy(), "y": g[y].to_numpy()}
            if dy is not None:
                r["dy"] = g[dy].to_numpy()
            recs.append(r)
        return pd.DataFrame(_partition(recs, np.asarray(frequency, dtype=np.float64), kwargs))

    meta = pd.DataFrame({"id": pd.Series(dtype=ddf[id].dtype), "best_period": pd.Series(dtype="f8"),
                         "peak_power": pd.Series(dtype="f8")})
    return ddf.map_partitions(part, meta=meta)


def lombscargle_batch(collection, frequency, **kwargs):
    """:func:`lombscargle_batch_bag` for a Bag, :func:`lombscargle_batch_frame`
    for a DataFrame (long form: ``id``, ``t``, ``y``[, ``dy``] columns)."""
    mod = type(collection).__module__ or ""
    if mod.startswith("dask.bag"):
        return lombscargle_batch_bag(collection, frequency, **kwargs)
    if "dataframe" in mod:
        return lombscargle_batch_frame(collection, frequency, **kwargs)
    raise TypeError(f"expected a dask Bag or DataFrame; got {type(collection).__module__}.{type(collection).__name__}")
