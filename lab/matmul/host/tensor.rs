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

use super::launch::{check_buffers, check_len, check_operands};
use kernels_gpu::{hopper as h, tensor as k};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, ModuleKey, TensorMap};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    /// f32 in and out on the FP32 units: the SGEMM ladder.
    F32,
    /// bfloat16 in and out, f32 accumulation: the tensor-core ladder.
    Bf16,
    /// IEEE binary16 in and out, f32 accumulation: the tensor-core ladder.
    F16,
    /// f32 in and out from three TF32 tensor-core products.
    Tf32x3,
    /// E4M3 in with per-tensor scales, f32 accumulation, BF16 out: the FP8
    /// GEMM (sm_90a).
    Fp8,
}

impl Precision {
    /// The 16-bit type of `bf16` and `f16`.
    pub fn half(self) -> Option<Half> {
        match self {
            Precision::Bf16 => Some(Half::Bf16),
            Precision::F16 => Some(Half::F16),
            Precision::F32 | Precision::Tf32x3 | Precision::Fp8 => None,
        }
    }
}

/// The device-side 16-bit types ([`Bf16`], [`F16`]): each tensor-core
/// kernel of the ladder is built for both, so launchers generic over
/// `T: HalfType` launch `kernel::<T>` without naming a type.
pub trait HalfType:
    Half16
    + k::matmul_mma::Built
    + k::matmul_ldsm::Built
    + k::matmul_pipe::Built
    + k::matmul_pipek::Built
    + k::matmul_pipew::Built
    + k::matmul_pipes::Built
    + k::matmul_pipet::Built
    + h::matmul_wgmma::Built
    + h::matmul_ws::Built
{
}

impl HalfType for Bf16 {}
impl HalfType for F16 {}

/// The rungs of the BF16/FP16 tensor-core ladder, in order (`--variant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TcRung {
    /// `mma.sync` with fragments read from shared memory word by word.
    Mma,
    /// `ldmatrix` from padded (conflict-free) shared memory.
    Ldsm,
    /// 128x128 block tiles, 64x64 per warp, `cp.async` four stages deep.
    Pipe,
    /// Rung 3 with tiles 64 deep, three stages.
    #[value(name = "pipek")]
    PipeK,
    /// Rung 3 with 128x256 tiles, eight warps, three stages.
    #[value(name = "pipew")]
    PipeW,
    /// Rung 3b with lean tile copies, XOR-swizzled shared memory, fragments
    /// loaded a step ahead, rasterised blocks.
    #[value(name = "pipes")]
    PipeS,
    /// Rung 3d with 256x128 tiles, eight warps, four stages.
    #[value(name = "pipet")]
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
    pub fn name(&self) -> String {
        ptxlab_common::cli::value_name(self)
    }
    /// The PTX entry of the rung's kernel for `half` (for the resource report).
    pub fn entry(&self, half: Half) -> &'static str {
        match half {
            Half::Bf16 => self.entry_of::<Bf16>(),
            Half::F16 => self.entry_of::<F16>(),
        }
    }
    fn entry_of<T: HalfType>(&self) -> &'static str {
        match self {
            TcRung::Mma => <T as k::matmul_mma::Built>::ENTRY,
            TcRung::Ldsm => <T as k::matmul_ldsm::Built>::ENTRY,
            TcRung::Pipe => <T as k::matmul_pipe::Built>::ENTRY,
            TcRung::PipeK => <T as k::matmul_pipek::Built>::ENTRY,
            TcRung::PipeW => <T as k::matmul_pipew::Built>::ENTRY,
            TcRung::PipeS => <T as k::matmul_pipes::Built>::ENTRY,
            TcRung::PipeT => <T as k::matmul_pipet::Built>::ENTRY,
            TcRung::Wgmma => <T as h::matmul_wgmma::Built>::ENTRY,
            TcRung::Ws => <T as h::matmul_ws::Built>::ENTRY,
        }
    }
    /// Whether the rung reads its operands through TMA (sm_90a; rows of
    /// `A` and `B` 16-byte aligned).
    pub fn uses_tma(&self) -> bool {
        matches!(self, TcRung::Wgmma | TcRung::Ws)
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
    /// The launch of this rung on `dev` for `C` of `m x n`: one block per
    /// output tile (block rows, block columns, threads and shared memory
    /// by rung), or the persistent grid of the warp-specialised rung.
    pub fn config(&self, dev: &Device, m: usize, n: usize) -> Result<LaunchConfig> {
        let (bm, bn, threads, shared) = match self {
            TcRung::Mma => (k::MMA_BM, k::MMA_BN, k::MMA_THREADS, k::mma_shared_bytes()),
            TcRung::Ldsm => (k::MMA_BM, k::MMA_BN, k::MMA_THREADS, k::ldsm_shared_bytes()),
            TcRung::Pipe => (
                k::PIPE_BM,
                k::PIPE_BN,
                k::PIPE_THREADS,
                k::pipe_shared_bytes(),
            ),
            TcRung::PipeK => (k::PIPE_BM, 128, 128, k::pipe_shared_bytes_for(128, 64, 3)),
            TcRung::PipeW => (k::PIPE_BM, 256, 256, k::pipe_shared_bytes_for(256, 32, 3)),
            TcRung::PipeS => (
                k::PIPE_BM,
                k::PIPES_BN,
                k::PIPES_THREADS,
                k::pipes_shared_bytes(),
            ),
            TcRung::PipeT => (
                k::PIPET_BM,
                k::PIPES_BN,
                k::PIPET_THREADS,
                k::pipet_shared_bytes(),
            ),
            TcRung::Wgmma => (h::WG_BM, h::WG_BN, h::WG_THREADS, h::wgmma_shared_bytes()),
            TcRung::Ws => return persistent(dev, m, n, h::WS_BN, h::ws_shared_bytes()),
        };
        tiles(m, n, bm, bn, threads, shared)
    }
}

