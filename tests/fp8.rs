//! FP8 (E4M3, E5M2) conversions: the device layer's software conversions
//! against an independent f64 reference written here (every code's value,
//! round trips, ties to even, saturation, NaN, subnormals, random f32s),
//! the conversion kernels on the simulator against the same reference,
//! and (when a driver is present) PTX's `cvt` on the GPU against the
//! software conversions, bit for bit, over all 256 codes and a million
//! random f32s.

use ptxlab::runtime::Device;
use ptxlab_device::fp8::{E4m3, E4m3x2, E5m2, E5m2x2};

/// One format as the reference sees it: mantissa bits, bias, infinities.
#[derive(Clone, Copy, Debug)]
struct Fmt {
    name: &'static str,
    man: u32,
    bias: i32,
    inf: bool,
}

const E4: Fmt = Fmt {
    name: "e4m3",
    man: 3,
    bias: 7,
    inf: false,
};
const E5: Fmt = Fmt {
    name: "e5m2",
    man: 2,
    bias: 15,
    inf: true,
};

/// What code `c` means, from the format's definition: `None` for a NaN.
fn ref_value(f: Fmt, c: u8) -> Option<f64> {
    let s = if c & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((c & 0x7f) >> f.man) as i32;
    let m = (c & ((1 << f.man) - 1)) as f64;
    let top = (1 << (7 - f.man)) - 1;
    let scale = (1u32 << f.man) as f64;
    if f.inf && e == top {
        return if m == 0.0 {
            Some(s * f64::INFINITY)
        } else {
            None
        };
    }
    if !f.inf && e == top && m == scale - 1.0 {
        return None;
    }
    Some(if e == 0 {
        s * m / scale * 2f64.powi(1 - f.bias)
    } else {
        s * (1.0 + m / scale) * 2f64.powi(e - f.bias)
    })
}

