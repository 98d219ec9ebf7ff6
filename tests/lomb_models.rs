//! Lomb-Scargle on real light curves: long time spans in f32 (split phases),
//! the floating-mean model against astropy, batches of curves, and the
//! precise logarithm the `log` normalization needs. Simulator tests (small)
//! and GPU tests (skipped without a driver).

use ptxlab::Device;
use ptxlab::workloads::lomb::{
    self, General, Normalization, Options, Phases, Rung, Shape, check_general, reference_general,
};

// The fixtures, shared with tests/lomb.rs (tests/common/lomb_fixtures.rs).
mod common {
    pub mod lomb_fixtures;
}
use common::lomb_fixtures::{fixture, npy};

/// Row `r` of a 2-D fixture.
fn row(name: &str, r: usize) -> Vec<f64> {
    let (_, cols, p) = ptxlab::npy::parse_2d::<f64>(fixture(name), name).expect("fixture");
    p[r * cols..(r + 1) * cols].to_vec()
}

/// The options of the long-span cases: `y` centred on its mean, no
/// normalization.
const LONG_OPTS: Options = Options {
    precenter: true,
    normalize: false,
};

/// The `t`, `y` and `w` fixtures of a long-span case (`long` or `kepler`).
fn long_case(case: &str) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let file = |what: &str| npy(&format!("{case}_{what}.npy"));
    (file("t"), file("y"), file("w"))
}

/// The `long` case's `t`, `y`, `dy` and `w` fixtures.
fn long_with_dy() -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let (t, y, w) = long_case("long");
    (t, y, npy("long_dy.npy"), w)
}

const NORMS: [Normalization; 4] = [
    Normalization::Standard,
    Normalization::Model,
    Normalization::Log,
    Normalization::Psd,
];
const MODES: [(bool, bool); 4] = [(true, true), (true, false), (false, true), (false, false)];

/// The options of fixture row `16 d + 4 m + n`.
fn general_of(r: usize) -> (bool, General) {
    let (fit_mean, center_data) = MODES[(r / 4) % 4];
    (
        r >= 16,
        General {
            fit_mean,
            center_data,
            normalization: NORMS[r % 4],
        },
    )
}

fn err_over_peak(got: &[f64], want: &[f64]) -> f64 {
    lomb::accuracy(got, want).err_over_peak
}

// ---- the precise logarithm --------------------------------------------------------

#[test]
fn ln_matches_std() {
    use ptxlab_device::precise::{ln_f32, ln_f64};
    let mut r = ptxlab::rng::SplitMix64(3);
    let (mut u64m, mut u32m) = (0f64, 0f64);
    for i in 0..300_000 {
        let e = r.uniform(-700.0, 700.0);
        let x = if i % 3 == 0 {
            1.0 + r.uniform(-0.3, 0.3)
        } else {
            e.exp2()
        };
        let w = x.ln();
        let ulp = |v: f64| f64::from_bits(v.abs().to_bits() + 1) - v.abs();
        if w != 0.0 {
            u64m = u64m.max((ln_f64(x) - w).abs() / ulp(w));
        }
        let x32 = x as f32;
        if x32 > 0.0 && x32.is_finite() {
            let w = (x32 as f64).ln();
            let u = (f32::from_bits((w.abs() as f32).to_bits() + 1) - w.abs() as f32) as f64;
            if w != 0.0 {
                u32m = u32m.max((ln_f32(x32) as f64 - w).abs() / u);
            }
        }
    }
    println!("ln: f64 {u64m:.2} ulp, f32 {u32m:.2} ulp");
    assert!(u64m <= 2.0 && u32m <= 2.0, "{u64m} {u32m}");
    assert_eq!(ln_f64(1.0), 0.0);
    assert!(ln_f64(-1.0).is_nan() && ln_f32(f32::NAN).is_nan());
    assert_eq!(ln_f64(0.0), f64::NEG_INFINITY);
    assert_eq!(ln_f32(f32::INFINITY), f32::INFINITY);
    // Subnormals.
    assert!((ln_f64(5e-320) - 5e-320f64.ln()).abs() < 1e-13);
    assert!((ln_f32(5e-40) as f64 - (5e-40f32 as f64).ln()).abs() < 1e-5);
}

// ---- the floating-mean model --------------------------------------------------------

