//! The types every other file of the workload stands on: the working
//! precision, the rungs of the ladder and the validated problem shape.

use kernels_gpu::attention::{AttnShape, fa2, hopper, wide};
use ptxlab_common::error::{Error, Result};
use ptxlab_device::mma::{Bf16, F16, Half16};

/// Workload name in reports.
pub const NAME: &str = "attention";

/// Largest number of heads (`batch x heads`): the kernels put the head in
/// the launch grid's y (or z) dimension.
pub const MAX_HEADS: usize = 65535;

/// The 16-bit input type (`--precision`): inputs and output in it, scores,
/// softmax and accumulation in f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    /// bfloat16 (8 significant bits, f32's range).
    Bf16,
    /// IEEE binary16 (11 significant bits, largest 65504).
    F16,
}

impl Precision {
    /// Both, BF16 first.
    pub const ALL: [Precision; 2] = [Precision::Bf16, Precision::F16];
    /// `bf16` / `f16`.
    pub fn name(&self) -> &'static str {
        match self {
            Precision::Bf16 => Bf16::NAME,
            Precision::F16 => F16::NAME,
        }
    }
    /// `x` rounded to nearest even, as bits.
    pub fn round(&self, x: f32) -> u16 {
        match self {
            Precision::Bf16 => Bf16::from_f32(x),
            Precision::F16 => F16::from_f32(x),
        }
    }
    /// The exact value of `bits`.
    pub fn value(&self, bits: u16) -> f32 {
        match self {
            Precision::Bf16 => Bf16::to_f32(bits),
            Precision::F16 => F16::to_f32(bits),
        }
    }
    /// The unit roundoff `u` (half a unit in the last place, relative):
    /// 2^-8 for BF16, 2^-11 for FP16.
    pub fn unit_roundoff(&self) -> f64 {
        match self {
            Precision::Bf16 => 2f64.powi(-8),
            Precision::F16 => 2f64.powi(-11),
        }
    }
}

/// The rungs of the ladder, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Rung {
    /// 1: `Q K^T` to memory (tensor GEMM rung 3d), row softmax, `P V`.
    Split,
    /// 2: one fused kernel, online softmax, `mma.sync` + `ldmatrix`.
    Fa2,
    /// 3: `wgmma`, TMA, an mbarrier pipeline (sm_90a).
    Wgmma,
    /// 4: warp-specialised, two consumer warpgroups taking turns (sm_90a).
    Ws,
    /// 5: rung 4 skipping the fully masked tiles of causal attention (sm_90a).
    #[value(name = "ws-skip")]
    WsSkip,
}

