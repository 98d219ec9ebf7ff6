//! The cluster model on small kernels run with `launch_cluster`: DSMEM
//! stores, loads and atomic adds between the blocks of a cluster, the
//! split cluster barrier, and each misuse reported (not hung, not
//! silently accepted).

use crate::cluster;
use crate::mem::DeviceSliceMut;
use crate::shared::dynamic_shared;
use crate::sim::{LaunchSpec, Schedule, SimError, SimOptions, launch_cluster};
use crate::thread::{Dim3, block_idx_x, sync_threads, thread_idx_x};
use std::string::ToString;
use std::vec::Vec;

fn run(
    grid: u32,
    cluster: u32,
    threads: u32,
    schedule: Schedule,
    f: impl Fn() + Sync,
) -> Result<(), SimError> {
    let spec = LaunchSpec {
        kernel: "cluster_test",
        grid: Dim3::x(grid),
        block: Dim3::x(threads),
        shared_bytes: 256,
    };
    let o = SimOptions {
        race_check: true,
        schedule,
    };
    launch_cluster(&spec, Dim3::x(cluster), &o, f)
}

fn expect_err(r: Result<(), SimError>, want: &str) -> std::string::String {
    let line = r.expect_err("the launch should fail").to_string();
    assert!(line.contains(want), "expected `{want}` in: {line}");
    assert!(!line.contains('\n'), "a report is one line: {line}");
    line
}

/// Each block writes its rank into slot `rank` of every peer, then, after
/// a split barrier, checks what its peers wrote into its own memory, and
/// adds 1 to block 0's counter; block 0 stores the count.
#[test]
fn peers_store_load_and_add_in_each_others_shared_memory() {
    for schedule in [Schedule::InOrder, Schedule::Random { seed: 3 }] {
        let mut out = std::vec![0u32; 8];
        let ptr = out.as_mut_ptr() as usize;
        let r = run(8, 4, 64, schedule, || {
            let slots = dynamic_shared::<u32>(0, 8);
            let counter = dynamic_shared::<u32>(32, 1);
            let me = cluster::block_rank();
            let n = cluster::num_blocks();
            assert_eq!((n, cluster::dims()), (4, Dim3::new(4, 1, 1)));
            assert_eq!(cluster::block_index(), Dim3::new(block_idx_x() % 4, 0, 0));
            let t = thread_idx_x();
            if t == 0 {
                counter.set(0, 0);
            }
            cluster::sync();
            if t < n {
                slots.in_block(t).set(me as usize, me * 10 + 1);
            }
            if t == 0 {
                counter.in_block(0).atomic_add(0, 1);
            }
            cluster::arrive();
            // Work between the halves touches nothing shared.
            let _ = t * 2;
            cluster::wait();
            if t < n {
                assert_eq!(slots.get(t as usize), t * 10 + 1);
            }
            if me == 0 && t == 0 {
                // SAFETY: `out` outlives the launch; one thread per cluster
                // writes its own element.
                let mut o = unsafe { DeviceSliceMut::from_raw_parts(ptr as *mut u32, 8) };
                o[(block_idx_x() / 4) as usize] = counter.get(0);
            }
            cluster::sync();
        });
        r.unwrap();
        assert_eq!(&out[..2], &[4, 4]);
    }
}

#[test]
fn a_peer_read_after_only_a_block_barrier_is_a_race() {
    let line = expect_err(
        run(2, 2, 32, Schedule::InOrder, || {
            let s = dynamic_shared::<f32>(0, 32);
            let t = thread_idx_x() as usize;
            if cluster::block_rank() == 1 {
                s.set(t, 1.0);
            }
            sync_threads();
            if cluster::block_rank() == 0 {
                let _ = s.in_block(1).get(t);
            }
            cluster::sync();
        }),
        "data race on distributed shared memory",
    );
    assert!(line.contains("block (1, 0, 0)'s shared memory"), "{line}");
}

#[test]
fn a_wait_without_an_arrive_and_a_double_arrive_are_reported() {
    expect_err(
        run(2, 2, 32, Schedule::InOrder, cluster::wait),
        "without having arrived",
    );
    expect_err(
        run(2, 2, 32, Schedule::InOrder, || {
            cluster::arrive();
            cluster::arrive();
        }),
        "a second time without waiting",
    );
}

#[test]
fn a_thread_that_never_arrives_is_a_deadlock_not_a_hang() {
    expect_err(
        run(2, 2, 32, Schedule::InOrder, || {
            if cluster::block_rank() == 1 && thread_idx_x() == 0 {
                // Waits at a block barrier its block's other threads,
                // blocked at the cluster barrier, never reach.
                sync_threads();
            } else {
                cluster::sync();
            }
        }),
        "never arrives",
    );
}

#[test]
fn a_rank_outside_the_cluster_and_without_clusters() {
    expect_err(
        run(4, 2, 32, Schedule::InOrder, || {
            let _ = dynamic_shared::<u32>(0, 4).in_block(2);
        }),
        "block rank outside the cluster",
    );
    // A launch without clusters is a grid of 1x1x1 clusters: the cluster
    // barrier is the block's.
    let hits: Vec<u32> = std::vec![0; 3];
    let p = hits.as_ptr() as usize;
    run(3, 1, 64, Schedule::InOrder, || {
        assert_eq!((cluster::num_blocks(), cluster::block_rank()), (1, 0));
        let s = dynamic_shared::<u32>(0, 1);
        if thread_idx_x() == 0 {
            s.in_block(0).set(0, 7);
        }
        cluster::sync();
        assert_eq!(s.get(0), 7);
        cluster::sync();
        if thread_idx_x() == 0 {
            // SAFETY: `hits` outlives the launch; one thread per block
            // writes its own element.
            let mut o = unsafe { DeviceSliceMut::from_raw_parts(p as *mut u32, 3) };
            o[block_idx_x() as usize] = 1;
        }
    })
    .unwrap();
    assert_eq!(hits, [1, 1, 1]);
}
