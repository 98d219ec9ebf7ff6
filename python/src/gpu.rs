//! Attention and GEMM on GPU arrays that another library owns (torch, CuPy):
//! the Python layer passes each tensor's device address (from
//! `__cuda_array_interface__`), the result's address (an array it
//! allocated through the caller's library) and the caller's stream. The
//! lab's launchers run on borrowed buffers ([`Buffer::borrow_device_ptr`]),
//! ordered after the work queued on the caller's stream, and the caller's
//! stream waits for them: nothing is copied and the host does not wait.

use crate::{device, guarded};
use ptxlab::runtime::{Buffer, Device, Stream};
use ptxlab::workloads::attention::{self as attn, Inputs, Plan, Shape};
use ptxlab::workloads::matmul::{Half, TcRung, gemm_half};
use ptxlab::{Backend, Error};
use pyo3::prelude::*;
use std::mem::ManuallyDrop;

/// The `stream` of `__cuda_array_interface__`: `None` (no ordering asked
/// for: the call waits for its own work), `1` (the legacy default stream),
/// `2` (the per-thread default stream) or a `CUstream` handle.
fn caller_stream(dev: &Device, stream: Option<u64>) -> ptxlab::Result<Option<Stream>> {
    let (Some(handle), Some(g)) = (stream, dev.as_gpu()) else {
        return Ok(None);
    };
    if handle == 0 {
        return Err(Error::input(
            "stream",
            "0 is ambiguous in __cuda_array_interface__ (use 1 for the legacy default stream, \
             2 for the per-thread default stream, or a stream handle)",
        ));
    }
    // SAFETY: the handle is the caller's stream of this device's primary
    // context (the interface's contract); the runtime's wrapper does not own
    // it and never destroys it, and it lives only for this call, while the
    // caller's library keeps the stream alive.
    let s = unsafe { g.borrow_stream(handle) };
    Ok(Some(s))
}

/// Runs `f` on `dev`'s stream after the work queued on `caller`, then makes
/// `caller` wait for it (without `caller`: waits for the work on the host).
fn ordered<R>(
    dev: &Device,
    caller: Option<&Stream>,
    f: impl FnOnce() -> ptxlab::Result<R>,
) -> ptxlab::Result<R> {
    let g = dev
        .as_gpu()
        .ok_or_else(|| Error::input("backend", "GPU arrays need the gpu backend"))?;
    if let Some(c) = caller {
        let ev = c.record_event()?;
        g.own_stream().wait(&ev)?;
    }
    // The caller's stream waits for whatever was queued, even when a
    // launch failed part way.
    let r = f();
    match caller {
        Some(c) => c.wait(&g.own_stream().record_event()?)?,
        None => g.synchronize()?,
    }
    r
}

/// Borrows 16-bit buffers at `(address, elements)` on `dev`, each held in a
/// `ManuallyDrop` so that no path (an early return, a panic) frees the
/// owner's memory; give them back with [`give_back`]. On an error, the
/// ones already borrowed are given back.
///
/// # Safety
/// As [`Buffer::borrow_device_ptr`] for every part: a live allocation of
/// `dev`'s context of at least that many values, which the caller keeps
/// alive and does not touch out of stream order during the call.
unsafe fn borrow_all(dev: &Device, parts: &[(u64, usize)]) -> ptxlab::Result<Vec<Held>> {
    let mut out: Vec<Held> = Vec::with_capacity(parts.len());
    for &(ptr, len) in parts {
        // SAFETY: forwarded from this function's contract; every buffer
        // made here is released by `give_back` (or leaked), never dropped.
        match unsafe { Buffer::borrow_device_ptr(dev, ptr, len) } {
            Ok(b) => out.push(ManuallyDrop::new(b)),
            Err(e) => {
                give_back(out);
                return Err(e.into());
            }
        }
    }
    Ok(out)
}

/// A borrowed buffer that is never dropped.
type Held = ManuallyDrop<Buffer<u16>>;

/// Gives back borrowed buffers without freeing their memory.
fn give_back(bufs: impl IntoIterator<Item = Held>) {
    for b in bufs {
        ManuallyDrop::into_inner(b).release_borrowed();
    }
}

/// The 16-bit type of `"bf16"` or `"f16"`.
fn half_of(precision: &str) -> ptxlab::Result<Half> {
    match precision {
        "bf16" => Ok(Half::Bf16),
        "f16" => Ok(Half::F16),
        other => Err(Error::input(
            "dtype",
            format!("{other}; attention and matmul take bfloat16 or float16 tensors"),
        )),
    }
}

/// Whether `dev` has the sm_90a kernels (Hopper).
fn hopper(dev: &Device) -> bool {
    dev.as_gpu()
        .is_some_and(|g| g.info().compute_capability == (9, 0))
}

