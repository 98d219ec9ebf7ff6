//! The FP8 GEMM's library API: `D = scale_a scale_b (A B)` with E4M3
//! inputs, per-tensor f32 scales, f32 accumulation and a BF16 output, on
//! [`matmul_fp8_ws`](kernels_gpu::hopper_fp8::matmul_fp8_ws) (sm_90a).
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
//! finite and positive, and so must their f32 product be. Everything else
//! is refused with an error that says what is allowed
//! ([`Fp8Plan::new`]).

use super::launch::{check_len, check_shapes};
use super::tensor::SIM_PERSISTENT_BLOCKS;
use crate::error::{Error, Result};
use crate::launch;
use crate::runtime::{Buffer, Device, LaunchConfig, ModuleKey, TensorMap};
use kernels_gpu::hopper_fp8 as f;
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
        crate::cli::value_name(self)
    }
    /// The PTX entry of the kernel (for the resource report).
    pub fn entry(&self) -> &'static str {
        use f::matmul_fp8_ws as w;
        match self {
            Fp8Kernel::Ws => <w::Of as w::Instance>::ENTRY,
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
fn fp8_config(dev: &Device, m: usize, n: usize) -> LaunchConfig {
    let tiles = m.div_ceil(f::FP8_BM).saturating_mul(n.div_ceil(f::FP8_BN));
    let slots = match dev.as_gpu() {
        Some(g) => g.info().sm_count.max(1) as usize,
        None => SIM_PERSISTENT_BLOCKS,
    };
    LaunchConfig {
        grid: Dim3::x(tiles.min(slots).max(1) as u32),
        block: Dim3::x(f::FP8_THREADS),
        shared_bytes: f::fp8_shared_bytes(),
        module: ModuleKey::default(),
        cluster: None,
    }
}

/// One FP8 product `D = scale_a scale_b (A B)`, ready to launch: the two
/// tensor maps (made once; they borrow `A` and `B^T`), the scale and the
/// launch shape.
pub struct Fp8Plan<'a> {
    kernel: Fp8Kernel,
    a_map: TensorMap<'a>,
    bt_map: TensorMap<'a>,
    scale: f32,
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
        check_shapes(m, kk, kk, n)?;
        if let Some(why) = fp8_shape_refusal(kk) {
            return Err(Error::input("matmul fp8", why));
        }
        check_len("A", a.len(), m * kk)?;
        check_len("B^T", bt.len(), n * kk)?;
        let scale = scales.product()?;
        let (bm, bn, bk) = (f::FP8_BM as u32, f::FP8_BN as u32, f::FP8_BK as u32);
        let a_map = TensorMap::tiled_2d(dev, a, m, kk, bm, bk, Swizzle::B128)?;
        let bt_map = TensorMap::tiled_2d(dev, bt, n, kk, bn, bk, Swizzle::B128)?;
        Ok(Self {
            kernel,
            a_map,
            bt_map,
            scale,
            cfg: fp8_config(dev, m, n),
            m,
            n,
            kk,
        })
    }

    /// Launches the product into `d` (`m x n`, BF16 bits).
    pub fn run(&self, dev: &Device, d: &mut Buffer<u16>) -> Result<()> {
        check_len("D", d.len(), self.m * self.n)?;
        let (ma, mb) = (self.a_map.buffer(), self.bt_map.buffer());
        let (mu, nu, ku) = (self.m as u32, self.n as u32, self.kk as u32);
        let (cfg, scale) = (self.cfg, self.scale);
        match self.kernel {
            Fp8Kernel::Ws => launch!(
                dev,
                cfg,
                hopper_fp8::matmul_fp8_ws(ma, mb, d, mu, nu, ku, scale)
            ),
        }
    }
}

/// `D = scale_a scale_b (A B)` with E4M3 `A` (`m x k`) and `B^T` (`n x
/// k`), BF16 bits out (a plan made and run once).
#[allow(clippy::too_many_arguments)]
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
