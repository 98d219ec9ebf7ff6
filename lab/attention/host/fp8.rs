//! The FP8 forward pass (`ptxlab attention --fp8`): E4M3 `Q`, `K`, `V`
//! with one scale per tensor, on rungs 4 and 5's structure
//! ([`attention::fp8`](kernels_gpu::attention::fp8)); its error is
//! measured against the f64 reference of the dequantised inputs (the
//! values the codes stand for), so it says what the kernel loses, not
//! what quantising the inputs lost.

use super::check::{Errors, SIM_GQA_SHAPES, SIM_SHAPES};
use super::cpu::{POISON_16, all_rows, generated, reference};
use super::types::{Precision, Shape};
use kernels_gpu::attention::AttnShape;
use kernels_gpu::attention::fp8::{
    FP8_D, Fp8Out, VT_ALIGN, VT_KEYS, VT_THREADS, fp8_shared_bytes, vt_shared_bytes,
};
use kernels_gpu::attention::hopper::HP_BM;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, ModuleKey, TensorMap};
use ptxlab_device::Dim3;
use ptxlab_device::fp8::E4m3;
use ptxlab_device::hopper::Swizzle;
use ptxlab_matmul::{e4m3_scale, quantize_e4m3};

/// The FP8 forward's label in reports.
pub const FP8_LABEL: &str = "FP8 E4M3, per-tensor scales, rungs 4-5 structure";

/// The PTX entry of the FP8 kernel (`causal`: the tile-skipping instance).
pub fn fp8_entry(causal: bool) -> &'static str {
    use kernels_gpu::attention::fp8::attn_ws_fp8::{Instance, Of};
    if causal {
        <Of<E4m3, true> as Instance>::ENTRY
    } else {
        <Of<E4m3, false> as Instance>::ENTRY
    }
}

/// Words of one `Q`/`K`/`V` row (four codes a word).
const ROW_WORDS: usize = FP8_D / 4;

/// Why the FP8 forward cannot take `shape`, if it cannot.
pub fn fp8_refuses(shape: &Shape) -> Option<String> {
    if shape.d != FP8_D {
        return Some(format!(
            "not for this shape: the FP8 forward is built for D = {FP8_D} (D = {})",
            shape.d
        ));
    }
    if shape.window.is_some() {
        return Some("not for this problem: the FP8 forward does not take --window".into());
    }
    let rows = shape.bh() * shape.sq.max(shape.skv);
    if rows > i32::MAX as usize - HP_BM {
        return Some(format!(
            "not for this shape: TMA coordinates are 32-bit signed: heads x seq = {rows} rows"
        ));
    }
    None
}

/// The per-tensor scales: a value is its E4M3 code's value times the
/// tensor's scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fp8Scales {
    /// `Q`'s scale.
    pub q: f32,
    /// `K`'s scale.
    pub k: f32,
    /// `V`'s scale.
    pub v: f32,
}

