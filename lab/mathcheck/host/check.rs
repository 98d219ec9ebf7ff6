//! The measurement: each function over its points, on a device (GPU or
//! simulator) and as pure Rust on the CPU, against the binary128
//! reference; and the simulator check CI runs.

use super::launch::{MathElem, eval};
use super::reference::{Func, Ty, func, funcs, points, reference, ulp_error};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::runtime::Device;
use rayon::prelude::*;

/// The largest error of one evaluation of a function, and where.
#[derive(Debug, Clone, Copy, Default)]
pub struct Worst {
    /// Largest error, ulps (infinite: a wrong special value, NaN or
    /// infinity).
    pub ulp: f64,
    /// Its arguments.
    pub x: f64,
    /// The second argument (0 for unary functions).
    pub y: f64,
    /// The value computed there.
    pub got: f64,
    /// The reference there, rounded to f64.
    pub want: f64,
}

impl Worst {
    fn of(ty: Ty, pts: &[(f64, f64)], got: &[f64], want: &[f128]) -> Worst {
        let errs: Vec<f64> = got
            .par_iter()
            .zip(want.par_iter())
            .map(|(g, w)| ulp_error(ty, *g, *w))
            .collect();
        let mut best = Worst::default();
        for (i, e) in errs.iter().enumerate() {
            if *e > best.ulp || (i == 0 && best.ulp == 0.0) {
                best = Worst {
                    ulp: *e,
                    x: pts[i].0,
                    y: pts[i].1,
                    got: got[i],
                    want: want[i] as f64,
                };
            }
        }
        best
    }
}

/// One function in one type: the largest error of the pure-Rust code on
/// the CPU, and on the device if there was one.
#[derive(Debug, Clone)]
pub struct Measure {
    /// The function.
    pub func: Func,
    /// f32 or f64.
    pub ty: Ty,
    /// Points evaluated.
    pub points: usize,
    /// `ptxlab_device::precise` on the host.
    pub cpu: Worst,
    /// The kernel on the device (on the simulator: the host's `std`).
    pub device: Option<Worst>,
    /// Points where the device's result differs in any bit from the
    /// pure-Rust code on the CPU (NaNs compare equal).
    pub differ: usize,
}

/// Measures `func` in `T` over `n` points from `seed` (the special values
/// first), on `dev` if given.
pub fn measure<T: MathElem>(
    dev: Option<&Device>,
    func: Func,
    n: usize,
    seed: u64,
) -> Result<Measure> {
    let pts = points(func, T::TY, n, seed);
    let want: Vec<f128> = pts
        .par_iter()
        .map(|&(x, y)| reference(func, x, y))
        .collect();
    let f = T::precise(func.name).ok_or_else(|| {
        Error::input(
            "math function",
            format!("`{}` has no pure-Rust version", func.name),
        )
    })?;
    let xs: Vec<T> = pts.iter().map(|p| T::from_f64(p.0)).collect();
    let ys: Vec<T> = pts.iter().map(|p| T::from_f64(p.1)).collect();
    // powi's exponent: an i32 the points hold exactly in y.
    let ns: Vec<i32> = pts.iter().map(|p| p.1 as i32).collect();
    let cpu: Vec<f64> = (0..pts.len())
        .into_par_iter()
        .map(|i| f(xs[i], ys[i], ns[i]).to_f64())
        .collect();
    let (device, differ) = match dev {
        Some(dev) => {
            let (bx, by, bn) = (dev.upload(&xs)?, dev.upload(&ys)?, dev.upload(&ns)?);
            let mut out = dev.alloc_filled(pts.len(), T::from_f64(f64::NAN))?;
            eval(dev, func.name, &bx, &by, &bn, &mut out)?;
            let got: Vec<f64> = dev.download(&out)?.iter().map(|v| v.to_f64()).collect();
            let differ = got
                .iter()
                .zip(&cpu)
                .filter(|(g, c)| g.to_bits() != c.to_bits() && !(g.is_nan() && c.is_nan()))
                .count();
            (Some(Worst::of(T::TY, &pts, &got, &want)), differ)
        }
        None => (None, 0),
    };
    Ok(Measure {
        func,
        ty: T::TY,
        points: pts.len(),
        cpu: Worst::of(T::TY, &pts, &cpu, &want),
        device,
        differ,
    })
}

