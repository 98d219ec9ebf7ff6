//! The planted bugs of asynchronous pipelines (`kernels_gpu::pipeline_bugs`):
//! their launchers on odd shapes, CPU references in f64, and what becomes
//! of each run ([`Outcome`]): a simulator report, a wrong result, or a
//! right one. `ptxlab pipeline-bugs` runs them; `tests/async_sim.rs` checks
//! that the simulator catches every planted mistake and that the correct
//! pipelines run clean; the GPU table of `docs/results/` comes from the
//! same runs on an H100.

use kernels_gpu::pipeline_bugs as pb;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::rng::{rel_err_norm, uniform_vec};
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, ModuleKey, TensorMap};
use ptxlab_device::Dim3;
use ptxlab_device::hopper::Swizzle;
use ptxlab_device::mma::{Bf16, Half16};
use ptxlab_device::sim::SimError;

/// One planted mistake (the kernel that makes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Bug {
    /// `pipe_missing_wait`: no `cp.async` wait before a tile is read.
    MissingWait,
    /// `pipe_wait_too_shallow`: `wait_async_copies` leaves one group too many in flight.
    WaitTooShallow,
    /// `pipe_stage_off_by_one`: the next tile is copied into the stage being read.
    StageOffByOne,
    /// `pipe_missing_barrier`: no barrier between the wait and other threads' reads.
    MissingBarrier,
    /// `pipe_inplace_prefetch`: an in-place write-back races a prefetch's
    /// halo (found only off the default schedule: `ptxlab sim-fuzz`).
    InplacePrefetch,
    /// `tma_wrong_parity`: consumers wait for the wrong mbarrier parity.
    WrongParity,
    /// `tma_expect_tx_partial`: `expect_tx` counts only the inside of an edge box.
    ExpectTxPartial,
    /// `tma_refill_early`: the producer refills a stage before it was released.
    RefillEarly,
    /// `wgmma_acc_early`: accumulators stored before `wgmma_wait_group::<0>`.
    AccEarly,
    /// `wgmma_operand_overwrite`: a stage refilled while a `wgmma` reads it.
    OperandOverwrite,
    /// `tma_store_no_fence`: no `fence.proxy.async` before a TMA store.
    StoreNoFence,
    /// `cluster_remote_read_before_sync`: a block reads a peer's shared
    /// memory (DSMEM) before the cluster barrier that publishes it.
    ClusterRemoteReadBeforeSync,
    /// `cluster_exit_while_read`: a block exits while a peer still reads
    /// its shared memory.
    ClusterExitWhileRead,
    /// `multicast_mask_misses_peer`: a TMA multicast's mask leaves out a
    /// block that waits for its data.
    MulticastMaskMissesPeer,
    /// `multicast_expect_tx_one_block`: `expect_tx` counts one block's
    /// bytes for multicasts that land in every block.
    MulticastExpectTxOneBlock,
    /// `multicast_arrive_own_rank_only`: consumers release a stage on their
    /// own block's barrier only, not on the peers' that refill it.
    MulticastArriveOwnRankOnly,
}

impl Bug {
    /// Every planted bug, in the order of the table.
    pub const ALL: [Bug; 16] = [
        Bug::MissingWait,
        Bug::WaitTooShallow,
        Bug::StageOffByOne,
        Bug::MissingBarrier,
        Bug::WrongParity,
        Bug::ExpectTxPartial,
        Bug::RefillEarly,
        Bug::AccEarly,
        Bug::OperandOverwrite,
        Bug::StoreNoFence,
        Bug::ClusterRemoteReadBeforeSync,
        Bug::ClusterExitWhileRead,
        Bug::MulticastMaskMissesPeer,
        Bug::MulticastExpectTxOneBlock,
        Bug::MulticastArriveOwnRankOnly,
        Bug::InplacePrefetch,
    ];

