//! The tensor-core ladder's library API: the rungs, their launch shapes and
//! typed launchers for BF16/FP16 (`C = A B` with 16-bit inputs and output,
//! f32 accumulation) and 3xTF32 (f32 in, f32 out).
//!
//! 16-bit matrices are `Buffer<u16>` holding the values' bits
//! ([`Half::from_f32`] rounds to them); [`Half`] says which type they are.

use super::launch::{check_len, check_shapes};
use crate::error::{Error, Result};
use crate::launch;
use crate::runtime::{Buffer, Device, LaunchConfig, ModuleKey};
use kernels_gpu::tensor as k;
use ptxlab_device::Dim3;
use ptxlab_device::mma::{Bf16, F16, Half16};

/// A 16-bit input type of the tensor cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    /// bfloat16 (f32's exponent range, 8 significant bits).
    Bf16,
    /// IEEE binary16 (largest 65504, 11 significant bits).
    F16,
}

impl Half {
    /// Both types.
    pub const ALL: [Half; 2] = [Half::Bf16, Half::F16];
    /// `bf16` / `f16`.
    pub fn name(&self) -> &'static str {
        match self {
            Half::Bf16 => Bf16::NAME,
            Half::F16 => F16::NAME,
        }
    }
    /// `x` rounded to nearest even, as bits.
    pub fn from_f32(&self, x: f32) -> u16 {
        match self {
            Half::Bf16 => Bf16::from_f32(x),
            Half::F16 => F16::from_f32(x),
        }
    }
    /// The exact value of `bits`.
    pub fn to_f32(&self, bits: u16) -> f32 {
        match self {
            Half::Bf16 => Bf16::to_f32(bits),
            Half::F16 => F16::to_f32(bits),
        }
    }
    /// Relative error bound of a product against the f64 reference on the
    /// same (rounded) inputs: the output's rounding to this type (half a
    /// unit in the last place: 2^-9 for BF16, 2^-11 for FP16) plus f32
    /// accumulation, with a factor 2 of margin.
    pub fn tol(&self) -> f64 {
        match self {
            Half::Bf16 => 4e-3,
            Half::F16 => 1e-3,
        }
    }
}

/// The precision of `ptxlab matmul --precision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// f32 in and out on the FP32 units: the SGEMM ladder.
    F32,
    /// A 16-bit type in and out, f32 accumulation: the tensor-core ladder.
    Half(Half),
    /// f32 in and out from three TF32 tensor-core products.
    Tf32x3,
}

impl std::str::FromStr for Precision {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "f32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Half(Half::Bf16)),
            "f16" => Ok(Precision::Half(Half::F16)),
            "tf32x3" => Ok(Precision::Tf32x3),
            _ => Err(Error::input(
                "--precision",
                format!("`{s}`; allowed: f32, bf16, f16, tf32x3"),
            )),
        }
    }
}

/// The rungs of the BF16/FP16 tensor-core ladder, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcRung {
    /// `mma.sync` with fragments read from shared memory word by word.
    Mma,
    /// `ldmatrix` from padded (conflict-free) shared memory.
    Ldsm,
    /// 128x128 block tiles, 64x64 per warp, `cp.async` four stages deep.
    Pipe,
}

impl TcRung {
    /// Every rung in ladder order.
    pub const ALL: [TcRung; 3] = [TcRung::Mma, TcRung::Ldsm, TcRung::Pipe];
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            TcRung::Mma => "tc 1 mma.sync m16n8k16, fragments from shared memory",
            TcRung::Ldsm => "tc 2 ldmatrix, padded shared memory (no bank conflicts)",
            TcRung::Pipe => "tc 3 128x128 tiles, 64x64/warp, cp.async 4 stages",
        }
    }
    /// The `--variant` spelling.
    pub fn name(&self) -> &'static str {
        match self {
            TcRung::Mma => "mma",
            TcRung::Ldsm => "ldsm",
            TcRung::Pipe => "pipe",
        }
    }
    /// Kernel name for `half` (for the resource report).
    pub fn kernel(&self, half: Half) -> &'static str {
        match (self, half) {
            (TcRung::Mma, Half::Bf16) => "matmul_mma_bf16",
            (TcRung::Mma, Half::F16) => "matmul_mma_f16",
            (TcRung::Ldsm, Half::Bf16) => "matmul_ldsm_bf16",
            (TcRung::Ldsm, Half::F16) => "matmul_ldsm_f16",
            (TcRung::Pipe, Half::Bf16) => "matmul_pipe_bf16",
            (TcRung::Pipe, Half::F16) => "matmul_pipe_f16",
        }
    }
    /// Rows (and columns) of the block tile.
    pub fn tile(&self) -> usize {
        match self {
            TcRung::Mma | TcRung::Ldsm => k::MMA_BM,
            TcRung::Pipe => k::PIPE_BM,
        }
    }
    /// The launch of this rung for `C` of `m x n`.
    pub fn config(&self, m: usize, n: usize) -> Result<LaunchConfig> {
        match self {
            TcRung::Mma => tiles(
                m,
                n,
                k::MMA_BM,
                k::MMA_BN,
                k::MMA_THREADS,
                k::mma_shared_bytes(),
            ),
            TcRung::Ldsm => tiles(
                m,
                n,
                k::MMA_BM,
                k::MMA_BN,
                k::MMA_THREADS,
                k::ldsm_shared_bytes(),
            ),
            TcRung::Pipe => tiles(
                m,
                n,
                k::PIPE_BM,
                k::PIPE_BN,
                k::PIPE_THREADS,
                k::pipe_shared_bytes(),
            ),
        }
    }
}

