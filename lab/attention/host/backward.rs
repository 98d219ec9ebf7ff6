//! The backward pass: [`Backward`] launches the three kernels of
//! [`kernels_gpu::attention::backward`] (`Delta` and a zeroed `dQ`
//! accumulator, the main kernel per key tile, `dQ` rounded), and the
//! checks of its gradients against the f64 [`grad_reference`].
//!
//! # The bounds
//! As in the forward's (`check.rs`), the reference is computed in f64 from
//! the rounded inputs, so only the kernels' own rounding counts. `dV =
//! P^T dO` rounds each `P` to the 16-bit type before the product and
//! each result once: at most about `2u` in the norm (`u` the unit
//! roundoff), held to `4u` as the forward's `O`. `dK` and `dQ` are
//! products of `dS = P (dP - Delta)` rounded to the 16-bit type (`u`),
//! with `P` recomputed from the forward's f32 `lse` and `Delta` taken from
//! the forward's rounded `O` (an absolute error of about `2u |dO| |O|` per
//! row, small against `dP` for any input whose values do not all agree),
//! and the result rounded once more: about `3u` to `4u` in the norm, held
//! to `8u` (3.1e-2 BF16, 3.9e-3 FP16). The f32 accumulations (and `dQ`'s
//! atomics, whose order varies) add about `2^-24` per term: negligible.
//! The same relative error by norm is measured on torch's gradients at the
//! same inputs (`peers/attention.py`), the figure to compare with.

use super::cpu::{GradReference, POISON_16, check_inputs, grad_reference, round_checked, widen};
use super::launch::{Inputs, Plan, check_len};
use super::packed::Packed;
use super::types::{Precision, Rung, Shape};
use kernels_gpu::attention::backward as bw;
use kernels_gpu::attention::backward_hopper as bw2;
use kernels_gpu::attention::backward_wide as bww;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::rng::rel_err_norm;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, ModuleKey};
use ptxlab_device::Dim3;
use ptxlab_device::mma::{Bf16, F16, Half16};
use std::marker::PhantomData;

/// The FLOPs of one backward pass by FlashAttention's convention: 2.5 times
/// the forward's (five products of the size of the forward's two halves,
/// `Q K^T`, `dO V^T`, `P^T dO`, `dS^T Q`, `dS K`, against the forward's
/// `Q K^T` and `P V`), halved for causal as the forward's.
pub fn backward_flops(shape: &Shape) -> f64 {
    2.5 * shape.flops()
}

/// The main kernel of the backward pass: rung 1 (`mma.sync`, any GPU from
/// sm_80) or rung 2 (`wgmma`, sm_90). The first and last kernels are
/// shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BwdRung {
    /// `attn_bwd`: FlashAttention-2's algorithm on `mma.sync` and `ldmatrix`.
    Mma,
    /// `attn_bwd_wgmma` (and `attn_bwd_wide` at `D = 256`): the same
    /// algorithm with every product on `wgmma` (sm_90a module).
    Wgmma,
}

impl BwdRung {
    /// Both rungs, in ladder order.
    pub const ALL: [BwdRung; 2] = [BwdRung::Mma, BwdRung::Wgmma];