    /// The kernel that makes the mistake.
    pub fn kernel(self) -> &'static str {
        match self {
            Bug::MissingWait => "pipe_missing_wait",
            Bug::WaitTooShallow => "pipe_wait_too_shallow",
            Bug::StageOffByOne => "pipe_stage_off_by_one",
            Bug::MissingBarrier => "pipe_missing_barrier",
            Bug::InplacePrefetch => "pipe_inplace_prefetch",
            Bug::WrongParity => "tma_wrong_parity",
            Bug::ExpectTxPartial => "tma_expect_tx_partial",
            Bug::RefillEarly => "tma_refill_early",
            Bug::AccEarly => "wgmma_acc_early",
            Bug::OperandOverwrite => "wgmma_operand_overwrite",
            Bug::StoreNoFence => "tma_store_no_fence",
            Bug::ClusterRemoteReadBeforeSync => "cluster_remote_read_before_sync",
            Bug::ClusterExitWhileRead => "cluster_exit_while_read",
            Bug::MulticastMaskMissesPeer => "multicast_mask_misses_peer",
            Bug::MulticastExpectTxOneBlock => "multicast_expect_tx_one_block",
            Bug::MulticastArriveOwnRankOnly => "multicast_arrive_own_rank_only",
        }
    }

    /// The mistake, in a few words.
    pub fn mistake(self) -> &'static str {
        match self {
            Bug::MissingWait => "missing cp.async wait",
            Bug::WaitTooShallow => "cp.async wait N too large by one",
            Bug::StageOffByOne => "stage index off by one in the ring",
            Bug::MissingBarrier => "missing barrier after the wait",
            Bug::InplacePrefetch => "in-place write-back races a prefetch",
            Bug::WrongParity => "mbarrier waited with the wrong parity",
            Bug::ExpectTxPartial => "expect_tx with the wrong byte count",
            Bug::RefillEarly => "producer refills a stage before it was released",
            Bug::AccEarly => "accumulators read before wgmma.wait_group",
            Bug::OperandOverwrite => "shared operands overwritten while a wgmma is in flight",
            Bug::StoreNoFence => "missing fence.proxy.async before a TMA store",
            Bug::ClusterRemoteReadBeforeSync => {
                "peer's shared memory read before the cluster barrier"
            }
            Bug::ClusterExitWhileRead => "block exits while a peer reads its shared memory",
            Bug::MulticastMaskMissesPeer => "TMA multicast mask misses a consumer block",
            Bug::MulticastExpectTxOneBlock => {
                "expect_tx counts one block's bytes of a multicast to all"
            }
            Bug::MulticastArriveOwnRankOnly => {
                "stage released on the own block only, not on the peers that refill it"
            }
        }
    }

    /// Needs an sm_90 GPU (TMA, mbarrier transaction counts, `wgmma`,
    /// clusters).
    pub fn needs_sm90(self) -> bool {
        !matches!(
            self,
            Bug::MissingWait
                | Bug::WaitTooShallow
                | Bug::StageOffByOne
                | Bug::MissingBarrier
                | Bug::InplacePrefetch
        )
    }
}

/// What became of one run.
#[derive(Debug)]
pub enum Outcome {
    /// The simulator stopped the launch.
    Caught(SimError),
    /// The result differs from the reference by more than the tolerance.
    Wrong {
        /// Relative error by norm (NaN when the result holds NaNs).
        rel_err: f64,
    },
    /// The result matches the reference.
    Right {
        /// Relative error by norm.
        rel_err: f64,
    },
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Caught(e) => write!(f, "caught: {e}"),
            Outcome::Wrong { rel_err } => write!(f, "wrong result: rel err {rel_err:.2e}"),
            Outcome::Right { rel_err } => write!(f, "right result: rel err {rel_err:.2e}"),
        }
    }
}

/// Shapes of the runs: odd, so edge tiles and partial blocks occur.
pub mod shape {
    /// Rows and columns of the `cp.async` ring's matrix.
    pub const RING: (usize, usize) = (70, 100);
    /// Length of the in-place smoothing pass.
    pub const INPLACE: usize = 1000;
    /// Rows and columns of the TMA ring's and the TMA store's matrices.
    pub const TMA: (usize, usize) = (45, 100);
    /// Rows and depth of the `wgmma` pipeline (`n` is 128).
    pub const WGMMA: (usize, usize) = (100, 200);
    /// Length and blocks per cluster of the cluster sum.
    pub const CLUSTER: (usize, u32) = (5000, 2);
    /// Rows, columns and blocks per cluster of the multicast
    /// matrix-vector product (more tiles than stages: stages are reused).
    pub const MULTICAST: (usize, usize, u32) = (45, 131, 2);
}