/// Measures every function (or those named) in the types given.
pub fn measure_all(
    dev: Option<&Device>,
    names: &[String],
    types: &[Ty],
    n: usize,
    seed: u64,
) -> Result<Vec<Measure>> {
    for name in names {
        if func(name).is_none() {
            return Err(Error::input(
                "--functions",
                format!(
                    "`{name}`; allowed: {}",
                    funcs().map(|f| f.name).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    let mut out = Vec::new();
    for f in funcs().filter(|f| names.is_empty() || names.iter().any(|n| n == f.name)) {
        for ty in types {
            out.push(match ty {
                Ty::F32 => measure::<f32>(dev, f, n, seed)?,
                Ty::F64 => measure::<f64>(dev, f, n, seed)?,
            });
        }
    }
    Ok(out)
}

/// The largest error the pure-Rust code may have, in ulps, per function
/// and type: what the tests assert (on the CPU, and on the GPU, where the
/// results are the same bits).
pub fn bound(func: Func, ty: Ty) -> f64 {
    // Measured (1e6 points per function, docs/book/src/math.md): below 0.9 ulp
    // everywhere except these, which reach 0.99 to 1.0.
    match (func.name, ty) {
        ("exp_m1", Ty::F32) | ("ln", Ty::F32) | ("powf", _) | ("powi", _) => 1.5,
        _ => 1.0,
    }
}

/// Every function on the simulator, 4099 points per type (special values
/// included): the kernel runs (the host's `std` functions there), and
/// its results must be within 16 ulps of the reference (the C library's
/// own errors reach 3.3 ulps, `docs/book/src/math.md`; a wrong function or a wrong
/// argument is off by far more), the special values exact. The pure-Rust
/// code is held to [`bound`] on the same points.
pub fn sim_check() -> Result<()> {
    let dev = Device::sim();
    let all = measure_all(Some(&dev), &[], &[Ty::F32, Ty::F64], 4099, 7)?;
    let mut bad = Vec::new();
    for m in &all {
        let d = m.device.expect("measured on the simulator");
        if !(d.ulp <= 16.0) {
            bad.push(format!(
                "{} {} on the simulator: {} ulps at ({:e}, {:e}): {:e} instead of {:e}",
                m.func.name,
                m.ty.name(),
                d.ulp,
                d.x,
                d.y,
                d.got,
                d.want
            ));
        }
        if !(m.cpu.ulp <= bound(m.func, m.ty)) {
            bad.push(format!(
                "{} {} (pure Rust): {} ulps at ({:e}, {:e}): {:e} instead of {:e}",
                m.func.name,
                m.ty.name(),
                m.cpu.ulp,
                m.cpu.x,
                m.cpu.y,
                m.cpu.got,
                m.cpu.want
            ));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(Error::Verification {
            what: "math functions".into(),
            detail: bad.join("\n"),
        })
    }
}

/// The measures as a Markdown table: the device's column (`device` names
/// it) and the bit comparison when there was a device, the CPU's always.
pub fn table(all: &[Measure], device: &str) -> String {
    let with_dev = all.iter().any(|m| m.device.is_some());
    let mut s = String::from("| function | type | points |");
    if with_dev {
        s.push_str(&format!(" max ulp, {device} |"));
    }
    s.push_str(" max ulp, pure Rust on the CPU |");
    if with_dev {
        s.push_str(" results that differ from the CPU's |");
    }
    s.push_str(" worst argument |\n|---|---|---|");
    s.push_str(if with_dev {
        "---|---|---|---|\n"
    } else {
        "---|---|\n"
    });
    for m in all {
        // The worst point of the device's results, else the CPU's.
        let w = m.device.unwrap_or(m.cpu);
        let worst = if w.ulp == 0.0 {
            "-".to_string()
        } else if m.func.binary {
            format!("({:e}, {:e})", w.x, w.y)
        } else {
            format!("{:e}", w.x)
        };
        s.push_str(&format!(
            "| {} | {} | {} |",
            m.func.name,
            m.ty.name(),
            m.points
        ));
        if let Some(d) = &m.device {
            s.push_str(&format!(" {} |", fmt_ulp(d.ulp)));
        }
        s.push_str(&format!(" {} |", fmt_ulp(m.cpu.ulp)));
        if with_dev {
            s.push_str(&format!(" {} |", m.differ));
        }
        s.push_str(&format!(" {worst} |\n"));
    }
    s
}

fn fmt_ulp(u: f64) -> String {
    if u.is_infinite() {
        "wrong special value".into()
    } else {
        format!("{u:.2}")
    }
}