    /// The label of its rows in reports.
    pub fn label(self) -> &'static str {
        match self {
            BwdRung::Mma => "backward 1 FA2 algorithm, mma.sync, dQ atomics",
            BwdRung::Wgmma => "backward 2 wgmma, dS^T tile read transposed, dQ atomics",
        }
    }

    /// The forward rung whose `--variant` name selects it with `--backward`
    /// (`fa2` for rung 1, `wgmma` for rung 2).
    pub fn variant(self) -> Rung {
        match self {
            BwdRung::Mma => Rung::Fa2,
            BwdRung::Wgmma => Rung::Wgmma,
        }
    }

    /// Whether `dev` runs it: rung 2 needs an sm_90 GPU (or the simulator).
    pub fn runs_on(self, dev: &Device) -> bool {
        match self {
            BwdRung::Mma => true,
            BwdRung::Wgmma => dev
                .as_gpu()
                .is_none_or(|g| g.info().compute_capability.0 == 9),
        }
    }

    /// Whether it is built for head dimension `d`: rung 1 for 64 and 128,
    /// rung 2 for 256 as well (rung 1's warp of 16 keys would hold 256
    /// accumulators of `dK` and `dV` a thread).
    pub fn takes(self, d: usize) -> bool {
        match self {
            BwdRung::Mma => matches!(d, 64 | 128),
            BwdRung::Wgmma => matches!(d, 64 | 128 | BWD_WIDE_D),
        }
    }

    /// The rungs that `dev` runs at head dimension `d`, in ladder order.
    pub fn all_on(dev: &Device, d: usize) -> impl Iterator<Item = BwdRung> + '_ {
        BwdRung::ALL
            .into_iter()
            .filter(move |r| r.runs_on(dev) && r.takes(d))
    }

    /// The fastest rung that `dev` runs: rung 2 on sm_90 and the
    /// simulator, rung 1 elsewhere.
    pub fn best(dev: &Device) -> BwdRung {
        if BwdRung::Wgmma.runs_on(dev) {
            BwdRung::Wgmma
        } else {
            BwdRung::Mma
        }
    }
}

/// The size label of a backward row: the forward's with " backward" (so
/// the report never pairs a backward row with a forward one).
pub fn backward_label(shape: &Shape) -> String {
    format!("{} backward", shape.label())
}

/// The head dimension of the backward's rung-2-only kernel
/// (`attn_bwd_wide`).
pub const BWD_WIDE_D: usize = bww::BWD_WIDE_D;

/// The forward rung that writes the log-sum-exp the backward pass reads:
/// rung 2 (fa2, any GPU) at head dims 64 and 128; at 256, where rung 2 is
/// not built, rung 5 (ws-skip) when causal, rung 4 (ws) when not, and
/// rung 1 (split) with a window (which rungs 4-5 do not take).
pub fn lse_forward(shape: &Shape) -> Rung {
    match (shape.d, shape.window.is_some(), shape.causal) {
        (BWD_WIDE_D, true, _) => Rung::Split,
        (BWD_WIDE_D, false, true) => Rung::WsSkip,
        (BWD_WIDE_D, false, false) => Rung::Ws,
        _ => Rung::Fa2,
    }
}

/// Why the backward pass cannot take `shape`, if it cannot.
pub fn backward_refuses(shape: &Shape) -> Option<String> {
    if !BwdRung::ALL.iter().any(|r| r.takes(shape.d)) {
        return Some(format!(
            "not for this shape: the backward pass is built for head dims 64, 128 and 256 (D = {})",
            shape.d
        ));
    }
    if shape.bh() > super::types::MAX_HEADS {
        return Some(format!(
            "not for this shape: {} heads; at most {} (the head is the launch grid's y)",
            shape.bh(),
            super::types::MAX_HEADS
        ));
    }
    None
}

/// The gradients on the device, 16-bit bits of the working precision.
pub struct Grads {
    /// `dL/dQ`, `bh x sq x d`.
    pub dq: Buffer<u16>,
    /// `dL/dK`, `bh_kv x skv x d` (with grouped heads, summed over each
    /// `K`/`V` head's query heads).
    pub dk: Buffer<u16>,
    /// `dL/dV`, `bh_kv x skv x d`.
    pub dv: Buffer<u16>,
}

impl Grads {
    /// Gradient buffers for `shape`, filled with the poison (NaN).
    pub fn poisoned(dev: &Device, shape: &Shape) -> Result<Self> {
        Self::poisoned_lens(dev, shape.q_len(), shape.kv_len())
    }

    /// Poisoned gradient buffers of `dQ`'s and `dK`'s element counts (a
    /// packed batch's: [`Packed::q_len`], [`Packed::kv_len`]).
    pub fn poisoned_lens(dev: &Device, q_len: usize, kv_len: usize) -> Result<Self> {
        Ok(Self {
            dq: dev.alloc_filled(q_len, POISON_16)?,
            dk: dev.alloc_filled(kv_len, POISON_16)?,
            dv: dev.alloc_filled(kv_len, POISON_16)?,
        })
    }