fn vec32(seed: u64, n: usize) -> Vec<f32> {
    uniform_vec(seed, n, -1.0, 1.0)
        .into_iter()
        .map(|v| v as f32)
        .collect()
}

fn judge(got: &[f32], want: &[f64], tol: f64) -> Outcome {
    let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
    let rel_err = rel_err_norm(&got, want);
    if rel_err <= tol {
        Outcome::Right { rel_err }
    } else {
        Outcome::Wrong { rel_err }
    }
}

/// `Ok(Outcome::Caught)` for a simulator report, the error otherwise.
fn caught(e: Error) -> Result<Outcome> {
    match e {
        Error::Runtime(ptxlab_common::runtime::Error::Sim(s)) => Ok(Outcome::Caught(s)),
        e => Err(e),
    }
}

/// Runs `bug`'s kernel on `dev`: with its mistake (`planted`) or the
/// correct pipeline, on the shapes of [`shape`], checked against the f64
/// reference.
pub fn run(dev: &Device, bug: Bug, planted: bool) -> Result<Outcome> {
    let flag = planted as u32;
    let r = match bug {
        Bug::MissingWait | Bug::WaitTooShallow | Bug::StageOffByOne | Bug::MissingBarrier => {
            ring(dev, bug, flag)
        }
        Bug::InplacePrefetch => inplace(dev, flag),
        Bug::WrongParity | Bug::ExpectTxPartial | Bug::RefillEarly => tma_ring(dev, bug, flag),
        Bug::AccEarly | Bug::OperandOverwrite => wgmma(dev, bug, flag),
        Bug::StoreNoFence => tma_store(dev, flag),
        Bug::ClusterRemoteReadBeforeSync | Bug::ClusterExitWhileRead => {
            cluster_gather(dev, bug, flag)
        }
        Bug::MulticastMaskMissesPeer
        | Bug::MulticastExpectTxOneBlock
        | Bug::MulticastArriveOwnRankOnly => multicast(dev, bug, flag),
    };
    r.or_else(caught)
}

fn ring(dev: &Device, bug: Bug, flag: u32) -> Result<Outcome> {
    let (m, k) = shape::RING;
    let (ha, hx) = (vec32(11, m * k), vec32(12, k));
    let (a, x) = (dev.upload(&ha)?, dev.upload(&hx)?);
    let mut y = dev.alloc_filled(m, f32::NAN)?;
    let cfg = LaunchConfig::for_threads(m.div_ceil(pb::RING_ROWS) * 128, pb::RING_THREADS)?
        .with_shared(pb::ring_shared_bytes());
    let (mu, ku) = (m as u32, k as u32);
    match bug {
        Bug::MissingWait => launch!(
            dev,
            cfg,
            pipeline_bugs::pipe_missing_wait(&a, &x, &mut y, mu, ku, flag)
        )?,
        Bug::WaitTooShallow => launch!(
            dev,
            cfg,
            pipeline_bugs::pipe_wait_too_shallow(&a, &x, &mut y, mu, ku, flag)
        )?,
        Bug::StageOffByOne => launch!(
            dev,
            cfg,
            pipeline_bugs::pipe_stage_off_by_one(&a, &x, &mut y, mu, ku, flag)
        )?,
        _ => launch!(
            dev,
            cfg,
            pipeline_bugs::pipe_missing_barrier(&a, &x, &mut y, mu, ku, flag)
        )?,
    }
    let want: Vec<f64> = (0..m)
        .map(|r| (0..k).map(|j| ha[r * k + j] as f64 * hx[j] as f64).sum())
        .collect();
    Ok(judge(&dev.download(&y)?, &want, 1e-5))
}

/// The CPU reference of `pipe_inplace_prefetch`'s pass.
pub fn inplace_reference(v: &[f32]) -> Vec<f64> {
    let at = |i: isize| {
        if i >= 0 && (i as usize) < v.len() {
            v[i as usize] as f64
        } else {
            0.0
        }
    };
    (0..v.len() as isize)
        .map(|i| 0.25 * (at(i - 1) + at(i + 1)) + 0.5 * at(i))
        .collect()
}

