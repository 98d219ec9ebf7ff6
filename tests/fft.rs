//! The FFT ladder end to end: every rung on the simulator at odd sizes with
//! large prime factors, f32 and f64, forward and inverse, complex and real,
//! against rustfft and a naive DFT in f64; the GPU where there is one; and
//! bad input ending in a clear error.

use ptxlab::runtime::Device;
use ptxlab::workloads::fft::{self, Element, Fft, Rung, Spec};

fn spec(rows: usize, n: usize, two_d: bool, real: bool, inverse: bool) -> Spec {
    Spec {
        rows,
        n,
        two_d,
        real,
        inverse,
    }
}

/// `fft::check` of `s` on `rung` in f32 and in f64 (an error fails the
/// test), each within its bound against rustfft: 1e-5 in f32, 1e-13 in f64
/// (relative, by norm). Returns both checks.
fn check_in_both(dev: &Device, s: Spec, rung: Rung, seed: u64) -> (fft::Check, fft::Check) {
    let c32 = fft::check::<f32>(dev, s, rung, seed).unwrap_or_else(|e| panic!("{e}"));
    let c64 = fft::check::<f64>(dev, s, rung, seed).unwrap_or_else(|e| panic!("{e}"));
    assert!(c32.rel_err < 1e-5, "{s:?}: {}", c32.rel_err);
    assert!(c64.rel_err < 1e-13, "{s:?}: {}", c64.rel_err);
    (c32, c64)
}

/// Checks `s` on every rung in f32 and f64 and returns the largest errors.
fn check_all(dev: &Device, s: Spec, seed: u64) -> (f64, f64) {
    let (mut e32, mut e64) = (0.0f64, 0.0f64);
    for rung in Rung::ALL {
        let c = fft::check::<f32>(dev, s, rung, seed).unwrap_or_else(|e| panic!("{e}"));
        e32 = e32.max(c.rel_err);
        let c = fft::check::<f64>(dev, s, rung, seed).unwrap_or_else(|e| panic!("{e}"));
        e64 = e64.max(c.rel_err);
    }
    (e32, e64)
}

#[test]
fn simulator_2d_complex_with_large_prime_factors() {
    let dev = Device::sim();
    for inverse in [false, true] {
        let (e32, e64) = check_all(&dev, spec(203, 157, true, false, inverse), 1);
        println!("203x157 2-D inverse={inverse}: f32 {e32:.2e}, f64 {e64:.2e}");
        assert!(e32 < 1e-5, "{e32}");
        assert!(e64 < 1e-13, "{e64}");
    }
}

#[test]
fn simulator_1d_complex_and_real() {
    let dev = Device::sim();
    for s in [
        spec(3, 97, false, false, false),
        spec(3, 97, false, false, true),
        spec(2, 1000, false, true, false),
        spec(2, 1000, false, true, true),
        spec(3, 999, false, true, false),
        spec(3, 999, false, true, true),
        spec(5, 2 * 3 * 5 * 7 * 4, false, false, true),
        spec(21, 30, true, true, false),
        spec(21, 31, true, true, true),
    ] {
        let (e32, e64) = check_all(&dev, s, 2);
        println!("{s:?}: f32 {e32:.2e}, f64 {e64:.2e}");
        assert!(e32 < 1e-5, "{s:?}: {e32}");
        assert!(e64 < 1e-13, "{s:?}: {e64}");
    }
}

#[test]
fn simulator_long_transform_takes_the_four_step_split() {
    let dev = Device::sim();
    let n = 2 * kernels_gpu::fft::shared_max_len(8);
    // Two rows: the four-step twiddle restarts with each row's matrix.
    let s = spec(2, n, false, false, false);
    let c = fft::check::<f64>(&dev, s, Rung::Shared, 3).unwrap();
    assert!(c.plan.contains("four-step"), "{}", c.plan);
    assert!(c.rel_err < 1e-13, "{}", c.rel_err);
}

/// The DFT by its definition, in f64: `X_k = sum_j x_j exp(-+2 pi i jk/n)`.
fn naive_dft(x: &[f64], n: usize, inverse: bool) -> Vec<f64> {
    let sg = if inverse { 1.0 } else { -1.0 };
    let mut out = Vec::with_capacity(2 * n);
    for k in 0..n {
        let (mut re, mut im) = (0.0, 0.0);
        for j in 0..n {
            let (s, c) = (2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64).sin_cos();
            let (s, c) = (sg * s, c);
            re += x[2 * j] * c - x[2 * j + 1] * s;
            im += x[2 * j] * s + x[2 * j + 1] * c;
        }
        let sc = if inverse { 1.0 / n as f64 } else { 1.0 };
        out.push(re * sc);
        out.push(im * sc);
    }
    out
}

