//! Attention and GEMM on GPU arrays that another library owns (torch, CuPy):
//! the Python layer passes each tensor's device address (from
//! `__cuda_array_interface__`), the result's address (an array it
//! allocated through the caller's library) and the caller's stream. The
//! lab's launchers run on borrowed buffers ([`Buffer::borrow_device_ptr`]),
//! ordered after the work queued on the caller's stream, and the caller's
//! stream waits for them: nothing is copied and the host does not wait.
//!
//! What a call would otherwise make every time is kept per thread and
//! device between calls ([`Kept`]): the two events that order the device's
//! stream against the caller's, and the attention plans of the most
//! recent problems (their scratch and launch shape), so that a call of a
//! problem seen before makes only what holds its tensors' addresses.

use crate::{device, guarded};
use ptxlab::runtime::gpu::Gpu;
use ptxlab::runtime::{Buffer, Device, Event, Stream};
use ptxlab::workloads::attention::{self as attn, Inputs, Prepared, Shape};
use ptxlab::workloads::matmul::{Half, TcRung, gemm_half};
use ptxlab::{Backend, Error};
use pyo3::prelude::*;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::mem::ManuallyDrop;
use std::rc::Rc;

/// How many attention plans a thread keeps per device.
const KEPT_PLANS: usize = 8;
/// The most device memory (bytes of scratch) the kept plans of a thread
/// and device hold together; a plan that needs more is made for its call
/// only.
const KEPT_PLAN_BYTES: usize = 64 << 20;

/// What one thread keeps between calls for one device.
#[derive(Default)]
struct Kept {
    /// The events that order the device's stream after the caller's
    /// (`.0`) and the caller's after the device's (`.1`), made on first
    /// use: recording an event again moves its mark, and a wait queued
    /// before that waits for the mark it saw.
    events: Option<Rc<(Event, Event)>>,
    /// Attention plans by recency, the most recent last.
    plans: VecDeque<Prepared>,
    /// Calls that found their plan here.
    hits: u64,
    /// Calls that made theirs.
    misses: u64,
}

thread_local! {
    /// [`Kept`] by device ordinal, for the calls of this thread (each
    /// thread has its own device handles: see `crate::device`).
    static KEPT: RefCell<HashMap<usize, Kept>> = RefCell::new(HashMap::new());
}

/// Runs `f` on what this thread keeps for device `ordinal`.
fn with_kept<R>(ordinal: usize, f: impl FnOnce(&mut Kept) -> R) -> R {
    KEPT.with(|k| f(k.borrow_mut().entry(ordinal).or_default()))
}

/// The kept plan of `(prec, shape, packed)` on device `ordinal` (`packed`:
/// the packed batch, `None` for a dense call), taken out of the cache
/// (give it back with [`keep_plan`]); counts the hit or the miss.
fn take_plan(
    ordinal: usize,
    prec: attn::Precision,
    shape: &Shape,
    packed: Option<&attn::Packed>,
) -> Option<Prepared> {
    with_kept(ordinal, |k| {
        let found = k.plans.iter().position(|p| {
            p.precision() == prec && p.shape() == shape && p.packed_batch() == packed
        });
        match found {
            Some(i) => {
                k.hits += 1;
                k.plans.remove(i)
            }
            None => {
                k.misses += 1;
                None
            }
        }
    })
}

/// Keeps `plan` as the most recent of device `ordinal`, dropping the
/// least recent ones past [`KEPT_PLANS`] or [`KEPT_PLAN_BYTES`] (their
/// buffers are freed in the order of the device's stream, after the work
/// that uses them); a plan larger than the budget is dropped instead.
fn keep_plan(ordinal: usize, plan: Prepared) {
    if plan.device_bytes() > KEPT_PLAN_BYTES {
        return;
    }
    with_kept(ordinal, |k| {
        k.plans.push_back(plan);
        let bytes = |k: &Kept| k.plans.iter().map(Prepared::device_bytes).sum::<usize>();
        while k.plans.len() > KEPT_PLANS || bytes(k) > KEPT_PLAN_BYTES {
            k.plans.pop_front();
        }
    })
}

/// The ordering events of `g`, made on the first call of this thread.
fn events(g: &Gpu) -> ptxlab::Result<Rc<(Event, Event)>> {
    let ordinal = g.ordinal();
    if let Some(e) = with_kept(ordinal, |k| k.events.clone()) {
        return Ok(e);
    }
    let e = Rc::new((g.new_event(false)?, g.new_event(false)?));
    with_kept(ordinal, |k| k.events = Some(e.clone()));
    Ok(e)
}

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
    let Some(c) = caller else {
        let r = f();
        g.synchronize()?;
        return r;
    };
    let ev = events(g)?;
    let own = g.own_stream();
    ev.0.record(c)?;
    own.wait(&ev.0)?;
    // The caller's stream waits for whatever was queued, even when a
    // launch failed part way.
    let r = f();
    ev.1.record(&own)?;
    c.wait(&ev.1)?;
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