    /// [`grad_errors`] of these gradients (downloaded from `dev`) against
    /// `refr`; the outer error is the download's, the inner one says which
    /// value is wrong.
    pub fn errors(
        &self,
        dev: &Device,
        shape: &Shape,
        prec: Precision,
        refr: &GradReference,
    ) -> Result<std::result::Result<GradErrors, String>> {
        Ok(grad_errors(
            shape,
            prec,
            refr,
            &dev.download(&self.dq)?,
            &dev.download(&self.dk)?,
            &dev.download(&self.dv)?,
        ))
    }
}

/// One backward pass, ready to launch: the checked shape (dense, or a
/// packed batch) and the scratch (`Delta` per query row, the f32 `dQ`
/// accumulator, the packed offsets or a stand-in).
pub struct Backward {
    rung: BwdRung,
    prec: Precision,
    shape: Shape,
    packed: Option<Packed>,
    offsets: Buffer<u32>,
    delta: Buffer<f32>,
    dq_acc: Buffer<f32>,
}

impl Backward {
    /// Checks the shape (the error says "not for this shape: ..." when the
    /// kernels do not take it) and allocates the scratch.
    pub fn new(dev: &Device, prec: Precision, shape: Shape) -> Result<Self> {
        if let Some(why) = backward_refuses(&shape) {
            return Err(Error::input("--backward", why));
        }
        let rung = BwdRung::best(dev);
        if !rung.takes(shape.d) {
            return Err(Error::input(
                "--backward",
                format!(
                    "not on this device: at D = {} the backward pass runs on rung 2 (wgmma), which \
                     needs an sm_90 GPU; this device is {}",
                    shape.d,
                    dev.name()
                ),
            ));
        }
        Ok(Self {
            rung,
            prec,
            shape,
            packed: None,
            offsets: dev.alloc_filled(1, 0u32)?,
            delta: dev.alloc_filled(shape.bh() * shape.sq, 0f32)?,
            dq_acc: dev.alloc_filled(shape.q_len(), 0f32)?,
        })
    }

    /// The backward pass of a packed variable-length batch (the `PACKED`
    /// instances of `attn_bwd`; `lse`, `Delta` and the gradients in the
    /// packed layouts of [`Packed`]).
    pub fn packed(dev: &Device, prec: Precision, p: Packed) -> Result<Self> {
        let shape = *p.base();
        if let Some(why) = backward_refuses(&shape) {
            return Err(Error::input("--backward", why));
        }
        if shape.d == BWD_WIDE_D {
            return Err(Error::input(
                "--backward",
                format!(
                    "not for this shape: the backward pass of packed batches is built for head dims \
                     64 and 128 (D = {BWD_WIDE_D} is dense only)"
                ),
            ));
        }
        Ok(Self {
            rung: BwdRung::best(dev),
            prec,
            shape,
            offsets: dev.upload(&p.offsets())?,
            delta: dev.alloc_filled(p.lse_len(), 0f32)?,
            dq_acc: dev.alloc_filled(p.q_len(), 0f32)?,
            packed: Some(p),
        })
    }

    /// The same pass on the main kernel of `rung` ([`BwdRung::best`] of the
    /// device by default); an error when the device cannot run it.
    pub fn with_rung(mut self, dev: &Device, rung: BwdRung) -> Result<Self> {
        if !rung.takes(self.shape.d) {
            return Err(Error::input(
                format!("--variant {}", rung.variant().name()),
                format!(
                    "{} is built for head dims 64 and 128 (D = {}); leave out --variant or give \
                     --variant wgmma",
                    rung.label(),
                    self.shape.d
                ),
            ));
        }
        if !rung.runs_on(dev) {
            return Err(Error::input(
                format!("--variant {}", rung.variant().name()),
                format!(
                    "{} needs an sm_90 GPU (wgmma); this device is {}: leave out --variant or \
                     give --variant fa2",
                    rung.label(),
                    dev.name()
                ),
            ));
        }
        self.rung = rung;
        Ok(self)
    }

