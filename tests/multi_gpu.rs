//! Multi-GPU Poisson on simulated devices: the row-slab decomposition with
//! its halo exchange (overlapped and not) must give the single-device field
//! bit for bit after 1, 2 and 37 sweeps on odd sizes, for 1, 2 and 3 devices,
//! thin slabs included; the distributed residual and the solver must agree
//! with one device; and the GPU-only paths fail with errors that name what
//! is missing (driver, GPUs, NCCL, launcher variables, unique id).

use ptxlab::runtime::{Device, probe::driver_present};
use ptxlab::workloads::poisson::multi::{
    self as pm, Decomp, GpuArgs, RankEnv, SlabElement, Team, bootstrap, nccl,
};
use ptxlab::workloads::poisson::{self as ps, Args, Element, Grid, Problem, Rung, SolveOptions};
use std::collections::HashMap;
use std::time::Duration;

/// Random `p0` and `b` rounded to `T`, with the checks' spacing (so `k b`
/// matters in every sweep).
fn random_problem<T: Element>(nx: usize, ny: usize, seed: u64) -> Problem<T> {
    let grid = Grid::new(nx, ny).unwrap();
    let (p0, b) = ps::random_inputs(grid, seed);
    let conv = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
    Problem::new(grid, ps::CHECK_H, conv(b), conv(p0)).unwrap()
}

/// For each device count and overlap setting, runs the slabs to each count of
/// `sweeps` (cumulative) and compares with one device over the whole grid.
fn check_bits<T: SlabElement>(
    prob: &Problem<T>,
    rung: Rung,
    devices: &[usize],
    overlaps: &[bool],
    sweeps: &[usize],
) {
    let one = Device::sim();
    let want: Vec<Vec<T>> = sweeps
        .iter()
        .map(|&s| pm::single_device(&one, prob, rung, s).unwrap())
        .collect();
    for &n in devices {
        let mut team = Team::sim(n).unwrap();
        for &overlap in overlaps {
            let mut placed = team.place(prob, rung).unwrap();
            placed.set_overlap(overlap);
            let mut done = 0;
            for (&s, want) in sweeps.iter().zip(&want) {
                placed.iterate(s - done).unwrap();
                done = s;
                let c = placed.compare(want).unwrap();
                assert_eq!(
                    (c.differ, c.cells as usize),
                    (0, prob.grid.cells()),
                    "{} {} {} on {n} devices, overlap {overlap}, after {s} sweeps: first \
                     difference at {:?}",
                    rung.name(),
                    T::NAME,
                    prob.grid.label(),
                    c.first
                );
                let field = placed.gather().unwrap().unwrap();
                let same = field.iter().zip(want).all(|(a, b)| a.bits() == b.bits());
                assert!(same, "gather differs from the compare on {n} devices");
            }
        }
    }
}

#[test]
fn decomposition_deals_rows_evenly() {
    let g = Grid::new(37, 30).unwrap();
    let d = Decomp::new(g, 3).unwrap();
    assert_eq!(
        (0..3).map(|r| d.owned(r)).collect::<Vec<_>>(),
        vec![1..11, 11..20, 20..29]
    );
    assert_eq!(d.local_grid(1).unwrap(), Grid::new(37, 11).unwrap());
    let d = Decomp::new(Grid::new(9, 6).unwrap(), 4).unwrap();
    assert!((0..4).all(|r| d.rows(r) == 1));
    let e = Decomp::new(Grid::new(9, 6).unwrap(), 5)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--gpus") && e.contains("4 interior row(s)") && e.contains("at most 4"),
        "{e}"
    );
    let e = Decomp::new(g, 0).unwrap_err().to_string();
    assert!(e.contains("0 devices"), "{e}");
}

/// The acceptance check: register rung, f32, 37x29, 1/2/3 devices, with and
/// without overlap, after 1, 2 and 37 sweeps.
#[test]
fn register_slabs_equal_one_device_bit_for_bit_f32() {
    let prob = random_problem::<f32>(37, 29, 21);
    check_bits(
        &prob,
        Rung::Register,
        &[1, 2, 3],
        &[true, false],
        &[1, 2, 37],
    );
}

/// f64, another odd shape (more rows than columns, uneven slabs: 29 rows
/// over 2 and 3 devices).
#[test]
fn register_slabs_equal_one_device_bit_for_bit_f64() {
    let prob = random_problem::<f64>(23, 31, 22);
    check_bits(&prob, Rung::Register, &[2, 3], &[true], &[1, 2, 37]);
}

/// The other decomposed rungs (one thread per cell, so slower on the
/// simulator: fewer sweeps and the overlapped path only).
#[test]
fn naive_and_tiled_slabs_equal_one_device_bit_for_bit() {
    let prob = random_problem::<f32>(37, 29, 23);
    for rung in [Rung::Naive, Rung::Tiled] {
        check_bits(&prob, rung, &[3], &[true], &[1, 2, 5]);
    }
    check_bits(&prob, Rung::Naive, &[2], &[false], &[1, 2]);
}