/// The 3xTF32 kernels (f32 in, f32 out; `--variant` with `--precision tf32x3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
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
    pub fn name(&self) -> String {
        ptxlab_common::cli::value_name(self)
    }
    /// The PTX entry of the variant's product kernel.
    pub fn entry(&self) -> &'static str {
        use h::matmul_tf32x3w_f32 as w;
        use k::matmul_tf32x3_f32 as s;
        match self {
            Tf32x3::Mma => <s::Of as s::Instance>::ENTRY,
            Tf32x3::Wgmma => <w::Of as w::Instance>::ENTRY,
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
        cluster: None,
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
        cluster: None,
    })
}

/// Which operands a TMA rung copies into rows of a multiple of 64 values
/// (128 bytes) before each product ([`matmul_pitch16`](k::matmul_pitch16)),
/// instead of reading them in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Staging {
    /// Copy `A` (`m x k`).
    pub a: bool,
    /// Copy `B` (`k x n`).
    pub b: bool,
}

impl Staging {
    /// What [`HalfPlan::new`] does: `A` when its rows are not 16-byte
    /// aligned (`k` not a multiple of 8: TMA cannot read it in place), `B`
    /// when its rows are not 128-byte aligned (`n` not a multiple of 64: TMA
    /// reads it in place, slowly). Why `B` and not `A` at 128 bytes: see
    /// `docs/book/src/workloads/matmul.md`, "Any shape".
    pub fn auto(n: usize, kk: usize) -> Self {
        Staging {
            a: !kk.is_multiple_of(8),
            b: !n.is_multiple_of(64),
        }
    }
}

/// How a TMA rung reads one operand.
enum Operand<'a> {
    /// In place, through a map made once.
    Direct(TensorMap<'a>),
    /// From `copy`, which holds the operand with rows of `ld` values,
    /// rewritten at each run (a run is a whole product from the caller's
    /// operands, copy included, as `torch.matmul` is), through a map made
    /// at each run (the map borrows `copy`, which the plan owns).
    Staged { copy: Buffer<u16>, ld: usize },
}

