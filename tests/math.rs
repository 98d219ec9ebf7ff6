//! The math functions of `Real` (`ptxlab_device::precise`): every function
//! in f32 and f64 against a binary128 reference over 100 000 points
//! (special values, thresholds, tiny and huge arguments; see
//! `mathcheck::points`), with the largest error asserted per function;
//! the `math_eval` kernel on the simulator; on a GPU, the kernel's results
//! bit for bit against the same code on the CPU; the PTX of the kernel
//! (no local memory, no calls); bad input to the measurement.
#![feature(f128)]
// Checks are written `!(err <= bound)` on purpose: a NaN error must fail them.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use ptxlab::runtime::Device;
use ptxlab::workloads::mathcheck::{self, Ty, bound, funcs, measure, measure_all};

/// Points per function and type in CI (the GPU table uses 1e6 and more).
const POINTS: usize = 100_000;

#[test]
fn pure_rust_functions_are_within_their_bounds() {
    let mut report = Vec::new();
    let mut bad = Vec::new();
    for f in funcs() {
        for ty in [Ty::F32, Ty::F64] {
            let m = match ty {
                Ty::F32 => measure::<f32>(None, f, POINTS, 11),
                Ty::F64 => measure::<f64>(None, f, POINTS, 11),
            }
            .unwrap();
            let w = m.cpu;
            report.push(format!("{} {}: {:.3} ulp", f.name, ty.name(), w.ulp));
            if !(w.ulp <= bound(f, ty)) {
                bad.push(format!(
                    "{} {}: {} ulp (bound {}) at ({:e}, {:e}): {:e}, reference {:e}",
                    f.name,
                    ty.name(),
                    w.ulp,
                    bound(f, ty),
                    w.x,
                    w.y,
                    w.got,
                    w.want
                ));
            }
        }
    }
    println!("{}", report.join("\n"));
    assert!(bad.is_empty(), "beyond the bound:\n{}", bad.join("\n"));
}

#[test]
fn simulator_runs_every_function() {
    // The kernel on the simulator (the host's std functions) and the pure
    // Rust code, on 4099 points per function and type.
    mathcheck::sim_check().unwrap();
}

#[test]
fn the_reference_is_binary128_and_the_ulp_measure_is_exact() {
    use mathcheck::ulp_error;
    // 1 + 2^-52 is 1 ulp above 1 in f64, half an ulp (rounded away) in f32.
    let want = 1.0f64 as f128;
    assert_eq!(ulp_error(Ty::F64, 1.0 + f64::EPSILON, want), 1.0);
    assert_eq!(ulp_error(Ty::F64, 1.0, want), 0.0);
    assert_eq!(ulp_error(Ty::F32, 1.0 + f32::EPSILON as f64, want), 1.0);
    // Below 1 the spacing halves.
    let w = 0.75f64 as f128;
    assert_eq!(ulp_error(Ty::F64, 0.75 - f64::EPSILON / 2.0, w), 1.0);
    assert_eq!(ulp_error(Ty::F64, 0.75 - f64::EPSILON, w), 2.0);
    // Subnormal spacing.
    let tiny = f64::from_bits(3);
    assert_eq!(ulp_error(Ty::F64, f64::from_bits(4), tiny as f128), 1.0);
    // Special values: exact or infinitely wrong.
    assert_eq!(ulp_error(Ty::F64, f64::NAN, f128::NAN), 0.0);
    assert_eq!(ulp_error(Ty::F64, 1.0, f128::NAN), f64::INFINITY);
    assert_eq!(ulp_error(Ty::F64, f64::INFINITY, f128::INFINITY), 0.0);
    // A value beyond f32's range rounds to infinity: infinity is exact.
    assert_eq!(ulp_error(Ty::F32, f64::INFINITY, 1e39_f128), 0.0);
    assert_eq!(
        ulp_error(Ty::F32, f32::MAX as f64, 1e39_f128),
        f64::INFINITY
    );
    // The reference itself: e to binary128's 113 bits (within 2 of its ulps).
    let e = mathcheck::reference(mathcheck::func("exp").unwrap(), 1.0, 0.0);
    assert!(
        (e - std::f128::consts::E).abs() <= 2.0 * f128::EPSILON,
        "binary128 exp(1)"
    );
}

#[test]
fn bad_input_is_rejected_with_the_allowed_values() {
    let e = measure_all(None, &["exq".into()], &[Ty::F32], 100, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("exq") && e.contains("exp, exp2"), "{e}");
    let dev = Device::sim();
    let x = dev.upload(&[1.0f32; 8]).unwrap();
    let y = dev.upload(&[1.0f32; 7]).unwrap();
    let n = dev.upload(&[2i32; 8]).unwrap();
    let mut out = dev.alloc_filled(8, 0.0f32).unwrap();
    let e = mathcheck::eval(&dev, "exp", &x, &y, &n, &mut out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("lengths") && e.contains("y 7"), "{e}");
    let e = mathcheck::eval(&dev, "gamma", &x, &x, &n, &mut out)
        .unwrap_err()
        .to_string();
    assert!(e.contains("gamma") && e.contains("erfc"), "{e}");
}

#[test]
fn cli_arguments_are_checked() {
    use mathcheck::{Args, Backend, Precision, cli};
    let args = |points, backend, with_sim| Args {
        backend,
        with_sim,
        n: points,
        precision: Precision::F32,
        functions: vec!["exp".into()],
        seed: 1,
        md: None,
        json: false,
    };
    let e = cli(&args(10, Backend::Cpu, false)).unwrap_err().to_string();
    assert!(e.contains("--n") && e.contains("64"), "{e}");
    let e = cli(&args(1000, Backend::Sim, true))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--with-sim") && e.contains("gpu"), "{e}");
    cli(&args(1000, Backend::Cpu, false)).unwrap();
}

#[test]
fn math_kernel_ptx_has_no_local_memory_or_calls() {
    // The functions inline into the kernel as straight-line code on
    // registers: no stack frame (local memory), no call.
    for (label, ptx) in [
        ("precise", ptxlab::modules::ptx(false)),
        ("fast", ptxlab::modules::ptx(true)),
    ] {
        for k in ["math_eval_f32", "math_eval_f64"] {
            let start = ptx
                .find(&format!(".entry {k}("))
                .unwrap_or_else(|| panic!("{label}: {k} not in the PTX"));
            let body = &ptx[start..];
            let body = &body[..body.find("// -- End function").unwrap_or(body.len())];
            assert!(!body.contains(".local"), "{label} {k}: local memory");
            assert!(
                !body.contains("call.uni") && !body.contains("call "),
                "{label} {k}: a call"
            );
        }
    }
}

#[test]
fn gpu_matches_the_cpu_bit_for_bit() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    let all = measure_all(Some(&dev), &[], &[Ty::F32, Ty::F64], POINTS, 13).unwrap();
    let mut bad = Vec::new();
    for m in &all {
        let d = m.device.unwrap();
        if m.differ != 0 || !(d.ulp <= bound(m.func, m.ty)) {
            bad.push(format!(
                "{} {}: {} results differ from the CPU; {} ulp at ({:e}, {:e})",
                m.func.name,
                m.ty.name(),
                m.differ,
                d.ulp,
                d.x,
                d.y
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