#[test]
fn reference_general_matches_astropy() {
    // Every fixture row: 4 (fit_mean, center_data) x 4 normalizations x
    // with/without dy, on an uneven and an even grid.
    let (t, y, dy) = (npy("gen_t.npy"), npy("gen_y.npy"), npy("gen_dy.npy"));
    for grid in ["uneven", "even"] {
        let w = npy(&format!("gen_w_{grid}.npy"));
        for r in 0..32 {
            let (with_dy, g) = general_of(r);
            let d = with_dy.then_some(&dy[..]);
            let got = reference_general(&t, &y, d, &w, g).unwrap();
            let want = row(&format!("gen_pgram_{grid}.npy"), r);
            let e = err_over_peak(&got, &want);
            assert!(e <= 1e-12, "{grid} row {r} {g:?} dy {with_dy}: {e:e}");
        }
    }
    // The long spans: astropy's own f64 phases round to 3e-11 rad at 2.5e5
    // rad and 1e-9 at 1e7 (the reference centres the times, astropy does not).
    let (t, y, dy, w) = long_with_dy();
    let g = General::default();
    let e = err_over_peak(
        &reference_general(&t, &y, Some(&dy), &w, g).unwrap(),
        &row("long_pgram.npy", 0),
    );
    assert!(e <= 1e-9, "long, astropy's defaults: {e:e}");
    let psd = General {
        fit_mean: false,
        center_data: true,
        normalization: Normalization::Psd,
    };
    let e = err_over_peak(
        &reference_general(&t, &y, None, &w, psd).unwrap(),
        &row("long_pgram.npy", 1),
    );
    assert!(e <= 1e-9, "long, psd: {e:e}");
    // fit_mean=False, center_data=True, psd, no dy is SciPy's periodogram
    // with precenter: the two references agree.
    let scipy = lomb::reference(
        &t,
        &y,
        &w,
        Options {
            precenter: true,
            normalize: false,
        },
    )
    .unwrap();
    assert!(err_over_peak(&scipy, &row("long_pgram.npy", 1)) <= 1e-9);
    let (t, y, w) = (
        npy("kepler_t.npy"),
        npy("kepler_y.npy"),
        npy("kepler_w.npy"),
    );
    let e = err_over_peak(
        &reference_general(&t, &y, None, &w, g).unwrap(),
        &row("kepler_pgram.npy", 0),
    );
    println!("kepler: reference against astropy {e:.2e}");
    assert!(e <= 1e-7, "kepler: {e:e}");
}

#[test]
fn sim_general_direct_rungs_match_astropy() {
    // The floating-mean kernels on the simulator against astropy, f32 and
    // f64: every row on the uneven grid with the direct kernel; the launch
    // bounds kernel and the Taylor kernel (even grid) on every fourth row.
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let (t, y, dy) = (npy("gen_t.npy"), npy("gen_y.npy"), npy("gen_dy.npy"));
    let (mut w32, mut w64) = (0f64, 0f64);
    for (grid, rungs) in [
        ("uneven", &[Rung::Cached, Rung::Bounds][..]),
        ("even", &[Rung::Taylor][..]),
    ] {
        let w = npy(&format!("gen_w_{grid}.npy"));
        for r in 0..32 {
            let (with_dy, g) = general_of(r);
            let d = with_dy.then_some(&dy[..]);
            let want = row(&format!("gen_pgram_{grid}.npy"), r);
            for &rung in rungs {
                if rung != Rung::Cached && r % 4 != r / 8 % 4 {
                    continue;
                }
                let a32 = check_general::<f32>(&dev, rung, &t, &y, d, &w, g, &want, shape).unwrap();
                let a64 = check_general::<f64>(&dev, rung, &t, &y, d, &w, g, &want, shape).unwrap();
                assert!(a64.err_over_peak <= 1e-9, "{rung:?} {g:?}");
                w32 = w32.max(a32.err_over_peak);
                w64 = w64.max(a64.err_over_peak);
            }
        }
    }
    println!("floating-mean kernels against astropy: f32 {w32:.2e}, f64 {w64:.2e}");
}