/// Runs `pipe_inplace_prefetch` (with its mistake when `planted`) on the
/// inputs of [`shape::INPLACE`]: the result, and the reference.
pub fn inplace_run(dev: &Device, planted: bool) -> Result<(Vec<f32>, Vec<f64>)> {
    let n = shape::INPLACE;
    let hv = vec32(13, n);
    let mut v = dev.upload(&hv)?;
    let cfg =
        LaunchConfig::for_threads(64, pb::INPLACE_THREADS)?.with_shared(pb::inplace_shared_bytes());
    let flag = planted as u32;
    launch!(dev, cfg, pipeline_bugs::pipe_inplace_prefetch(&mut v, flag))?;
    Ok((dev.download(&v)?, inplace_reference(&hv)))
}

fn inplace(dev: &Device, flag: u32) -> Result<Outcome> {
    let (got, want) = inplace_run(dev, flag != 0)?;
    Ok(judge(&got, &want, 1e-6))
}

/// The cluster sum with a DSMEM mistake (`bug`, when `flag != 0`): block 0
/// of each cluster of [`shape::CLUSTER`] gathers its peers' block sums.
fn cluster_gather(dev: &Device, bug: Bug, flag: u32) -> Result<Outcome> {
    let (n, c) = shape::CLUSTER;
    let hx = vec32(15, n);
    let x = dev.upload(&hx)?;
    let mut out = dev.alloc_filled(ptxlab_hopper::cluster::clusters(n, c), f32::NAN)?;
    let cfg = ptxlab_hopper::cluster::config(n, c)?;
    let nu = n as u32;
    if bug == Bug::ClusterRemoteReadBeforeSync {
        launch!(
            dev,
            cfg,
            pipeline_bugs::cluster_remote_read_before_sync(&x, &mut out, nu, flag)
        )?;
    } else {
        launch!(
            dev,
            cfg,
            pipeline_bugs::cluster_exit_while_read(&x, &mut out, nu, flag)
        )?;
    }
    let want = ptxlab_hopper::cluster::reference(&hx, c);
    Ok(judge(&dev.download(&out)?, &want, 1e-5))
}

/// The multicast matrix-vector product with a multicast mistake (`bug`,
/// when `flag != 0`) on the shape of [`shape::MULTICAST`].
fn multicast(dev: &Device, bug: Bug, flag: u32) -> Result<Outcome> {
    use ptxlab_hopper::cluster::{
        MulticastBuffers, multicast_config, multicast_data, multicast_reference,
    };
    let (m, k, c) = shape::MULTICAST;
    let (ha, hx) = multicast_data(18, m, k, c);
    let cfg = multicast_config(m, k, c)?;
    let mut b = MulticastBuffers::new(dev, &ha, &hx, m, k, c)?;
    let (mu, ku) = (m as u32, k as u32);
    {
        let (map, x, y) = b.operands(dev)?;
        let mb = map.buffer();
        match bug {
            Bug::MulticastMaskMissesPeer => launch!(
                dev,
                cfg,
                pipeline_bugs::multicast_mask_misses_peer(mb, x, y, mu, ku, flag)
            )?,
            Bug::MulticastExpectTxOneBlock => launch!(
                dev,
                cfg,
                pipeline_bugs::multicast_expect_tx_one_block(mb, x, y, mu, ku, flag)
            )?,
            _ => launch!(
                dev,
                cfg,
                pipeline_bugs::multicast_arrive_own_rank_only(mb, x, y, mu, ku, flag)
            )?,
        }
    }
    let (want, _) = multicast_reference(&ha, &hx, m, k, c);
    Ok(judge(&dev.download(&b.y)?, &want, 1e-5))
}

/// A launch of a sm_90a kernel: `grid` blocks of `threads`.
fn hopper_cfg(grid: Dim3, threads: u32, shared: usize) -> LaunchConfig {
    LaunchConfig {
        grid,
        block: Dim3::x(threads),
        shared_bytes: shared,
        module: ModuleKey::default(),
        cluster: None,
    }
}

