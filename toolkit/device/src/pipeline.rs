//! The multi-stage `cp.async` pipeline of a tiled kernel, written once.
//!
//! A kernel that walks a long dimension tile by tile (the `k` loop of a
//! GEMM) spends most of its time waiting for global memory unless the next
//! tiles are already on their way while the current one is used. With
//! `cp.async` (sm_80+) the copies run in the background, and the kernel
//! keeps `STAGES` buffers of shared memory, a *ring*: while tile `t` is
//! read from stage `t % STAGES`, tiles `t + 1 .. t + STAGES - 1` are in
//! flight into the other stages.
//!
//! # The ring, step by step
//! 1. **Prologue.** Start the copies of tiles `0 .. STAGES - 1` into stages
//!    `0 .. STAGES - 1`, closing one commit group per tile
//!    ([`commit_async_copies`]). A tile past the end gets an empty group, so
//!    that every thread always has the same number of groups in flight.
//! 2. **Wait.** Before tile `t` is read: `cp.async.wait_group STAGES - 2`
//!    ([`wait_async_copies`]). `STAGES - 1 + t` groups have been committed,
//!    so at most `STAGES - 2` pending means groups `0 ..= t` have landed:
//!    this thread's copies of tile `t` are in shared memory.
//! 3. **Barrier.** [`sync_threads`]: every thread's copies of tile `t` have
//!    landed, and every thread is done reading tile `t - 1`, whose stage
//!    the next copies overwrite.
//! 4. **Refill.** Start tile `t + STAGES - 1` into the stage tile `t - 1`
//!    used (`(t + STAGES - 1) % STAGES`) and commit its group (empty past
//!    the end).
//! 5. **Compute** on stage `t % STAGES`, then advance to `t + 1`.
//!
//! In a kernel:
//!
//! ```ignore
//! let pipe = CpAsyncPipeline::<4>::new(k.div_ceil(BK));
//! pipe.prologue(issue);                        // step 1
//! let mut tile = 0;
//! while tile < pipe.tiles() {
//!     let stage = pipe.next_tile(tile, issue); // steps 2 to 4
//!     /* step 5: compute on `stage` */
//!     tile += 1;
//! }
//! ```
//!
//! The loop and the computation stay in the kernel, so they compile as if
//! written out. A kernel that places the wait elsewhere (before the last
//! step of the previous tile, to load the next tile's first fragments
//! early) uses the steps one by one: [`CpAsyncPipeline::wait_oldest`] and
//! [`CpAsyncPipeline::refill`].
//!
//! Every method is `#[inline(always)]`, with the stage count a
//! compile-time constant (`wait_group` takes an immediate). Under the
//! simulator each wait, barrier and commit reports the kernel line that
//! called the pipeline.
//!
//! The loader closure `issue(stage, tile)` starts the copies of one tile
//! into one stage (each thread its share: [`SharedSlice::copy_async`], or
//! plain stores for a tile whose rows are not 16-byte aligned, which the
//! same wait and barrier order). It is `Fn + Copy` (a closure that
//! captures views and indices, or references to them): each step calls it
//! directly, as the hand-written loop does, so it inlines like one. The
//! computation is not a closure: a large closure body called from a
//! generic loop is not always inlined by LLVM for nvptx, and its
//! accumulators then live in local memory instead of registers.
//!
//! [`SharedSlice::copy_async`]: crate::SharedSlice::copy_async

use crate::shared::{commit_async_copies, wait_async_copies};
use crate::thread::sync_threads;

/// A `cp.async` ring of `STAGES` shared-memory stages (2 to 8) over
/// `tiles` tiles: see the [module documentation](self).
#[derive(Clone, Copy, Debug)]
pub struct CpAsyncPipeline<const STAGES: usize> {
    tiles: usize,
}

impl<const STAGES: usize> CpAsyncPipeline<STAGES> {
    /// A ring over `tiles` tiles (tile `t` lives in stage `t % STAGES`).
    #[inline(always)]
    pub const fn new(tiles: usize) -> Self {
        const {
            assert!(
                STAGES >= 2 && STAGES <= 8,
                "a cp.async ring has 2 to 8 stages"
            )
        };
        Self { tiles }
    }

    /// The number of tiles.
    #[inline(always)]
    pub const fn tiles(&self) -> usize {
        self.tiles
    }