    /// The rung of its main kernel.
    pub fn rung(&self) -> BwdRung {
        self.rung
    }

    /// Elements of `Q` (`O`, `dO`, `dQ`), of `K` (`V`, `dK`, `dV`) and of
    /// `lse`.
    fn lens(&self) -> (usize, usize, usize) {
        let sh = &self.shape;
        match &self.packed {
            Some(p) => (p.q_len(), p.kv_len(), p.lse_len()),
            None => (sh.q_len(), sh.kv_len(), sh.bh() * sh.sq),
        }
    }

    /// Runs the backward pass from the forward's inputs `x`, output `o`,
    /// log-sum-exp `lse` and the output gradient `dout` into `g`.
    pub fn run(
        &mut self,
        dev: &Device,
        x: &Inputs,
        o: &Buffer<u16>,
        lse: &Buffer<f32>,
        dout: &Buffer<u16>,
        g: &mut Grads,
    ) -> Result<()> {
        let sh = self.shape;
        let (ql, kl, ll) = self.lens();
        for (what, got, want) in [
            ("Q", x.q.len(), ql),
            ("K", x.k.len(), kl),
            ("V", x.v.len(), kl),
            ("O", o.len(), ql),
            ("dO", dout.len(), ql),
            ("lse", lse.len(), ll),
            ("dQ", g.dq.len(), ql),
            ("dK", g.dk.len(), kl),
            ("dV", g.dv.len(), kl),
        ] {
            check_len(what, got, want)?;
        }
        // Backward::new refused other head dims: the rest is D = 256.
        let main: MainLaunch = match (self.prec, sh.d) {
            (Precision::Bf16, 64) => Kernels::<Bf16>::main::<64>,
            (Precision::Bf16, 128) => Kernels::<Bf16>::main::<128>,
            (Precision::Bf16, _) => Kernels::<Bf16>::wide,
            (Precision::F16, 64) => Kernels::<F16>::main::<64>,
            (Precision::F16, 128) => Kernels::<F16>::main::<128>,
            (Precision::F16, _) => Kernels::<F16>::wide,
        };
        match self.prec {
            Precision::Bf16 => Kernels::<Bf16>::run(self, dev, x, o, lse, dout, g, main),
            Precision::F16 => Kernels::<F16>::run(self, dev, x, o, lse, dout, g, main),
        }
    }
}

/// The backward kernels for one `H`: the only place they are named.
struct Kernels<H>(PhantomData<H>);

/// The main kernel's launch: `Kernels::main::<D>` or `Kernels::wide`.
type MainLaunch =
    fn(&mut Backward, &Device, &Inputs, &Buffer<f32>, &Buffer<u16>, &mut Grads) -> Result<()>;