/// Slabs of one and two rows: the edge rows are the whole slab (no interior
/// launch), and a one-row slab sends the same row up and down.
#[test]
fn thin_slabs_of_one_and_two_rows() {
    let prob = random_problem::<f32>(9, 6, 24);
    // 4 interior rows: 3 devices own 2, 1, 1; 4 devices own one each.
    check_bits(&prob, Rung::Register, &[3, 4], &[true, false], &[1, 2, 37]);
    let prob = random_problem::<f64>(5, 5, 25);
    check_bits(&prob, Rung::Naive, &[3], &[true, false], &[1, 2, 37]);
}

/// The residual is reduced per slab and summed over ranks: it matches the
/// CPU residual of the single-device field.
#[test]
fn distributed_residual_matches_one_device() {
    let prob = random_problem::<f64>(37, 29, 26);
    let want = pm::single_device(&Device::sim(), &prob, Rung::Register, 5).unwrap();
    let cpu = ps::cpu_residual_sq(&want, &prob.b, prob.grid, prob.h);
    for n in [1, 2, 3] {
        let mut team = Team::sim(n).unwrap();
        let mut placed = team.place(&prob, Rung::Register).unwrap();
        placed.iterate(5).unwrap();
        let got = placed.residual_sq().unwrap();
        let e = ((got - cpu) / cpu).abs();
        assert!(
            e <= 1e-12,
            "{n} devices: residual {got:e}, CPU {cpu:e}, error {e:e}"
        );
    }
}

