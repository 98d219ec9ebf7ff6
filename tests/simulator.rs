//! The CPU simulator's semantics, each shown by a small kernel with a
//! hand-computed expectation: barriers, shared memory, shuffles and votes on
//! full and partial warps, atomics across blocks, and the errors it reports
//! instead of hanging or corrupting (out of bounds, divergent barriers,
//! deadlocks), and the race detector (shared memory within a barrier
//! interval, ordered by warp collectives; global memory across blocks).

use ptxlab::runtime::{Device, LaunchConfig, SimOptions, launch};
use ptxlab_device::prelude::*;
use ptxlab_device::sim::Fault;

/// The error text of a launch that must fail: `launch!` on the project's
/// kernels with `cfg`, then the kernel call.
macro_rules! launch_err {
    ($dev:expr, $cfg:expr, $($call:tt)+) => {
        launch!($dev, &ptxlab::modules::KERNELS, $cfg, $($call)+)
            .unwrap_err()
            .to_string()
    };
}

/// Each thread writes its slot, waits at the barrier, then reads its right
/// neighbour's slot: right only if the barrier really orders the block.
#[kernel]
pub fn t_shared_neighbour(out: DeviceSliceMut<u32>) {
    let n = thread::block_dim_x() as usize;
    let t = thread::thread_idx_x() as usize;
    let s = shared::dynamic_shared::<u32>(0, n);
    s.set(t, (t * 2 + 1) as u32);
    sync_threads();
    out.set(
        thread::index_1d(),
        s.get((t + 1) % n) + thread::block_idx_x() * 1000,
    );
}

#[test]
fn shared_memory_after_barrier_sees_neighbours() {
    let dev = Device::sim();
    let (blocks, threads) = (3u32, 100u32);
    let mut out = dev
        .alloc_filled((blocks * threads) as usize, u32::MAX)
        .unwrap();
    let cfg = LaunchConfig::for_threads((blocks * threads) as usize, threads)
        .unwrap()
        .with_shared(4 * threads as usize);
    launch!(
        &dev,
        &ptxlab::modules::KERNELS,
        cfg,
        t_shared_neighbour(&mut out)
    )
    .unwrap();
    let got = dev.download(&out).unwrap();
    for b in 0..blocks as usize {
        for t in 0..threads as usize {
            let want = (((t + 1) % threads as usize) * 2 + 1) as u32 + b as u32 * 1000;
            assert_eq!(got[b * threads as usize + t], want, "block {b} thread {t}");
        }
    }
}

/// Records, per thread, the results of every shuffle flavour and vote.
#[kernel]
pub fn t_warp_ops(out: DeviceSliceMut<u32>) {
    let lane = warp::lane_id();
    let v = lane * 10 + 1;
    let i = thread::index_1d() * 8;
    out.set(i, warp::shfl_down(FULL_MASK, v, 3));
    out.set(i + 1, warp::shfl_up(FULL_MASK, v, 2));
    out.set(i + 2, warp::shfl_xor(FULL_MASK, v, 5));
    out.set(i + 3, warp::shfl_idx(FULL_MASK, v, 7));
    out.set(i + 4, warp::ballot(FULL_MASK, lane.is_multiple_of(3)));
    out.set(i + 5, warp::all(FULL_MASK, lane < 40) as u32);
    out.set(i + 6, warp::any(FULL_MASK, lane == 5) as u32);
    out.set(i + 7, warp::reduce_sum(lane));
}

fn run_warp_ops(threads: u32) -> Vec<u32> {
    let dev = Device::sim();
    let mut out = dev.alloc_filled(threads as usize * 8, u32::MAX).unwrap();
    let cfg = LaunchConfig::for_threads(threads as usize, threads).unwrap();
    launch!(&dev, &ptxlab::modules::KERNELS, cfg, t_warp_ops(&mut out)).unwrap();
    dev.download(&out).unwrap()
}