impl<H: Half16 + bw::attn_bwd_pre::Built + bw::attn_bwd_dq::Built + bww::attn_bwd_wide::Built>
    Kernels<H>
{
    /// The three kernels, the middle one launched by `main`.
    #[allow(
        clippy::too_many_arguments,
        reason = "the buffers of one pass, and the main kernel that takes them"
    )]
    fn run(
        b: &mut Backward,
        dev: &Device,
        x: &Inputs,
        o: &Buffer<u16>,
        lse: &Buffer<f32>,
        dout: &Buffer<u16>,
        g: &mut Grads,
        main: MainLaunch,
    ) -> Result<()> {
        let sh = b.shape;
        let (q_len, _, rows) = b.lens();
        let pre = cfg(
            Dim3::x(rows.div_ceil(bw::PRE_ROWS as usize) as u32),
            bw::BWD_THREADS,
            0,
        );
        launch!(
            dev,
            pre,
            attention::backward::attn_bwd_pre::<H>(
                o,
                dout,
                &mut b.delta,
                &mut b.dq_acc,
                rows as u32,
                sh.d as u32
            )
        )?;
        main(b, dev, x, lse, dout, g)?;
        let pairs = q_len / 2;
        let blocks = pairs
            .div_ceil(bw::BWD_THREADS as usize)
            .min(bw::DQ_MAX_BLOCKS as usize);
        launch!(
            dev,
            cfg(Dim3::x(blocks as u32), bw::BWD_THREADS, 0),
            attention::backward::attn_bwd_dq::<H>(&b.dq_acc, &mut g.dq, sh.scale as f32)
        )
    }

    /// The main kernel of `b`'s rung at `D` = 64 or 128.
    fn main<const D: usize>(
        b: &mut Backward,
        dev: &Device,
        x: &Inputs,
        lse: &Buffer<f32>,
        dout: &Buffer<u16>,
        g: &mut Grads,
    ) -> Result<()>
    where
        bw::attn_bwd::Of<H, D, false>: bw::attn_bwd::Instance,
        bw::attn_bwd::Of<H, D, true>: bw::attn_bwd::Instance,
        bw2::attn_bwd_wgmma::Of<H, D, false>: bw2::attn_bwd_wgmma::Instance,
        bw2::attn_bwd_wgmma::Of<H, D, true>: bw2::attn_bwd_wgmma::Instance,
    {
        let sh = b.shape;
        // One row of blocks per K/V head; each walks its group's query heads
        // (packed: per K/V head of a token and per sequence, the longest
        // sequence's key tiles).
        let tiles = sh.skv.div_ceil(bw::BWD_BN) as u32;
        let grid = match &b.packed {
            Some(p) => Dim3::new(tiles, sh.kv_heads as u32, p.batch() as u32),
            None => Dim3::xy(tiles, sh.bh_kv() as u32),
        };
        let main = match b.rung {
            BwdRung::Mma => cfg(grid, bw::BWD_MAIN_THREADS, bw::bwd_shared_bytes(D)),
            BwdRung::Wgmma => cfg(grid, bw2::BWD2_THREADS, bw2::bwd2_shared_bytes(D)),
        };
        let ks = sh.kernel_shape();
        let (delta, dq_acc, offsets) = (&b.delta, &mut b.dq_acc, &b.offsets);
        let (dk, dv) = (&mut g.dk, &mut g.dv);
        // One launch per (rung, packed): the two kernels take the same
        // arguments.
        macro_rules! main {
            ($($path:ident)::+, $packed:literal) => {
                launch!(
                    dev,
                    main,
                    $($path)::+::<H, D, $packed>(
                        &x.q, &x.k, &x.v, dout, lse, delta, dq_acc, dk, dv, offsets, ks
                    )
                )
            };
        }
        match (b.rung, b.packed.is_some()) {
            (BwdRung::Mma, true) => main!(attention::backward::attn_bwd, true),
            (BwdRung::Mma, false) => main!(attention::backward::attn_bwd, false),
            (BwdRung::Wgmma, true) => main!(attention::backward_hopper::attn_bwd_wgmma, true),
            (BwdRung::Wgmma, false) => main!(attention::backward_hopper::attn_bwd_wgmma, false),
        }
    }

    /// The main kernel at `D = 256` (rung 2 only, dense only: `Backward`
    /// refused the rest): 64 keys a block.
    fn wide(
        b: &mut Backward,
        dev: &Device,
        x: &Inputs,
        lse: &Buffer<f32>,
        dout: &Buffer<u16>,
        g: &mut Grads,
    ) -> Result<()> {
        let sh = b.shape;
        let grid = Dim3::xy(sh.skv.div_ceil(bww::BWD_WIDE_BN) as u32, sh.bh_kv() as u32);
        launch!(
            dev,
            cfg(grid, bww::BWD_WIDE_THREADS, bww::bwd_wide_shared_bytes()),
            attention::backward_wide::attn_bwd_wide::<H>(
                &x.q,
                &x.k,
                &x.v,
                dout,
                lse,
                &b.delta,
                &mut b.dq_acc,
                &mut g.dk,
                &mut g.dv,
                sh.kernel_shape()
            )
        )
    }
}