fn against_naive<T: Element>(dev: &Device, n: usize, inverse: bool, rung: Rung) -> f64 {
    let s = spec(1, n, false, false, inverse);
    let x: Vec<f64> = fft::random_input(&s, n as u64)
        .into_iter()
        .map(|v| T::from_f64(v).to_f64())
        .collect();
    let mut f = Fft::<T>::new(dev, s, rung).unwrap();
    let got = fft::run_once(dev, &mut f, &x).unwrap();
    ptxlab::rng::rel_err_norm(&got, &naive_dft(&x, n, inverse))
}

#[test]
fn simulator_matches_the_naive_dft() {
    let dev = Device::sim();
    for n in [1usize, 2, 12, 35, 49, 11, 64, 97] {
        for rung in Rung::ALL {
            for inverse in [false, true] {
                let e = against_naive::<f64>(&dev, n, inverse, rung);
                assert!(e < 1e-13, "f64 n={n} {rung:?} inverse={inverse}: {e}");
                let e = against_naive::<f32>(&dev, n, inverse, rung);
                assert!(e < 1e-5, "f32 n={n} {rung:?} inverse={inverse}: {e}");
            }
        }
    }
}

#[test]
fn plans_factor_lengths_and_pick_bluestein_for_large_primes() {
    assert_eq!(fft::radices(64, Rung::Global), Some(vec![2; 6]));
    assert_eq!(fft::radices(64, Rung::Shared), Some(vec![8, 8]));
    assert_eq!(
        fft::radices(2 * 3 * 5 * 7 * 4, Rung::Shared),
        Some(vec![8, 3, 5, 7])
    );
    assert_eq!(fft::radices(97, Rung::Shared), None);
    assert_eq!(fft::radices(1, Rung::Global), Some(vec![]));
    // The register rung: a radix 2^b first, then 16s; the shared rung's
    // radices for the lengths it hands to the shared kernel.
    assert_eq!(fft::radices(4096, Rung::Register), Some(vec![16, 16, 16]));
    assert_eq!(fft::radices(2048, Rung::Register), Some(vec![8, 16, 16]));
    assert_eq!(fft::radices(32, Rung::Register), Some(vec![2, 16]));
    assert_eq!(fft::radices(16, Rung::Register), Some(vec![16]));
    assert_eq!(
        fft::radices(8, Rung::Register),
        fft::radices(8, Rung::Shared)
    );
    assert_eq!(
        fft::radices(840, Rung::Register),
        fft::radices(840, Rung::Shared)
    );
    assert!(fft::register_takes(16) && fft::register_takes(4096));
    assert!(!fft::register_takes(8) && !fft::register_takes(8192) && !fft::register_takes(48));
    assert!(fft::register_four_step_takes(8192) && fft::register_four_step_takes(1 << 24));
    assert!(!fft::register_four_step_takes(4096) && !fft::register_four_step_takes(1 << 25));
    // The coalesced rung: 16 points per thread in f32, 8 in f64, one
    // launch up to 16384 (f32) or 8192 (f64) points, four-step above.
    assert_eq!(fft::radices(4096, Rung::Coalesced), Some(vec![16, 16, 16]));
    assert_eq!(
        fft::radices(16384, Rung::Coalesced),
        Some(vec![4, 16, 16, 16])
    );
    assert_eq!(
        fft::radices(840, Rung::Coalesced),
        fft::radices(840, Rung::Shared)
    );
    assert_eq!(fft::line_radices(4096, 8), vec![8, 8, 8, 8]);
    assert_eq!(fft::line_radices(16, 8), vec![2, 8]);
    assert_eq!(fft::line_radices(8, 8), vec![8]);
    assert_eq!(fft::line_radices(2048, 16), vec![8, 16, 16]);
    assert!(fft::coalesced_takes::<f64>(8) && !fft::coalesced_takes::<f32>(8));
    assert!(fft::coalesced_takes::<f32>(16384) && !fft::coalesced_takes::<f32>(32768));
    assert!(fft::coalesced_takes::<f64>(8192) && !fft::coalesced_takes::<f64>(16384));
    assert!(!fft::coalesced_takes::<f32>(48) && !fft::coalesced_takes::<f64>(4095));
    assert!(fft::coalesced_four_step_takes::<f64>(16384));
    assert!(fft::coalesced_four_step_takes::<f32>(1 << 28));
    assert!(!fft::coalesced_four_step_takes::<f32>(1 << 29));
    assert!(!fft::coalesced_four_step_takes::<f32>(16384));
    let dev = Device::sim();
    let p = fft::Plan::<f64>::new(&dev, 97, 1, Rung::Global).unwrap();
    assert_eq!(p.describe(), "Bluestein through length 256");
}