/// Checks the first seven results of `t_warp_ops` (`r`, one thread's
/// record) for `lane` of a warp whose lanes `0..width` exist: a shuffle from
/// a lane that does not exist returns the reader's own value, and the votes
/// count existing lanes only.
fn check_shuffles_and_votes(r: &[u32], lane: u32, width: u32) {
    let v = |l: u32| l * 10 + 1;
    let from = |src: u32| if src < width { v(src) } else { v(lane) };
    let ballot: u32 = (0..width)
        .filter(|l| l % 3 == 0)
        .fold(0, |m, l| m | (1 << l));
    assert_eq!(r[0], from(lane + 3), "shfl_down lane {lane}");
    assert_eq!(
        r[1],
        if lane >= 2 { v(lane - 2) } else { v(lane) },
        "shfl_up lane {lane}"
    );
    assert_eq!(r[2], from(lane ^ 5), "shfl_xor lane {lane}");
    assert_eq!(r[3], v(7), "shfl_idx lane {lane}");
    assert_eq!(r[4], ballot, "ballot lane {lane}: lanes 0, 3, 6, ...");
    assert_eq!(r[5], 1, "all lane {lane}");
    assert_eq!(r[6], 1, "any lane {lane}");
}

#[test]
fn shuffles_and_votes_on_a_full_warp() {
    let got = run_warp_ops(64);
    for t in 0..64usize {
        let lane = (t % 32) as u32;
        let r = &got[t * 8..t * 8 + 8];
        check_shuffles_and_votes(r, lane, 32);
        assert_eq!(r[7], (0..32).sum::<u32>(), "reduce_sum lane {lane}");
    }
}

#[test]
fn shuffles_and_votes_on_a_partial_warp() {
    // 40 threads: warp 1 has lanes 0..8 only. Lanes that do not exist do not
    // take part: a shuffle from one returns the reader's own value, and votes
    // count only existing lanes (the ballot: lanes 0, 3 and 6).
    let got = run_warp_ops(40);
    for t in 32..40usize {
        check_shuffles_and_votes(&got[t * 8..t * 8 + 8], (t - 32) as u32, 8);
    }
}

/// Lanes 0..16 shuffle among themselves with mask 0xffff; lanes 16..32 do not
/// call the shuffle at all.
#[kernel]
pub fn t_half_mask(out: DeviceSliceMut<u32>) {
    let lane = warp::lane_id();
    if lane < 16 {
        out.set(lane as usize, warp::shfl_down(0xffff, lane + 100, 1));
    } else {
        out.set(lane as usize, 7);
    }
}

#[test]
fn lanes_outside_the_mask_do_not_take_part() {
    let dev = Device::sim();
    let mut out = dev.alloc_filled(32, u32::MAX).unwrap();
    launch!(
        &dev,
        &ptxlab::modules::KERNELS,
        LaunchConfig::for_threads(32, 32).unwrap(),
        t_half_mask(&mut out)
    )
    .unwrap();
    let got = dev.download(&out).unwrap();
    for lane in 0..15u32 {
        assert_eq!(got[lane as usize], lane + 101);
    }
    assert_eq!(
        got[15], 115,
        "lane 16 is outside the mask: lane 15 keeps its own value"
    );
    assert!(got[16..].iter().all(|&v| v == 7));
}

/// One global atomic increment per thread, plus a shared-memory counter per
/// block folded in with one atomic per block.
#[kernel]
pub fn t_atomics(counter: DeviceSliceMut<u32>, fsum: DeviceSliceMut<f64>) {
    counter.atomic_add(0, 1);
    let s = shared::dynamic_shared::<u32>(0, 1);
    if thread::thread_idx_x() == 0 {
        s.set(0, 0);
    }
    sync_threads();
    s.atomic_add(0, 2);
    sync_threads();
    if thread::thread_idx_x() == 0 {
        counter.atomic_add(1, s.get(0));
    }
    fsum.atomic_add(0, 0.5);
}

#[test]
fn atomic_counter_over_many_blocks_is_exact() {
    let dev = Device::sim();
    let mut c = dev.upload(&[0u32, 0]).unwrap();
    let mut f = dev.upload(&[0.0f64]).unwrap();
    let (blocks, threads) = (37usize, 96u32);
    let cfg = LaunchConfig::for_threads(blocks * threads as usize, threads)
        .unwrap()
        .with_shared(16);
    launch!(
        &dev,
        &ptxlab::modules::KERNELS,
        cfg,
        t_atomics(&mut c, &mut f)
    )
    .unwrap();
    let n = (blocks * threads as usize) as u32;
    assert_eq!(dev.download(&c).unwrap(), vec![n, 2 * n]);
    assert_eq!(dev.download(&f).unwrap(), vec![0.5 * n as f64]);
}

/// Reads one element past the end in the last thread.
#[kernel]
pub fn t_out_of_bounds(a: DeviceSlice<f32>, out: DeviceSliceMut<f32>) {
    let i = thread::index_1d();
    if i < out.len() {
        out.set(i, a.get(i + 1));
    }
}