/// A launch of `threads` threads a block over `grid` with `shared_bytes`
/// of dynamic shared memory, no cluster.
fn cfg(grid: Dim3, threads: u32, shared_bytes: usize) -> LaunchConfig {
    LaunchConfig {
        grid,
        block: Dim3::x(threads),
        shared_bytes,
        module: ModuleKey::default(),
        cluster: None,
    }
}

/// The PTX entry of `rung`'s main backward kernel for `prec` and `d`,
/// dense or for packed batches.
pub fn backward_entry(
    rung: BwdRung,
    prec: Precision,
    d: usize,
    packed: bool,
) -> Option<&'static str> {
    fn of<H: Half16, const D: usize>(rung: BwdRung, packed: bool) -> &'static str
    where
        bw::attn_bwd::Of<H, D, false>: bw::attn_bwd::Instance,
        bw::attn_bwd::Of<H, D, true>: bw::attn_bwd::Instance,
        bw2::attn_bwd_wgmma::Of<H, D, false>: bw2::attn_bwd_wgmma::Instance,
        bw2::attn_bwd_wgmma::Of<H, D, true>: bw2::attn_bwd_wgmma::Instance,
    {
        use bw::attn_bwd::Instance as _;
        use bw2::attn_bwd_wgmma::Instance as _;
        match (rung, packed) {
            (BwdRung::Mma, true) => bw::attn_bwd::Of::<H, D, true>::ENTRY,
            (BwdRung::Mma, false) => bw::attn_bwd::Of::<H, D, false>::ENTRY,
            (BwdRung::Wgmma, true) => bw2::attn_bwd_wgmma::Of::<H, D, true>::ENTRY,
            (BwdRung::Wgmma, false) => bw2::attn_bwd_wgmma::Of::<H, D, false>::ENTRY,
        }
    }
    Some(match (prec, d) {
        (_, BWD_WIDE_D) if rung == BwdRung::Mma || packed => return None,
        (Precision::Bf16, BWD_WIDE_D) => <Bf16 as bww::attn_bwd_wide::Built>::ENTRY,
        (Precision::F16, BWD_WIDE_D) => <F16 as bww::attn_bwd_wide::Built>::ENTRY,
        (Precision::Bf16, 64) => of::<Bf16, 64>(rung, packed),
        (Precision::Bf16, 128) => of::<Bf16, 128>(rung, packed),
        (Precision::F16, 64) => of::<F16, 64>(rung, packed),
        (Precision::F16, 128) => of::<F16, 128>(rung, packed),
        _ => return None,
    })
}

/// The relative error by norm of each gradient.
#[derive(Debug, Clone, Copy)]
pub struct GradErrors {
    /// `||dQ - ref|| / ||ref||`.
    pub dq: f64,
    /// The same for `dK`.
    pub dk: f64,
    /// The same for `dV`.
    pub dv: f64,
}

/// The bounds on [`GradErrors`] in `prec` (module docs): `(dQ and dK, dV)`.
pub fn grad_bounds(prec: Precision) -> (f64, f64) {
    let u = prec.unit_roundoff();
    (8.0 * u, 4.0 * u)
}

/// The errors of the gradients (all heads' bits) on the reference's heads
/// (`dQ` on its query heads, `dK` and `dV` on its `K`/`V` heads); a value
/// never written (the poison) or not finite is an error naming it.
pub fn grad_errors(
    shape: &Shape,
    prec: Precision,
    refr: &GradReference,
    dq: &[u16],
    dk: &[u16],
    dv: &[u16],
) -> std::result::Result<GradErrors, String> {
    let d = shape.d;
    let pick = |name: &str, bits: &[u16], heads: &[usize], rows: usize, want: &[f64]| {
        let mut got = Vec::with_capacity(want.len());
        for &h in heads {
            for r in 0..rows {
                for c in 0..d {
                    let v = prec.value(bits[(h * rows + r) * d + c]);
                    if !v.is_finite() {
                        return Err(format!(
                            "{name}[head {h}, row {r}, col {c}] is {v} (never written, or overflow)"
                        ));
                    }
                    got.push(v as f64);
                }
            }
        }
        Ok(rel_err_norm(&got, want))
    };
    Ok(GradErrors {
        dq: pick("dQ", dq, &refr.heads, shape.sq, &refr.dq)?,
        dk: pick("dK", dk, &refr.kv_heads, shape.skv, &refr.dk)?,
        dv: pick("dV", dv, &refr.kv_heads, shape.skv, &refr.dv)?,
    })
}