    /// Step 1: starts tiles `0 .. STAGES - 1` into stages `0 .. STAGES - 1`
    /// (`issue(stage, tile)`), one commit group per tile, empty past the
    /// last tile.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn prologue(&self, issue: impl Fn(usize, usize) + Copy) {
        for s in 0..STAGES - 1 {
            if s < self.tiles {
                issue(s, s);
            }
            commit_async_copies();
        }
    }

    /// Steps 2 and 3: waits until this thread's oldest tile in flight has
    /// landed (`cp.async.wait_group STAGES - 2`), then a block barrier, after
    /// which every thread's copies of that tile are visible and the stage
    /// read before it is free.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn wait_oldest(&self) {
        match STAGES {
            2 => wait_async_copies::<0>(),
            3 => wait_async_copies::<1>(),
            4 => wait_async_copies::<2>(),
            5 => wait_async_copies::<3>(),
            6 => wait_async_copies::<4>(),
            7 => wait_async_copies::<5>(),
            _ => wait_async_copies::<6>(),
        }
        sync_threads();
    }

    /// Step 4, while tile `tile` is the one being read: starts tile
    /// `tile + STAGES - 1` into `stage` (`issue(stage, tile + STAGES - 1)`,
    /// skipped past the last tile) and commits its group.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn refill(&self, tile: usize, stage: usize, issue: impl Fn(usize, usize) + Copy) {
        let next = tile + STAGES - 1;
        if next < self.tiles {
            issue(stage, next);
        }
        commit_async_copies();
    }

    /// Steps 2 to 4 for tile `tile`: the wait, the barrier and the refill
    /// of the stage tile `tile - 1` used; returns the stage that holds tile
    /// `tile` (`tile % STAGES`), for step 5.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub fn next_tile(&self, tile: usize, issue: impl Fn(usize, usize) + Copy) -> usize {
        self.wait_oldest();
        let next = tile + STAGES - 1;
        self.refill(tile, next % STAGES, issue);
        tile % STAGES
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::CpAsyncPipeline;
    use crate::mem::{DeviceSlice, DeviceSliceMut, F32x4};
    use crate::shared::dynamic_shared;
    use crate::sim::{LaunchSpec, Schedule, SimOptions, launch_with};
    use crate::thread::{Dim3, thread_idx_x};
    use std::vec::Vec;

    /// Threads of the test block; a tile is one float4 per thread.
    const THREADS: usize = 32;

    /// Each thread sums, over every tile, the float4 that its neighbour
    /// (`t + 1`) copied: a read of another thread's copy, which is right
    /// only after the wait and the barrier (the simulator reports a read of
    /// a copy in flight, and a random schedule lands copies late).
    fn sums<const S: usize>(x: &[F32x4], tiles: usize, schedule: Schedule) -> Vec<f32> {
        let mut out = std::vec![0.0f32; THREADS];
        let spec = LaunchSpec {
            kernel: "cp_async_pipeline_test",
            grid: Dim3::x(1),
            block: Dim3::x(THREADS as u32),
            shared_bytes: S * THREADS * 16,
        };
        let o = SimOptions {
            race_check: true,
            schedule,
        };
        // SAFETY: both vectors outlive the launch; the kernel only reads
        // `x` and each thread writes its own element of `out`.
        let (src, dst) = unsafe {
            (
                DeviceSlice::from_raw_parts(x.as_ptr(), x.len()),
                DeviceSliceMut::from_raw_parts(out.as_mut_ptr(), out.len()),
            )
        };
        launch_with(&spec, &o, || {
            let sm = dynamic_shared::<F32x4>(0, S * THREADS);
            let t = thread_idx_x() as usize;
            let mut acc = 0.0f32;
            // SAFETY: element `stage * THREADS + t < S * THREADS` of the
            // ring, and group `tile * THREADS + t` of `x` (16-byte `F32x4`s,
            // `tile < tiles`); it is read only after the pipeline's wait and
            // barrier.
            let issue = |stage: usize, tile: usize| unsafe {
                sm.copy_async(stage * THREADS + t, src, tile * THREADS + t, true)
            };
            let pipe = CpAsyncPipeline::<S>::new(tiles);
            pipe.prologue(issue);
            for tile in 0..pipe.tiles() {
                let stage = pipe.next_tile(tile, issue);
                let v = sm.get(stage * THREADS + (t + 1) % THREADS);
                acc += v.0[0] + v.0[1] + v.0[2] + v.0[3];
            }
            dst.set(t, acc);
        })
        .unwrap();
        out
    }

    #[test]
    fn the_ring_delivers_every_tile_in_order_and_under_random_schedules() {
        for tiles in [1usize, 2, 5, 9] {
            let x: Vec<F32x4> = (0..tiles * THREADS)
                .map(|i| F32x4(core::array::from_fn(|e| ((4 * i + e) % 97) as f32)))
                .collect();
            let want: Vec<f32> = (0..THREADS)
                .map(|t| {
                    let u = (t + 1) % THREADS;
                    (0..tiles)
                        .map(|k| x[k * THREADS + u].0.iter().sum::<f32>())
                        .sum()
                })
                .collect();
            assert_eq!(sums::<2>(&x, tiles, Schedule::InOrder), want);
            assert_eq!(sums::<3>(&x, tiles, Schedule::InOrder), want);
            assert_eq!(sums::<4>(&x, tiles, Schedule::InOrder), want);
            for seed in 0..4 {
                let r = Schedule::Random { seed };
                assert_eq!(sums::<3>(&x, tiles, r), want, "seed {seed}");
                assert_eq!(sums::<4>(&x, tiles, r), want, "seed {seed}");
            }
        }
    }
}
