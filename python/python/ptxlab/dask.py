"""Batched periodograms over the partitions of a Dask collection: each
partition is one :func:`ptxlab.lombscargle_peaks` call on the worker that
holds it (one worker per GPU on a ``dask.distributed`` cluster, for example
``LocalCluster(n_workers=gpus, threads_per_worker=1)`` with each worker's
``CUDA_VISIBLE_DEVICES`` set to its GPU)."""

from __future__ import annotations

import numpy as np

from .lombscargle import lombscargle_peaks as _peaks


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
    best, peak = _peaks(curves, frequency, **kwargs)
    return [{"id": i, "best_period": float(p), "peak_power": float(w)} for i, p, w in zip(ids, best, peak)]


def lombscargle_batch_bag(bag, frequency, **kwargs):
    """Maps every partition of a ``dask.bag.Bag`` of curves (``(t, y)``,
    ``(t, y, dy)`` or dicts with ``"t"``, ``"y"``, optional ``"dy"`` and
    ``"id"``) to :func:`ptxlab.lombscargle_peaks` (one launch per
    partition; only the peaks leave the native code); returns a Bag of
    ``{"id", "best_period", "peak_power"}`` records, one per curve, in
    order. ``kwargs`` go to ``lombscargle_peaks`` (``backend``,
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
    :func:`ptxlab.lombscargle_peaks`; returns a Dask DataFrame with one row
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


def gpu_cluster(gpus, threads_per_worker=1, **scheduler_options):
    """A ``dask.distributed`` cluster on this machine with one worker
    process per GPU: worker ``gpu<g>`` sees only GPU ``g`` (its
    ``CUDA_VISIBLE_DEVICES`` is ``g``, so ptxlab's device 0 is that GPU).
    ``gpus`` is a count (GPUs ``0..gpus-1``) or a list of ordinals. Use it
    as a context manager with a ``distributed.Client``; a Bag persisted on
    it keeps each partition on the worker that made it, and
    :func:`lombscargle_batch` then runs each partition there."""
    try:
        from distributed import Nanny, Scheduler, SpecCluster
    except ImportError as e:  # pragma: no cover - exercised without distributed
        raise ImportError("ptxlab.dask.gpu_cluster needs dask.distributed: pip install 'dask[distributed]'") from e
    if isinstance(gpus, bool) or not isinstance(gpus, (int, list, tuple, range)):
        raise TypeError(f"gpus is a count or a list of GPU ordinals; got {type(gpus).__name__}")
    ordinals = list(range(gpus)) if isinstance(gpus, int) else list(gpus)
    if not ordinals:
        raise ValueError("gpus names no GPU; give a count of at least 1 or a non-empty list of ordinals")
    if any(isinstance(g, bool) or not isinstance(g, int) or g < 0 for g in ordinals):
        raise ValueError(f"GPU ordinals are whole numbers from 0; got {ordinals}")
    if len(set(ordinals)) != len(ordinals):
        raise ValueError(f"each GPU gets one worker; {ordinals} names one twice")
    if isinstance(threads_per_worker, bool) or not isinstance(threads_per_worker, int) or threads_per_worker < 1:
        raise ValueError(f"threads_per_worker is a whole number from 1; got {threads_per_worker!r}")
    workers = {
        f"gpu{g}": {
            "cls": Nanny,
            "options": {"nthreads": threads_per_worker, "env": {"CUDA_VISIBLE_DEVICES": str(g)}},
        }
        for g in ordinals
    }
    options = {"dashboard_address": None}
    options.update(scheduler_options)
    return SpecCluster(scheduler={"cls": Scheduler, "options": options}, workers=workers)
