//! The tensor-core ladder's library API: the rungs, their launch shapes and
//! typed launchers for BF16/FP16 (`C = A B` with 16-bit inputs and output,
//! f32 accumulation) and 3xTF32 (f32 in, f32 out).
//!
//! 16-bit matrices are `Buffer<u16>` holding the values' bits
//! ([`Half::from_f32`] rounds to them); [`Half`] says which type they are.
//! The Hopper rungs read their operands through TMA tensor maps, which a
//! plan ([`HalfPlan`], [`Tf32x3Plan`]) makes once for its buffers; the
//! one-call launchers [`gemm_half`] and [`gemm_tf32x3`] make a plan each
//! time.

use super::launch::{check_len, check_shapes};
use crate::error::{Error, Result};
use crate::launch;
use crate::runtime::{Buffer, Device, LaunchConfig, ModuleKey, TensorMap};
use kernels_gpu::{hopper as h, tensor as k};
use ptxlab_device::Dim3;
use ptxlab_device::hopper::Swizzle;
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
    /// Rung 3 with tiles 64 deep, three stages.
    PipeK,
    /// Rung 3 with 128x256 tiles, eight warps, three stages.
    PipeW,
    /// Rung 3b with lean tile copies, XOR-swizzled shared memory, fragments
    /// loaded a step ahead, rasterised blocks.
    PipeS,
    /// Rung 3d with 256x128 tiles, eight warps, four stages.
    PipeT,
    /// `wgmma` from shared memory, TMA copies, an mbarrier pipeline (sm_90a).
    Wgmma,
    /// Warp-specialised producer/consumers, 128x256 tiles, persistent (sm_90a).
    Ws,
}

impl TcRung {
    /// Every rung in ladder order.
    pub const ALL: [TcRung; 9] = [
        TcRung::Mma,
        TcRung::Ldsm,
        TcRung::Pipe,
        TcRung::PipeK,
        TcRung::PipeW,
        TcRung::PipeS,
        TcRung::PipeT,
        TcRung::Wgmma,
        TcRung::Ws,
    ];
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            TcRung::Mma => "tc 1 mma.sync m16n8k16, fragments from shared memory",
            TcRung::Ldsm => "tc 2 ldmatrix, padded shared memory (no bank conflicts)",
            TcRung::Pipe => "tc 3 128x128 tiles, 64x64/warp, cp.async 4 stages",
            TcRung::PipeK => "tc 3b as 3, k tiles 64 deep, 3 stages",
            TcRung::PipeW => "tc 3c as 3, 128x256 tiles, 8 warps, 3 stages",
            TcRung::PipeS => "tc 3d as 3b, lean copies, swizzled smem, fragments ahead, raster",
            TcRung::PipeT => "tc 3e as 3d, 256x128 tiles, 8 warps, 4 stages",
            TcRung::Wgmma => "tc 4 wgmma from shared memory, TMA, mbarrier pipeline",
            TcRung::Ws => "tc 5 warp-specialised, 128x256 tiles, persistent",
        }
    }
    /// The `--variant` spelling.
    pub fn name(&self) -> &'static str {
        match self {
            TcRung::Mma => "mma",
            TcRung::Ldsm => "ldsm",
            TcRung::Pipe => "pipe",
            TcRung::PipeK => "pipek",
            TcRung::PipeW => "pipew",
            TcRung::PipeS => "pipes",
            TcRung::PipeT => "pipet",
            TcRung::Wgmma => "wgmma",
            TcRung::Ws => "ws",
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
            (TcRung::PipeK, Half::Bf16) => "matmul_pipek_bf16",
            (TcRung::PipeK, Half::F16) => "matmul_pipek_f16",
            (TcRung::PipeW, Half::Bf16) => "matmul_pipew_bf16",
            (TcRung::PipeW, Half::F16) => "matmul_pipew_f16",
            (TcRung::PipeS, Half::Bf16) => "matmul_pipes_bf16",
            (TcRung::PipeS, Half::F16) => "matmul_pipes_f16",
            (TcRung::PipeT, Half::Bf16) => "matmul_pipet_bf16",
            (TcRung::PipeT, Half::F16) => "matmul_pipet_f16",
            (TcRung::Wgmma, Half::Bf16) => "matmul_wgmma_bf16",
            (TcRung::Wgmma, Half::F16) => "matmul_wgmma_f16",
            (TcRung::Ws, Half::Bf16) => "matmul_ws_bf16",
            (TcRung::Ws, Half::F16) => "matmul_ws_f16",
        }
    }
    /// Whether the rung reads its operands through TMA (sm_90a; rows of
    /// `A` and `B` 16-byte aligned).
    pub fn uses_tma(&self) -> bool {
        matches!(self, TcRung::Wgmma | TcRung::Ws)
    }
    /// Why the rung cannot take a `k x n` `B` (and an `A` with `k`
    /// columns), or `None` when it can: the TMA rungs need rows on 16-byte
    /// boundaries.
    pub fn shape_refusal(&self, n: usize, kk: usize) -> Option<String> {
        (self.uses_tma() && !(kk.is_multiple_of(8) && n.is_multiple_of(8))).then(|| {
            format!(
                "{} reads A and B through TMA, which needs rows on 16-byte boundaries: k ({kk}) \
                 and n ({n}) must be multiples of 8 (any m works)",
                self.name()
            )
        })
    }
    /// Rows of the block tile.
    pub fn tile(&self) -> usize {
        match self {
            TcRung::Mma | TcRung::Ldsm => k::MMA_BM,
            TcRung::Pipe | TcRung::PipeK | TcRung::PipeW | TcRung::PipeS => k::PIPE_BM,
            TcRung::PipeT => k::PIPET_BM,
            TcRung::Wgmma | TcRung::Ws => h::WG_BM,
        }
    }
    /// The launch of this rung on `dev` for `C` of `m x n`.
    pub fn config(&self, dev: &Device, m: usize, n: usize) -> Result<LaunchConfig> {
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
            TcRung::PipeK => tiles(
                m,
                n,
                k::PIPE_BM,
                128,
                128,
                k::pipe_shared_bytes_for(128, 64, 3),
            ),
            TcRung::PipeW => tiles(
                m,
                n,
                k::PIPE_BM,
                256,
                256,
                k::pipe_shared_bytes_for(256, 32, 3),
            ),
            TcRung::PipeS => tiles(
                m,
                n,
                k::PIPE_BM,
                k::PIPES_BN,
                k::PIPES_THREADS,
                k::pipes_shared_bytes(),
            ),
            TcRung::PipeT => tiles(
                m,
                n,
                k::PIPET_BM,
                k::PIPES_BN,
                k::PIPET_THREADS,
                k::pipet_shared_bytes(),
            ),
            TcRung::Wgmma => tiles(
                m,
                n,
                h::WG_BM,
                h::WG_BN,
                h::WG_THREADS,
                h::wgmma_shared_bytes(),
            ),
            TcRung::Ws => persistent(dev, m, n, h::WS_BN, h::ws_shared_bytes()),
        }
    }
}