/// The largest finite value of `f`.
fn ref_max(f: Fmt) -> f64 {
    (0..128u8)
        .filter_map(|c| ref_value(f, c))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// `x` to `f` by search: the finite code nearest to `x` among those of its
/// sign (ties to the even code, that is the even mantissa), which is also
/// where a value past the largest finite one lands (`.satfinite`); every
/// NaN, of either sign and any payload, becomes the canonical `0x7f` (what
/// the H200's `cvt` does; `gpu_cvt_matches_the_software_conversion_bit_for_bit`
/// holds the software to it).
fn ref_encode(f: Fmt, x: f32) -> u8 {
    let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
    if x.is_nan() {
        return 0x7f;
    }
    // Past the largest finite value the nearest one is the largest (an
    // infinity has no nearest: it is clamped first).
    let a = (x as f64).abs().min(ref_max(f));
    let mut best = 0u8;
    let mut best_d = f64::INFINITY;
    for c in 0..128u8 {
        let Some(v) = ref_value(f, c) else { continue };
        if !v.is_finite() {
            continue;
        }
        let d = (v - a).abs();
        if d < best_d || (d == best_d && c % 2 == 0) {
            best = c;
            best_d = d;
        }
    }
    sign | best
}

fn soft_encode(f: Fmt, x: f32) -> u8 {
    if f.inf {
        E5m2::from_f32_soft(x).to_bits()
    } else {
        E4m3::from_f32_soft(x).to_bits()
    }
}

fn soft_decode(f: Fmt, c: u8) -> f32 {
    if f.inf {
        E5m2::from_bits(c).to_f32_soft()
    } else {
        E4m3::from_bits(c).to_f32_soft()
    }
}

#[test]
fn every_code_decodes_to_its_defined_value() {
    for f in [E4, E5] {
        let mut nans = 0;
        for c in 0..=255u8 {
            let got = soft_decode(f, c);
            match ref_value(f, c) {
                Some(v) => {
                    assert_eq!(got as f64, v, "{} {c:#04x}", f.name);
                    assert_eq!(got.is_sign_negative(), c & 0x80 != 0, "{} {c:#04x}", f.name);
                }
                None => {
                    assert!(got.is_nan(), "{} {c:#04x} is a NaN code", f.name);
                    nans += 1;
                }
            }
        }
        assert_eq!(nans, if f.inf { 6 } else { 2 }, "{}", f.name);
    }
    assert_eq!(ref_max(E4), 448.0);
    assert_eq!(ref_max(E5), 57344.0);
    assert_eq!(E4m3::MAX.to_f32() as f64, ref_max(E4));
    assert_eq!(E5m2::MAX.to_f32() as f64, ref_max(E5));
}

#[test]
fn every_value_round_trips() {
    for f in [E4, E5] {
        for c in 0..=255u8 {
            let Some(v) = ref_value(f, c) else { continue };
            if v.is_finite() {
                assert_eq!(soft_encode(f, v as f32), c, "{} {c:#04x} = {v}", f.name);
            }
        }
    }
    // f16 and bf16 hold every FP8 value exactly.
    let exact_in_f16 = |name: &str, c: u8, f16_bits: u16, value: f32| {
        let h = ptxlab_device::mma::f16_to_f32(f16_bits);
        assert_eq!(h.to_bits(), value.to_bits(), "{name} {c:#04x} as f16");
    };
    for c in 0..=255u8 {
        let (a, b) = (E4m3::from_bits(c), E5m2::from_bits(c));
        if !a.is_nan() {
            exact_in_f16("e4m3", c, a.to_f16_bits(), a.to_f32_soft());
            assert_eq!(E4m3::from_bf16_bits(a.to_bf16_bits()), a);
        }
        if !b.is_nan() {
            exact_in_f16("e5m2", c, b.to_f16_bits(), b.to_f32_soft());
        }
    }
}

#[test]
fn ties_go_to_the_even_code() {
    // Every midpoint between neighbouring positive values of each format,
    // and the f32 values either side of it.
    for f in [E4, E5] {
        let mut pos: Vec<(f64, u8)> = (0..128u8)
            .filter_map(|c| ref_value(f, c).map(|v| (v, c)))
            .filter(|(v, _)| v.is_finite())
            .collect();
        pos.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in pos.windows(2) {
            let ((lo, clo), (hi, chi)) = (w[0], w[1]);
            let mid = ((lo + hi) / 2.0) as f32;
            assert_eq!(mid as f64, (lo + hi) / 2.0, "midpoints are exact in f32");
            let even = if clo % 2 == 0 { clo } else { chi };
            assert_eq!(soft_encode(f, mid), even, "{} tie {mid:e}", f.name);
            assert_eq!(soft_encode(f, -mid), 0x80 | even, "{} tie -{mid:e}", f.name);
            assert_eq!(
                soft_encode(f, mid.next_down()),
                clo,
                "{} below {mid:e}",
                f.name
            );
            assert_eq!(
                soft_encode(f, mid.next_up()),
                chi,
                "{} above {mid:e}",
                f.name
            );
        }
    }
    // The examples a reader checks by hand.
    assert_eq!(E4m3::from_f32_soft(1.0625).to_bits(), 0x38); // 1 | 1.125: to 1
    assert_eq!(E4m3::from_f32_soft(1.1875).to_bits(), 0x3a); // 1.125 | 1.25: to 1.25
    assert_eq!(E5m2::from_f32_soft(1.125).to_bits(), 0x3c); // 1 | 1.25: to 1
    assert_eq!(E5m2::from_f32_soft(1.375).to_bits(), 0x3e); // 1.25 | 1.5: to 1.5
}

#[test]
fn values_past_the_largest_saturate() {
    for (f, max, code) in [(E4, 448.0f32, 0x7eu8), (E5, 57344.0, 0x7b)] {
        let past = [
            max,
            max.next_up(),
            max * 1.0625,
            max * 1.125,
            max * 2.0,
            1e30,
            f32::MAX,
            f32::INFINITY,
        ];
        for x in past {
            assert_eq!(soft_encode(f, x), code, "{} {x:e}", f.name);
            assert_eq!(soft_encode(f, -x), 0x80 | code, "{} -{x:e}", f.name);
            assert_eq!(ref_encode(f, x), code, "reference {} {x:e}", f.name);
        }
    }
}

#[test]
fn every_nan_becomes_the_canonical_nan() {
    // (f32 bits, E4M3 code, E5M2 code): sign and payload are dropped.
    for (bits, e4, e5) in [
        (0x7fc0_0000u32, 0x7fu8, 0x7fu8),
        (0xffc0_0000, 0x7f, 0x7f),
        (0x7f80_0001, 0x7f, 0x7f),
        (0xffbf_ffff, 0x7f, 0x7f),
        (0x7fff_ffff, 0x7f, 0x7f),
    ] {
        let x = f32::from_bits(bits);
        assert_eq!(E4m3::from_f32_soft(x).to_bits(), e4, "{bits:#010x}");
        assert_eq!(E5m2::from_f32_soft(x).to_bits(), e5, "{bits:#010x}");
        assert!(E4m3::from_bits(e4).is_nan() && E5m2::from_bits(e5).is_nan());
        assert_eq!((ref_encode(E4, x), ref_encode(E5, x)), (e4, e5));
        // Every NaN code widens to the canonical NaN, whatever its sign.
        assert_eq!(E4m3::from_bits(e4).to_f32_soft().to_bits(), 0x7fff_ffff);
        assert_eq!(E5m2::from_bits(e5).to_f32_soft().to_bits(), 0x7fff_ffff);
    }
}

#[test]
fn subnormals_round_in_units_of_the_smallest() {
    for (f, tiny) in [(E4, 2f32.powi(-9)), (E5, 2f32.powi(-16))] {
        // Codes 1..=(2^man - 1) are the subnormals: k units of `tiny`.
        for k in 1..(1u32 << f.man) {
            assert_eq!(
                soft_encode(f, k as f32 * tiny),
                k as u8,
                "{} {k} units",
                f.name
            );
            assert_eq!(soft_decode(f, k as u8), k as f32 * tiny);
        }
        // Half a unit is a tie with zero: to zero (even), just above to 1.
        let half = tiny / 2.0;
        assert_eq!(soft_encode(f, half), 0, "{}", f.name);
        assert_eq!(soft_encode(f, half.next_up()), 1, "{}", f.name);
        assert_eq!(
            soft_encode(f, -half),
            0x80,
            "{}: a zero keeps its sign",
            f.name
        );
        // 1.5 units is a tie between 1 and 2: to 2 (even).
        assert_eq!(soft_encode(f, 1.5 * tiny), 2, "{}", f.name);
        // f32 subnormals and zeros are far below: signed zeros.
        assert_eq!(soft_encode(f, f32::from_bits(1)), 0, "{}", f.name);
        assert_eq!(soft_encode(f, -f32::from_bits(0x007f_ffff)), 0x80);
        assert_eq!(soft_encode(f, -0.0), 0x80);
    }
}

#[test]
fn random_f32s_round_as_the_reference_rounds() {
    let values = ptxlab::fp8::test_values(200_000, 11);
    for f in [E4, E5] {
        for &x in &values {
            assert_eq!(
                soft_encode(f, x),
                ref_encode(f, x),
                "{} of {x:e} ({:#010x})",
                f.name,
                x.to_bits()
            );
        }
    }
}

#[test]
fn pairs_convert_as_two_singles() {
    let values = ptxlab::fp8::test_values(2000, 5);
    for w in values.chunks_exact(2) {
        let (lo, hi) = (w[0], w[1]);
        let p = E4m3x2::from_f32(lo, hi);
        assert_eq!((p.lo(), p.hi()), (E4m3::from_f32(lo), E4m3::from_f32(hi)));
        let q = E5m2x2::from_f32(lo, hi);
        assert_eq!((q.lo(), q.hi()), (E5m2::from_f32(lo), E5m2::from_f32(hi)));
        let (a, b) = p.to_f32();
        assert_eq!(
            (a.to_bits(), b.to_bits()),
            (p.lo().to_f32().to_bits(), p.hi().to_f32().to_bits())
        );
    }
}

/// The kernels on the simulator: every code decodes to its defined value,
/// and the conversions of the test values match the reference.
#[test]
fn kernels_on_the_simulator_match_the_reference() {
    let dev = Device::sim();
    let (d4, d5) = ptxlab::fp8::decode_all(&dev).unwrap();
    for c in 0..=255u8 {
        for (f, d) in [(E4, &d4), (E5, &d5)] {
            match ref_value(f, c) {
                Some(v) => assert_eq!(d[c as usize] as f64, v, "{} {c:#04x}", f.name),
                None => assert!(d[c as usize].is_nan(), "{} {c:#04x}", f.name),
            }
        }
    }
    let x = ptxlab::fp8::test_values(3001, 17);
    let got = ptxlab::fp8::convert(&dev, &x).unwrap();
    assert_eq!(got.e4m3.len(), x.len(), "an odd length comes back whole");
    for (i, &xi) in x.iter().enumerate() {
        assert_eq!(got.e4m3[i].to_bits(), ref_encode(E4, xi), "e4m3 of {xi:e}");
        assert_eq!(got.e5m2[i].to_bits(), ref_encode(E5, xi), "e5m2 of {xi:e}");
        for (f, back, c) in [
            (E4, got.back_e4m3[i], got.e4m3[i].to_bits()),
            (E5, got.back_e5m2[i], got.e5m2[i].to_bits()),
        ] {
            match ref_value(f, c) {
                Some(v) => assert_eq!(back as f64, v, "{} round trip of {xi:e}", f.name),
                None => assert!(back.is_nan()),
            }
        }
    }
    ptxlab::fp8::check(&dev, &x).unwrap();
}

#[test]
fn an_empty_input_is_refused_with_the_reason() {
    let e = ptxlab::fp8::convert(&Device::sim(), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("0 values") && e.contains("at least one"), "{e}");
}

/// PTX's `cvt` against the software conversions, bit for bit (NaNs
/// included): all 256 codes both ways, the tie and saturation values, and
/// a million random f32s. On a GPU other than sm_90 the kernels are
/// refused with the reason.
#[test]
fn gpu_cvt_matches_the_software_conversion_bit_for_bit() {
    let Some(dev) = ptxlab::runtime::testing::gpu_or_skip() else {
        return;
    };
    let hopper = dev.as_gpu().unwrap().info().compute_capability == (9, 0);
    let x = ptxlab::fp8::test_values(1_000_000, 0x5eed);
    let r = ptxlab::fp8::check(&dev, &x);
    if !hopper {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("sm_90a"), "{e}");
        return;
    }
    r.unwrap();
}