impl<'a> Operand<'a> {
    /// The operand `src` (`rows x cols`), read in boxes of `boxes` (rows,
    /// columns), staged or not.
    fn new(
        dev: &Device,
        src: &'a Buffer<u16>,
        (rows, cols): (usize, usize),
        (box_rows, box_cols): (u32, u32),
        staged: bool,
    ) -> Result<Self> {
        if staged {
            let ld = cols.next_multiple_of(64);
            let copy = dev.alloc_filled(super::launch::elems("a staged operand", rows, ld)?, 0)?;
            return Ok(Operand::Staged { copy, ld });
        }
        let map = TensorMap::tiled_2d(dev, src, rows, cols, box_rows, box_cols, Swizzle::B128)?;
        Ok(Operand::Direct(map))
    }

    /// Copies `src` (`rows x cols`) into the staging buffer, if any.
    fn stage(
        &mut self,
        dev: &Device,
        src: &Buffer<u16>,
        (rows, cols): (usize, usize),
    ) -> Result<()> {
        let Operand::Staged { copy, ld } = self else {
            return Ok(());
        };
        let gx = (*ld / 8).div_ceil(k::PITCH_BLOCK as usize);
        let cfg = LaunchConfig {
            grid: Dim3::xy(gx as u32, rows.min(8192) as u32),
            block: Dim3::x(k::PITCH_BLOCK),
            shared_bytes: 0,
            module: ModuleKey::default(),
            cluster: None,
        };
        let (r, c, l) = (rows as u32, cols as u32, *ld as u32);
        launch!(dev, cfg, tensor::matmul_pitch16(src, copy, r, c, l))
    }
}

/// One product `C = A B` with 16-bit inputs, ready to launch: the rung,
/// the operands, and for the TMA rungs how each operand is read (in place
/// through a tensor map made once, or staged: [`Staging`]).
pub struct HalfPlan<'a> {
    rung: TcRung,
    half: Half,
    a: &'a Buffer<u16>,
    b: &'a Buffer<u16>,
    tma: Option<(Operand<'a>, Operand<'a>)>,
    cfg: LaunchConfig,
    m: usize,
    n: usize,
    kk: usize,
}