#[test]
fn general_rejects_bad_options_and_rungs() {
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let (t, y) = (npy("gen_t.npy"), npy("gen_y.npy"));
    let w = npy("gen_w_uneven.npy");
    let g = General::default();
    let e = lomb::periodogram_general::<f32>(&dev, Rung::FastLean, &t, &y, None, &w, g, shape)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("classic periodogram only") && e.contains("taylor"),
        "{e}"
    );
    let bad_dy = vec![1.0; t.len() - 1];
    let e = reference_general(&t, &y, Some(&bad_dy), &w, g)
        .unwrap_err()
        .to_string();
    assert!(e.contains("dy has 60 values and y has 61"), "{e}");
    let mut zero_dy = vec![1.0; t.len()];
    zero_dy[7] = 0.0;
    let e = reference_general(&t, &y, Some(&zero_dy), &w, g)
        .unwrap_err()
        .to_string();
    assert!(e.contains("dy[7] = 0") && e.contains("above 0"), "{e}");
    let flat = vec![2.5; t.len()];
    let e = reference_general(&t, &flat, None, &w, g)
        .unwrap_err()
        .to_string();
    assert!(e.contains("y is constant after centring"), "{e}");
    // psd needs no variance.
    let psd = General {
        normalization: Normalization::Psd,
        ..g
    };
    assert!(reference_general(&t, &flat, None, &w, psd).is_ok());
}

// ---- long time spans in f32 ---------------------------------------------------------

/// Every rung of the ladder the simulator runs (the baseline is the cached
/// kernel with a module load, which the simulator does not have).
fn sim_rungs() -> Vec<Rung> {
    Rung::LADDER
        .into_iter()
        .filter(|r| *r != Rung::Baseline)
        .collect()
}

#[test]
fn sim_long_spans_every_f32_rung() {
    // 300 samples over t in [0, 5000], w up to 50 (phases to 2.5e5 rad),
    // and a Kepler-like 400 samples over 1460 days at w near 7000 (1e7
    // rad): every f32 rung within 1e-4 of the f64 reference's peak (the
    // `_long` kernels), and the plain kernels' single f32 product is not.
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let opts = LONG_OPTS;
    for case in ["long", "kepler"] {
        let (t, y, w) = long_case(case);
        let (_, u) = lomb::centre(&t);
        let phase = lomb::max_phase(&u, &w);
        assert!(phase > 1e5, "{case}: {phase}");
        let want = lomb::reference_rayon(&t, &y, &w, opts).unwrap();
        for rung in sim_rungs() {
            let s = shape.for_rung(rung);
            let a32 = lomb::check::<f32>(&dev, rung, &t, &y, &w, opts, &want, s).unwrap();
            let a64 = lomb::check::<f64>(&dev, rung, &t, &y, &w, opts, &want, s).unwrap();
            println!(
                "{case} (phases to {phase:.1e}) {}: f32 {:.2e}, f64 {:.2e}",
                rung.name(),
                a32.err_over_peak,
                a64.err_over_peak
            );
        }
        let plain = lomb::periodogram_with::<f32>(
            &dev,
            Rung::Cached,
            &t,
            &y,
            &w,
            opts,
            shape,
            Phases::Plain,
        )
        .unwrap();
        let e = err_over_peak(&plain, &want);
        println!("{case}: the plain f32 kernel, one product per phase: {e:.2e}");
        assert!(
            e > 1e-4,
            "{case}: the plain kernel should fail here ({e:e})"
        );
    }
}

#[test]
fn sim_long_spans_general_match_astropy() {
    // The floating-mean kernels on the long spans, against astropy.
    let dev = Device::sim();
    let shape = Shape::material(&dev);
    let (t, y, dy, w) = long_with_dy();
    let g = General::default();
    let want = row("long_pgram.npy", 0);
    for rung in [Rung::Cached, Rung::Taylor] {
        let a32 = check_general::<f32>(&dev, rung, &t, &y, Some(&dy), &w, g, &want, shape).unwrap();
        let a64 = check_general::<f64>(&dev, rung, &t, &y, Some(&dy), &w, g, &want, shape).unwrap();
        println!(
            "long, astropy defaults with dy, {}: f32 {:.2e}, f64 {:.2e}",
            rung.name(),
            a32.err_over_peak,
            a64.err_over_peak
        );
    }
    let (t, y, w) = (
        npy("kepler_t.npy"),
        npy("kepler_y.npy"),
        npy("kepler_w.npy"),
    );
    let want = reference_general(&t, &y, None, &w, g).unwrap();
    for rung in [Rung::Cached, Rung::Taylor] {
        let a32 = check_general::<f32>(&dev, rung, &t, &y, None, &w, g, &want, shape).unwrap();
        println!("kepler, {}: f32 {:.2e}", rung.name(), a32.err_over_peak);
    }
}