impl std::str::FromStr for TcRung {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let context = " for --precision bf16/f16";
        crate::cli::choose("--variant", s, &TcRung::ALL, TcRung::name, context, "all")
    }
}

/// The 3xTF32 kernels (f32 in, f32 out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tf32x3 {
    /// `mma.sync.m16n8k8.tf32`, 128x128 tiles, `cp.async` four stages.
    Mma,
    /// `wgmma.m64n128k8.tf32` on operands split beforehand, warp-specialised
    /// and persistent (sm_90a).
    Wgmma,
}

impl Tf32x3 {
    /// Every variant.
    pub const ALL: [Tf32x3; 2] = [Tf32x3::Mma, Tf32x3::Wgmma];
    /// Label for reports.
    pub fn label(&self) -> &'static str {
        match self {
            Tf32x3::Mma => "3xTF32 mma.sync m16n8k8, 128x128 tiles, cp.async 4 stages",
            Tf32x3::Wgmma => "3xTF32 wgmma m64n128k8, split operands, warp-specialised",
        }
    }
    /// The `--variant` spelling.
    pub fn name(&self) -> &'static str {
        match self {
            Tf32x3::Mma => "mma",
            Tf32x3::Wgmma => "wgmma",
        }
    }
    /// Kernel name.
    pub fn kernel(&self) -> &'static str {
        match self {
            Tf32x3::Mma => "matmul_tf32x3_f32",
            Tf32x3::Wgmma => "matmul_tf32x3w_f32",
        }
    }
    /// Whether the variant reads its operands through TMA (sm_90a; `k` a
    /// multiple of 4).
    pub fn uses_tma(&self) -> bool {
        matches!(self, Tf32x3::Wgmma)
    }
    /// Why the variant cannot take depth `k`, or `None` when it can: the
    /// `wgmma` variant reads rows of `k` f32 through TMA.
    pub fn shape_refusal(&self, kk: usize) -> Option<String> {
        (self.uses_tma() && !kk.is_multiple_of(4)).then(|| {
            format!(
                "3xTF32 wgmma reads the split operands through TMA, which needs rows on 16-byte \
                 boundaries: k ({kk}) must be a multiple of 4"
            )
        })
    }
    /// Rows of the block tile.
    pub fn tile(&self) -> usize {
        match self {
            Tf32x3::Mma => k::TF32_BM,
            Tf32x3::Wgmma => h::WG_BM,
        }
    }
    /// The launch on `dev` for `C` of `m x n`.
    pub fn config(&self, dev: &Device, m: usize, n: usize) -> Result<LaunchConfig> {
        match self {
            Tf32x3::Mma => tiles(
                m,
                n,
                k::TF32_BM,
                k::TF32_BN,
                k::TF32_THREADS,
                k::tf32x3_shared_bytes(),
            ),
            Tf32x3::Wgmma => persistent(dev, m, n, h::TF32W_BN, h::tf32x3w_shared_bytes()),
        }
    }
}