fn tma_ring(dev: &Device, bug: Bug, flag: u32) -> Result<Outcome> {
    let (m, k) = shape::TMA;
    let ha = vec32(14, m * k);
    let a = dev.upload(&ha)?;
    let box_side = pb::TMA_BOX as u32;
    let map = TensorMap::tiled_2d(dev, &a, m, k, box_side, box_side, Swizzle::None)?;
    let mut y = dev.alloc_filled(m, f32::NAN)?;
    let cfg = hopper_cfg(
        Dim3::x(m.div_ceil(pb::TMA_BOX) as u32),
        pb::TMA_THREADS,
        pb::tma_ring_shared_bytes(),
    );
    let (mu, ku, mb) = (m as u32, k as u32, map.buffer());
    match bug {
        Bug::WrongParity => launch!(
            dev,
            cfg,
            pipeline_bugs::tma_wrong_parity(mb, &mut y, mu, ku, flag)
        )?,
        Bug::ExpectTxPartial => launch!(
            dev,
            cfg,
            pipeline_bugs::tma_expect_tx_partial(mb, &mut y, mu, ku, flag)
        )?,
        _ => launch!(
            dev,
            cfg,
            pipeline_bugs::tma_refill_early(mb, &mut y, mu, ku, flag)
        )?,
    }
    let want: Vec<f64> = (0..m)
        .map(|r| ha[r * k..(r + 1) * k].iter().map(|&v| v as f64).sum())
        .collect();
    Ok(judge(&dev.download(&y)?, &want, 1e-5))
}

fn wgmma(dev: &Device, bug: Bug, flag: u32) -> Result<Outcome> {
    let (m, k) = shape::WGMMA;
    let n = pb::WGP_N;
    let to_bf16 = |v: Vec<f32>| -> Vec<u16> { v.into_iter().map(Bf16::from_f32).collect() };
    let (ha, hb) = (to_bf16(vec32(15, m * k)), to_bf16(vec32(16, k * n)));
    let (a, b) = (dev.upload(&ha)?, dev.upload(&hb)?);
    let a_map = TensorMap::tiled_2d(dev, &a, m, k, 64, 64, Swizzle::B128)?;
    let b_map = TensorMap::tiled_2d(dev, &b, k, n, 64, 64, Swizzle::B128)?;
    let mut c = dev.alloc_filled(m * n, f32::NAN)?;
    let cfg = hopper_cfg(
        Dim3::x(m.div_ceil(pb::WGP_ROWS) as u32),
        pb::WGP_THREADS,
        pb::wgmma_pipe_shared_bytes(),
    );
    let (mu, ku, am, bm) = (m as u32, k as u32, a_map.buffer(), b_map.buffer());
    match bug {
        Bug::AccEarly => launch!(
            dev,
            cfg,
            pipeline_bugs::wgmma_acc_early(am, bm, &mut c, mu, ku, flag)
        )?,
        _ => launch!(
            dev,
            cfg,
            pipeline_bugs::wgmma_operand_overwrite(am, bm, &mut c, mu, ku, flag)
        )?,
    }
    let val = |h: u16| Bf16::to_f32(h) as f64;
    let mut want = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let av = val(ha[i * k + p]);
            for j in 0..n {
                want[i * n + j] += av * val(hb[p * n + j]);
            }
        }
    }
    Ok(judge(&dev.download(&c)?, &want, 1e-5))
}

fn tma_store(dev: &Device, flag: u32) -> Result<Outcome> {
    let (m, k) = shape::TMA;
    let hx = vec32(17, m * k);
    let x = dev.upload(&hx)?;
    let y: Buffer<f32> = dev.alloc_filled(m * k, f32::NAN)?;
    let side = pb::TMA_BOX as u32;
    let x_map = TensorMap::tiled_2d(dev, &x, m, k, side, side, Swizzle::None)?;
    let y_map = TensorMap::tiled_2d(dev, &y, m, k, side, side, Swizzle::None)?;
    let alpha = 1.5f32;
    let cfg = hopper_cfg(
        Dim3::new(
            k.div_ceil(pb::TMA_BOX) as u32,
            m.div_ceil(pb::TMA_BOX) as u32,
            1,
        ),
        pb::STORE_THREADS,
        pb::tma_store_shared_bytes(),
    );
    let (xm, ym) = (x_map.buffer(), y_map.buffer());
    launch!(
        dev,
        cfg,
        pipeline_bugs::tma_store_no_fence(xm, ym, alpha, flag)
    )?;
    dev.synchronize()?;
    let want: Vec<f64> = hx.iter().map(|&v| alpha as f64 * v as f64).collect();
    Ok(judge(&dev.download(&y)?, &want, 1e-6))
}

