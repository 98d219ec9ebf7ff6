"""ptxlab.dask over the partitions of a Bag, on the CPU backend with
dask's synchronous scheduler."""

import numpy as np
import pytest

import ptxlab
from conftest import light_curve

dask = pytest.importorskip("dask")
import dask.bag as db  # noqa: E402

from ptxlab import dask as pdask  # noqa: E402


def test_bag_partitions_give_each_curves_best_period():
    curves = [light_curve(n=60 + 5 * c, seed=20 + c, period=2.5 + 0.5 * c) for c in range(6)]
    recs = [{"id": c, "t": t, "y": y, "dy": dy} for c, (t, y, dy) in enumerate(curves)]
    f = np.linspace(0.05, 1.2, 400)
    bag = db.from_sequence(recs, npartitions=3)
    out = pdask.lombscargle_batch(bag, f, backend="cpu").compute(scheduler="synchronous")
    assert [r["id"] for r in out] == list(range(6))
    _, best = ptxlab.lombscargle_batch([c for c in curves], f, backend="cpu", return_best_period=True)
    np.testing.assert_allclose([r["best_period"] for r in out], best)
    for r, c in zip(out, range(6)):
        assert r["best_period"] == pytest.approx(2.5 + 0.5 * c, rel=0.05)


def test_dataframe_in_long_form_gives_one_row_per_curve():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    curves = [light_curve(n=60 + 5 * c, seed=20 + c, period=2.5 + 0.5 * c) for c in range(4)]
    df = pd.concat(
        [pd.DataFrame({"id": c, "t": t, "y": y, "dy": dy}) for c, (t, y, dy) in enumerate(curves)],
        ignore_index=True,
    )
    f = np.linspace(0.05, 1.2, 400)
    ddf = dd.from_pandas(df, npartitions=1)
    out = pdask.lombscargle_batch(ddf, f, dy="dy", backend="cpu").compute(scheduler="synchronous")
    _, best = ptxlab.lombscargle_batch(curves, f, backend="cpu", return_best_period=True)
    assert list(out["id"]) == [0, 1, 2, 3]
    np.testing.assert_allclose(out["best_period"].to_numpy(), best)


def test_gpu_cluster_runs_each_partition_on_its_worker():
    distributed = pytest.importorskip("distributed")
    curves = [light_curve(n=50 + 7 * c, seed=40 + c, period=2.0 + 0.4 * c) for c in range(8)]
    recs = [{"id": c, "t": t, "y": y, "dy": dy} for c, (t, y, dy) in enumerate(curves)]
    f = np.linspace(0.05, 1.2, 300)
    with pdask.gpu_cluster(2) as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        # Each worker sees one GPU, named by its CUDA_VISIBLE_DEVICES.
        seen = client.run(lambda: __import__("os").environ.get("CUDA_VISIBLE_DEVICES"))
        assert sorted(seen.values()) == ["0", "1"]
        bag = db.from_sequence(recs, npartitions=4).persist()
        out = pdask.lombscargle_batch(bag, f, backend="cpu").compute()
    _, best = ptxlab.lombscargle_batch(curves, f, backend="cpu", return_best_period=True)
    assert [r["id"] for r in out] == list(range(8))
    np.testing.assert_allclose([r["best_period"] for r in out], best)


def test_gpu_cluster_refuses_bad_gpu_lists():
    pytest.importorskip("distributed")
    with pytest.raises(ValueError, match="at least 1"):
        pdask.gpu_cluster(0)
    with pytest.raises(ValueError, match="names one twice"):
        pdask.gpu_cluster([0, 0])
    with pytest.raises(ValueError, match="whole numbers from 0"):
        pdask.gpu_cluster([-1])
    with pytest.raises(TypeError, match="count or a list"):
        pdask.gpu_cluster("0,1")
