//! Small kernels that demonstrate (and let tests check) what the toolchain
//! does with launch bounds and register caps.
//!
//! `demo_regs` and `demo_regs_capped` share one body that keeps 48 floats
//! live, so it needs more than 32 registers. The capped kernel carries
//! `max_registers = 32`: the builder writes `.maxnreg 32`, and `ptxas` must
//! stay at or under 32 registers (spilling to local memory if it has to),
//! while the uncapped one uses more. The test suite checks both with `ptxas`.

use ptxlab_device::prelude::*;

/// Values each thread keeps live.
pub const DEMO_WIDTH: usize = 24;

#[inline(always)]
fn regs_body(x: DeviceSlice<f32>, out: DeviceSliceMut<f32>) {
    let i = thread::index_1d();
    if (i + 1) * DEMO_WIDTH > x.len() || i >= out.len() {
        return;
    }
    let mut v = [0.0f32; DEMO_WIDTH];
    let mut acc = [0.0f32; DEMO_WIDTH];
    let mut k = 0;
    while k < DEMO_WIDTH {
        v[k] = x.get(i * DEMO_WIDTH + k);
        acc[k] = v[k];
        k += 1;
    }
    let mut r = 1;
    while r < 8 {
        let mut k = 0;
        while k < DEMO_WIDTH {
            acc[k] = acc[k].mul_add(v[(k + r) % DEMO_WIDTH], v[(k * 7 + r) % DEMO_WIDTH]);
            k += 1;
        }
        r += 1;
    }
    let mut s = 0.0f32;
    let mut k = 0;
    while k < DEMO_WIDTH {
        s += acc[k] * v[(k + 3) % DEMO_WIDTH];
        k += 1;
    }
    out.set(i, s);
}

/// Register-hungry demo kernel, no cap: `ptxas` is free to use what it needs.
///
/// Thread `i` reads `x[24i..24i+24]`, runs 7 rounds of cross FMAs and writes `out[i]`.
#[kernel(launch_bounds(256))]
pub fn demo_regs(x: DeviceSlice<f32>, out: DeviceSliceMut<f32>) {
    regs_body(x, out);
}

/// The same body under `max_registers = 32` (`.maxnreg 32`).
#[kernel(launch_bounds(256), max_registers = 32)]
pub fn demo_regs_capped(x: DeviceSlice<f32>, out: DeviceSliceMut<f32>) {
    regs_body(x, out);
}

/// Fast-math demo: `out[i] = sin(x[i]) * cos(x[i])` through the SFU
/// (`sin.approx.f32`, `cos.approx.f32`). Checked in the PTX by the tests.
#[kernel(launch_bounds(256))]
pub fn demo_fast_sincos(x: DeviceSlice<f32>, out: DeviceSliceMut<f32>) {
    let i = thread::index_1d();
    if i < out.len() {
        let v = x.get(i);
        out.set(i, math::fast::sin(v) * math::fast::cos(v));
    }
}

/// A planted bug for the sanitizer check: the classic off-by-one guard
/// `i <= len` with an unchecked write, so exactly one thread (`i == len`)
/// writes one element past the end, whatever the block size. The simulator reports it; on the
/// GPU `compute-sanitizer --tool memcheck` must report it (proof that the
/// sanitizer run can fail). Never launched outside those two checks.
#[kernel(launch_bounds(256))]
pub fn demo_oob_write(out: DeviceSliceMut<f32>) {
    let i = thread::index_1d();
    if i <= out.len() {
        // SAFETY: deliberately violated (see above): `i` may equal `out.len()`.
        unsafe { out.set_unchecked(i, 1.0) };
    }
}

/// Dynamic shared memory of [`demo_race_missing_sync`]: one `f32` per thread.
pub const fn race_shared_bytes(block: u32) -> usize {
    shared::shared_bytes::<f32>(0, block as usize)
}

/// A planted bug for the race detector: each block reverses its tile of `x`
/// through shared memory, `out[b*B + t] = x[b*B + B-1-t]` (0 past the end),
/// but the `sync_threads` between the shared-memory writes and the reads is
/// missing. Thread `t` may read slot `B-1-t` before thread `B-1-t` has
/// written it: on a GPU the result depends on how the warps are scheduled.
/// The simulator's race detector reports the two threads and both lines
/// (the write and the read of the slot); on the GPU,
/// `compute-sanitizer --tool racecheck` reports the hazard. Never launched
/// outside those checks.
///
/// Thread mapping: one element per thread, 1D blocks of `B` threads;
/// shared memory: `B` floats ([`race_shared_bytes`]).
#[kernel(launch_bounds(256))]
pub fn demo_race_missing_sync(x: DeviceSlice<f32>, out: DeviceSliceMut<f32>) {
    let b = thread::block_dim_x() as usize;
    let t = thread::thread_idx_x() as usize;
    let base = thread::block_idx_x() as usize * b;
    let tile = shared::dynamic_shared::<f32>(0, b);
    let i = base + t;
    tile.set(t, if i < x.len() { x.get(i) } else { 0.0 });
    // The bug: a `sync_threads()` belongs here.
    if i < out.len() {
        out.set(i, tile.get(b - 1 - t));
    }
}
