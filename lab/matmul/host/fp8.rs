//! The FP8 GEMM's library API: `D = scale_a scale_b (A B)` with E4M3
//! inputs, per-tensor f32 scales, f32 accumulation and a BF16 output, on
//! [`matmul_fp8_ws`](kernels_gpu::hopper_fp8::matmul_fp8_ws) (sm_90a); and
//! the same with DeepGEMM's block scales ([`Fp8BlockScales`]: one per 1 x
//! 128 block of `A`, one per 128 x 128 block of `B`), on
//! [`matmul_fp8_ws_blockscaled`](kernels_gpu::hopper_fp8::matmul_fp8_ws_blockscaled)
//! ([`Fp8Plan::new_blockscaled`], [`gemm_fp8_blockscaled`]).
//!
//! Operand layout: `A` is `m x k` row-major; `B` is given as `B^T`, `n x
//! k` row-major (that is, `B` column-major, the layout `torch._scaled_mm`
//! takes for its second operand). FP8 `wgmma` reads both operands K-major
//! and has no transposed form, so the kernel needs `k` contiguous in both;
//! a caller holding a row-major `B` transposes it once ([`transpose_fp8`])
//! rather than at each product.
//!
//! Shapes: any `m`, `n` from 1; `k` a positive multiple of 16 (TMA reads
//! rows that start on 16-byte boundaries, one byte per value). Scales:
//! finite and positive, and so must their f32 product be (per tensor; per
//! block, every product of an `A` block's scale and a `B` block's scale of
//! the same k block). Everything else is refused with an error that says
//! what is allowed ([`Fp8Plan::new`], [`Fp8BlockScales::check`]).

use super::launch::{check_len, check_shapes};
use super::tensor::SIM_PERSISTENT_BLOCKS;
use kernels_gpu::hopper::GemmDims;
use kernels_gpu::hopper_fp8 as f;
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, ModuleKey, TensorMap};
use ptxlab_device::Dim3;
use ptxlab_device::fp8::E4m3;
use ptxlab_device::hopper::Swizzle;
use rayon::prelude::*;

/// The FP8 kernels (`--variant` with `--precision fp8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Fp8Kernel {
    /// E4M3 `wgmma`, warp-specialised producer/consumers, 128x256 tiles,
    /// persistent (sm_90a).
    Ws,
}

impl Fp8Kernel {
    /// Every kernel.
    pub const ALL: [Fp8Kernel; 1] = [Fp8Kernel::Ws];
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            Fp8Kernel::Ws => "FP8 e4m3 wgmma, warp-specialised, 128x256 tiles, persistent",
        }
    }
    /// The `--variant` spelling.
    pub fn name(&self) -> String {
        ptxlab_common::cli::value_name(self)
    }
    /// The PTX entry of the kernel (for the resource report).
    pub fn entry(&self) -> &'static str {
        self.entry_for(Fp8Scaling::Tensor)
    }
    /// The PTX entry of the kernel with `scaling`.
    pub fn entry_for(&self, scaling: Fp8Scaling) -> &'static str {
        use f::matmul_fp8_ws as w;
        use f::matmul_fp8_ws_blockscaled as b;
        match (self, scaling) {
            (Fp8Kernel::Ws, Fp8Scaling::Tensor) => <w::Of as w::Instance>::ENTRY,
            (Fp8Kernel::Ws, Fp8Scaling::Block) => <b::Of as b::Instance>::ENTRY,
        }
    }
    /// Label for reports, with the scaling (the per-tensor label is
    /// [`Fp8Kernel::label`]).
    pub fn label_for(&self, scaling: Fp8Scaling) -> String {
        match scaling {
            Fp8Scaling::Tensor => self.label().to_string(),
            Fp8Scaling::Block => {
                format!("{}, block scales 1x128 (A) and 128x128 (B)", self.label())
            }
        }
    }
}

/// `--scaling`: what the FP8 codes' scales cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Fp8Scaling {
    /// One f32 scale per tensor ([`Fp8Scales`]), applied at the store.
    #[default]
    Tensor,
    /// DeepGEMM's block scales ([`Fp8BlockScales`]): one per row of `A`
    /// and 128-deep block of `k`, one per 128 x 128 block of `B`; applied
    /// to each k block's partial sums.
    Block,
}

impl Fp8Scaling {
    /// The `--scaling` spelling.
    pub fn name(&self) -> String {
        ptxlab_common::cli::value_name(self)
    }
    /// The words the size text of a report row carries (so a block-scaled
    /// row is its own problem and meets only block-scaled peers): none for
    /// per-tensor scales.
    pub fn size_words(&self) -> &'static str {
        match self {
            Fp8Scaling::Tensor => "",
            Fp8Scaling::Block => " block-scaled",
        }
    }
}