impl Fp8Scales {
    /// Checks that each scale is a finite positive f32, naming the one
    /// that is not.
    pub fn check(&self) -> Result<()> {
        for (name, s) in [("Q", self.q), ("K", self.k), ("V", self.v)] {
            if !(s.is_finite() && s > 0.0) {
                return Err(Error::input(
                    "--fp8",
                    format!(
                        "the scale of {name} is {s:e}; a per-tensor scale must be a finite \
                         positive f32 (the value one unit of the E4M3 codes stands for)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// `Q`, `K`, `V` as E4M3 codes on the device (four codes a word, rows of
/// [`FP8_D`] codes), their scales, and `V^T`, the layout the kernel reads
/// `V` in (`bh_kv x D x ld` codes, `ld` the key count rounded up to 16,
/// keys permuted: [`attn_fp8_vt`](kernels_gpu::attention::fp8::attn_fp8_vt)),
/// made once from `V` when the inputs are uploaded, as an FP8 KV cache
/// would store it.
pub struct Fp8Inputs {
    q: Buffer<u32>,
    k: Buffer<u32>,
    v: Buffer<u32>,
    vt: Buffer<u32>,
    ld: usize,
    skv: usize,
    bh_kv: usize,
    scales: Fp8Scales,
}

/// Four codes a word, the first in the low byte.
fn words(codes: &[E4m3]) -> Vec<u32> {
    codes
        .chunks_exact(4)
        .map(|c| {
            u32::from_le_bytes([
                c[0].to_bits(),
                c[1].to_bits(),
                c[2].to_bits(),
                c[3].to_bits(),
            ])
        })
        .collect()
}

impl Fp8Inputs {
    /// Quantises `q`, `k`, `v` (f32 values of `shape`) to E4M3, each with
    /// its usual scale (largest magnitude / 448), and uploads them. Returns
    /// the inputs and the dequantised values (what the codes stand for:
    /// the f64 reference's inputs).
    pub fn quantize(
        dev: &Device,
        shape: &Shape,
        [q, k, v]: [&[f32]; 3],
    ) -> Result<(Self, [Vec<f32>; 3])> {
        if let Some(why) = fp8_refuses(shape) {
            return Err(Error::input("--fp8", why));
        }
        super::launch::check_len("Q", q.len(), shape.q_len())?;
        super::launch::check_len("K", k.len(), shape.kv_len())?;
        super::launch::check_len("V", v.len(), shape.kv_len())?;
        for (name, x) in [("Q", q), ("K", k), ("V", v)] {
            if let Some(i) = x.iter().position(|x| !x.is_finite()) {
                return Err(Error::input(
                    "--fp8",
                    format!("{name}[{i}] is {}; FP8 inputs must be finite", x[i]),
                ));
            }
        }
        let scales = Fp8Scales {
            q: e4m3_scale(q),
            k: e4m3_scale(k),
            v: e4m3_scale(v),
        };
        scales.check()?;
        let (cq, ck, cv) = (
            quantize_e4m3(q, scales.q),
            quantize_e4m3(k, scales.k),
            quantize_e4m3(v, scales.v),
        );
        let deq = |c: &[E4m3], s: f32| c.iter().map(|c| c.to_f32() * s).collect::<Vec<f32>>();
        let values = [deq(&cq, scales.q), deq(&ck, scales.k), deq(&cv, scales.v)];
        let ld = shape.skv.next_multiple_of(VT_ALIGN);
        let mut me = Self {
            q: dev.upload(&words(&cq))?,
            k: dev.upload(&words(&ck))?,
            v: dev.upload(&words(&cv))?,
            vt: dev.alloc_filled(shape.bh_kv() * FP8_D * ld / 4, u32::MAX)?,
            ld,
            skv: shape.skv,
            bh_kv: shape.bh_kv(),
            scales,
        };
        me.transpose_v(dev)?;
        Ok((me, values))
    }

    /// Writes `V^T` from `V` ([`attn_fp8_vt`](kernels_gpu::attention::fp8::attn_fp8_vt));
    /// done once by [`Fp8Inputs::quantize`], and again by whoever times it.
    pub fn transpose_v(&mut self, dev: &Device) -> Result<()> {
        let cfg = LaunchConfig {
            grid: Dim3::xy(self.ld.div_ceil(VT_KEYS) as u32, self.bh_kv as u32),
            block: Dim3::x(VT_THREADS),
            shared_bytes: vt_shared_bytes(),
            module: ModuleKey::default(),
            cluster: None,
        };
        let (skv, ld) = (self.skv as u32, self.ld as u32);
        launch!(
            dev,
            cfg,
            attention::fp8::attn_fp8_vt(&self.v, &mut self.vt, skv, ld)
        )
    }

    /// The scales the codes were made with.
    pub fn scales(&self) -> Fp8Scales {
        self.scales
    }
}

/// The FP8 forward pass of one shape on one set of inputs: its tensor
/// maps and launch shapes.
pub struct Fp8Plan<'a> {
    shape: Shape,
    x: &'a Fp8Inputs,
    /// The kernel's shape, `s_q s_k` folded into the scores' scale.
    kshape: AttnShape,
    maps: [TensorMap<'a>; 3],
    cfg: LaunchConfig,
    no_lse: Buffer<f32>,
}

impl<'a> Fp8Plan<'a> {
    /// Checks the shape ([`fp8_refuses`]) and makes the tensor maps: `Q`
    /// and `K` in boxes of 128 rows of 128 codes, `V^T` in boxes of 128
    /// `d` rows of 128 keys, all with the 128-byte swizzle.
    pub fn new(dev: &Device, shape: Shape, x: &'a Fp8Inputs) -> Result<Self> {
        if let Some(why) = fp8_refuses(&shape) {
            return Err(Error::input("--fp8", why));
        }
        if (x.skv, x.bh_kv) != (shape.skv, shape.bh_kv()) || x.q.len() * 4 != shape.q_len() {
            return Err(Error::input(
                "--fp8",
                format!("inputs quantised for another shape than {}", shape.label()),
            ));
        }
        // The scores' scale carries the scales of Q and K.
        let folded = Shape {
            scale: shape.scale * x.scales.q as f64 * x.scales.k as f64,
            ..shape
        };
        let kshape = folded.kernel_shape();
        if !(kshape.scale_log2.is_finite() && kshape.scale_log2 > 0.0) {
            return Err(Error::input(
                "--fp8",
                format!(
                    "scale x s_q x s_k = {:e} is not a positive finite f32",
                    folded.scale
                ),
            ));
        }
        let map = |b: &'a Buffer<u32>, rows: usize, cols: usize| {
            TensorMap::tiled_2d(dev, b, rows, cols, 128, 32, Swizzle::B128)
        };
        let (bh, bh_kv) = (shape.bh(), shape.bh_kv());
        let maps = [
            map(&x.q, bh * shape.sq, ROW_WORDS)?,
            map(&x.k, bh_kv * shape.skv, ROW_WORDS)?,
            map(&x.vt, bh_kv * FP8_D, x.ld / 4)?,
        ];
        let cfg = LaunchConfig {
            grid: Dim3::xy(shape.sq.div_ceil(HP_BM) as u32, bh as u32),
            block: Dim3::x(kernels_gpu::attention::hopper::WS_THREADS),
            shared_bytes: fp8_shared_bytes(),
            module: ModuleKey::default(),
            cluster: None,
        };
        Ok(Self {
            shape,
            x,
            kshape,
            maps,
            cfg,
            no_lse: dev.alloc_filled(1, 0f32)?,
        })
    }

    /// Runs the attention kernel (rung 5's tile skipping when causal): `O`
    /// as BF16 bits (`bh x sq x 128`) and, when given, the log-sum-exp.
    pub fn run(
        &mut self,
        dev: &Device,
        o: &mut Buffer<u16>,
        lse: Option<&mut Buffer<f32>>,
    ) -> Result<()> {
        let sh = self.shape;
        super::launch::check_len("O", o.len(), sh.q_len())?;
        if let Some(l) = &lse {
            super::launch::check_len("lse", l.len(), sh.bh() * sh.sq)?;
        }
        let kshape = self.kshape;
        let epi = Fp8Out {
            v_scale: self.x.scales.v,
            lse: lse.is_some() as u32,
        };
        let lse = match lse {
            Some(l) => l,
            None => &mut self.no_lse,
        };
        let [mq, mk, mv] = &self.maps;
        let (mq, mk, mv) = (mq.buffer(), mk.buffer(), mv.buffer());
        if sh.causal {
            launch!(
                dev,
                self.cfg,
                attention::fp8::attn_ws_fp8::<E4m3, true>(mq, mk, mv, o, lse, kshape, epi)
            )
        } else {
            launch!(
                dev,
                self.cfg,
                attention::fp8::attn_ws_fp8::<E4m3, false>(mq, mk, mv, o, lse, kshape, epi)
            )
        }
    }
}

/// The relative error bound (by norm) of the FP8 forward against the f64
/// reference of the dequantised inputs: each probability is rounded to
/// E4M3 for `P V` (relative error up to `2^-4`), `O` to BF16.
pub fn fp8_bound() -> f64 {
    2f64.powi(-4) + 4.0 * Precision::Bf16.unit_roundoff()
}

/// The log-sum-exp bound: the scores come from exact FP8 products added by
/// the tensor core with about 13 significant bits.
pub fn fp8_lse_bound(max_score: f64) -> f64 {
    2f64.powi(-10) * (1.0 + max_score)
}

/// Runs the FP8 forward on `q`, `k`, `v` (f32 values of `shape`) with the
/// output and log-sum-exp poisoned first, and measures it against the f64
/// reference of the dequantised inputs on `rows` (verified against
/// [`fp8_bound`]). Returns the errors and the quantised inputs (for the
/// caller to time on).
pub fn check_fp8(
    dev: &Device,
    shape: &Shape,
    inputs: [&[f32]; 3],
    rows: Vec<(usize, usize)>,
) -> Result<(Errors, Fp8Inputs)> {
    let (x, [dq, dk, dv]) = Fp8Inputs::quantize(dev, shape, inputs)?;
    let refr = reference(shape, &dq, &dk, &dv, rows);
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16)?;
    let mut lse = dev.alloc_filled(shape.bh() * shape.sq, f32::NAN)?;
    Fp8Plan::new(dev, *shape, &x)?.run(dev, &mut o, Some(&mut lse))?;
    let (got, got_lse) = (dev.download(&o)?, dev.download(&lse)?);
    let what = format!("attention FP8 {}", shape.label());
    let e = super::check::errors(shape, Precision::Bf16, &refr, &got, Some(&got_lse)).map_err(
        |detail| Error::Verification {
            what: what.clone(),
            detail,
        },
    )?;
    e.within(&what, fp8_bound(), fp8_lse_bound(refr.max_score))?;
    Ok((e, x))
}

/// The FP8 forward on the simulator: an odd shape of [`SIM_SHAPES`]
/// causal and not, and grouped heads of [`SIM_GQA_SHAPES`] causal, against
/// the f64 reference of the dequantised inputs (every row).
pub fn sim_check_fp8() -> Result<()> {
    let dev = Device::sim();
    let (b, h, sq, skv) = SIM_SHAPES[0];
    let (gb, gh, ghkv, gsq, gskv) = SIM_GQA_SHAPES[1];
    let shapes = [
        Shape::new(b, h, sq, skv, FP8_D, false, None)?,
        Shape::new(b, h, sq, skv, FP8_D, true, None)?,
        Shape::new(gb, gh, gsq, gskv, FP8_D, true, None)?.with_kv_heads(ghkv)?,
    ];
    for (i, shape) in shapes.iter().enumerate() {
        let seed = 40 + 3 * i as u64;
        let q = generated(seed, shape.q_len());
        let k = generated(seed + 1, shape.kv_len());
        let v = generated(seed + 2, shape.kv_len());
        check_fp8(&dev, shape, [&q, &k, &v], all_rows(shape))?;
    }
    Ok(())
}