/// The register rung on what it takes itself (powers of two: rows in one
/// launch, odd batch counts, 2-D with column tiles in place, partial tiles,
/// four-step lengths in two launches, real transforms through a
/// half-length power of two) and what it hands on (the shared rung's kernel
/// for other small factors, Bluestein on its own kernel for large primes),
/// f32 and f64, forward and inverse, against rustfft in f64.
#[test]
fn simulator_register_rung_layouts_and_fallbacks() {
    let dev = Device::sim();
    let cases = [
        // (spec, a fragment its plan's description must contain)
        (spec(7, 16, false, false, false), "radices 16, in registers"),
        (
            spec(3, 32, false, false, true),
            "radices 2x16, in registers",
        ),
        (
            spec(5, 256, false, false, false),
            "radices 16x16, in registers",
        ),
        (
            spec(1, 2048, false, false, true),
            "radices 8x16x16, in registers",
        ),
        (spec(3, 4096, false, false, false), "radices 16x16x16"),
        (spec(64, 128, true, false, false), "column tiles in place"),
        (spec(32, 45, true, false, true), "column tiles in place"),
        (
            spec(3, 1 << 13, false, false, false),
            "four-step 128x64 in two launches",
        ),
        (
            spec(1, 1 << 16, false, false, true),
            "four-step 256x256 in two launches",
        ),
        (
            spec(5, 128, false, true, false),
            "radices 4x16, in registers",
        ),
        (spec(16, 64, true, true, true), "column tiles in place"),
        (
            spec(4, 60, false, false, false),
            "on the shared rung's kernel",
        ),
        (
            spec(2, 101, false, false, true),
            "Bluestein through length 256",
        ),
        (
            spec(33, 17, true, false, false),
            "Bluestein through length 64",
        ),
    ];
    for (i, (s, plan)) in cases.into_iter().enumerate() {
        let seed = 40 + i as u64;
        let (c32, c64) = check_in_both(&dev, s, Rung::Register, seed);
        println!(
            "{s:?}: {} f32 {:.2e}, f64 {:.2e}",
            c64.plan, c32.rel_err, c64.rel_err
        );
        assert!(c64.plan.contains(plan), "{s:?}: {}", c64.plan);
    }
}

/// The coalesced rung on what it takes itself (powers of two: rows in one
/// launch, short lines many to a block with a partial last group, 2-D with
/// sector-wide column tiles in place and partial tiles, four-step lengths
/// in two launches, real transforms through a half-length power of two)
/// and what it hands on (the shared rung's kernel for other small factors,
/// Bluestein on its own kernel for large primes), f32 and f64, forward and
/// inverse, against rustfft in f64 with the output poisoned first.
#[test]
fn simulator_coalesced_rung_layouts_and_fallbacks() {
    let dev = Device::sim();
    // (spec, a fragment of the f32 plan's description, of the f64 one's)
    let cases = [
        (
            spec(7, 16, false, false, false),
            "radices 16,",
            "radices 2x8,",
        ),
        (spec(5, 8, false, false, true), "shared rung", "radices 8,"),
        (
            spec(3, 32, false, false, true),
            "radices 2x16,",
            "radices 4x8,",
        ),
        (
            spec(5, 256, false, false, false),
            "radices 16x16,",
            "radices 4x8x8,",
        ),
        (
            spec(3, 4096, false, false, true),
            "radices 16x16x16,",
            "radices 8x8x8x8,",
        ),
        (
            spec(1, 8192, false, false, false),
            "radices 2x16x16x16,",
            "radices 2x8x8x8x8,",
        ),
        (
            spec(64, 128, true, false, false),
            "column tiles in place",
            "column tiles in place",
        ),
        (
            spec(32, 45, true, false, true),
            "column tiles in place",
            "column tiles in place",
        ),
        (
            spec(2, 1 << 15, false, false, true),
            "four-step 256x128 in two launches",
            "four-step 256x128 in two launches",
        ),
        (
            spec(1, 1 << 14, false, false, false),
            "radices 4x16x16x16,",
            "four-step 128x128 in two launches",
        ),
        (
            spec(5, 128, false, true, false),
            "radices 4x16,",
            "radices 8x8,",
        ),
        (
            spec(16, 64, true, true, true),
            "column tiles in place",
            "column tiles in place",
        ),
        (
            spec(4, 60, false, false, false),
            "on the shared rung's kernel",
            "on the shared rung's kernel",
        ),
        (
            spec(2, 101, false, false, true),
            "Bluestein through length 256",
            "Bluestein through length 256",
        ),
        (
            spec(33, 17, true, false, false),
            "Bluestein through length 64",
            "Bluestein through length 64",
        ),
    ];
    for (i, (s, plan32, plan64)) in cases.into_iter().enumerate() {
        let seed = 70 + i as u64;
        let (c32, c64) = check_in_both(&dev, s, Rung::Coalesced, seed);
        println!(
            "{s:?}: f32 {} {:.2e}; f64 {} {:.2e}",
            c32.plan, c32.rel_err, c64.plan, c64.rel_err
        );
        assert!(c32.plan.contains(plan32), "{s:?}: {}", c32.plan);
        assert!(c64.plan.contains(plan64), "{s:?}: {}", c64.plan);
    }
}