impl std::str::FromStr for Tf32x3 {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let context = " for --precision tf32x3";
        crate::cli::choose("--variant", s, &Tf32x3::ALL, Tf32x3::name, context, "all")
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

/// Blocks of the simulator's persistent grids: two, so each block walks
/// several tiles even at test sizes.
pub const SIM_PERSISTENT_BLOCKS: usize = 2;

/// A persistent grid of 384-thread blocks over the 128 x `bn` tiles of `C`:
/// one block per SM (or [`SIM_PERSISTENT_BLOCKS`] on the simulator), never
/// more blocks than tiles.
fn persistent(dev: &Device, m: usize, n: usize, bn: usize, shared: usize) -> Result<LaunchConfig> {
    let tiles = m.div_ceil(h::WG_BM).saturating_mul(n.div_ceil(bn));
    let slots = match dev.as_gpu() {
        Some(g) => g.info().sm_count.max(1) as usize,
        None => SIM_PERSISTENT_BLOCKS,
    };
    Ok(LaunchConfig {
        grid: Dim3::x(tiles.min(slots).max(1) as u32),
        block: Dim3::x(h::WS_THREADS),
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

/// One product `C = A B` with 16-bit inputs, ready to launch: the rung,
/// the operands, and for the TMA rungs their tensor maps (made once).
pub struct HalfPlan<'a> {
    rung: TcRung,
    half: Half,
    a: &'a Buffer<u16>,
    b: &'a Buffer<u16>,
    maps: Option<(TensorMap<'a>, TensorMap<'a>)>,
    cfg: LaunchConfig,
    m: usize,
    n: usize,
    kk: usize,
}

impl<'a> HalfPlan<'a> {
    /// Checks shapes and lengths (`A` is `m x k`, `B` is `k x n`), makes
    /// the tensor maps of the TMA rungs (which need `k` and `n` multiples
    /// of 8: TMA copies rows that start on 16-byte boundaries) and the
    /// launch shape.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dev: &Device,
        rung: TcRung,
        half: Half,
        a: &'a Buffer<u16>,
        b: &'a Buffer<u16>,
        m: usize,
        n: usize,
        kk: usize,
    ) -> Result<Self> {
        check_shapes(m, kk, kk, n)?;
        check_len("A", a.len(), m * kk)?;
        check_len("B", b.len(), kk * n)?;
        let maps = if rung.uses_tma() {
            if let Some(why) = rung.shape_refusal(n, kk) {
                return Err(Error::input(
                    "matmul",
                    format!("{why}; use rung pipe for other shapes"),
                ));
            }
            let box_b = 64u32;
            Some((
                TensorMap::tiled_2d(
                    dev,
                    a,
                    m,
                    kk,
                    h::WG_BM as u32,
                    h::WG_BK as u32,
                    Swizzle::B128,
                )?,
                TensorMap::tiled_2d(dev, b, kk, n, h::WG_BK as u32, box_b, Swizzle::B128)?,
            ))
        } else {
            None
        };
        Ok(Self {
            rung,
            half,
            a,
            b,
            maps,
            cfg: rung.config(dev, m, n)?,
            m,
            n,
            kk,
        })
    }

    /// Launches the product into `c` (`m x n`).
    pub fn run(&self, dev: &Device, c: &mut Buffer<u16>) -> Result<()> {
        let (a, b, cfg) = (self.a, self.b, self.cfg);
        check_len("C", c.len(), self.m * self.n)?;
        let (mu, nu, ku) = (self.m as u32, self.n as u32, self.kk as u32);
        if let Some((ma, mb)) = &self.maps {
            let (ma, mb) = (ma.buffer(), mb.buffer());
            return match (self.rung, self.half) {
                (TcRung::Wgmma, Half::Bf16) => {
                    launch!(dev, cfg, hopper::matmul_wgmma_bf16(ma, mb, c, mu, nu, ku))
                }
                (TcRung::Wgmma, Half::F16) => {
                    launch!(dev, cfg, hopper::matmul_wgmma_f16(ma, mb, c, mu, nu, ku))
                }
                (TcRung::Ws, Half::Bf16) => {
                    launch!(dev, cfg, hopper::matmul_ws_bf16(ma, mb, c, mu, nu, ku))
                }
                (TcRung::Ws, Half::F16) => {
                    launch!(dev, cfg, hopper::matmul_ws_f16(ma, mb, c, mu, nu, ku))
                }
                _ => unreachable!("only the TMA rungs have maps"),
            };
        }
        match (self.rung, self.half) {
            (TcRung::Mma, Half::Bf16) => {
                launch!(dev, cfg, tensor::matmul_mma_bf16(a, b, c, mu, nu, ku))
            }
            (TcRung::Mma, Half::F16) => {
                launch!(dev, cfg, tensor::matmul_mma_f16(a, b, c, mu, nu, ku))
            }
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
            (TcRung::PipeK, Half::Bf16) => {
                launch!(dev, cfg, tensor::matmul_pipek_bf16(a, b, c, mu, nu, ku))
            }
            (TcRung::PipeK, Half::F16) => {
                launch!(dev, cfg, tensor::matmul_pipek_f16(a, b, c, mu, nu, ku))
            }
            (TcRung::PipeW, Half::Bf16) => {
                launch!(dev, cfg, tensor::matmul_pipew_bf16(a, b, c, mu, nu, ku))
            }
            (TcRung::PipeW, Half::F16) => {
                launch!(dev, cfg, tensor::matmul_pipew_f16(a, b, c, mu, nu, ku))
            }
            (TcRung::PipeS, Half::Bf16) => {
                launch!(dev, cfg, tensor::matmul_pipes_bf16(a, b, c, mu, nu, ku))
            }
            (TcRung::PipeS, Half::F16) => {
                launch!(dev, cfg, tensor::matmul_pipes_f16(a, b, c, mu, nu, ku))
            }
            (TcRung::PipeT, Half::Bf16) => {
                launch!(dev, cfg, tensor::matmul_pipet_bf16(a, b, c, mu, nu, ku))
            }
            (TcRung::PipeT, Half::F16) => {
                launch!(dev, cfg, tensor::matmul_pipet_f16(a, b, c, mu, nu, ku))
            }
            (TcRung::Wgmma | TcRung::Ws, _) => unreachable!("the TMA rungs have maps"),
        }
    }
}

/// `C = A B` with 16-bit inputs of type `half` (bits in `u16`), f32
/// accumulation and the output rounded to `half`, on rung `rung` (a plan
/// made and run once).
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
    HalfPlan::new(dev, rung, half, a, b, m, n, kk)?.run(dev, c)
}

/// One 3xTF32 product `C = A B`, ready to launch: the variant, the
/// operands and, for the `wgmma` variant, the scratch buffers of the split
/// operands. Each run splits `A` and `B` again (they may have changed) and
/// makes the four tensor maps of the split parts (four driver calls and
/// 512 bytes copied: microseconds against milliseconds of product).
pub struct Tf32x3Plan<'a> {
    variant: Tf32x3,
    a: &'a Buffer<f32>,
    b: &'a Buffer<f32>,
    scratch: Option<&'a mut [Buffer<f32>; 4]>,
    cfg: LaunchConfig,
    m: usize,
    n: usize,
    kk: usize,
}