impl Rung {
    /// Every rung, in ladder order.
    pub const ALL: [Rung; 5] = [Rung::Split, Rung::Fa2, Rung::Wgmma, Rung::Ws, Rung::WsSkip];
    /// The `--variant` spelling.
    pub fn name(&self) -> String {
        ptxlab_common::cli::value_name(self)
    }
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            Rung::Split => "1 three kernels: GEMM (tc 3d), softmax, GEMM",
            Rung::Fa2 => "2 fused, online softmax, mma.sync + ldmatrix",
            Rung::Wgmma => "3 wgmma, TMA, mbarrier pipeline",
            Rung::Ws => "4 warp-specialised, 2 consumers ping-pong, softmax overlapped",
            Rung::WsSkip => "5 rung 4 + causal tile skipping",
        }
    }
    /// Whether the rung needs an sm_90 GPU (its kernels are in the sm_90a module).
    pub fn hopper(&self) -> bool {
        matches!(self, Rung::Wgmma | Rung::Ws | Rung::WsSkip)
    }
    /// Why the rung cannot take `shape` ("not for this shape: ..."), if it
    /// cannot.
    pub fn refuses(&self, shape: &Shape) -> Option<String> {
        let not = |why: String| Some(format!("not for this shape: {why}"));
        if *self == Rung::Split {
            if shape.d % 2 == 1 {
                return not(format!(
                    "rung 1 writes its 16-bit outputs in pairs and needs an even D (D = {})",
                    shape.d
                ));
            }
            if shape.bh() > MAX_HEADS {
                return not(format!(
                    "rung 1 transposes K with the heads in grid z ({} heads; at most {MAX_HEADS})",
                    shape.bh()
                ));
            }
            if shape.sq.saturating_mul(shape.skv) > SPLIT_MAX_SCORES {
                return not(format!(
                    "rung 1 keeps one head's {}x{} score matrix in memory; at most \
                     {SPLIT_MAX_SCORES} scores (4 GiB)",
                    shape.sq, shape.skv
                ));
            }
            return None;
        }
        let wide = matches!(self, Rung::Ws | Rung::WsSkip) && shape.d == wide::WIDE_D;
        if !matches!(shape.d, 64 | 128) && !wide {
            let also = if self.hopper() && *self != Rung::Wgmma {
                " and 256"
            } else {
                ""
            };
            return not(format!(
                "rung {} is built for head dims 64{also} and 128 (D = {}); rung 1 (split) takes \
                 any even D, rungs 4 and 5 (ws, ws-skip) also D = 256",
                self.number(),
                shape.d
            ));
        }
        if shape.bh() > MAX_HEADS {
            return not(format!(
                "{} heads; at most {MAX_HEADS} (the head is the launch grid's y)",
                shape.bh()
            ));
        }
        if self.hopper() {
            let rows = shape.bh() * shape.sq.max(shape.skv);
            if rows > i32::MAX as usize - hopper::HP_BM {
                return not(format!(
                    "TMA coordinates are 32-bit signed: heads x seq = {rows} rows; at most {}",
                    i32::MAX as usize - hopper::HP_BM
                ));
            }
        }
        if self.hopper() && shape.window.is_some() {
            return Some(format!(
                "not for this problem: rung {} does not take --window yet; rungs 1 (split) and \
                 2 (fa2) and the backward pass do",
                self.number()
            ));
        }
        if *self == Rung::WsSkip && !shape.causal {
            return Some(
                "not for this problem: rung 5 skips the masked tiles of causal attention; \
                 without --causal it is rung 4 (ws)"
                    .into(),
            );
        }
        None
    }
    /// The rung's number in the ladder (1..=5).
    pub fn number(&self) -> usize {
        Rung::ALL.iter().position(|r| r == self).unwrap_or(0) + 1
    }
    /// Threads of a block of the rung's fused kernel.
    pub fn threads(&self) -> u32 {
        match self {
            Rung::Split => kernels_gpu::attention::split::SOFTMAX_THREADS,
            Rung::Fa2 => fa2::FA2_THREADS,
            Rung::Wgmma => hopper::WGMMA_THREADS,
            Rung::Ws | Rung::WsSkip => hopper::WS_THREADS,
        }
    }
}

/// Most scores of one head that rung 1 keeps in memory (2^31: 4 GiB of
/// 16-bit values).
pub const SPLIT_MAX_SCORES: usize = 1 << 31;

/// A validated attention problem: `batch x heads` independent query
/// heads, `sq` queries and `skv` keys/values of `d` values each.
///
/// Grouped-query attention: `K` and `V` have `kv_heads` heads per batch
/// element (`H_kv`, dividing `heads`; `heads` itself without grouping, 1
/// for multi-query attention), and query head `h` reads `K`/`V` head
/// `h / (heads / kv_heads)`, as torch's `enable_gqa=True`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Batch size `B`.
    pub batch: usize,
    /// Query heads per batch element `H`.
    pub heads: usize,
    /// `K`/`V` heads per batch element `H_kv` (divides `heads`).
    pub kv_heads: usize,
    /// Query length.
    pub sq: usize,
    /// Key/value length.
    pub skv: usize,
    /// Head dimension.
    pub d: usize,
    /// torch's causal mask: query `i` sees keys `j <= i`.
    pub causal: bool,
    /// The sliding window `W` (local attention): query `i` sees keys
    /// `|i - j| < W` (with `causal`, `i - W < j <= i`); `None`: every key.
    /// Set by [`Shape::with_window`], which checks it.
    pub window: Option<usize>,
    /// The scale of the scores (default `1 / sqrt(d)`).
    pub scale: f64,
}