/// The coalesced rung is as accurate as the register rung it replaces:
/// on the same power-of-two problems (rows, columns, four-step) its error
/// by norm against rustfft in f64 stays within a small factor of rung 3's
/// and near the unit roundoff times `log2 n`.
#[test]
fn simulator_coalesced_rung_is_as_accurate_as_the_register_rung() {
    let dev = Device::sim();
    for s in [
        spec(2, 4096, false, false, false),
        spec(32, 64, true, false, true),
        spec(1, 1 << 15, false, false, false),
    ] {
        let r64 = fft::check::<f64>(&dev, s, Rung::Register, 5)
            .unwrap()
            .rel_err;
        let c64 = fft::check::<f64>(&dev, s, Rung::Coalesced, 5)
            .unwrap()
            .rel_err;
        let r32 = fft::check::<f32>(&dev, s, Rung::Register, 5)
            .unwrap()
            .rel_err;
        let c32 = fft::check::<f32>(&dev, s, Rung::Coalesced, 5)
            .unwrap()
            .rel_err;
        println!("{s:?}: f64 rung 3 {r64:.2e} rung 4 {c64:.2e}; f32 {r32:.2e} {c32:.2e}");
        assert!(c64 < 1e-15 && c64 < 2.0 * r64, "{s:?}: f64 {c64} vs {r64}");
        assert!(c32 < 5e-7 && c32 < 2.0 * r32, "{s:?}: f32 {c32} vs {r32}");
    }
}

/// A register or coalesced plan writes nothing outside its output and
/// reads nothing but its input: the output buffer is poisoned (NaN) by
/// `run_once`, and a second run on the same plan gives the same values bit
/// for bit.
#[test]
fn simulator_register_rungs_rerun_bit_for_bit() {
    let dev = Device::sim();
    for s in [
        spec(32, 48, true, false, false),
        spec(2, 1 << 13, false, false, true),
    ] {
        let x: Vec<f64> = fft::random_input(&s, 9)
            .into_iter()
            .map(|v| v as f32 as f64)
            .collect();
        for rung in [Rung::Register, Rung::Coalesced] {
            let mut f = Fft::<f32>::new(&dev, s, rung).unwrap();
            let a = fft::run_once(&dev, &mut f, &x).unwrap();
            let b = fft::run_once(&dev, &mut f, &x).unwrap();
            assert!(a.iter().all(|v| v.is_finite()), "{s:?} {rung:?}");
            assert_eq!(a, b, "{s:?} {rung:?}");
        }
    }
}

fn run_cli(args: &[&str]) -> Result<Vec<ptxlab::report::Row>, String> {
    let mut all = vec!["ptxlab", "fft", "--backend", "sim", "--reps", "1"];
    all.extend_from_slice(args);
    let cli = ptxlab::command_line::parse_from(all).map_err(|e| e.to_string())?;
    match cli.cmd {
        ptxlab::command_line::Cmd::Fft(a) => fft::cli(&a).map_err(|e| e.to_string()),
        _ => unreachable!("parsed as fft"),
    }
}