#[test]
fn out_of_bounds_read_names_kernel_block_thread_and_index() {
    let dev = Device::sim();
    let a = dev.upload(&vec![1.0f32; 100]).unwrap();
    let mut out = dev.alloc_filled(100, f32::NAN).unwrap();
    let cfg = LaunchConfig::for_threads(100, 64).unwrap();
    let e = launch_err!(&dev, cfg, t_out_of_bounds(&a, &mut out));
    assert!(e.contains("kernel `t_out_of_bounds`"), "{e}");
    assert!(
        e.contains("block (1, 0, 0)") && e.contains("thread (35, 0, 0)"),
        "{e}"
    );
    assert!(e.contains("index 100, length 100"), "{e}");
    assert!(e.contains("device buffer (read)"), "{e}");
    assert!(
        e.contains("tests/simulator.rs"),
        "the message points at the kernel source: {e}"
    );
}

/// Writes one slot past its shared-memory view.
#[kernel]
pub fn t_shared_oob(out: DeviceSliceMut<u32>) {
    let s = shared::dynamic_shared::<u32>(0, 32);
    let t = thread::thread_idx_x() as usize;
    s.set(t, 1);
    out.set(t, 0);
}

#[test]
fn out_of_bounds_shared_write_is_reported() {
    let dev = Device::sim();
    let mut out = dev.alloc_filled(40, 0u32).unwrap();
    let cfg = LaunchConfig::for_threads(40, 40)
        .unwrap()
        .with_shared(40 * 4);
    let e = launch!(&dev, &ptxlab::modules::KERNELS, cfg, t_shared_oob(&mut out)).unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, ptxlab::runtime::Error::Sim(ref s) if matches!(s.fault, Fault::OutOfBounds { space: "shared memory", len: 32, .. })),
        "{text}"
    );
    assert!(
        text.contains("shared memory")
            && text.contains("length 32")
            && text.contains("t_shared_oob"),
        "{text}"
    );
}

#[test]
fn shared_view_larger_than_the_launch_is_reported() {
    let dev = Device::sim();
    let mut out = dev.alloc_filled(40, 0u32).unwrap();
    let cfg = LaunchConfig::for_threads(40, 40).unwrap().with_shared(64);
    let e = launch_err!(&dev, cfg, t_shared_oob(&mut out));
    assert!(
        e.contains("needs 128 bytes but the launch provides 64"),
        "{e}"
    );
}

/// Only half the block reaches the barrier.
#[kernel]
pub fn t_divergent(out: DeviceSliceMut<u32>) {
    let t = thread::thread_idx_x();
    if t < 16 {
        sync_threads();
    }
    out.set(t as usize, t);
}

#[test]
fn divergent_barrier_is_an_error_not_a_hang() {
    let dev = Device::sim();
    let mut out = dev.alloc_filled(64, 0u32).unwrap();
    let cfg = LaunchConfig::for_threads(64, 64).unwrap();
    let e = launch_err!(&dev, cfg, t_divergent(&mut out));
    assert!(e.contains("divergent barrier"), "{e}");
    assert!(e.contains("16 of 64 threads"), "{e}");
}

/// Two halves of the block wait at two different barriers.
#[kernel]
pub fn t_two_barriers(out: DeviceSliceMut<u32>) {
    let t = thread::thread_idx_x();
    // Identical blocks on purpose: two call sites of the barrier.
    #[allow(clippy::if_same_then_else)]
    if t.is_multiple_of(2) {
        sync_threads();
    } else {
        sync_threads();
    }
    out.set(t as usize, t);
}

#[test]
fn barriers_at_different_call_sites_are_divergent() {
    let dev = Device::sim();
    let mut out = dev.alloc_filled(32, 0u32).unwrap();
    let cfg = LaunchConfig::for_threads(32, 32).unwrap();
    let e = launch_err!(&dev, cfg, t_two_barriers(&mut out));
    assert!(
        e.contains("divergent barrier") && e.contains("every thread must reach the same barrier"),
        "{e}"
    );
}

#[test]
fn invalid_launch_shapes_are_rejected_with_the_limit() {
    let dev = Device::sim();
    let mut out = dev.alloc_filled(4096, 0u32).unwrap();
    let mut cfg = LaunchConfig::for_threads(4096, 1024).unwrap();
    cfg.block.x = 2048;
    let e = launch_err!(&dev, cfg, t_divergent(&mut out));
    assert!(
        e.contains("2048 threads") && e.contains("at most 1024"),
        "{e}"
    );
    let cfg = LaunchConfig::for_threads(64, 64)
        .unwrap()
        .with_shared(1 << 20);
    let e = launch_err!(&dev, cfg, t_divergent(&mut out));
    assert!(
        e.contains("1048576 bytes") && e.contains("at most 232448"),
        "{e}"
    );
}