/// `Ok` when `e` is within the bounds (module docs), else the verification
/// error naming `what`.
pub fn verify_grads(what: &str, prec: Precision, e: &GradErrors) -> Result<()> {
    let (b, bv) = grad_bounds(prec);
    if !(e.dq <= b) || !(e.dk <= b) || !(e.dv <= bv) {
        return Err(Error::Verification {
            what: what.into(),
            detail: format!(
                "relative errors dQ {:.2e}, dK {:.2e} (bound {b:.1e}), dV {:.2e} (bound {bv:.1e})",
                e.dq, e.dk, e.dv
            ),
        });
    }
    Ok(())
}

/// The inputs of a backward check: those of the forward's check, and an
/// output gradient from hash tensor `3 seed + 3`.
pub fn grad_inputs(shape: &Shape, prec: Precision, seed: u64) -> Result<[Vec<u16>; 4]> {
    let [q, k, v] = check_inputs(shape, prec, seed, 2.0)?;
    let g = round_checked(
        prec,
        "dO",
        &super::cpu::generated(3 * seed + 3, shape.q_len()),
    )?;
    Ok([q, k, v, g])
}

/// [`check_backward_on`] with the device's best rung ([`BwdRung::best`]).
pub fn check_backward(
    dev: &Device,
    prec: Precision,
    shape: &Shape,
    seed: u64,
) -> Result<GradErrors> {
    check_backward_on(dev, BwdRung::best(dev), prec, shape, seed)
}

/// [`check_backward_on`] with every rung that `dev` runs at `shape`'s head
/// dimension, in ladder order.
pub fn check_backward_rungs(dev: &Device, prec: Precision, shape: &Shape, seed: u64) -> Result<()> {
    for rung in BwdRung::all_on(dev, shape.d) {
        check_backward_on(dev, rung, prec, shape, seed)?;
    }
    Ok(())
}

/// The forward ([`lse_forward`], which writes the log-sum-exp) then the
/// backward on `shape` with `rung`'s main kernel, gradients poisoned
/// first, against the f64 reference on every head; returns the errors after
/// [`verify_grads`].
pub fn check_backward_on(
    dev: &Device,
    rung: BwdRung,
    prec: Precision,
    shape: &Shape,
    seed: u64,
) -> Result<GradErrors> {
    let [q, k, v, g] = grad_inputs(shape, prec, seed)?;
    let x = Inputs::upload(dev, shape, &q, &k, &v)?;
    let heads: Vec<usize> = (0..shape.bh()).collect();
    let refr = grad_reference(
        shape,
        &widen(prec, &q),
        &widen(prec, &k),
        &widen(prec, &v),
        &widen(prec, &g),
        &heads,
    );
    let dout = dev.upload(&g)?;
    let mut o = dev.alloc_filled(shape.q_len(), POISON_16)?;
    let mut lse = dev.alloc_filled(shape.bh() * shape.sq, f32::NAN)?;
    Plan::new(dev, lse_forward(shape), prec, *shape, &x)?.run(dev, &mut o, Some(&mut lse))?;
    let mut grads = Grads::poisoned(dev, shape)?;
    Backward::new(dev, prec, *shape)?
        .with_rung(dev, rung)?
        .run(dev, &x, &o, &lse, &dout, &mut grads)?;
    let what = format!(
        "attention {} {} {}",
        rung.label(),
        prec.name(),
        shape.label()
    );
    let e = grads
        .errors(dev, shape, prec, &refr)?
        .map_err(|detail| Error::Verification {
            what: what.clone(),
            detail,
        })?;
    verify_grads(&what, prec, &e)?;
    Ok(e)
}