impl std::str::FromStr for TcRung {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        TcRung::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                Error::input(
                    "--variant",
                    format!(
                        "`{s}` for --precision bf16/f16; allowed: {}, all",
                        TcRung::ALL.map(|r| r.name()).join(", ")
                    ),
                )
            })
    }
}

/// The 3xTF32 kernels (f32 in, f32 out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tf32x3 {
    /// `mma.sync.m16n8k8.tf32`, 128x128 tiles, `cp.async` four stages.
    Mma,
}

impl Tf32x3 {
    /// Every variant.
    pub const ALL: [Tf32x3; 1] = [Tf32x3::Mma];
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            Tf32x3::Mma => "3xTF32 mma.sync m16n8k8, 128x128 tiles, cp.async 4 stages",
        }
    }
    /// The `--variant` spelling.
    pub fn name(&self) -> &'static str {
        match self {
            Tf32x3::Mma => "mma",
        }
    }
    /// Kernel name.
    pub fn kernel(&self) -> &'static str {
        match self {
            Tf32x3::Mma => "matmul_tf32x3_f32",
        }
    }
    /// The launch for `C` of `m x n`.
    pub fn config(&self, m: usize, n: usize) -> Result<LaunchConfig> {
        match self {
            Tf32x3::Mma => tiles(
                m,
                n,
                k::TF32_BM,
                k::TF32_BN,
                k::TF32_THREADS,
                k::tf32x3_shared_bytes(),
            ),
        }
    }
}

impl std::str::FromStr for Tf32x3 {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Tf32x3::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                Error::input(
                    "--variant",
                    format!(
                        "`{s}` for --precision tf32x3; allowed: {}, all",
                        Tf32x3::ALL.map(|r| r.name()).join(", ")
                    ),
                )
            })
    }
}

/// A grid of `bm x bn` block tiles over `C` of `m x n` (x: columns).
fn tiles(
    m: usize,
    n: usize,
    bm: usize,
    bn: usize,
    threads: u32,
    shared: usize,
) -> Result<LaunchConfig> {
    let (gx, gy) = (n.div_ceil(bn), m.div_ceil(bm));
    if gx > i32::MAX as usize || gy > 65535 {
        return Err(Error::input(
            "matmul",
            format!(
                "C of {m}x{n} needs a grid of {gx}x{gy} blocks of {bm}x{bn}; y is limited to 65535"
            ),
        ));
    }
    Ok(LaunchConfig {
        grid: Dim3::xy(gx as u32, gy as u32),
        block: Dim3::x(threads),
        shared_bytes: shared,
        module: ModuleKey::default(),
    })
}

/// Checks the shapes and the three buffer lengths of `C = A B`.
fn check_buffers<T, U>(
    a: &Buffer<T>,
    b: &Buffer<T>,
    c: &Buffer<U>,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<()> {
    check_shapes(m, kk, kk, n)?;
    check_len("A", a.len(), m * kk)?;
    check_len("B", b.len(), kk * n)?;
    check_len("C", c.len(), m * n)
}

/// `C = A B` with 16-bit inputs of type `half` (bits in `u16`), f32
/// accumulation and the output rounded to `half`, on rung `rung`.
#[allow(clippy::too_many_arguments)]
pub fn gemm_half(
    dev: &Device,
    rung: TcRung,
    half: Half,
    a: &Buffer<u16>,
    b: &Buffer<u16>,
    c: &mut Buffer<u16>,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<()> {
    check_buffers(a, b, c, m, n, kk)?;
    let cfg = rung.config(m, n)?;
    let (mu, nu, ku) = (m as u32, n as u32, kk as u32);
    match (rung, half) {
        (TcRung::Mma, Half::Bf16) => {
            launch!(dev, cfg, tensor::matmul_mma_bf16(a, b, c, mu, nu, ku))
        }
        (TcRung::Mma, Half::F16) => launch!(dev, cfg, tensor::matmul_mma_f16(a, b, c, mu, nu, ku)),
        (TcRung::Ldsm, Half::Bf16) => {
            launch!(dev, cfg, tensor::matmul_ldsm_bf16(a, b, c, mu, nu, ku))
        }
        (TcRung::Ldsm, Half::F16) => {
            launch!(dev, cfg, tensor::matmul_ldsm_f16(a, b, c, mu, nu, ku))
        }
        (TcRung::Pipe, Half::Bf16) => {
            launch!(dev, cfg, tensor::matmul_pipe_bf16(a, b, c, mu, nu, ku))
        }
        (TcRung::Pipe, Half::F16) => {
            launch!(dev, cfg, tensor::matmul_pipe_f16(a, b, c, mu, nu, ku))
        }
    }
}

/// `C = A B` in f32 from three TF32 tensor-core products (3xTF32).
#[allow(clippy::too_many_arguments)]
pub fn gemm_tf32x3(
    dev: &Device,
    variant: Tf32x3,
    a: &Buffer<f32>,
    b: &Buffer<f32>,
    c: &mut Buffer<f32>,
    m: usize,
    n: usize,
    kk: usize,
) -> Result<()> {
    check_buffers(a, b, c, m, n, kk)?;
    let cfg = variant.config(m, n)?;
    let (mu, nu, ku) = (m as u32, n as u32, kk as u32);
    match variant {
        Tf32x3::Mma => launch!(dev, cfg, tensor::matmul_tf32x3_f32(a, b, c, mu, nu, ku)),
    }
}
