//! FP8 conversions on a device: the launchers of `kernels_gpu::fp8` and the
//! check that the device's conversions (PTX `cvt` on a GPU, the software
//! ones in the simulator) agree bit for bit with the device layer's
//! software conversions ([`ptxlab_device::fp8`]).
//!
//! The kernels need FP8 `cvt` (sm_89+) and live in the `sm_90a` module: on
//! a GPU other than sm_90 the launch is refused with that reason.

use kernels_gpu::fp8::BLOCK;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::rng::SplitMix64;
use ptxlab_common::runtime::{Device, LaunchConfig};
use ptxlab_device::fp8::{E4m3, E5m2};

/// What [`convert`] returns: each input rounded to both formats, and the
/// exact values of the results.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The inputs rounded to E4M3.
    pub e4m3: Vec<E4m3>,
    /// The inputs rounded to E5M2.
    pub e5m2: Vec<E5m2>,
    /// `e4m3` widened back to f32.
    pub back_e4m3: Vec<f32>,
    /// `e5m2` widened back to f32.
    pub back_e5m2: Vec<f32>,
}

/// Rounds `x` to E4M3 and E5M2 on `dev` and widens the results back
/// (`kernels_gpu::fp8::fp8_convert`, two values per thread; an odd length
/// is padded with one zero, which is dropped from the results).
pub fn convert(dev: &Device, x: &[f32]) -> Result<Converted> {
    if x.is_empty() {
        return Err(Error::input(
            "fp8 convert input",
            "0 values; give at least one",
        ));
    }
    let pairs = x.len().div_ceil(2);
    let mut padded = x.to_vec();
    padded.resize(2 * pairs, 0.0);
    let xd = dev.upload(&padded)?;
    let mut e4 = dev.alloc_filled(pairs, 0u16)?;
    let mut e5 = dev.alloc_filled(pairs, 0u16)?;
    let mut b4 = dev.alloc_filled(2 * pairs, f32::NAN)?;
    let mut b5 = dev.alloc_filled(2 * pairs, f32::NAN)?;
    let cfg = LaunchConfig::for_threads(pairs, BLOCK)?;
    launch!(
        dev,
        cfg,
        fp8::fp8_convert(&xd, &mut e4, &mut e5, &mut b4, &mut b5)
    )?;
    let bytes = |v: Vec<u16>| -> Vec<u8> {
        let mut b: Vec<u8> = v.iter().flat_map(|p| p.to_le_bytes()).collect();
        b.truncate(x.len());
        b
    };
    let mut back_e4m3 = dev.download(&b4)?;
    let mut back_e5m2 = dev.download(&b5)?;
    back_e4m3.truncate(x.len());
    back_e5m2.truncate(x.len());
    Ok(Converted {
        e4m3: bytes(dev.download(&e4)?)
            .into_iter()
            .map(E4m3::from_bits)
            .collect(),
        e5m2: bytes(dev.download(&e5)?)
            .into_iter()
            .map(E5m2::from_bits)
            .collect(),
        back_e4m3,
        back_e5m2,
    })
}

/// The f32 values of all 256 codes on `dev`, read as E4M3 and as E5M2
/// (`kernels_gpu::fp8::fp8_decode`): element `c` of each is code `c`.
pub fn decode_all(dev: &Device) -> Result<(Vec<f32>, Vec<f32>)> {
    let codes: Vec<u16> = (0..128u16).map(|i| (2 * i) | (2 * i + 1) << 8).collect();
    let cd = dev.upload(&codes)?;
    let mut e4 = dev.alloc_filled(256, f32::NAN)?;
    let mut e5 = dev.alloc_filled(256, f32::NAN)?;
    let cfg = LaunchConfig::for_threads(codes.len(), BLOCK)?;
    launch!(dev, cfg, fp8::fp8_decode(&cd, &mut e4, &mut e5))?;
    Ok((dev.download(&e4)?, dev.download(&e5)?))
}