#[test]
fn a_panicking_kernel_is_reported_with_its_message() {
    #[kernel]
    pub fn t_panics(out: DeviceSliceMut<u32>) {
        if thread::thread_idx_x() == 3 {
            panic!("boom in thread 3");
        }
        out.set(0, 1);
    }
    let dev = Device::sim();
    let mut out = dev.alloc_filled(1, 0u32).unwrap();
    let cfg = LaunchConfig::for_threads(8, 8).unwrap();
    let e = launch_err!(&dev, cfg, t_panics(&mut out));
    assert!(
        e.contains("boom in thread 3") && e.contains("thread (3, 0, 0)"),
        "{e}"
    );
}

/// The planted shared-memory race (a tile reversal without its barrier) is
/// reported with both threads and both source lines: a thread reads the slot
/// of a thread that writes it later (on the simulator, thread 31 reads slot
/// 32 before thread 32, in another warp, writes it).
#[test]
fn a_missing_barrier_is_reported_as_a_shared_memory_race() {
    let e = match ptxlab::workloads::demo::planted_race(&Device::sim(), 100, 64) {
        Err(ptxlab::Error::Runtime(ptxlab::runtime::Error::Sim(e))) => e,
        other => panic!("expected a race, got {other:?}"),
    };
    let Fault::Race(r) = &e.fault else {
        panic!("not a race: {e}")
    };
    assert_eq!(r.space, "shared memory", "{e}");
    assert_eq!(r.first.block, r.second.block, "{e}");
    assert_ne!(r.first.thread, r.second.thread, "{e}");
    assert!(r.first.write != r.second.write, "a read and a write: {e}");
    for a in [&r.first, &r.second] {
        assert!(a.location.starts_with("lab/demo/kernels.rs:"), "{e}");
    }
    assert_ne!(r.first.location, r.second.location, "{e}");
    assert!(
        r.interval.contains("before its first barrier"),
        "the interval is named: {e}"
    );
    let text = e.to_string();
    println!("{text}");
    assert!(
        text.contains("demo_race_missing_sync") && text.contains("data race on shared memory"),
        "{text}"
    );
    // Without the detector the same launch runs, and thread 0 read the
    // poisoned slot (NaN) before thread 63 wrote it.
    let quiet = Device::sim_with(SimOptions {
        race_check: false,
        ..SimOptions::default()
    });
    let got = ptxlab::workloads::demo::planted_race(&quiet, 100, 64).unwrap();
    assert!(got[0].is_nan(), "{}", got[0]);
}

/// Lane `l` writes `s[l]`, then reads `s[l ^ 1]`, written by its neighbour
/// lane. With `order` a shuffle of the whole warp between the write and
/// the read orders them (no race); without it, it is a race. Warp 1 does
/// the same on its own slots.
#[kernel]
pub fn t_warp_ordered(out: DeviceSliceMut<u32>, order: u32) {
    let t = thread::thread_idx_x() as usize;
    let s = shared::dynamic_shared::<u32>(0, thread::block_dim_x() as usize);
    s.set(t, t as u32 + 1);
    if order != 0 {
        let _ = warp::shfl_xor(FULL_MASK, 0u32, 1);
    }
    out.set(t, s.get(t ^ 1));
}

#[test]
fn a_warp_collective_orders_the_lanes_of_a_warp() {
    let dev = Device::sim();
    let mut out = dev.alloc_filled(64, u32::MAX).unwrap();
    let cfg = LaunchConfig::for_threads(64, 64).unwrap().with_shared(256);
    let e = launch_err!(&dev, cfg, t_warp_ordered(&mut out, 0));
    assert!(
        e.contains("data race on shared memory word 1 (byte offset 4)")
            && e.contains("read by thread (0, 0, 0)")
            && e.contains("written by thread (1, 0, 0)"),
        "{e}"
    );
    launch!(
        &dev,
        &ptxlab::modules::KERNELS,
        cfg,
        t_warp_ordered(&mut out, 1)
    )
    .unwrap();
    let got = dev.download(&out).unwrap();
    for (t, g) in got.iter().enumerate() {
        assert_eq!(*g, (t ^ 1) as u32 + 1, "thread {t}");
    }
}