/// A real solve: the manufactured problem to a tolerance, on 1 device and on
/// slabs: same number of sweeps, same residual, same field bit for bit.
#[test]
fn solve_converges_to_the_same_residual() {
    let (m, _) = ps::manufactured(Grid::new(11, 9).unwrap());
    let prob = Problem::new(
        m.grid,
        m.h,
        m.b.iter().map(|&v| v as f32).collect(),
        m.p0.iter().map(|&v| v as f32).collect(),
    )
    .unwrap();
    let opts = SolveOptions {
        rung: Rung::Register,
        depth: 1,
        tol: Some(1e-2),
        max_iters: 1000,
        check_every: 10,
    };
    let (p1, r1) = ps::solve_device(&Device::sim(), &prob, &opts).unwrap();
    assert!(r1.converged, "{r1:?}");
    for (n, overlap) in [(3, true), (2, false)] {
        let mut team = Team::sim(n).unwrap();
        let (pn, rn) = pm::solve_multi(&mut team, &prob, &opts, overlap).unwrap();
        assert!(rn.converged, "{n} devices: {rn:?}");
        assert_eq!(rn.iterations, r1.iterations, "{n} devices");
        assert_eq!(rn.residual_checks, r1.residual_checks);
        let e = ((rn.residual_norm - r1.residual_norm) / r1.residual_norm).abs();
        assert!(e <= 1e-12, "{n} devices: ||r|| {rn:?} vs {r1:?}");
        let pn = pn.unwrap();
        assert!(pn.iter().zip(&p1).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

/// The multi-device solve shares the single-device loop, overflow check
/// included: a NaN in the right-hand side (a problem built through its
/// public fields, so nothing validated it) ends the solve with the overflow
/// error, whether the residual is checked along the way or only at the end.
#[test]
fn nan_right_hand_side_on_slabs_is_the_overflow_error() {
    let mut prob = random_problem::<f32>(13, 11, 41);
    prob.b[5 * 13 + 6] = f32::NAN;
    for tol in [Some(1e-3), None] {
        let opts = SolveOptions {
            rung: Rung::Register,
            depth: 1,
            tol,
            max_iters: 20,
            check_every: 5,
        };
        for (n, overlap) in [(2, true), (3, false)] {
            let mut team = Team::sim(n).unwrap();
            let e = pm::solve_multi(&mut team, &prob, &opts, overlap)
                .unwrap_err()
                .to_string();
            let sweeps = if tol.is_some() { 0 } else { 20 };
            assert!(
                e.contains(&format!("the residual became NaN after {sweeps} sweeps"))
                    && e.contains("too large for f32"),
                "{n} devices, tol {tol:?}: {e}"
            );
        }
    }
}

#[test]
fn temporal_rung_is_refused_with_the_reason() {
    let prob = random_problem::<f32>(9, 9, 27);
    let mut team = Team::sim(2).unwrap();
    let e = team.place(&prob, Rung::Temporal).unwrap_err().to_string();
    assert!(
        e.contains("temporal") && e.contains("halo rows") && e.contains("register"),
        "{e}"
    );
}

fn args(backend: &str, gpus: usize) -> Args {
    Args {
        backend: match backend {
            "gpu" => ptxlab::Backend::Gpu,
            "sim" => ptxlab::Backend::Sim,
            _ => ptxlab::Backend::Cpu,
        },
        size: Some(ptxlab::cli::GridSize { nx: 21, ny: 17 }),
        iters: Some(3),
        variant: ptxlab::cli::OneOrAll::One(ptxlab::workloads::poisson::Rung::Register),
        gpus: GpuArgs {
            count: Some(gpus),
            no_overlap: false,
        },
        ..Args::default()
    }
}

#[test]
fn cli_on_simulated_devices_checks_against_one_device() {
    ps::cli(&args("sim", 3)).unwrap();
    let mut a = args("sim", 2);
    a.gpus.no_overlap = true;
    a.precision = ptxlab::cli::Precision::F64;
    ps::cli(&a).unwrap();
}

#[test]
fn cli_refuses_what_it_cannot_run() {
    let err = |a: Args| ps::cli(&a).unwrap_err().to_string();
    let e = err(args("cpu", 2));
    assert!(e.contains("--gpus") && e.contains("--backend sim"), "{e}");
    let mut a = args("sim", 2);
    a.variant = ptxlab::cli::OneOrAll::One(ptxlab::workloads::poisson::Rung::Temporal);
    assert!(err(a).contains("not decomposed"));
    let e = err(args("sim", 40));
    assert!(e.contains("15 interior row(s)"), "{e}");
    let mut a = args("sim", 2);
    a.gpus.count = None;
    a.gpus.no_overlap = true;
    assert!(err(a).contains("add --gpus N"));
    let mut a = args("sim", 2);
    a.size = Some(ptxlab::cli::GridSize { nx: 4096, ny: 4096 });
    assert!(err(a).contains("simulated devices"));
}

/// Without a driver, `--backend gpu --gpus 2` is one error naming the driver;
/// with one GPU it names the GPU count. (On a machine with two GPUs there is
/// nothing missing, and the GPU run is the device's job, not this test's.)
#[test]
fn gpu_backend_names_what_is_missing() {
    let r = ps::cli(&args("gpu", 2));
    if !driver_present() {
        let e = r.unwrap_err().to_string();
        let first = e.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("no NVIDIA driver") && first.contains("--gpus 2"),
            "{e}"
        );
        assert!(e.contains("--backend sim"), "{e}");
        return;
    }
    let count = pm::visible_gpus().unwrap_or(0);
    if count < 2 {
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains("2 GPUs asked for") && e.contains(&format!("reports {count}")),
            "{e}"
        );
    }
}

#[test]
fn missing_nccl_names_the_library_and_how_to_get_it() {
    let e = nccl::load_from(&["/nonexistent/ptxlab/libnccl.so.2".to_string()])
        .unwrap_err()
        .to_string();
    for needle in [
        "libnccl.so.2",
        "/nonexistent/ptxlab/libnccl.so.2",
        "pip install nvidia-nccl-cu12",
        "PTXLAB_NCCL",
        "LD_LIBRARY_PATH",
        "--backend sim",
    ] {
        assert!(e.contains(needle), "`{needle}` missing from: {e}");
    }
    // A library that loads but is not NCCL: the missing entry point is named.
    let e = nccl::load_from(&["libc.so.6".to_string()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("libc.so.6 has no symbol ncclGetVersion"), "{e}");
    let dir = std::env::temp_dir();
    let c = nccl::candidates(Some(dir.to_str().unwrap()));
    assert_eq!(c[0], dir.join("libnccl.so.2").display().to_string());
    assert_eq!(&c[c.len() - 2..], ["libnccl.so.2", "libnccl.so"]);
    assert_eq!(nccl::candidates(None), ["libnccl.so.2", "libnccl.so"]);
}

#[test]
fn nvls_must_be_off_before_nccl() {
    match std::env::var("NCCL_NVLS_ENABLE").as_deref() {
        Ok("0") => assert!(nccl::require_nvls_off().is_ok()),
        _ => {
            let e = nccl::require_nvls_off().unwrap_err().to_string();
            assert!(e.contains("NCCL_NVLS_ENABLE=0"), "{e}");
        }
    }
}

fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

#[test]
fn launcher_variables_give_rank_and_world() {
    assert_eq!(RankEnv::from_lookup(lookup(&[])).unwrap(), None);
    let torchrun = RankEnv::from_lookup(lookup(&[
        ("RANK", "1"),
        ("WORLD_SIZE", "2"),
        ("LOCAL_RANK", "1"),
    ]))
    .unwrap()
    .unwrap();
    assert_eq!(
        (torchrun.rank, torchrun.world, torchrun.local_rank),
        (1, 2, Some(1))
    );
    let mpi = RankEnv::from_lookup(lookup(&[
        ("OMPI_COMM_WORLD_RANK", "3"),
        ("OMPI_COMM_WORLD_SIZE", "4"),
    ]))
    .unwrap()
    .unwrap();
    assert_eq!((mpi.rank, mpi.world, mpi.local_rank), (3, 4, None));
    // ptxlab's own variables win over a launcher's.
    let own = RankEnv::from_lookup(lookup(&[
        ("PTXLAB_RANK", "0"),
        ("PTXLAB_WORLD_SIZE", "2"),
        ("RANK", "5"),
        ("WORLD_SIZE", "8"),
    ]))
    .unwrap()
    .unwrap();
    assert_eq!((own.rank, own.world), (0, 2));
    assert!(own.source.contains("PTXLAB_RANK"));
    let err = |v: &[(&str, &str)]| RankEnv::from_lookup(lookup(v)).unwrap_err().to_string();
    let e = err(&[("RANK", "2"), ("WORLD_SIZE", "2")]);
    assert!(e.contains("below the world size"), "{e}");
    let e = err(&[("RANK", "x"), ("WORLD_SIZE", "2")]);
    assert!(e.contains("RANK") && e.contains("`x`"), "{e}");
    let e = err(&[("WORLD_SIZE", "2")]);
    assert!(e.contains("RANK") && e.contains("unset"), "{e}");
}

#[test]
fn unique_id_travels_as_hex_through_a_file() {
    let mut id = nccl::UniqueId { internal: [0; 128] };
    for (i, b) in id.internal.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37) as _;
    }
    let hex = bootstrap::id_to_hex(&id);
    assert_eq!(hex.len(), 256);
    assert_eq!(bootstrap::id_from_hex(&hex).unwrap().internal, id.internal);
    let e = bootstrap::id_from_hex("abc").unwrap_err().to_string();
    assert!(e.contains("256 hex digits"), "{e}");
    let dir = std::env::temp_dir().join(format!("ptxlab-multi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("nccl-id");
    bootstrap::write_id_file(&path, &id).unwrap();
    let back = bootstrap::read_id_file(&path, Duration::from_millis(100)).unwrap();
    assert_eq!(back.internal, id.internal);
    let e = bootstrap::read_id_file(&dir.join("absent"), Duration::from_millis(100))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("rank 0") && e.contains("PTXLAB_NCCL_ID_TIMEOUT"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scaling_benchmark_runs_on_simulated_devices() {
    let a = pm::ScalingArgs {
        size: vec![ptxlab::cli::GridSize { nx: 17, ny: 17 }],
        variant: ptxlab::cli::OneOrAll::One(Rung::Register),
        gpus: 2,
        iters: 2,
        reps: 1,
        warmup: 1,
        backend: ptxlab::Backend::Sim,
        no_check: true,
        ..pm::ScalingArgs::default()
    };
    // The rows `--json` prints: one device (whole grid, slab code), two
    // devices strong (overlapped, not) and weak (overlapped, not).
    let got = pm::cli_scaling(&a).unwrap();
    let variants: Vec<&str> = got.iter().map(|r| r.variant.as_str()).collect();
    assert_eq!(
        variants,
        [
            "register on 1 GPU, none (whole grid, single-GPU code)",
            "register on 1 GPU, none (slab code, no peers)",
            "register on 2 GPUs, overlapped",
            "register on 2 GPUs, not overlapped",
            "register on 2 GPUs, overlapped",
            "register on 2 GPUs, not overlapped",
        ],
        "{got:?}"
    );
    let sizes: Vec<&str> = got.iter().map(|r| r.size.as_str()).collect();
    assert_eq!(sizes[..4], ["17x17"; 4]);
    assert_eq!(sizes[4..], ["17x34"; 2]);
    for r in &got {
        assert_eq!(
            (r.workload.as_str(), r.backend.as_str()),
            ("poisson-scaling", "sim")
        );
        assert_eq!((r.precision.as_str(), r.unit.as_str()), ("f32", "GCells/s"));
        let t = r.timing.as_ref().expect("timed");
        assert!(
            t.median_ms > 0.0 && t.min_ms <= t.median_ms && t.reps == 1,
            "{t:?}"
        );
        assert!(r.throughput.unwrap() > 0.0, "{r:?}");
    }
    assert!(
        got[2].note.starts_with("strong scaling, "),
        "{}",
        got[2].note
    );
    assert!(
        got[4].note.starts_with("weak scaling, efficiency "),
        "{}",
        got[4].note
    );
    let rows = vec![pm::ScalingRow {
        kind: "strong",
        grid: Grid::new(8192, 8192).unwrap(),
        gpus: 2,
        mode: "overlapped".into(),
        cycles: None,
        timing: ptxlab::runtime::Timing::from_samples(vec![0.125, 0.120, 0.130]),
        speedup: Some(1.9),
        efficiency: Some(0.95),
    }];
    let t = pm::scaling_table(&rows, "f32", Rung::Register);
    assert!(
        t.contains("| strong | 8192x8192 | 2 | overlapped | 0.1250 | 536.9 | 1.90x | 95.0% |"),
        "{t}"
    );
    let row = rows[0].to_row(&Rung::Register.name(), ptxlab::Backend::Gpu, "f32", None);
    assert_eq!(row.variant, "register on 2 GPUs, overlapped");
    assert_eq!(row.note, "strong scaling, 1.90x, efficiency 95.0%");
    assert!(
        (row.throughput.unwrap() - 536.870912).abs() < 1e-6,
        "{row:?}"
    );
}

// ---------------------------------------------------------------- multigrid on slabs

use ptxlab::workloads::poisson::mg::{self, Hierarchy, MgDevice, MgOptions, MgReport, Smoother};
use ptxlab::workloads::poisson::multi::team_options;

/// The slab multigrid's options: the red-black smoother, no CUDA graph.
fn mg_options(tol: f64, max_cycles: usize) -> MgOptions {
    MgOptions {
        smoother: Smoother::RedBlack,
        tol,
        max_cycles,
        ..MgOptions::default()
    }
}

/// Random `b` and `p0` (Dirichlet values on the ring) on `nx x ny`, the
/// spacing of a unit-ish square, and `||b||^2` over the interior.
fn mg_problem(nx: usize, ny: usize, seed: u64) -> (Grid, f64, Vec<f64>, Vec<f64>, f64) {
    let grid = Grid::new(nx, ny).unwrap();
    let (p0, b) = ps::random_inputs(grid, seed);
    let h = 1.0 / (nx.max(ny) - 1) as f64;
    let b_sq = ps::interior_norm_sq(&b, grid);
    (grid, h, b, p0, b_sq)
}

/// One simulated device's multigrid solve of `(b, p0)` on `hier` with the
/// cycles in `T`: its report and its field.
fn one_device<T: mg::MgElement>(
    hier: &Hierarchy,
    opts: &MgOptions,
    b: &[f64],
    p0: &[f64],
    b_sq: f64,
) -> (MgReport, Vec<f64>) {
    let one = Device::sim();
    let mut s = MgDevice::<T>::new(&one, hier, opts, b, p0, b_sq).unwrap();
    let r1 = s.solve(p0).unwrap();
    (r1, s.field().unwrap())
}

/// The largest `|a - b|` over two fields.
fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}

fn same_history(what: &str, got: &MgReport, want: &MgReport) {
    close_history(what, got, want, 1e-9);
}

/// The same cycle count, and each residual within `tol` (relative).
fn close_history(what: &str, got: &MgReport, want: &MgReport, tol: f64) {
    assert_eq!(
        got.cycles, want.cycles,
        "{what}: cycles {got:?} vs {want:?}"
    );
    for (k, (a, b)) in got.history.iter().zip(&want.history).enumerate() {
        let e = ((a.1 - b.1) / b.1).abs();
        assert!(e <= tol, "{what}: cycle {k}: {} vs {} ({e:.1e})", a.1, b.1);
    }
}

/// The residual history on 1, 2 and 3 simulated devices equals one
/// simulated device's and the CPU solver's, cycle by cycle, and the fields
/// agree (bit for bit with one device: the slab kernels do its arithmetic
/// in its order, and only the residual's sum is taken in another order), on
/// odd, non-square grids with random data.
fn check_mg_slabs(nx: usize, ny: usize, devices: &[usize], coarse_block: bool) {
    let opts = MgOptions {
        coarse_block,
        ..mg_options(1e-8, 30)
    };
    check_mg_slabs_with(nx, ny, devices, opts);
}

/// [`check_mg_slabs`] with any options (the single device runs the team's:
/// the outer step on the finest level).
fn check_mg_slabs_with(nx: usize, ny: usize, devices: &[usize], opts: MgOptions) {
    let (grid, h, b, p0, b_sq) = mg_problem(nx, ny, 77 + nx as u64);
    let opts = team_options(&opts);
    let hier = Hierarchy::new(grid, h).unwrap();
    let (r1, p1) = one_device::<f64>(&hier, &opts, &b, &p0, b_sq);
    assert!(r1.converged, "{r1:?}");
    let (pc, rc) = mg::cpu::solve::<f64>(&hier, &opts, &b, &p0, b_sq).unwrap();
    same_history("CPU vs one device", &rc, &r1);
    for &n in devices {
        let mut team = Team::sim(n).unwrap();
        let mut placed = team.place_mg::<f64>(grid, h, &b, &p0, &opts, 4).unwrap();
        let rn = placed.solve().unwrap();
        let what = format!(
            "{} on {n} devices ({})",
            grid.label(),
            placed.split().describe()
        );
        same_history(&what, &rn, &r1);
        let pn = placed.gather().unwrap().unwrap();
        let differ = pn
            .iter()
            .zip(&p1)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        let err = max_abs_diff(&pn, &pc);
        eprintln!(
            "{what}: {} cycles, {differ} cells differ in bits from one device, max |p - p_cpu| {err:.1e}",
            rn.cycles
        );
        assert_eq!(
            differ, 0,
            "{what}: the field differs in bits from one device's"
        );
        assert!(err <= 1e-10, "{what}: max |p - p_cpu| = {err:e}");
    }
}

#[test]
fn multigrid_slabs_follow_one_device_67x45() {
    check_mg_slabs(67, 45, &[1, 2, 3], false);
}

#[test]
fn multigrid_slabs_follow_one_device_131x97_coarse_block() {
    check_mg_slabs(131, 97, &[2, 3], true);
}

/// A NaN in `b` gives one device's overflow error on 2 and 3 simulated
/// devices (the slab solves share the single-device outer loop).
fn check_nan_is_the_overflow_error(opts: MgOptions) {
    let (grid, h, mut b, p0, _) = mg_problem(21, 19, 5);
    b[7 * 21 + 9] = f64::NAN;
    let hier = Hierarchy::new(grid, h).unwrap();
    let one = Device::sim();
    let e1 = MgDevice::<f64>::new(&one, &hier, &opts, &b, &p0, f64::NAN)
        .unwrap()
        .solve(&p0)
        .unwrap_err()
        .to_string();
    assert!(
        e1.contains("the residual became NaN after 0 cycles"),
        "{e1}"
    );
    for n in [2, 3] {
        let mut team = Team::sim(n).unwrap();
        let mut placed = team.place_mg::<f64>(grid, h, &b, &p0, &opts, 2).unwrap();
        let e = placed.solve().unwrap_err().to_string();
        assert_eq!(e, e1, "{n} devices");
    }
}

/// The slab multigrid shares the single-device outer loop: a NaN in `b`
/// gives the same overflow error on 2 and 3 simulated devices as on one.
#[test]
fn multigrid_nan_right_hand_side_is_the_overflow_error() {
    check_nan_is_the_overflow_error(mg_options(1e-8, 5));
}

/// The tile smoother on slabs (all sweeps of a visit in one launch over the
/// stored rows, then one exchange of a halo of `2 s` rows): bit for bit one
/// device's field, on 1, 2 and 3 devices.
fn tile_options(pre: u32, post: u32) -> MgOptions {
    MgOptions {
        smoother: Smoother::Tile,
        pre,
        post,
        ..mg_options(1e-8, 30)
    }
}

#[test]
fn multigrid_tile_slabs_follow_one_device_67x45() {
    check_mg_slabs_with(67, 45, &[1, 2, 3], tile_options(2, 2));
}

/// Three sweeps before, one after, a W-cycle and the coarse-levels kernel;
/// then slabs thinner than their halo (3 devices on 11 interior rows, a
/// halo of 6: the halo comes from two ranks).
#[test]
fn multigrid_tile_slabs_deep_halos_and_thin_slabs() {
    let w = MgOptions {
        cycle: mg::Cycle::W,
        coarse_block: true,
        ..tile_options(3, 1)
    };
    check_mg_slabs_with(131, 97, &[2, 3], w);
    check_mg_slabs_with(45, 13, &[3], tile_options(3, 2));
}

/// What the slabs cannot run is refused with what is allowed: more ranks
/// than rows.
#[test]
fn multigrid_slabs_refuse_what_they_cannot_run() {
    let (grid, h, b, p0, _) = mg_problem(9, 5, 3);
    let mut team = Team::sim(4).unwrap();
    let e = team
        .place_mg::<f64>(grid, h, &b, &p0, &mg_options(1e-8, 5), 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--gpus") && e.contains("use at most 3 devices"),
        "{e}"
    );
}

/// Mixed precision (f32 cycles, f64 field) on slabs: the same history and
/// field as one device.
#[test]
fn multigrid_slabs_f32_cycles_follow_one_device() {
    let (grid, h, b, p0, b_sq) = mg_problem(45, 37, 19);
    let opts = mg_options(1e-9, 20);
    let hier = Hierarchy::new(grid, h).unwrap();
    let (r1, p1) = one_device::<f32>(&hier, &opts, &b, &p0, b_sq);
    let mut team = Team::sim(2).unwrap();
    let mut placed = team.place_mg::<f32>(grid, h, &b, &p0, &opts, 2).unwrap();
    let rn = placed.solve().unwrap();
    same_history("f32 cycles on 2 devices", &rn, &r1);
    let pn = placed.gather().unwrap().unwrap();
    assert!(pn.iter().zip(&p1).all(|(a, b)| a.to_bits() == b.to_bits()));
}

// ---------------------------------------------------------------- PCG on slabs

/// PCG (one V-cycle of the team's multigrid as the preconditioner) with the
/// red-black smoother.
fn pcg_options(tol: f64, max_cycles: usize) -> MgOptions {
    MgOptions {
        method: mg::Method::Pcg,
        ..mg_options(tol, max_cycles)
    }
}

/// The PCG residual history on 2 and 3 simulated devices equals one
/// simulated device's and the CPU solver's, iteration by iteration, to
/// round-off (the dot products and norms are summed in another order, so
/// `alpha` and `beta` move in their last bits), and the fields agree to
/// round-off, on odd, non-square grids with random data.
fn check_pcg_slabs(nx: usize, ny: usize, devices: &[usize], coarse_block: bool) {
    let opts = MgOptions {
        coarse_block,
        ..pcg_options(1e-8, 30)
    };
    check_pcg_slabs_with(nx, ny, devices, opts);
}

fn check_pcg_slabs_with(nx: usize, ny: usize, devices: &[usize], opts: MgOptions) {
    let (grid, h, b, p0, b_sq) = mg_problem(nx, ny, 91 + nx as u64);
    let hier = Hierarchy::new(grid, h).unwrap();
    let (r1, p1) = one_device::<f64>(&hier, &opts, &b, &p0, b_sq);
    assert!(r1.converged && r1.cycles >= 3, "{r1:?}");
    let (pc, rc) = mg::cpu::solve::<f64>(&hier, &opts, &b, &p0, b_sq).unwrap();
    same_history("PCG: CPU vs one device", &rc, &r1);
    let scale = pc.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for &n in devices {
        let mut team = Team::sim(n).unwrap();
        let mut placed = team.place_mg::<f64>(grid, h, &b, &p0, &opts, 4).unwrap();
        let rn = placed.solve().unwrap();
        let what = format!(
            "PCG {} on {n} devices ({})",
            grid.label(),
            placed.split().describe()
        );
        same_history(&what, &rn, &r1);
        same_history(&format!("{what} vs the CPU"), &rn, &rc);
        let pn = placed.gather().unwrap().unwrap();
        let (bits, rel) = pm::mgrun::field_difference(&pn, &p1);
        let err = max_abs_diff(&pn, &pc);
        eprintln!(
            "{what}: {} iterations, {bits} cells differ in bits from one device (by {rel:.1e} \
             of the largest value at most), max |p - p_cpu| {err:.1e}",
            rn.cycles
        );
        assert!(rel <= 1e-10, "{what}: {rel:e} from one device's field");
        assert!(err <= 1e-10 * scale, "{what}: max |p - p_cpu| = {err:e}");
        // A second solve of the same placement starts afresh.
        let again = placed.solve().unwrap();
        same_history(&format!("{what}, solved again"), &again, &rn);
    }
}

#[test]
fn pcg_slabs_follow_one_device_67x45() {
    check_pcg_slabs(67, 45, &[2, 3], false);
}

#[test]
fn pcg_slabs_follow_one_device_131x97_coarse_block() {
    check_pcg_slabs(131, 97, &[2, 3], true);
}

/// PCG preconditioned by the tile smoother's V-cycle on slabs.
#[test]
fn pcg_tile_slabs_follow_one_device_67x45() {
    let opts = MgOptions {
        method: mg::Method::Pcg,
        ..tile_options(2, 2)
    };
    check_pcg_slabs_with(67, 45, &[2, 3], opts);
}

/// PCG on slabs shares the outer loop too: a NaN in `b` gives one device's
/// overflow error on 2 and 3 simulated devices.
#[test]
fn pcg_nan_right_hand_side_is_the_overflow_error() {
    check_nan_is_the_overflow_error(pcg_options(1e-8, 5));
}

/// Mixed precision PCG (f32 V-cycles, f64 Krylov vectors) on slabs: one
/// device's history to the round-off of f32 cycles (the residual handed to
/// the cycle is rounded to f32, and its last f64 bits follow `alpha`).
#[test]
fn pcg_slabs_f32_cycles_follow_one_device() {
    let (grid, h, b, p0, b_sq) = mg_problem(45, 37, 23);
    let opts = pcg_options(1e-9, 20);
    let hier = Hierarchy::new(grid, h).unwrap();
    let (r1, _) = one_device::<f32>(&hier, &opts, &b, &p0, b_sq);
    assert!(r1.converged, "{r1:?}");
    let mut team = Team::sim(2).unwrap();
    let mut placed = team.place_mg::<f32>(grid, h, &b, &p0, &opts, 2).unwrap();
    let rn = placed.solve().unwrap();
    let tol = pm::mgrun::history_tolerance(mg::Method::Pcg, 4);
    close_history("PCG, f32 cycles on 2 devices", &rn, &r1, tol);
}

/// `ptxlab poisson --gpus 2 --method pcg --smoother rb` and the PCG
/// scaling table on simulated devices.
#[test]
fn pcg_cli_and_scaling_on_simulated_devices() {
    let mut a = args("sim", 2);
    a.variant = ptxlab::cli::OneOrAll::All;
    a.iters = None;
    a.size = Some(ptxlab::cli::GridSize { nx: 41, ny: 35 });
    a.precision = ptxlab::cli::Precision::F64;
    a.mg.method = ps::SolveMethod::Pcg;
    a.mg.smoother = Some(Smoother::RedBlack);
    ps::cli(&a).unwrap();
    let s = pm::ScalingArgs {
        size: vec![ptxlab::cli::GridSize { nx: 33, ny: 33 }],
        gpus: 2,
        reps: 1,
        no_weak: true,
        backend: ptxlab::Backend::Sim,
        method: ps::SolveMethod::Pcg,
        precision: ptxlab::cli::Precision::F64,
        ..pm::ScalingArgs::default()
    };
    // Two references on one device, the slab code on one and on two
    // (no weak row); each a solve to the tolerance.
    let got = pm::cli_scaling(&s).unwrap();
    let variants: Vec<&str> = got.iter().map(|r| r.variant.as_str()).collect();
    assert_eq!(
        variants,
        [
            "pcg on 1 GPU, single-device solver, best rung (tile, graph)",
            "pcg on 1 GPU, single-device solver, tile smoother, outer step (graph)",
            "pcg on 1 GPU, slab code, team of 1",
            "pcg on 2 GPUs, slab code",
        ],
        "{got:?}"
    );
    for r in &got {
        assert_eq!((r.size.as_str(), r.precision.as_str()), ("33x33", "f64"));
        assert!(r.timing.as_ref().unwrap().median_ms > 0.0, "{r:?}");
        assert!(r.note.starts_with("to 1e-8: "), "{}", r.note);
    }
    assert!(
        got[0].note.ends_with("single-device reference"),
        "{}",
        got[0].note
    );
    assert!(got[3].note.contains("strong scaling, "), "{}", got[3].note);
}

/// `ptxlab poisson --gpus 3 --method multigrid` with its defaults (the
/// tile smoother), then with `--smoother rb`, and the multigrid scaling
/// table (tile smoother) on simulated devices.
#[test]
fn multigrid_cli_and_scaling_on_simulated_devices() {
    let mut a = args("sim", 3);
    a.variant = ptxlab::cli::OneOrAll::All;
    a.iters = None;
    a.size = Some(ptxlab::cli::GridSize { nx: 41, ny: 35 });
    a.precision = ptxlab::cli::Precision::F64;
    a.mg.method = ps::SolveMethod::Multigrid;
    assert_eq!(a.smoother(), Smoother::Tile);
    ps::cli(&a).unwrap();
    a.mg.smoother = Some(Smoother::RedBlack);
    ps::cli(&a).unwrap();
    let s = pm::ScalingArgs {
        size: vec![ptxlab::cli::GridSize { nx: 33, ny: 33 }],
        gpus: 2,
        reps: 1,
        backend: ptxlab::Backend::Sim,
        method: ps::SolveMethod::Multigrid,
        precision: ptxlab::cli::Precision::F64,
        ..pm::ScalingArgs::default()
    };
    pm::cli_scaling(&s).unwrap();
}

/// Whether two GPUs can run NCCL here; otherwise skips with one line (fails
/// instead with `PTXLAB_REQUIRE_GPU`).
fn two_gpus() -> bool {
    use ptxlab::runtime::testing::skip_gpu_test;
    let why = if !driver_present() {
        "no NVIDIA driver (libcuda.so.1 could not be loaded)".to_string()
    } else {
        match pm::visible_gpus().unwrap() {
            count if count < 2 => format!("{count} GPU(s); this test needs 2"),
            // The environment cannot be changed safely from a test (other
            // threads read it); the bundle's run script sets it.
            _ if std::env::var("NCCL_NVLS_ENABLE").as_deref() != Ok("0") => {
                "NCCL_NVLS_ENABLE is not 0 (NVLink multicast must be off for NCCL)".to_string()
            }
            _ => return true,
        }
    };
    let _: Option<()> = skip_gpu_test(&why);
    false
}

/// One GPU's solve and two GPUs' of the same problem (NCCL), with `min`
/// rows per rank: the residual histories agree (checked here), and the
/// two fields come back, with the split's description and the team's
/// report.
fn one_and_two_gpus(
    (nx, ny, min): (usize, usize, usize),
    seed: u64,
    opts: &MgOptions,
    what: &str,
) -> (Vec<f64>, Vec<f64>, String, MgReport) {
    let (grid, h, b, p0, b_sq) = mg_problem(nx, ny, seed);
    let hier = Hierarchy::new(grid, h).unwrap();
    let dev = Device::gpu(0).unwrap();
    let mut s = MgDevice::<f64>::new(&dev, &hier, opts, &b, &p0, b_sq).unwrap();
    let r1 = s.solve(&p0).unwrap();
    let p1 = s.field().unwrap();
    assert!(r1.converged, "{r1:?}");
    let mut team = Team::gpus(2).unwrap();
    let mut placed = team.place_mg::<f64>(grid, h, &b, &p0, opts, min).unwrap();
    let rn = placed.solve().unwrap();
    let what = format!(
        "{what} {} on 2 GPUs ({})",
        grid.label(),
        placed.split().describe()
    );
    same_history(&what, &rn, &r1);
    let pn = placed.gather().unwrap().unwrap();
    (pn, p1, what, rn)
}

/// On two GPUs (NCCL): the slab multigrid follows one GPU's residual
/// history and gives its field bit for bit, with either smoother.
#[test]
fn multigrid_on_two_gpus_follows_one_gpu() {
    if !two_gpus() {
        return;
    }
    let cases = [
        ((1027, 771, 16), mg_options(1e-8, 30)),
        ((515, 1031, 64), mg_options(1e-8, 30)),
        ((1027, 771, 16), team_options(&tile_options(2, 2))),
        ((515, 1031, 64), team_options(&tile_options(3, 1))),
    ];
    for (shape, opts) in cases {
        let what = format!("multigrid, {:?} smoother,", opts.smoother);
        let (pn, p1, what, rn) = one_and_two_gpus(shape, 3 + shape.0 as u64, &opts, &what);
        let differ = pn
            .iter()
            .zip(&p1)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(differ, 0, "{what}");
        println!(
            "{what}: {} cycles, same history and field as one GPU",
            rn.cycles
        );
    }
}

/// On two GPUs (NCCL): PCG on slabs follows one GPU's residual history to
/// round-off and its field.
#[test]
fn pcg_on_two_gpus_follows_one_gpu() {
    if !two_gpus() {
        return;
    }
    for shape in [(1027, 771, 16), (515, 1031, 64)] {
        let opts = pcg_options(1e-8, 30);
        let (pn, p1, what, rn) = one_and_two_gpus(shape, 5 + shape.0 as u64, &opts, "PCG");
        let (bits, rel) = pm::mgrun::field_difference(&pn, &p1);
        assert!(rel <= 1e-10, "{what}: {rel:e} from one GPU's field");
        println!(
            "{what}: {} iterations, same history as one GPU, field within {rel:.1e} ({bits} \
             cells differ in bits)",
            rn.cycles
        );
    }
}