/// The per-tensor scales of an FP8 product: `A`'s values are `scale_a`
/// times their E4M3 codes' values, `B`'s `scale_b` times theirs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fp8Scales {
    /// The scale of `A`.
    pub a: f32,
    /// The scale of `B`.
    pub b: f32,
}

impl Fp8Scales {
    /// Both scales 1.
    pub const ONE: Fp8Scales = Fp8Scales { a: 1.0, b: 1.0 };

    /// The factor the kernel applies, `scale_a scale_b` rounded to f32,
    /// after checking that each scale ([`check_scale`]) and the product are
    /// finite and positive.
    pub fn product(&self) -> Result<f32> {
        check_scale("scale_a", self.a)?;
        check_scale("scale_b", self.b)?;
        let p = self.a * self.b;
        if !(p.is_finite() && p >= f32::MIN_POSITIVE) {
            return Err(Error::input(
                "matmul fp8",
                format!(
                    "scale_a * scale_b = {:e} * {:e} = {p:e} is outside f32's normal range \
                     ({:e}..={:e}); choose scales whose product is",
                    self.a,
                    self.b,
                    f32::MIN_POSITIVE,
                    f32::MAX
                ),
            ));
        }
        Ok(p)
    }
}

/// Checks that the per-tensor scale `name` is a finite positive f32.
pub fn check_scale(name: &str, s: f32) -> Result<()> {
    if s.is_finite() && s > 0.0 {
        return Ok(());
    }
    Err(Error::input(
        "matmul fp8",
        format!(
            "{name} is {s:e}; a per-tensor scale must be a finite positive f32 (the value one \
             unit of the E4M3 codes stands for)"
        ),
    ))
}

/// DeepGEMM's block scales of one FP8 product `m x n x k`, on the host:
/// `A`'s values in row `i` and k block `kb` (columns `128 kb..128 kb +
/// 128`) are `a[i kb_count + kb]` times their E4M3 codes' values (`a` is
/// `m x ceil(k / 128)`, row-major); `B^T`'s in rows `128 jb..128 jb + 128`
/// and k block `kb` are `b[jb kb_count + kb]` times theirs (`b` is
/// `ceil(n / 128) x ceil(k / 128)`, row-major). `D[i, j] = sum over kb of
/// a[i, kb] b[j / 128, kb] (A B)_kb[i, j]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Fp8BlockScales {
    /// `A`'s scales, `m x ceil(k / 128)` row-major.
    pub a: Vec<f32>,
    /// `B`'s scales, `ceil(n / 128) x ceil(k / 128)` row-major.
    pub b: Vec<f32>,
}

impl Fp8BlockScales {
    /// The shapes of the scales of an `m x n x k` product: `A`'s `(m, kb)`
    /// and `B`'s `(ceil(n / 128), kb)`, `kb = ceil(k / 128)`.
    pub fn shapes(m: usize, n: usize, kk: usize) -> ((usize, usize), (usize, usize)) {
        let kb = kk.div_ceil(f::FP8_SCALE_BLOCK);
        ((m, kb), (n.div_ceil(f::FP8_SCALE_BLOCK), kb))
    }

    /// Every scale 1.
    pub fn ones(m: usize, n: usize, kk: usize) -> Self {
        let ((ra, ca), (rb, cb)) = Self::shapes(m, n, kk);
        Fp8BlockScales {
            a: vec![1.0; ra * ca],
            b: vec![1.0; rb * cb],
        }
    }

    /// The factor of `D[i, j]`'s k block `kb`: `a[i, kb] b[j / 128, kb]`
    /// (in f64, exactly).
    pub fn factor(&self, kk: usize, i: usize, j: usize, kb: usize) -> f64 {
        let kbs = kk.div_ceil(f::FP8_SCALE_BLOCK);
        self.a[i * kbs + kb] as f64 * self.b[(j / f::FP8_SCALE_BLOCK) * kbs + kb] as f64
    }