/// Scratch of the `wgmma` 3xTF32 variant: `A` high and low parts
/// (`m x k`), `B^T` high and low parts (`n x k`).
pub fn tf32x3_scratch(dev: &Device, m: usize, n: usize, kk: usize) -> Result<[Buffer<f32>; 4]> {
    Ok([
        dev.alloc_filled(m * kk, f32::NAN)?,
        dev.alloc_filled(m * kk, f32::NAN)?,
        dev.alloc_filled(n * kk, f32::NAN)?,
        dev.alloc_filled(n * kk, f32::NAN)?,
    ])
}

impl<'a> Tf32x3Plan<'a> {
    /// Checks shapes and lengths and makes the launch shape; the `wgmma`
    /// variant needs `scratch` ([`tf32x3_scratch`]) and `k` a multiple of 4.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dev: &Device,
        variant: Tf32x3,
        a: &'a Buffer<f32>,
        b: &'a Buffer<f32>,
        scratch: Option<&'a mut [Buffer<f32>; 4]>,
        m: usize,
        n: usize,
        kk: usize,
    ) -> Result<Self> {
        check_shapes(m, kk, kk, n)?;
        check_len("A", a.len(), m * kk)?;
        check_len("B", b.len(), kk * n)?;
        if variant.uses_tma() {
            if let Some(why) = variant.shape_refusal(kk) {
                return Err(Error::input("matmul", format!("{why}; use variant mma")));
            }
            match &scratch {
                Some(s) => {
                    for (i, want) in [m * kk, m * kk, n * kk, n * kk].into_iter().enumerate() {
                        check_len("3xTF32 scratch", s[i].len(), want)?;
                    }
                }
                None => {
                    return Err(Error::input(
                        "matmul",
                        "3xTF32 wgmma needs scratch buffers (tf32x3_scratch)",
                    ));
                }
            }
        }
        Ok(Self {
            variant,
            a,
            b,
            scratch,
            cfg: variant.config(dev, m, n)?,
            m,
            n,
            kk,
        })
    }

    /// Launches the product into `c` (`m x n`): for the `wgmma` variant the
    /// two split kernels, then the product.
    pub fn run(&mut self, dev: &Device, c: &mut Buffer<f32>) -> Result<()> {
        let (a, b, cfg) = (self.a, self.b, self.cfg);
        check_len("C", c.len(), self.m * self.n)?;
        let (m, n, kk) = (self.m, self.n, self.kk);
        let (mu, nu, ku) = (m as u32, n as u32, kk as u32);
        match self.variant {
            Tf32x3::Mma => launch!(dev, cfg, tensor::matmul_tf32x3_f32(a, b, c, mu, nu, ku)),
            Tf32x3::Wgmma => {
                let Some(s) = self.scratch.as_deref_mut() else {
                    unreachable!("checked in new")
                };
                let [a_hi, a_lo, b_hi, b_lo] = s;
                let split = LaunchConfig::for_threads((m * kk).min(1 << 22), 256)?;
                launch!(
                    dev,
                    split,
                    tensor::matmul_split_tf32_f32(a, &mut *a_hi, &mut *a_lo)
                )?;
                let t = LaunchConfig::for_2d(n, kk, 32, 32)?.with_shared(k::split_t_shared_bytes());
                let t = LaunchConfig {
                    block: Dim3::xy(k::SPLIT_BLOCK.0, k::SPLIT_BLOCK.1),
                    ..t
                };
                launch!(
                    dev,
                    t,
                    tensor::matmul_split_tf32_t_f32(b, &mut *b_hi, &mut *b_lo, ku, nu)
                )?;
                let bx = h::TF32W_BK as u32;
                let (rm, rn) = (h::WG_BM as u32, h::TF32W_BN as u32);
                let maps = [
                    TensorMap::tiled_2d(dev, &*a_hi, m, kk, rm, bx, Swizzle::B128)?,
                    TensorMap::tiled_2d(dev, &*a_lo, m, kk, rm, bx, Swizzle::B128)?,
                    TensorMap::tiled_2d(dev, &*b_hi, n, kk, rn, bx, Swizzle::B128)?,
                    TensorMap::tiled_2d(dev, &*b_lo, n, kk, rn, bx, Swizzle::B128)?,
                ];
                let [m0, m1, m2, m3] = &maps;
                let (m0, m1, m2, m3) = (m0.buffer(), m1.buffer(), m2.buffer(), m3.buffer());
                launch!(
                    dev,
                    cfg,
                    hopper::matmul_tf32x3w_f32(m0, m1, m2, m3, c, mu, nu, ku)
                )
            }
        }
    }
}

/// `C = A B` in f32 from three TF32 tensor-core products (3xTF32), a plan
/// made (with its scratch, for the `wgmma` variant) and run once.
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
    let mut scratch = if variant.uses_tma() {
        Some(tf32x3_scratch(dev, m, n, kk)?)
    } else {
        None
    };
    Tf32x3Plan::new(dev, variant, a, b, scratch.as_mut(), m, n, kk)?.run(dev, c)
}