#[test]
fn cli_runs_reads_and_writes_npy() {
    let dir = std::env::temp_dir().join(format!("ptxlab-fft-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x = dir.join("x.npy");
    let out = dir.join("X.npy");
    let vals: Vec<f64> = (0..2 * 3 * 10)
        .map(|i| ((i * 7) % 11) as f64 - 5.0)
        .collect();
    ptxlab::npy::write_complex(&x, &[3, 10], &vals, false).unwrap();
    let rows = run_cli(&[
        "--input",
        x.to_str().unwrap(),
        "--precision",
        "f64",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    assert_eq!(
        rows.len(),
        1 + Rung::ALL.len(),
        "rustfft row and every rung"
    );
    let (shape, got, single) = ptxlab::npy::read_complex(&out, 2).unwrap();
    assert_eq!((shape, single), (vec![3, 10], false));
    let s = spec(3, 10, false, false, false);
    let e = ptxlab::rng::rel_err_norm(&got, &fft::reference(&s, &vals));
    assert!(e < 1e-14, "{e}");
    // A real inverse writes real values: irfft of 6 values gives 10.
    let y = dir.join("y.npy");
    let h: Vec<f64> = (0..2 * 6).map(|i| i as f64).collect();
    ptxlab::npy::write_complex(&y, &[6], &h, true).unwrap();
    run_cli(&[
        "--input",
        y.to_str().unwrap(),
        "--real",
        "--inverse",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    assert_eq!(ptxlab::npy::inspect(&out).unwrap().shape, vec![10]);
    assert_eq!(ptxlab::npy::inspect(&out).unwrap().descr, "<f4");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cli_runs_the_register_rung_alone_and_in_all() {
    let rows = run_cli(&["--shape", "32x64", "--2d", "--variant", "register"]).unwrap();
    assert_eq!(rows.len(), 2, "rustfft row and the register rung");
    let rows = run_cli(&["--shape", "32x64", "--2d", "--variant", "coalesced"]).unwrap();
    assert_eq!(rows.len(), 2, "rustfft row and the coalesced rung");
    assert!(rows[1].variant.starts_with("4 "), "{}", rows[1].variant);
    let rows = run_cli(&[
        "--shape",
        "3x4096",
        "--variant",
        "all",
        "--precision",
        "f64",
    ])
    .unwrap();
    assert_eq!(rows.len(), 1 + Rung::ALL.len());
    assert!(rows.iter().all(|r| r.rel_err.is_none_or(|e| e < 1e-13)));
}

#[test]
fn bad_input_is_a_clear_error() {
    let e = run_cli(&["--shape", "0x5"]).unwrap_err();
    assert!(e.contains("empty") && e.contains("at least 1"), "{e}");
    let e = run_cli(&["--shape", "7"]).map(|r| r.len()).unwrap();
    assert_eq!(e, 1 + Rung::ALL.len());
    let e = run_cli(&["--shape", "3x4x5"]).unwrap_err();
    assert!(e.contains("ROWSxN"), "{e}");
    let e = run_cli(&["--shape", "4x1", "--real"]).unwrap_err();
    assert!(e.contains("at least 2"), "{e}");
    let dir = std::env::temp_dir().join(format!("ptxlab-fft-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A real array where a complex one is needed.
    let r = dir.join("r.npy");
    ptxlab::npy::write_1d(&r, &[1.0f32, 2.0, 3.0]).unwrap();
    let e = run_cli(&["--input", r.to_str().unwrap()]).unwrap_err();
    assert!(e.contains("float32") && e.contains("complex"), "{e}");
    // complex128 with --precision f32.
    let c = dir.join("c.npy");
    ptxlab::npy::write_complex(&c, &[2], &[1.0, 2.0, 3.0, 4.0], false).unwrap();
    let e = run_cli(&["--input", c.to_str().unwrap()]).unwrap_err();
    assert!(e.contains("complex128") && e.contains("--precision"), "{e}");
    // A non-finite element is named.
    ptxlab::npy::write_complex(&c, &[3], &[1.0, 2.0, 3.0, f64::NAN, 0.0, 0.0], true).unwrap();
    let e = run_cli(&["--input", c.to_str().unwrap()]).unwrap_err();
    assert!(
        e.contains("element 1 (imaginary part)") && e.contains("finite"),
        "{e}"
    );
    // An empty array.
    ptxlab::npy::write_complex(&c, &[0], &[], true).unwrap();
    let e = run_cli(&["--input", c.to_str().unwrap()]).unwrap_err();
    assert!(e.contains("empty"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gpu_every_rung_at_the_bench_sizes_and_odd_ones() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    for s in [
        spec(203, 157, true, false, false),
        spec(1000, 203, false, true, true),
        spec(1, 1 << 20, false, false, false),
        spec(1, 1_000_003, false, false, true),
        spec(4095, 4097, true, false, false),
        spec(1024, 1024, true, true, false),
        spec(4096, 4096, true, false, false),
        spec(4096, 4096, true, false, true),
        spec(1, 1 << 24, false, false, false),
        spec(3, 1 << 22, false, false, true),
        spec(1001, 2048, false, false, false),
    ] {
        let (e32, e64) = check_all(&dev, s, 5);
        println!("{s:?}: f32 {e32:.2e}, f64 {e64:.2e}");
        assert!(e32 < 2e-5 && e64 < 1e-12, "{s:?}: {e32} {e64}");
    }
}