/// The attention precision of `"bf16"` or `"f16"`.
fn attn_precision(precision: &str) -> ptxlab::Result<attn::Precision> {
    Ok(match half_of(precision)? {
        Half::Bf16 => attn::Precision::Bf16,
        Half::F16 => attn::Precision::F16,
    })
}

/// Whether `dev` has the sm_90a kernels (Hopper).
fn hopper(dev: &Device) -> bool {
    dev.as_gpu()
        .is_some_and(|g| g.info().compute_capability == (9, 0))
}

/// `O = softmax(scale Q K^T [+ causal mask]) V` for `(batch, heads, S, D)`
/// row-major 16-bit tensors at the given device addresses, written into
/// `o`; `K` and `V` have `kv_heads` heads (default `heads`; it must divide
/// `heads`: grouped-query attention), and a sliding `window` hides the
/// keys `window` or more positions away; returns the rung that ran.
#[pyfunction]
#[pyo3(signature = (q, k, v, o, batch, heads, sq, skv, d, causal, scale, precision, device_ordinal, stream, kv_heads=None, window=None))]
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
    window: Option<usize>,
) -> PyResult<String> {
    guarded(py, || {
        let prec = attn_precision(precision)?;
        let mut shape = Shape::new(batch, heads, sq, skv, d, causal, scale)?
            .with_kv_heads(kv_heads.unwrap_or(heads))?;
        if let Some(w) = window {
            shape = shape.with_window(w)?;
        }
        let dev = device(Backend::Gpu, device_ordinal)?.expect("the gpu backend has a device");
        let kept = take_plan(device_ordinal, prec, &shape, None);
        let rung = match &kept {
            Some(p) => p.rung(),
            None => choose_rung(&dev, &shape)?,
        };
        let caller = caller_stream(&dev, stream)?;
        let (ql, kl) = (shape.q_len(), shape.kv_len());
        let parts = [(q, ql), (k, kl), (v, kl), (o, ql)];
        // SAFETY: the Python layer passes the addresses of contiguous
        // tensors of this device with these element counts, alive for the
        // call, and `run_plan` orders the call on their stream.
        unsafe {
            run_plan(&dev, caller.as_ref(), device_ordinal, parts, kept, || {
                Prepared::new(&dev, rung, prec, shape)
            })?
        };
        Ok(rung.name())
    })
}

/// Runs an attention plan on the caller's tensors `parts` (`[Q, K, V,
/// O]`, address and element count; [`with_tensors`]): the `kept` plan, or
/// the one `make` makes, bound to these tensors and run into `O`, then kept
/// for the next call of its problem when it ran. Binding makes the tensor
/// maps of these tensors' addresses (never a kept plan's: it keeps none).
///
/// # Safety
/// As [`borrow_all`] for every tensor.
unsafe fn run_plan(
    dev: &Device,
    caller: Option<&Stream>,
    ordinal: usize,
    parts: [(u64, usize); 4],
    kept: Option<Prepared>,
    make: impl FnOnce() -> ptxlab::Result<Prepared>,
) -> ptxlab::Result<()> {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_tensors(dev, caller, parts, |x, o| {
            let prepared = match kept {
                Some(p) => p,
                None => make()?,
            };
            let mut plan = prepared.bind(dev, x)?;
            let r = plan.run(dev, o, None);
            if r.is_ok() {
                keep_plan(ordinal, plan.into_prepared());
            }
            r
        })
    }
}

/// Runs `f` on the caller's tensors `[Q, K, V, O]` (address, element
/// count) borrowed as buffers (`Q`, `K`, `V` as the inputs, `O` as the
/// output), ordered on the caller's stream ([`ordered`]), and gives them
/// back without freeing them, whatever `f` returns.
///
/// # Safety
/// As [`borrow_all`] for every tensor.
unsafe fn with_tensors(
    dev: &Device,
    caller: Option<&Stream>,
    parts: [(u64, usize); 4],
    f: impl FnOnce(&Inputs, &mut Buffer<u16>) -> ptxlab::Result<()>,
) -> ptxlab::Result<()> {
    // SAFETY: forwarded from this function's contract.
    let held = unsafe { borrow_all(dev, &parts)? };
    let [q, k, v, mut ob]: [Held; 4] = held.try_into().unwrap_or_else(|_| unreachable!());
    let inputs = ManuallyDrop::new(Inputs {
        q: ManuallyDrop::into_inner(q),
        k: ManuallyDrop::into_inner(k),
        v: ManuallyDrop::into_inner(v),
    });
    let r = ordered(dev, caller, || f(&inputs, &mut ob));
    let Inputs { q, k, v } = ManuallyDrop::into_inner(inputs);
    give_back([q, k, v].map(ManuallyDrop::new).into_iter().chain([ob]));
    r
}