/// What the simulator must say about a planted bug, in order (in-order
/// schedule): a piece of its one-line report. `None` for the bug only a
/// random schedule finds.
pub fn expected_report(bug: Bug) -> Option<&'static str> {
    Some(match bug {
        Bug::MissingWait | Bug::WaitTooShallow | Bug::StageOffByOne => {
            "while a cp.async copy into it is still in flight"
        }
        Bug::MissingBarrier => "data race on shared memory",
        Bug::WrongParity => "the wait's parity is wrong",
        Bug::ExpectTxPartial => "transaction bytes pending",
        Bug::RefillEarly => "missed phase 0",
        Bug::AccEarly => "before the wgmma_wait_group that covers its group",
        Bug::OperandOverwrite => "while a wgmma still reads it as an operand",
        Bug::StoreNoFence => "no fence.proxy.async of the writer",
        Bug::ClusterRemoteReadBeforeSync => "data race on distributed shared memory",
        Bug::ClusterExitWhileRead => "but that block has exited",
        Bug::MulticastMaskMissesPeer => "its mask misses a block that waits for its data",
        Bug::MulticastExpectTxOneBlock => "counted fewer bytes than land in this block",
        Bug::MulticastArriveOwnRankOnly => "arrivals pending",
        Bug::InplacePrefetch => return None,
    })
}

/// Every planted bug on the simulator: the correct pipeline gives the
/// right result, and the planted mistake stops the launch with the
/// expected one-line report naming the kernel (the in-place prefetch,
/// which only a random schedule finds, gives the right result in order);
/// and `debug_println`.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    println_demo(&dev)?;
    for bug in Bug::ALL {
        let fail = |detail: String| Error::Verification {
            what: format!("planted bug {}", bug.kernel()),
            detail,
        };
        match run(&dev, bug, false)? {
            Outcome::Right { .. } => {}
            other => return Err(fail(format!("the correct pipeline gave {other}"))),
        }
        let got = run(&dev, bug, true)?;
        match (expected_report(bug), &got) {
            (None, Outcome::Right { .. }) => {}
            (Some(want), Outcome::Caught(e)) => {
                let line = e.to_string();
                if !line.contains(want) || line.contains('\n') || e.kernel != bug.kernel() {
                    return Err(fail(format!(
                        "expected a one-line report of `{}` containing `{want}`, got: {line}",
                        bug.kernel()
                    )));
                }
            }
            _ => return Err(fail(format!("unexpected outcome: {got}"))),
        }
    }
    Ok(())
}

/// `ptxlab pipeline-bugs` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The bugs to run (all when absent).
    #[arg(long, value_enum)]
    pub bug: Vec<Bug>,
    /// Run the correct pipelines instead of the planted mistakes.
    #[arg(long)]
    pub fixed: bool,
    /// sim (the default: the simulator catches the bugs) or gpu (each bug
    /// in a process of its own: a planted mistake may trap its kernel);
    /// cpu has no pipelines and is refused.
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Sim)]
    pub backend: ptxlab_common::Backend,
    /// Instead of the bugs: run `debug_println`, whose first four threads
    /// print a line each (the same lines on both backends).
    #[arg(long)]
    pub println: bool,
}

/// Runs `debug_println` over 100 elements (its first four threads print a
/// line each); checks `out = 2 x`.
pub fn println_demo(dev: &Device) -> Result<()> {
    let hx: Vec<f32> = (0..100).map(|i| i as f32 * 0.25 - 0.6).collect();
    let x = dev.upload(&hx)?;
    let mut out = dev.alloc_filled(100, f32::NAN)?;
    let cfg = LaunchConfig::for_threads(100, pb::PRINT_THREADS)?;
    launch!(dev, cfg, pipeline_bugs::debug_println(&x, &mut out))?;
    dev.synchronize()?;
    let got = dev.download(&out)?;
    if got.iter().zip(&hx).any(|(g, x)| *g != 2.0 * x) {
        return Err(Error::Verification {
            what: "debug_println".into(),
            detail: "out != 2 x".into(),
        });
    }
    Ok(())
}