/// Block `b` writes `out[b]`, and reads `out[b + 1]`, which block `b + 1`
/// writes: a race between blocks. `x` is only read, by every block: no race.
#[kernel]
pub fn t_neighbour_block(x: DeviceSlice<u32>, out: DeviceSliceMut<u32>) {
    let b = thread::block_idx_x() as usize;
    if thread::thread_idx_x() == 0 {
        out.set(b, x.get(0) + b as u32);
        if b + 1 < out.len() {
            let _ = out.get(b + 1);
        }
    }
}

#[test]
fn blocks_touching_the_same_global_word_race_and_readers_do_not() {
    let dev = Device::sim();
    let x = dev.upload(&[7u32]).unwrap();
    let mut out = dev.alloc_filled(5, 0u32).unwrap();
    let cfg = LaunchConfig::for_threads(5 * 32, 32).unwrap();
    let e = launch!(
        &dev,
        &ptxlab::modules::KERNELS,
        cfg,
        t_neighbour_block(&x, &mut out)
    )
    .unwrap_err();
    let ptxlab::runtime::Error::Sim(e) = e else {
        panic!("{e}")
    };
    let Fault::Race(r) = &e.fault else {
        panic!("not a race: {e}")
    };
    assert_eq!(r.space, "global memory");
    assert_eq!(
        r.first.block.x.abs_diff(r.second.block.x),
        1,
        "two neighbouring blocks: {e}"
    );
    assert!(r.first.location.contains("tests/simulator.rs"), "{e}");
    // A launch whose blocks only share inputs runs; with the detector off,
    // the racy one runs too.
    let opts = SimOptions {
        race_check: false,
        ..SimOptions::default()
    };
    launch!(
        &Device::sim_with(opts),
        &ptxlab::modules::KERNELS,
        cfg,
        t_neighbour_block(&x, &mut out)
    )
    .unwrap();
    assert_eq!(dev.download(&out).unwrap(), vec![7, 8, 9, 10, 11]);
}

/// Lanes 0..16 of the only warp call a shuffle that names all 32 lanes;
/// lanes 16..32 wait at a barrier instead: each half waits for the other.
#[kernel]
pub fn t_deadlock(out: DeviceSliceMut<u32>) {
    let t = thread::thread_idx_x();
    if t < 16 {
        out.set(t as usize, warp::shfl_idx(FULL_MASK, t, 0));
    } else {
        sync_threads();
    }
}

#[test]
fn threads_waiting_for_each_other_are_a_deadlock_not_a_hang() {
    let dev = Device::sim();
    let mut out = dev.alloc_filled(32, 0u32).unwrap();
    let cfg = LaunchConfig::for_threads(32, 32).unwrap();
    let e = launch_err!(&dev, cfg, t_deadlock(&mut out));
    assert!(
        e.contains("deadlock")
            && e.contains("16 of 32 threads wait at sync_threads")
            && e.contains("waits in a warp function"),
        "{e}"
    );
}

/// Thread 0 spins until the block's last thread sets a flag (through raw
/// atomics, as an `mbarrier` does), calling `yield_point` in every turn.
#[kernel]
pub fn t_spin_wait(flag: DeviceSliceMut<u32>, out: DeviceSliceMut<u32>) {
    let t = thread::thread_idx_x();
    let last = thread::block_dim_x() - 1;
    // SAFETY: `flag` has at least one element (the test allocates it).
    let f = unsafe { core::sync::atomic::AtomicU32::from_ptr(flag.as_mut_ptr()) };
    if t == 0 {
        let mut turns = 0u32;
        while f.load(core::sync::atomic::Ordering::Relaxed) == 0 {
            ptxlab_device::sim::yield_point();
            turns += 1;
        }
        out.set(0, turns);
    } else if t == last {
        f.store(1, core::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn yield_point_lets_the_other_threads_of_the_block_run() {
    let dev = Device::sim();
    let mut flag = dev.alloc_filled(1, 0u32).unwrap();
    let mut out = dev.alloc_filled(1, u32::MAX).unwrap();
    launch!(
        &dev,
        &ptxlab::modules::KERNELS,
        LaunchConfig::for_threads(100, 100).unwrap(),
        t_spin_wait(&mut flag, &mut out)
    )
    .unwrap();
    let turns = dev.download(&out).unwrap()[0];
    assert!((1..100).contains(&turns), "thread 0 waited {turns} turns");
}