/// `O = softmax(scale Q K^T [+ causal mask]) V` for `(batch, heads, S, D)`
/// row-major 16-bit tensors at the given device addresses, written into
/// `o`; `K` and `V` have `kv_heads` heads (default `heads`; it must divide
/// `heads`: grouped-query attention); returns the rung that ran.
#[pyfunction]
#[pyo3(signature = (q, k, v, o, batch, heads, sq, skv, d, causal, scale, precision, device_ordinal, stream, kv_heads=None))]
#[allow(clippy::too_many_arguments)]
fn attention(
    py: Python<'_>,
    q: u64,
    k: u64,
    v: u64,
    o: u64,
    batch: usize,
    heads: usize,
    sq: usize,
    skv: usize,
    d: usize,
    causal: bool,
    scale: Option<f64>,
    precision: &str,
    device_ordinal: usize,
    stream: Option<u64>,
    kv_heads: Option<usize>,
) -> PyResult<String> {
    guarded(py, || {
        let half = half_of(precision)?;
        let prec = match half {
            Half::Bf16 => attn::Precision::Bf16,
            Half::F16 => attn::Precision::F16,
        };
        let shape = Shape::new(batch, heads, sq, skv, d, causal, scale)?
            .with_kv_heads(kv_heads.unwrap_or(heads))?;
        let dev = device(Backend::Gpu, device_ordinal)?.expect("the gpu backend has a device");
        let order: &[attn::Rung] = if hopper(&dev) {
            &[
                attn::Rung::WsSkip,
                attn::Rung::Ws,
                attn::Rung::Fa2,
                attn::Rung::Split,
            ]
        } else {
            &[attn::Rung::Fa2, attn::Rung::Split]
        };
        let Some(&rung) = order.iter().find(|r| r.refuses(&shape).is_none()) else {
            let why = attn::Rung::Split.refuses(&shape).unwrap_or_default();
            return Err(Error::input("attention", why));
        };
        let caller = caller_stream(&dev, stream)?;
        let (ql, kl) = (shape.q_len(), shape.kv_len());
        // SAFETY: the Python layer passes the addresses of contiguous
        // tensors of this device with these element counts, alive for the
        // call, and orders the call on their stream (`ordered`).
        let held = unsafe { borrow_all(&dev, &[(q, ql), (k, kl), (v, kl), (o, ql)])? };
        let [q, k, v, mut ob]: [Held; 4] = held.try_into().unwrap_or_else(|_| unreachable!());
        let inputs = ManuallyDrop::new(Inputs {
            q: ManuallyDrop::into_inner(q),
            k: ManuallyDrop::into_inner(k),
            v: ManuallyDrop::into_inner(v),
        });
        let r = ordered(&dev, caller.as_ref(), || {
            let mut plan = Plan::new(&dev, rung, prec, shape, &inputs)?;
            plan.run(&dev, &mut ob, None)
        });
        let Inputs { q, k, v } = ManuallyDrop::into_inner(inputs);
        give_back([q, k, v].map(ManuallyDrop::new).into_iter().chain([ob]));
        r?;
        Ok(rung.name())
    })
}

/// `C = A B` for row-major 16-bit `A` (`m x k`) and `B` (`k x n`) at the
/// given device addresses, f32 accumulation, written into `c`; returns the
/// rung that ran.
#[pyfunction]
#[pyo3(signature = (a, b, c, m, n, kk, precision, device_ordinal, stream))]
#[allow(clippy::too_many_arguments)]
fn matmul(
    py: Python<'_>,
    a: u64,
    b: u64,
    c: u64,
    m: usize,
    n: usize,
    kk: usize,
    precision: &str,
    device_ordinal: usize,
    stream: Option<u64>,
) -> PyResult<String> {
    guarded(py, || {
        let half = half_of(precision)?;
        let dev = device(Backend::Gpu, device_ordinal)?.expect("the gpu backend has a device");
        let rung = if hopper(&dev) {
            TcRung::Ws
        } else {
            TcRung::PipeT
        };
        let caller = caller_stream(&dev, stream)?;
        let (mk, kn, mn) = (m.checked_mul(kk), kk.checked_mul(n), m.checked_mul(n));
        let (Some(mk), Some(kn), Some(mn)) = (mk, kn, mn) else {
            return Err(Error::input(
                "matmul",
                format!("{m} x {kk} times {kk} x {n} overflows the element count"),
            ));
        };
        // SAFETY: the Python layer passes the addresses of contiguous
        // tensors of this device with these element counts, alive for the
        // call, and orders the call on their stream (`ordered`).
        let held = unsafe { borrow_all(&dev, &[(a, mk), (b, kn), (c, mn)])? };
        let [ab, bb, mut cb]: [Held; 3] = held.try_into().unwrap_or_else(|_| unreachable!());
        let r = ordered(&dev, caller.as_ref(), || {
            gemm_half(&dev, rung, half, &ab, &bb, &mut cb, m, n, kk)
        });
        give_back([ab, bb, cb]);
        r?;
        Ok(rung.name())
    })
}

/// Adds the GPU-array functions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(attention, m)?)?;
    m.add_function(wrap_pyfunction!(matmul, m)?)?;
    Ok(())
}