/// `ptxlab pipeline-bugs`: one line per bug, what became of its run. Fails
/// when a correct pipeline (`--fixed`) gives a wrong result or a report.
pub fn cli(args: &Args) -> Result<()> {
    let dev = match args.backend {
        ptxlab_common::Backend::Sim => Device::sim(),
        ptxlab_common::Backend::Gpu => Device::gpu(0)?,
        ptxlab_common::Backend::Cpu => {
            return Err(Error::input(
                "--backend cpu",
                "pipeline-bugs runs kernels; allowed: sim, gpu",
            ));
        }
    };
    if args.println {
        return println_demo(&dev);
    }
    let bugs = if args.bug.is_empty() {
        Bug::ALL.to_vec()
    } else {
        args.bug.clone()
    };
    if matches!(args.backend, ptxlab_common::Backend::Gpu)
        && bugs.len() > 1
        && let Some(exe) = ptxlab_exe()
    {
        return gpu_isolated(&exe, &bugs, args.fixed);
    }
    let mut bad = 0;
    for bug in bugs {
        let outcome = run(&dev, bug, !args.fixed)?;
        if args.fixed && !matches!(outcome, Outcome::Right { .. }) {
            bad += 1;
        }
        println!("{} ({}): {outcome}", bug.kernel(), bug.mistake());
    }
    if bad > 0 {
        return Err(Error::Verification {
            what: "pipeline-bugs --fixed".into(),
            detail: format!("{bad} correct pipeline(s) failed"),
        });
    }
    Ok(())
}

/// The `ptxlab` binary running this command, when it is one (a test
/// binary calling [`cli`] runs the bugs in its own process instead).
fn ptxlab_exe() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let stem = exe.file_stem()?.to_str()?;
    (stem == "ptxlab").then_some(exe)
}

/// How long one bug's process may run on a GPU before it is stopped: a
/// planted wait that never completes hangs its kernel.
const GPU_BUG_SECONDS: u64 = 20;

/// Runs `cmd` with its output captured, stopping it after `secs` seconds:
/// the exit status (`None` when it was stopped), stdout and stderr.
fn run_bounded(
    cmd: &mut std::process::Command,
    secs: u64,
) -> std::io::Result<(Option<std::process::ExitStatus>, String, String)> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    // The pipes are drained on threads so that a chatty child never blocks.
    fn drain<R: Read + Send + 'static>(p: Option<R>) -> std::thread::JoinHandle<String> {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = p {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    }
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if start.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    Ok((status, out, err))
}

/// On a GPU, several bugs run one process each: a planted mistake may make
/// its kernel trap or fault (a peer's shared memory read after it exited)
/// or hang (a wait that never completes), and a trapped kernel leaves the
/// CUDA context unusable for every later launch of that process. Each child
/// runs `ptxlab pipeline-bugs --backend gpu --bug <one>` and is stopped
/// after [`GPU_BUG_SECONDS`]; its line is printed as it is, or, when it
/// failed or was stopped, the bug with what became of it.
fn gpu_isolated(exe: &std::path::Path, bugs: &[Bug], fixed: bool) -> Result<()> {
    use clap::ValueEnum;
    let mut bad = 0;
    for &bug in bugs {
        let name = bug
            .to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["pipeline-bugs", "--backend", "gpu", "--bug", &name]);
        if fixed {
            cmd.arg("--fixed");
        }
        let (status, stdout, stderr) =
            run_bounded(&mut cmd, GPU_BUG_SECONDS).map_err(|e| Error::Verification {
                what: format!("pipeline-bugs --bug {name}"),
                detail: format!("could not run {}: {e}", exe.display()),
            })?;
        match status {
            Some(s) if s.success() => {
                print!("{stdout}");
                continue;
            }
            Some(_) => {
                let why = stderr
                    .lines()
                    .find(|l| l.starts_with("error"))
                    .or_else(|| stderr.lines().next())
                    .unwrap_or("no message");
                println!(
                    "{} ({}): failed on the GPU: {why}",
                    bug.kernel(),
                    bug.mistake()
                );
            }
            None => println!(
                "{} ({}): did not finish in {GPU_BUG_SECONDS} s on the GPU (a wait that never \
                 completes); its process was stopped",
                bug.kernel(),
                bug.mistake()
            ),
        }
        if fixed {
            bad += 1;
        }
    }
    if bad > 0 {
        return Err(Error::Verification {
            what: "pipeline-bugs --fixed".into(),
            detail: format!("{bad} correct pipeline(s) failed"),
        });
    }
    Ok(())
}