    /// Checks the scales of an `m x n x k` product: the shapes
    /// ([`Fp8BlockScales::shapes`]), every scale finite and positive (the
    /// error names the block), and for each k block every product of an
    /// `A` scale and a `B` scale inside f32's normal range (the kernel
    /// multiplies them in f32).
    pub fn check(&self, m: usize, n: usize, kk: usize) -> Result<()> {
        let ((ra, ca), (rb, cb)) = Self::shapes(m, n, kk);
        for (name, v, (r, c), what) in [
            (
                "A",
                &self.a,
                (ra, ca),
                "one per row of A and 128-deep block of k",
            ),
            (
                "B",
                &self.b,
                (rb, cb),
                "one per 128 x 128 block of B^T (n x k)",
            ),
        ] {
            if v.len() != r * c {
                return Err(Error::input(
                    "matmul fp8 block scales",
                    format!(
                        "{name}'s block scales have {} values; a {m}x{n}x{kk} product needs {r} x \
                         {c} = {} ({what})",
                        v.len(),
                        r * c
                    ),
                ));
            }
            if let Some(p) = v.iter().position(|s| !(s.is_finite() && *s > 0.0)) {
                let (row, kb) = (p / c, p % c);
                let place = if name == "A" {
                    format!("row {row}")
                } else {
                    format!(
                        "rows {}..{} of B^T",
                        row * f::FP8_SCALE_BLOCK,
                        ((row + 1) * f::FP8_SCALE_BLOCK).min(n)
                    )
                };
                return Err(Error::input(
                    "matmul fp8 block scales",
                    format!(
                        "{name}'s block scale [{row}, {kb}] ({place}, k {}..{}) is {:e}; every \
                         block scale must be a finite positive f32",
                        kb * f::FP8_SCALE_BLOCK,
                        ((kb + 1) * f::FP8_SCALE_BLOCK).min(kk),
                        v[p]
                    ),
                ));
            }
        }
        // Per k block, the extreme products of an A scale and a B scale.
        for kb in 0..ca {
            let col = |v: &[f32], rows: usize| {
                (0..rows).map(move |r| (r, v[r * ca + kb])).fold(
                    ((0, f32::INFINITY), (0, 0f32)),
                    |(lo, hi), (r, s)| {
                        (
                            if s < lo.1 { (r, s) } else { lo },
                            if s > hi.1 { (r, s) } else { hi },
                        )
                    },
                )
            };
            let ((alo, a_min), (ahi, a_max)) = col(&self.a, ra);
            let ((blo, b_min), (bhi, b_max)) = col(&self.b, rb);
            for ((ia, sa), (ib, sb)) in [((ahi, a_max), (bhi, b_max)), ((alo, a_min), (blo, b_min))]
            {
                let p = sa * sb;
                if !(p.is_finite() && p >= f32::MIN_POSITIVE) {
                    return Err(Error::input(
                        "matmul fp8 block scales",
                        format!(
                            "A's block scale [{ia}, {kb}] times B's [{ib}, {kb}] = {sa:e} * {sb:e} \
                             = {p:e} is outside f32's normal range ({:e}..={:e}); choose block \
                             scales whose products are",
                            f32::MIN_POSITIVE,
                            f32::MAX
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Block scales on the device, in the kernel's layout
/// ([`fp8_block_scale_dims`](kernels_gpu::hopper_fp8::fp8_block_scale_dims):
/// k-block-major, rows padded to 16 bytes), checked and made once for one
/// `m x n x k` and read by the plans of that shape.
pub struct Fp8BlockScaleBufs {
    sa: Buffer<f32>,
    sb: Buffer<f32>,
    shape: (usize, usize, usize),
}

impl Fp8BlockScaleBufs {
    /// Checks `scales` for `m x n x k` ([`Fp8BlockScales::check`]) and
    /// uploads them in the kernel's layout (padding 1, never read into a
    /// stored sum).
    pub fn new(
        dev: &Device,
        scales: &Fp8BlockScales,
        (m, n, kk): (usize, usize, usize),
    ) -> Result<Self> {
        scales.check(m, n, kk)?;
        let ((_, kb), (nb, _)) = Fp8BlockScales::shapes(m, n, kk);
        let (_, mp, np) = f::fp8_block_scale_dims(m, n, kk);
        let mut sa = vec![1f32; kb * mp];
        let mut sb = vec![1f32; kb * np];
        for k in 0..kb {
            for i in 0..m {
                sa[k * mp + i] = scales.a[i * kb + k];
            }
            for j in 0..nb {
                sb[k * np + j] = scales.b[j * kb + k];
            }
        }
        Ok(Self {
            sa: dev.upload(&sa)?,
            sb: dev.upload(&sb)?,
            shape: (m, n, kk),
        })
    }
}

/// Why the FP8 GEMM cannot take depth `k`, or `None` when it can: `k` must
/// be a multiple of 16 (the sides' other limits are [`check_shapes`]'s:
/// each at least 1 and at most `u32::MAX`).
pub fn fp8_shape_refusal(kk: usize) -> Option<String> {
    (!kk.is_multiple_of(16)).then(|| {
        format!(
            "the FP8 GEMM reads the rows of A and B^T (k = {kk} one-byte values each) through \
             TMA, which needs rows on 16-byte boundaries: k must be a multiple of 16 (pad A and \
             B^T with zero columns to {})",
            kk.next_multiple_of(16)
        )
    })
}

/// `B^T` (`n x k`, row-major) of a row-major `B` (`k x n`): the operand
/// layout of the FP8 GEMM.
pub fn transpose_fp8(b: &[E4m3], kk: usize, n: usize) -> Result<Vec<E4m3>> {
    check_len("B", b.len(), kk.saturating_mul(n))?;
    let mut t = vec![E4m3::ZERO; b.len()];
    t.par_chunks_mut(kk.max(1))
        .enumerate()
        .for_each(|(j, row)| {
            for (p, v) in row.iter_mut().enumerate() {
                *v = b[p * n + j];
            }
        });
    Ok(t)
}

/// The persistent launch of the FP8 GEMM on `dev` for `D` of `m x n`: one
/// block per SM (or [`SIM_PERSISTENT_BLOCKS`] on the simulator), never
/// more blocks than tiles.
fn fp8_config(dev: &Device, m: usize, n: usize, shared_bytes: usize) -> LaunchConfig {
    let tiles = m.div_ceil(f::FP8_BM).saturating_mul(n.div_ceil(f::FP8_BN));
    let slots = match dev.as_gpu() {
        Some(g) => g.info().sm_count.max(1) as usize,
        None => SIM_PERSISTENT_BLOCKS,
    };
    LaunchConfig {
        grid: Dim3::x(tiles.min(slots).max(1) as u32),
        block: Dim3::x(f::FP8_THREADS),
        shared_bytes,
        module: ModuleKey::default(),
        cluster: None,
    }
}

/// What a plan multiplies by: the product of the per-tensor scales, or the
/// tensor maps of the block scales.
enum PlanScales<'a> {
    Tensor(f32),
    Block {
        sa_map: TensorMap<'a>,
        sb_map: TensorMap<'a>,
    },
}

/// One FP8 product `D = scale_a scale_b (A B)` (or its block-scaled form),
/// ready to launch: the tensor maps (made once; they borrow `A`, `B^T` and
/// the block scales), the scales and the launch shape.
pub struct Fp8Plan<'a> {
    kernel: Fp8Kernel,
    a_map: TensorMap<'a>,
    bt_map: TensorMap<'a>,
    scales: PlanScales<'a>,
    cfg: LaunchConfig,
    m: usize,
    n: usize,
    kk: usize,
}

impl<'a> Fp8Plan<'a> {
    /// Checks the shape ([`check_shapes`], [`fp8_shape_refusal`]), the lengths (`A`: `m k`,
    /// `B^T`: `n k`) and the scales ([`Fp8Scales::product`]), and makes
    /// the tensor maps and the launch shape.
    pub fn new(
        dev: &Device,
        kernel: Fp8Kernel,
        (a, bt): (&'a Buffer<E4m3>, &'a Buffer<E4m3>),
        (m, n, kk): (usize, usize, usize),
        scales: Fp8Scales,
    ) -> Result<Self> {
        let (a_map, bt_map) = operand_maps(dev, (a, bt), (m, n, kk))?;
        let scale = scales.product()?;
        Ok(Self {
            kernel,
            a_map,
            bt_map,
            scales: PlanScales::Tensor(scale),
            cfg: fp8_config(dev, m, n, f::fp8_shared_bytes()),
            m,
            n,
            kk,
        })
    }

    /// [`Fp8Plan::new`] with block scales (checked and uploaded for this
    /// shape by [`Fp8BlockScaleBufs::new`]).
    pub fn new_blockscaled(
        dev: &Device,
        kernel: Fp8Kernel,
        (a, bt): (&'a Buffer<E4m3>, &'a Buffer<E4m3>),
        (m, n, kk): (usize, usize, usize),
        scales: &'a Fp8BlockScaleBufs,
    ) -> Result<Self> {
        let (a_map, bt_map) = operand_maps(dev, (a, bt), (m, n, kk))?;
        if scales.shape != (m, n, kk) {
            let (sm, sn, sk) = scales.shape;
            return Err(Error::input(
                "matmul fp8 block scales",
                format!(
                    "the block scales were made for {sm}x{sn}x{sk}; this product is {m}x{n}x{kk} \
                     (make them for its shape)"
                ),
            ));
        }
        let (kb, mp, np) = f::fp8_block_scale_dims(m, n, kk);
        let sa_map =
            TensorMap::tiled_2d(dev, &scales.sa, kb, mp, 1, f::FP8_BM as u32, Swizzle::None)?;
        let sb_map = TensorMap::tiled_2d(dev, &scales.sb, kb, np, 1, 4, Swizzle::None)?;
        Ok(Self {
            kernel,
            a_map,
            bt_map,
            scales: PlanScales::Block { sa_map, sb_map },
            cfg: fp8_config(dev, m, n, f::fp8_blockscaled_shared_bytes()),
            m,
            n,
            kk,
        })
    }

    /// Launches the product into `d` (`m x n`, BF16 bits).
    pub fn run(&self, dev: &Device, d: &mut Buffer<u16>) -> Result<()> {
        check_len("D", d.len(), self.m * self.n)?;
        let (ma, mb) = (self.a_map.buffer(), self.bt_map.buffer());
        let dims = GemmDims {
            m: self.m as u32,
            n: self.n as u32,
            k: self.kk as u32,
        };
        let cfg = self.cfg;
        match (self.kernel, &self.scales) {
            (Fp8Kernel::Ws, PlanScales::Tensor(scale)) => {
                launch!(dev, cfg, hopper_fp8::matmul_fp8_ws(ma, mb, d, dims, *scale))
            }
            (Fp8Kernel::Ws, PlanScales::Block { sa_map, sb_map }) => {
                let (sa, sb) = (sa_map.buffer(), sb_map.buffer());
                launch!(
                    dev,
                    cfg,
                    hopper_fp8::matmul_fp8_ws_blockscaled(ma, mb, sa, sb, d, dims)
                )
            }
        }
    }
}

/// Checks an FP8 product's shape ([`check_shapes`], [`fp8_shape_refusal`])
/// and the operands' lengths (`A`: `m k`, `B^T`: `n k`), and makes their
/// tensor maps.
fn operand_maps<'a>(
    dev: &Device,
    (a, bt): (&'a Buffer<E4m3>, &'a Buffer<E4m3>),
    (m, n, kk): (usize, usize, usize),
) -> Result<(TensorMap<'a>, TensorMap<'a>)> {
    check_shapes(m, kk, kk, n)?;
    if let Some(why) = fp8_shape_refusal(kk) {
        return Err(Error::input("matmul fp8", why));
    }
    check_len("A", a.len(), m * kk)?;
    check_len("B^T", bt.len(), n * kk)?;
    let (bm, bn, bk) = (f::FP8_BM as u32, f::FP8_BN as u32, f::FP8_BK as u32);
    let a_map = TensorMap::tiled_2d(dev, a, m, kk, bm, bk, Swizzle::B128)?;
    let bt_map = TensorMap::tiled_2d(dev, bt, n, kk, bn, bk, Swizzle::B128)?;
    Ok((a_map, bt_map))
}

/// `D = scale_a scale_b (A B)` with E4M3 `A` (`m x k`) and `B^T` (`n x
/// k`), BF16 bits out (a plan made and run once).
pub fn gemm_fp8(
    dev: &Device,
    kernel: Fp8Kernel,
    a: &Buffer<E4m3>,
    bt: &Buffer<E4m3>,
    d: &mut Buffer<u16>,
    (m, n, kk): (usize, usize, usize),
    scales: Fp8Scales,
) -> Result<()> {
    check_len("D", d.len(), m.saturating_mul(n))?;
    Fp8Plan::new(dev, kernel, (a, bt), (m, n, kk), scales)?.run(dev, d)
}

/// `D = sum over k blocks of a[i, kb] b[j / 128, kb] (A B)_kb` with E4M3
/// `A` (`m x k`), `B^T` (`n x k`) and the block scales `scales`, BF16 bits
/// out (scales checked and uploaded, a plan made and run once).
pub fn gemm_fp8_blockscaled(
    dev: &Device,
    kernel: Fp8Kernel,
    a: &Buffer<E4m3>,
    bt: &Buffer<E4m3>,
    d: &mut Buffer<u16>,
    (m, n, kk): (usize, usize, usize),
    scales: &Fp8BlockScales,
) -> Result<()> {
    check_len("D", d.len(), m.saturating_mul(n))?;
    check_shapes(m, kk, kk, n)?;
    let bufs = Fp8BlockScaleBufs::new(dev, scales, (m, n, kk))?;
    Fp8Plan::new_blockscaled(dev, kernel, (a, bt), (m, n, kk), &bufs)?.run(dev, d)
}