#[test]
fn phases_choose_the_kernels() {
    // The material's phases stay on the plain kernels; long spans go long,
    // and f32 refuses phases its split kernels cannot reduce exactly.
    let dev = Device::sim();
    let (x, y) = lomb::material_samples().unwrap();
    let f = lomb::material_freqs(64);
    let o = Options::default();
    assert!(!lomb::Bufs::<f32>::new(&dev, &x, &y, &f, o).unwrap().long);
    let forced = lomb::Bufs::<f32>::with_phases(&dev, &x, &y, &f, o, Phases::Long).unwrap();
    assert!(forced.long && forced.x_lo.is_some() && forced.freqs_lo.is_some());
    let (t, ty, w) = (npy("long_t.npy"), npy("long_y.npy"), npy("long_w.npy"));
    assert!(lomb::Bufs::<f32>::new(&dev, &t, &ty, &w, o).unwrap().long);
    // f64 stays plain up to 2^20 rad.
    assert!(!lomb::Bufs::<f64>::new(&dev, &t, &ty, &w, o).unwrap().long);
    let huge = [1e8];
    let e = lomb::Bufs::<f32>::new(&dev, &t, &ty, &huge, o)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("beyond what f32 kernels can reduce") && e.contains("--precision f64"),
        "{e}"
    );
}

// ---- batches --------------------------------------------------------------------------