impl<'a> HalfPlan<'a> {
    /// Checks shapes and lengths (`A` is `m x k`, `B` is `k x n`) and makes
    /// the launch shape; for the TMA rungs, stages the operands that need it
    /// ([`Staging::auto`]), so every rung takes any shape.
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
        Self::with_staging(dev, rung, half, (a, b), (m, n, kk), Staging::auto(n, kk))
    }

    /// [`HalfPlan::new`] with the operands staged as `staging` says (the
    /// TMA rungs only; an operand read in place needs rows on 16-byte
    /// boundaries: `k`, `n` multiples of 8).
    pub fn with_staging(
        dev: &Device,
        rung: TcRung,
        half: Half,
        (a, b): (&'a Buffer<u16>, &'a Buffer<u16>),
        (m, n, kk): (usize, usize, usize),
        staging: Staging,
    ) -> Result<Self> {
        check_operands(a, b, m, n, kk)?;
        let tma = if rung.uses_tma() {
            for (staged, what, cols) in [(staging.a, "A (k", kk), (staging.b, "B (n", n)] {
                if !staged && !cols.is_multiple_of(8) {
                    return Err(Error::input(
                        "matmul",
                        format!(
                            "{} reads {what} = {cols}) in place through TMA, which needs rows on \
                             16-byte boundaries (a multiple of 8 values); stage it (Staging)",
                            rung.name()
                        ),
                    ));
                }
            }
            let (bm, bk) = (h::WG_BM as u32, h::WG_BK as u32);
            Some((
                Operand::new(dev, a, (m, kk), (bm, bk), staging.a)?,
                Operand::new(dev, b, (kk, n), (bk, 64), staging.b)?,
            ))
        } else {
            None
        };
        Ok(Self {
            rung,
            half,
            a,
            b,
            tma,
            cfg: rung.config(dev, m, n)?,
            m,
            n,
            kk,
        })
    }

    /// Launches the product into `c` (`m x n`), after the staging copies.
    pub fn run(&mut self, dev: &Device, c: &mut Buffer<u16>) -> Result<()> {
        check_len("C", c.len(), self.m * self.n)?;
        match self.half {
            Half::Bf16 => self.launch::<Bf16>(dev, c),
            Half::F16 => self.launch::<F16>(dev, c),
        }
    }

    /// [`HalfPlan::run`] for the device type `T` of `self.half`.
    fn launch<T: HalfType>(&mut self, dev: &Device, c: &mut Buffer<u16>) -> Result<()> {
        let (a, b, cfg) = (self.a, self.b, self.cfg);
        let (m, n, kk) = (self.m, self.n, self.kk);
        let (mu, nu, ku) = (m as u32, n as u32, kk as u32);
        if let Some((oa, ob)) = &mut self.tma {
            oa.stage(dev, a, (m, kk))?;
            ob.stage(dev, b, (kk, n))?;
            let (bm, bk) = (h::WG_BM as u32, h::WG_BK as u32);
            let pitched = |copy, (rows, cols, ld), (br, bc)| {
                TensorMap::tiled_2d_pitched(dev, copy, (rows, cols, ld), br, bc, Swizzle::B128)
            };
            let (own_a, own_b);
            let ma = match &*oa {
                Operand::Direct(map) => map,
                Operand::Staged { copy, ld } => {
                    own_a = pitched(copy, (m, kk, *ld), (bm, bk))?;
                    &own_a
                }
            };
            let mb = match &*ob {
                Operand::Direct(map) => map,
                Operand::Staged { copy, ld } => {
                    own_b = pitched(copy, (kk, n, *ld), (bk, 64))?;
                    &own_b
                }
            };
            let (ma, mb) = (ma.buffer(), mb.buffer());
            return match self.rung {
                TcRung::Wgmma => {
                    launch!(dev, cfg, hopper::matmul_wgmma::<T>(ma, mb, c, mu, nu, ku))
                }
                TcRung::Ws => launch!(dev, cfg, hopper::matmul_ws::<T>(ma, mb, c, mu, nu, ku)),
                _ => unreachable!("only the TMA rungs have maps"),
            };
        }
        match self.rung {
            TcRung::Mma => launch!(dev, cfg, tensor::matmul_mma::<T>(a, b, c, mu, nu, ku)),
            TcRung::Ldsm => launch!(dev, cfg, tensor::matmul_ldsm::<T>(a, b, c, mu, nu, ku)),
            TcRung::Pipe => launch!(dev, cfg, tensor::matmul_pipe::<T>(a, b, c, mu, nu, ku)),
            TcRung::PipeK => launch!(dev, cfg, tensor::matmul_pipek::<T>(a, b, c, mu, nu, ku)),
            TcRung::PipeW => launch!(dev, cfg, tensor::matmul_pipew::<T>(a, b, c, mu, nu, ku)),
            TcRung::PipeS => launch!(dev, cfg, tensor::matmul_pipes::<T>(a, b, c, mu, nu, ku)),
            TcRung::PipeT => launch!(dev, cfg, tensor::matmul_pipet::<T>(a, b, c, mu, nu, ku)),
            TcRung::Wgmma | TcRung::Ws => unreachable!("the TMA rungs have maps"),
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
        check_operands(a, b, m, n, kk)?;
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
                let dims = h::GemmDims {
                    m: mu,
                    n: nu,
                    k: ku,
                };
                let (m0, m1, m2, m3) = (m0.buffer(), m1.buffer(), m2.buffer(), m3.buffer());
                launch!(
                    dev,
                    cfg,
                    hopper::matmul_tf32x3w_f32(m0, m1, m2, m3, c, dims)
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