/// Inputs that exercise every path of the FP8 conversions: every value of
/// both formats, the midpoints between neighbours (the ties) and the f32
/// values next to them, the saturation thresholds, zeros, infinities,
/// NaNs with several payloads and both signs, f32 subnormals, then
/// `random` values from `seed` (half uniform over all f32 bit patterns,
/// half log-uniform over the FP8 ranges, both signs).
pub fn test_values(random: usize, seed: u64) -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::from_bits(0x007f_ffff),
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0xffc0_1234),
        f32::from_bits(0x7fbf_ffff),
    ];
    let mut values = Vec::new();
    for c in 0..=255u8 {
        for y in [
            E4m3::from_bits(c).to_f32_soft(),
            E5m2::from_bits(c).to_f32_soft(),
        ] {
            if y.is_finite() {
                values.push(y);
            }
        }
    }
    // The positive values of each format, sorted, with the first value past
    // the largest (which `.satfinite` clamps): 480 and 61440.
    for (max, next) in [(448.0f32, 480.0f32), (57344.0, 61440.0)] {
        let mut pos: Vec<f32> = values
            .iter()
            .copied()
            .filter(|y| *y >= 0.0 && *y <= max)
            .collect();
        pos.sort_by(f32::total_cmp);
        pos.dedup();
        pos.push(next);
        for w in pos.windows(2) {
            let mid = (w[0] + w[1]) / 2.0;
            for m in [mid, mid.next_down(), mid.next_up()] {
                v.extend([m, -m]);
            }
        }
    }
    v.extend(values.iter().flat_map(|y| [*y, y.next_up(), y.next_down()]));
    let mut rng = SplitMix64(seed);
    for i in 0..random {
        let r = rng.next_u64();
        if i % 2 == 0 {
            v.push(f32::from_bits(r as u32));
        } else {
            // |x| = 2^e with e uniform in [-20, 17): subnormals of both
            // formats up to past E5M2's saturation.
            let e = rng.uniform(-20.0, 17.0);
            let s = if r >> 63 == 1 { -1.0 } else { 1.0 };
            v.push((s * e.exp2()) as f32);
        }
    }
    v
}

/// Checks the device's conversions of `x` and of all 256 codes against
/// [`E4m3::from_f32_soft`], [`E4m3::to_f32_soft`] and their E5M2 twins,
/// bit for bit (NaN bits included). The error gives the count and the
/// first difference of each kind (decoding, rounding to either format, the
/// round trip), with the device's result and the expected one.
pub fn check(dev: &Device, x: &[f32]) -> Result<()> {
    let mut bad: Vec<(&str, String)> = Vec::new();
    let (d4, d5) = decode_all(dev)?;
    for c in 0..=255u8 {
        let (w4, w5) = (
            E4m3::from_bits(c).to_f32_soft(),
            E5m2::from_bits(c).to_f32_soft(),
        );
        if d4[c as usize].to_bits() != w4.to_bits() {
            bad.push((
                "e4m3 decode",
                format!(
                    "e4m3 code {c:#04x} decodes to {:#010x}, expected {:#010x}",
                    d4[c as usize].to_bits(),
                    w4.to_bits()
                ),
            ));
        }
        if d5[c as usize].to_bits() != w5.to_bits() {
            bad.push((
                "e5m2 decode",
                format!(
                    "e5m2 code {c:#04x} decodes to {:#010x}, expected {:#010x}",
                    d5[c as usize].to_bits(),
                    w5.to_bits()
                ),
            ));
        }
    }
    let got = convert(dev, x)?;
    for (i, &xi) in x.iter().enumerate() {
        let (w4, w5) = (E4m3::from_f32_soft(xi), E5m2::from_f32_soft(xi));
        if got.e4m3[i] != w4 {
            bad.push((
                "e4m3 encode",
                format!(
                    "e4m3 of {xi:e} ({:#010x}) is {:#04x}, expected {:#04x}",
                    xi.to_bits(),
                    got.e4m3[i].to_bits(),
                    w4.to_bits()
                ),
            ));
        }
        if got.e5m2[i] != w5 {
            bad.push((
                "e5m2 encode",
                format!(
                    "e5m2 of {xi:e} ({:#010x}) is {:#04x}, expected {:#04x}",
                    xi.to_bits(),
                    got.e5m2[i].to_bits(),
                    w5.to_bits()
                ),
            ));
        }
        let (b4, b5) = (w4.to_f32_soft(), w5.to_f32_soft());
        if got.back_e4m3[i].to_bits() != b4.to_bits() || got.back_e5m2[i].to_bits() != b5.to_bits()
        {
            bad.push((
                "round trip",
                format!(
                "the round trip of {xi:e} ({:#010x}) gives {:#010x} (e4m3) and {:#010x} (e5m2), \
                 expected {:#010x} and {:#010x}",
                xi.to_bits(),
                got.back_e4m3[i].to_bits(),
                got.back_e5m2[i].to_bits(),
                b4.to_bits(),
                b5.to_bits()
            )));
        }
    }
    if bad.is_empty() {
        return Ok(());
    }
    // The first difference of each kind.
    let (mut kinds, mut shown) = (Vec::new(), Vec::new());
    for (kind, line) in &bad {
        if !kinds.contains(kind) {
            kinds.push(*kind);
            shown.push(line.as_str());
        }
    }
    Err(Error::Verification {
        what: format!("FP8 conversions on {}", dev.name()),
        detail: format!(
            "{} of {} results differ from the software conversion; the first of each kind: {}",
            bad.len(),
            2 * 256 + 3 * x.len(),
            shown.join("; ")
        ),
    })
}

/// The simulator's check of the FP8 kernels (for `tests/coverage.rs`):
/// [`check`] on [`test_values`] with 2000 random values.
pub fn sim_check() -> Result<()> {
    check(&Device::sim(), &test_values(2000, 0xf8))
}