/// Largest head dimension accepted (rung 1 and the CPU take any up to it).
pub const MAX_DIM: usize = 1024;
/// Most elements of one of `Q`, `K`, `V` (indices stay well inside 32-bit
/// TMA coordinates and 64-bit products everywhere).
pub const MAX_ELEMENTS: usize = 1 << 32;

impl Shape {
    /// Checks the shape: every size at least 1 (`S = 0` has no softmax),
    /// `d` at most [`MAX_DIM`], at most [`MAX_HEADS`] heads, at most
    /// `MAX_ELEMENTS` per tensor, and a positive finite scale (default
    /// `1 / sqrt(d)`).
    pub fn new(
        batch: usize,
        heads: usize,
        sq: usize,
        skv: usize,
        d: usize,
        causal: bool,
        scale: Option<f64>,
    ) -> Result<Self> {
        for (flag, v) in [
            ("--batch", batch),
            ("--heads", heads),
            ("--seq", sq),
            ("--seq-kv", skv),
            ("--dim", d),
        ] {
            if v == 0 {
                return Err(Error::input(
                    flag,
                    "0; every size must be at least 1 (a softmax over no keys, or of no \
                     queries, is not defined)",
                ));
            }
        }
        if d > MAX_DIM {
            return Err(Error::input(
                "--dim",
                format!(
                    "{d}; allowed 1..={MAX_DIM} (rungs 2-5 take 64 and 128, rungs 4-5 also 256)"
                ),
            ));
        }
        let bh = batch.saturating_mul(heads);
        if bh > MAX_HEADS {
            return Err(Error::input(
                "--batch x --heads",
                format!("{batch} x {heads} = {bh} heads; at most {MAX_HEADS}"),
            ));
        }
        let big = bh.saturating_mul(sq.max(skv)).saturating_mul(d);
        if big > MAX_ELEMENTS {
            return Err(Error::input(
                "shape",
                format!(
                    "{bh} heads x {} rows x {d} = {big} elements per tensor; at most {MAX_ELEMENTS}",
                    sq.max(skv)
                ),
            ));
        }
        let scale = scale.unwrap_or(1.0 / (d as f64).sqrt());
        if !(scale.is_finite() && scale > 0.0 && (scale as f32) > 0.0 && (scale as f32).is_finite())
        {
            return Err(Error::input(
                "--scale",
                format!(
                    "{scale}; the scale must be a positive finite f32 (the kernels take the row \
                     maximum of the unscaled scores)"
                ),
            ));
        }
        Ok(Shape {
            batch,
            heads,
            kv_heads: heads,
            sq,
            skv,
            d,
            causal,
            window: None,
            scale,
        })
    }
    /// The shape with a sliding window of `window` keys (`--window`):
    /// query `i` sees keys `|i - j| < window`. At least 1, at most
    /// `u32::MAX`, and wide enough that every query row sees a key: rows
    /// `i >= Skv + W - 1` would see none, so with `Sq > Skv` the window
    /// must be at least `Sq - Skv + 1`.
    pub fn with_window(self, window: usize) -> Result<Self> {
        if window == 0 {
            return Err(Error::input(
                "--window",
                "0; a window of W lets query i see the keys j with |i - j| < W, so W must be \
                 at least 1 (1: each query sees only its own position)",
            ));
        }
        if window > u32::MAX as usize {
            return Err(Error::input(
                "--window",
                format!(
                    "{window}; at most {} (the kernels take it as a u32)",
                    u32::MAX
                ),
            ));
        }
        if self.sq > self.skv + window - 1 {
            return Err(Error::input(
                "--window",
                format!(
                    "{window} with Sq = {} and Skv = {}: query rows {}.. would see no key; \
                     with these lengths the window must be at least {}",
                    self.sq,
                    self.skv,
                    self.skv + window - 1,
                    self.sq - self.skv + 1
                ),
            ));
        }
        Ok(Shape {
            window: Some(window),
            ..self
        })
    }
    /// The keys query row `i` sees, `lo .. hi` (never empty for a shape
    /// that [`Shape::with_window`] accepted).
    pub fn keys(&self, i: usize) -> std::ops::Range<usize> {
        let w = self.window.unwrap_or(0);
        let lo = if w > 0 { i.saturating_sub(w - 1) } else { 0 };
        let hi = if self.causal {
            self.skv.min(i + 1)
        } else if w > 0 {
            self.skv.min(i + w)
        } else {
            self.skv
        };
        lo..hi.max(lo)
    }
    /// The shape with `kv_heads` `K`/`V` heads per batch element
    /// (`--kv-heads`): at least 1 and dividing `heads`.
    pub fn with_kv_heads(self, kv_heads: usize) -> Result<Self> {
        if kv_heads == 0 || !self.heads.is_multiple_of(kv_heads) {
            return Err(Error::input(
                "--kv-heads",
                format!(
                    "{kv_heads} with {} query heads; the K/V heads must divide the query heads \
                     (each K/V head serves heads / kv-heads query heads)",
                    self.heads
                ),
            ));
        }
        Ok(Shape { kv_heads, ..self })
    }
    /// Query heads in all (`batch x heads`).
    pub fn bh(&self) -> usize {
        self.batch * self.heads
    }
    /// `K`/`V` heads in all (`batch x kv_heads`).
    pub fn bh_kv(&self) -> usize {
        self.batch * self.kv_heads
    }
    /// Query heads per `K`/`V` head (`heads / kv_heads`; 1 without
    /// grouping): flat query head `i` reads flat `K`/`V` head `i / group`.
    pub fn group(&self) -> usize {
        self.heads / self.kv_heads
    }
    /// Elements of `Q` and `O`.
    pub fn q_len(&self) -> usize {
        self.bh() * self.sq * self.d
    }
    /// Elements of `K` and of `V`.
    pub fn kv_len(&self) -> usize {
        self.bh_kv() * self.skv * self.d
    }
    /// `scale log2(e)`, as the kernels take it.
    pub fn scale_log2(&self) -> f32 {
        (self.scale * std::f64::consts::LOG2_E) as f32
    }
    /// The shape as the fused forward rungs and the backward pass's main
    /// kernel take it (sizes that [`Shape::new`] bounded fit in `u32`).
    pub fn kernel_shape(&self) -> AttnShape {
        AttnShape::new(
            self.sq as u32,
            self.skv as u32,
            self.scale_log2(),
            self.scale as f32,
            self.causal,
            self.group() as u32,
            self.window.unwrap_or(0) as u32,
        )
    }
    /// FLOPs by the usual convention: `4 B H Sq Skv D` (two products),
    /// halved for causal; with a window, `4 B H D` times the query-key
    /// pairs inside the band, counted exactly.
    pub fn flops(&self) -> f64 {
        let per_pair = 4.0 * self.bh() as f64 * self.d as f64;
        if self.window.is_some() {
            let pairs: usize = (0..self.sq).map(|i| self.keys(i).len()).sum();
            return per_pair * pairs as f64;
        }
        let f = per_pair * self.sq as f64 * self.skv as f64;
        if self.causal { f / 2.0 } else { f }
    }
    /// `B=4 H=16 S=8192 D=128` (with `Hkv` and `Skv` when they differ, and
    /// `causal`).
    pub fn label(&self) -> String {
        let s = if self.sq == self.skv {
            format!("S={}", self.sq)
        } else {
            format!("Sq={} Skv={}", self.sq, self.skv)
        };
        let kv = if self.kv_heads == self.heads {
            String::new()
        } else {
            format!(" Hkv={}", self.kv_heads)
        };
        let window = match self.window {
            Some(w) => format!(" window={w}"),
            None => String::new(),
        };
        format!(
            "B={} H={}{kv} {s} D={}{}{window}",
            self.batch,
            self.heads,
            self.d,
            if self.causal { " causal" } else { "" }
        )
    }
}