/// Attention over a packed batch of variable-length sequences
/// (FlashAttention's `cu_seqlens`): `Q` and `O` as `(T_q, heads, D)`, `K`
/// and `V` as `(T_kv, kv_heads, D)` row-major 16-bit tensors at the given
/// device addresses; sequence `b` holds query tokens `cu_q[b]..cu_q[b+1]`
/// and key tokens `cu_k[b]..cu_k[b+1]` (`cu_k` defaults to `cu_q`), and
/// the causal mask and the `window` count within each sequence. Runs rung
/// 2's packed kernel; returns its name.
#[pyfunction]
#[pyo3(signature = (q, k, v, o, heads, kv_heads, d, cu_q, cu_k, causal, scale, window, precision, device_ordinal, stream))]
#[allow(clippy::too_many_arguments)]
fn attention_varlen(
    py: Python<'_>,
    q: u64,
    k: u64,
    v: u64,
    o: u64,
    heads: usize,
    kv_heads: usize,
    d: usize,
    cu_q: Vec<usize>,
    cu_k: Option<Vec<usize>>,
    causal: bool,
    scale: Option<f64>,
    window: Option<usize>,
    precision: &str,
    device_ordinal: usize,
    stream: Option<u64>,
) -> PyResult<String> {
    guarded(py, || {
        let prec = attn_precision(precision)?;
        let mut p =
            attn::Packed::new(heads, d, causal, scale, cu_q, cu_k)?.with_kv_heads(kv_heads)?;
        if let Some(w) = window {
            p = p.with_window(w)?;
        }
        let (ql, kl) = (p.q_len(), p.kv_len());
        let dev = device(Backend::Gpu, device_ordinal)?.expect("the gpu backend has a device");
        let caller = caller_stream(&dev, stream)?;
        let kept = take_plan(device_ordinal, prec, p.base(), Some(&p));
        let parts = [(q, ql), (k, kl), (v, kl), (o, ql)];
        // SAFETY: the Python layer passes the addresses of contiguous
        // tensors of this device whose element counts it checked against
        // the offsets' last entries (these lengths), alive for the call;
        // `run_plan` orders the call on their stream. (A kept plan holds
        // this batch's offsets on the device.)
        unsafe {
            run_plan(&dev, caller.as_ref(), device_ordinal, parts, kept, || {
                Prepared::packed(&dev, prec, p)
            })?
        };
        Ok(format!("{} (packed)", attn::Rung::Fa2.name()))
    })
}

/// The fastest rung of this device that takes `shape`.
fn choose_rung(dev: &Device, shape: &Shape) -> ptxlab::Result<attn::Rung> {
    let order: &[attn::Rung] = if hopper(dev) {
        &[
            attn::Rung::WsSkip,
            attn::Rung::Ws,
            attn::Rung::Fa2,
            attn::Rung::Split,
        ]
    } else {
        &[attn::Rung::Fa2, attn::Rung::Split]
    };
    match order.iter().find(|r| r.refuses(shape).is_none()) {
        Some(&rung) => Ok(rung),
        None => {
            let why = attn::Rung::Split.refuses(shape).unwrap_or_default();
            Err(Error::input("attention", why))
        }
    }
}

/// The attention plans this thread keeps for device `device_ordinal`:
/// `(kept, hits, misses, device_bytes)`, the calls that found their plan
/// kept and those that made one counted since the thread's first call;
/// `clear=True` drops the kept plans first (their scratch is freed in the
/// order of the device's stream).
#[pyfunction]
#[pyo3(signature = (device_ordinal, clear=false))]
fn attention_plan_cache(device_ordinal: usize, clear: bool) -> (usize, u64, u64, usize) {
    with_kept(device_ordinal, |k| {
        if clear {
            k.plans.clear();
        }
        let bytes = k.plans.iter().map(Prepared::device_bytes).sum();
        (k.plans.len(), k.hits, k.misses, bytes)
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
    m.add_function(wrap_pyfunction!(attention_varlen, m)?)?;
    m.add_function(wrap_pyfunction!(matmul, m)?)?;
    m.add_function(wrap_pyfunction!(attention_plan_cache, m)?)?;
    Ok(())
}