/// The fixture batch, read from the `.npz` numpy.savez wrote.
fn small_batch(name: &str) -> lomb::Batch {
    let dir = std::env::temp_dir().join(format!("ptxlab-lomb-models-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, fixture(name)).unwrap();
    lomb::read_npz(&path).unwrap()
}

#[test]
fn npz_batches_read_like_numpy_writes_them() {
    // Stored (numpy.savez) and deflated (numpy.savez_compressed) entries.
    let a = small_batch("batch_small.npz");
    let b = small_batch("batch_small_z.npz");
    assert_eq!(a, b);
    assert_eq!(a.offsets, vec![0, 23, 54, 71]);
    assert_eq!((a.t.len(), a.curves()), (71, 3));
    assert!(a.dy.is_some());
    a.validate().unwrap();
    // A folder of (n, 3) curves is the same batch.
    let dir = std::env::temp_dir().join(format!("ptxlab-lomb-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for c in 0..a.curves() {
        let (t, y, dy) = a.curve(c);
        let rows: Vec<f64> = (0..t.len())
            .flat_map(|i| [t[i], y[i], dy.unwrap()[i]])
            .collect();
        ptxlab::npy::write_2d(&dir.join(format!("c{c}.npy")), t.len(), 3, &rows).unwrap();
    }
    assert_eq!(lomb::read_batch(&dir).unwrap(), a);
    // Not an archive, and an empty folder: clear errors.
    let not_zip = dir.join("c0.npy");
    let e = lomb::read_npz(&not_zip).unwrap_err().to_string();
    assert!(
        e.contains("not a valid .npz") && e.contains("not a ZIP"),
        "{e}"
    );
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let e = lomb::read_batch(&empty).unwrap_err().to_string();
    assert!(e.contains("holds no .npy files"), "{e}");
}

#[test]
fn bad_batches_are_clear_errors() {
    let good = small_batch("batch_small.npz");
    let bad = |f: &dyn Fn(&mut lomb::Batch), needle: &str| {
        let mut b = good.clone();
        f(&mut b);
        let e = b.validate().unwrap_err().to_string();
        assert!(e.contains(needle), "{e} (wanted {needle})");
    };
    bad(&|b| b.offsets[1] = 1, "curve 0 has 1 samples");
    bad(
        &|b| b.offsets[1] = 70,
        "offsets[2] = 54 is below offsets[1] = 70",
    );
    bad(&|b| b.offsets[3] = 70, "end at the sample count 71");
    bad(&|b| b.y[5] = f64::NAN, "y[5] = NaN is not finite");
    bad(&|b| b.dy.as_mut().unwrap()[9] = -1.0, "dy[9] = -1");
    bad(&|b| b.offsets = vec![0], "no curves");
    bad(
        &|b| b.y.pop().map(|_| ()).unwrap(),
        "t has 71 values and y has 70",
    );
}

/// Curve `c`'s errors over the peak (f32, f64) against `want`, in batch
/// periodograms of `nf` frequencies a curve.
fn curve_errors(p32: &[f32], p64: &[f64], c: usize, nf: usize, want: &[f64]) -> (f64, f64) {
    let r32: Vec<f64> = p32[c * nf..(c + 1) * nf]
        .iter()
        .map(|v| *v as f64)
        .collect();
    (
        err_over_peak(&r32, want),
        err_over_peak(&p64[c * nf..(c + 1) * nf], want),
    )
}

/// The three-curve batch fixture's periodograms (astropy's defaults, 200
/// frequencies) on `dev` against astropy's: f32 within 1e-4 and f64 within
/// 1e-9 of the peak, curve by curve. Returns the batch, its frequencies and
/// its f64 periodograms.
fn small_batch_matches_astropy(dev: &Device, what: &str) -> (lomb::Batch, Vec<f64>, Vec<f64>) {
    let batch = small_batch("batch_small.npz");
    let w: Vec<f64> = (0..200).map(|k| 0.1 + 0.05 * k as f64).collect();
    let g = General::default();
    let p32 = lomb::batch_periodogram::<f32>(dev, &batch, &w, g).unwrap();
    let p64 = lomb::batch_periodogram::<f64>(dev, &batch, &w, g).unwrap();
    for c in 0..3 {
        let want = row("batch_small_pgram.npy", c);
        let (e32, e64) = curve_errors(&p32, &p64, c, 200, &want);
        println!("{what} batch curve {c}: f32 {e32:.2e}, f64 {e64:.2e}");
        assert!(
            e32 <= 1e-4 && e64 <= 1e-9,
            "{what} curve {c}: {e32:e} {e64:e}"
        );
    }
    (batch, w, p64)
}

#[test]
fn sim_batch_matches_astropy() {
    let dev = Device::sim();
    let (batch, w, p64) = small_batch_matches_astropy(&dev, "sim");
    let g = General::default();
    // A finer grid (step 1 / span): every curve's step angles span under
    // 2 pi / 3, so the three-term recurrence runs, after a first run below
    // GEN_LOW_PHASE (versine); astropy's defaults and SciPy's classic model
    // (no dy, fixed mean, psd), f32 and f64, against the f64 reference.
    let span = (0..3)
        .map(|c| {
            let t = batch.curve(c).0;
            t[t.len() - 1] - t[0]
        })
        .fold(0.0f64, f64::max);
    let fine: Vec<f64> = (0..40).map(|k| (1 + k) as f64 / span).collect();
    let classic = lomb::Batch {
        dy: None,
        ..batch.clone()
    };
    let scipy = General {
        fit_mean: false,
        center_data: false,
        normalization: lomb::Normalization::Psd,
    };
    let all: Vec<usize> = (0..40).collect();
    for (b, g) in [(&batch, g), (&classic, scipy)] {
        let p32 = lomb::batch_periodogram::<f32>(&dev, b, &fine, g).unwrap();
        let p64 = lomb::batch_periodogram::<f64>(&dev, b, &fine, g).unwrap();
        for c in 0..3 {
            assert!(lomb::cheby_shift(b.curve(c).0, 1.0 / span).is_some());
            let want = lomb::batch_reference(b, &fine, g, c, &all).unwrap();
            let (e32, e64) = curve_errors(&p32, &p64, c, 40, &want);
            println!("fine batch {g:?} curve {c}: f32 {e32:.2e}, f64 {e64:.2e}");
            assert!(
                e32 <= 1e-4 && e64 <= 1e-9,
                "{g:?} curve {c}: {e32:e} {e64:e}"
            );
        }
    }
    // An uneven grid runs the direct batch kernel; every normalization.
    let mut uneven = w.clone();
    uneven[3] += 0.01;
    for n in NORMS {
        let g = General {
            normalization: n,
            ..g
        };
        let p = lomb::batch_periodogram::<f64>(&dev, &batch, &uneven, g).unwrap();
        for c in 0..3 {
            let want = lomb::batch_reference(&batch, &uneven, g, c, &(0..200).collect::<Vec<_>>())
                .unwrap();
            let e = err_over_peak(&p[c * 200..(c + 1) * 200], &want);
            assert!(e <= 1e-9, "{n:?} curve {c}: {e:e}");
        }
    }
    // The best periods: the highest peak of each row.
    let periods = lomb::best_periods(&p64, 200, &w, 2);
    for c in 0..3 {
        let r = &p64[c * 200..(c + 1) * 200];
        let i = lomb::top_peaks(r, 1)[0];
        assert_eq!(periods[2 * c], std::f64::consts::TAU / w[i]);
        assert!(r[i] >= r.iter().cloned().fold(f64::MIN, f64::max) - 1e-15);
    }
}

#[test]
fn top_peaks_are_local_maxima_highest_first() {
    let p = [1.0, 3.0, 2.0, 5.0, 5.0, 0.5, f64::NAN, 4.0];
    assert_eq!(lomb::top_peaks(&p, 10), vec![3, 4, 7, 1]);
    assert_eq!(lomb::top_peaks(&p, 2), vec![3, 4]);
    assert!(lomb::top_peaks(&[f64::NAN; 3], 2).is_empty());
    let periods = lomb::best_periods(&[1.0f64, 2.0, 1.0], 3, &[1.0, 2.0, 3.0], 2);
    assert_eq!(periods[0], std::f64::consts::PI);
    assert!(periods[1].is_nan());
    assert_eq!(lomb::sample_curves(3), vec![0, 1, 2]);
    assert_eq!(lomb::sample_curves(100).len(), lomb::SAMPLE_CURVES);
    let idx = lomb::sample_indices(1 << 20, Some(12_345));
    assert!(idx.len() == lomb::SAMPLE_FREQS + 1 && idx.contains(&12_345));
    assert_eq!((idx[0], *idx.last().unwrap()), (0, (1 << 20) - 1));
    assert_eq!(lomb::sample_indices(1, None), vec![0]);
}

// ---- GPU ----------------------------------------------------------------------------

#[test]
fn gpu_long_spans_and_general() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    let shape = Shape::material(&dev);
    let opts = LONG_OPTS;
    for case in ["long", "kepler"] {
        let (t, y, w) = long_case(case);
        let want = lomb::reference_rayon(&t, &y, &w, opts).unwrap();
        for rung in Rung::LADDER {
            let s = shape.for_rung(rung);
            let a32 = lomb::check::<f32>(&dev, rung, &t, &y, &w, opts, &want, s).unwrap();
            let a64 = lomb::check::<f64>(&dev, rung, &t, &y, &w, opts, &want, s).unwrap();
            println!(
                "gpu {case} {}: f32 {:.2e}, f64 {:.2e}",
                rung.name(),
                a32.err_over_peak,
                a64.err_over_peak
            );
        }
    }
    let (t, y, dy) = (npy("gen_t.npy"), npy("gen_y.npy"), npy("gen_dy.npy"));
    let general_rungs = [
        Rung::Baseline,
        Rung::Cached,
        Rung::FastMath,
        Rung::FastMathFit,
        Rung::RegCap(32),
        Rung::Cubin,
        Rung::Bounds,
        Rung::BoundsFast,
    ];
    let (mut w32, mut w64) = (0f64, 0f64);
    for grid in ["uneven", "even"] {
        let w = npy(&format!("gen_w_{grid}.npy"));
        for r in 0..32 {
            let (with_dy, g) = general_of(r);
            let d = with_dy.then_some(&dy[..]);
            let want = row(&format!("gen_pgram_{grid}.npy"), r);
            let rungs: &[Rung] = if grid == "even" {
                &[Rung::Taylor]
            } else {
                &general_rungs
            };
            for &rung in rungs {
                let a32 = check_general::<f32>(&dev, rung, &t, &y, d, &w, g, &want, shape).unwrap();
                let a64 = check_general::<f64>(&dev, rung, &t, &y, d, &w, g, &want, shape).unwrap();
                w32 = w32.max(a32.err_over_peak);
                w64 = w64.max(a64.err_over_peak);
            }
        }
    }
    println!("gpu floating-mean rungs against astropy: f32 {w32:.2e}, f64 {w64:.2e}");
}

#[test]
fn gpu_batch_matches_astropy_and_the_reference() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    small_batch_matches_astropy(&dev, "gpu");
    let g = General::default();
    // A survey-like batch: 500 ragged curves over 1000 days, 2000 frequencies.
    let batch = lomb::survey_batch(500, 250, 350, 1000.0, false, 5);
    let w = lomb::material_freqs(2000);
    let p = lomb::batch_periodogram::<f32>(&dev, &batch, &w, g).unwrap();
    let idx: Vec<usize> = (0..2000).collect();
    let mut worst = 0f64;
    for c in [0, 123, 499] {
        let want = lomb::batch_reference(&batch, &w, g, c, &idx).unwrap();
        let got: Vec<f64> = p[c * 2000..(c + 1) * 2000]
            .iter()
            .map(|v| *v as f64)
            .collect();
        worst = worst.max(err_over_peak(&got, &want));
    }
    println!("gpu survey batch f32: {worst:.2e}");
    assert!(worst <= 1e-4, "{worst:e}");
}

/// `lomb_row_peaks` on awkward rows (NaN and infinities, ties whose first
/// index must win, a row with no finite value, widths that are not
/// multiples of the warp, a row count that is not a multiple of the block's
/// four), on the simulator and the GPU where there is one, in f32 and f64;
/// and `batch_peaks` gives the batch periodograms' argmax.
#[test]
fn row_peaks_are_each_rows_first_highest_finite_value() {
    let mut devs = vec![Device::sim()];
    devs.extend(ptxlab::runtime::testing::gpu_or_skip());
    let mut rng = ptxlab::rng::SplitMix64(77);
    for dev in &devs {
        for (rows, width) in [(1usize, 1usize), (5, 33), (7, 100), (9, 1000)] {
            let mut p: Vec<f64> = (0..rows * width).map(|_| rng.uniform(-1.0, 1.0)).collect();
            for (r, row) in p.chunks_mut(width).enumerate() {
                match r % 4 {
                    // A tie: the first of the two maxima wins.
                    0 if width > 3 => {
                        row[width / 3] = 5.0;
                        row[width - 1] = 5.0;
                    }
                    // Non-finite values above every finite one are skipped.
                    1 => {
                        row[0] = f64::NAN;
                        row[width - 1] = f64::INFINITY;
                    }
                    // No finite value at all.
                    2 => row.fill(f64::NAN),
                    _ => {}
                }
            }
            let want = lomb::host_row_peaks(&p, rows, width);
            let got64 = lomb::device_row_peaks(dev, &dev.upload(&p).unwrap(), rows, width).unwrap();
            let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
            let want32 = lomb::host_row_peaks(
                &p32.iter().map(|&v| v as f64).collect::<Vec<_>>(),
                rows,
                width,
            );
            let got32 =
                lomb::device_row_peaks(dev, &dev.upload(&p32).unwrap(), rows, width).unwrap();
            let same = |a: &[f64], b: &[f64]| {
                a.iter()
                    .zip(b)
                    .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
            };
            assert!(
                same(&got64, &want),
                "{} f64 {rows}x{width}: {got64:?} vs {want:?}",
                dev.name()
            );
            assert!(same(&got32, &want32), "{} f32 {rows}x{width}", dev.name());
        }
        // Wrong sizes are errors, not reads past the end.
        let buf = dev.upload(&[1.0f64; 10]).unwrap();
        let e = lomb::device_row_peaks(dev, &buf, 3, 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("10 values for 3 rows of 4"), "{e}");
        // The batch's peaks are its periodograms' argmax.
        let batch = small_batch("batch_small.npz");
        let w: Vec<f64> = (0..200).map(|k| 0.1 + 0.05 * k as f64).collect();
        let g = General::default();
        let p = lomb::batch_periodogram::<f64>(dev, &batch, &w, g).unwrap();
        let got = lomb::batch_peaks::<f64>(dev, &batch, &w, g).unwrap();
        assert_eq!(got, lomb::host_row_peaks(&p, 3, 200), "{}", dev.name());
    }
}
