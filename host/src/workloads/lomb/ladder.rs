//! The rungs of the ladder (names, labels, kernel and module of each) and
//! the launch shape.

use super::launch::Kernel;
use crate::error::{Error, Result};
use crate::runtime::{Device, ModuleKey};
use kernels_gpu::lomb::{BLOCK, BLOCKS_PER_SM, LEAN_BLOCK};

/// One rung of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// 1: module loaded (PTX JIT) and function looked up on every call.
    Baseline,
    /// 2: cached module and function (normal `launch!`).
    Cached,
    /// 4: the fast-math module (SFU sin/cos, approximate division, FTZ).
    FastMath,
    /// 4b: fast math, one frequency per thread (`ceil(nf/128)` blocks).
    FastMathFit,
    /// 4c: fast math, lean kernel (`LEAN_FREQS` frequencies per thread,
    /// four sums, least-squares finish).
    FastLean,
    /// 5: `.maxnreg N` written into the PTX of the precise module.
    RegCap(u32),
    /// 6: the precompiled sm_90 cubin (no JIT).
    Cubin,
    /// 7: `launch_bounds(128)` kernel (precise module).
    Bounds,
    /// 7b: `launch_bounds(128)` kernel from the fast-math module.
    BoundsFast,
    /// x, y staged in shared memory (precise).
    Shared,
    /// Rotation recurrence on an even grid (precise anchors).
    Rotate,
    /// Rotation recurrence from the fast-math module (SFU anchors for f32).
    RotateFast,
    /// Three-term recurrence on shifted angles (even grid; precise anchors).
    Cheby,
    /// Three-term recurrence with anchors from tables (even grid).
    ChebyTab,
    /// `ChebyTab` with the sample loop software pipelined.
    ChebyTabPipe,
    /// Taylor moments per run of frequencies (even grid).
    Taylor,
}

impl Rung {
    /// The default ladder, in order.
    pub const LADDER: [Rung; 16] = [
        Rung::Baseline,
        Rung::Cached,
        Rung::FastMath,
        Rung::FastMathFit,
        Rung::FastLean,
        Rung::RegCap(32),
        Rung::Cubin,
        Rung::Bounds,
        Rung::BoundsFast,
        Rung::Shared,
        Rung::Rotate,
        Rung::RotateFast,
        Rung::Cheby,
        Rung::ChebyTab,
        Rung::ChebyTabPipe,
        Rung::Taylor,
    ];
    /// CLI name.
    pub fn name(&self) -> String {
        match self {
            Rung::Baseline => "baseline".into(),
            Rung::Cached => "cached".into(),
            Rung::FastMath => "fast-math".into(),
            Rung::FastMathFit => "fast-math-fit".into(),
            Rung::FastLean => "fast-lean".into(),
            Rung::RegCap(r) => format!("regcap{r}"),
            Rung::Cubin => "cubin".into(),
            Rung::Bounds => "launch-bounds".into(),
            Rung::BoundsFast => "launch-bounds-fast".into(),
            Rung::Shared => "shared".into(),
            Rung::Rotate => "rotate".into(),
            Rung::RotateFast => "rotate-fast".into(),
            Rung::Cheby => "cheby".into(),
            Rung::ChebyTab => "cheby-tab".into(),
            Rung::ChebyTabPipe => "cheby-tabp".into(),
            Rung::Taylor => "taylor".into(),
        }
    }
    /// Report label.
    pub fn label(&self) -> String {
        match self {
            Rung::Baseline => "1 baseline (JIT every call)".into(),
            Rung::Cached => "2 cached module (precise Rust sincos)".into(),
            Rung::FastMath => "4 fast math (SFU)".into(),
            Rung::FastMathFit => "4b fast math, 1 freq/thread grid".into(),
            Rung::FastLean => "4c fast math, lean (4 sums, least-squares finish)".into(),
            Rung::RegCap(r) => format!("5 register cap {r}"),
            Rung::Cubin => "6 precompiled cubin".into(),
            Rung::Bounds => "7 launch bounds 128".into(),
            Rung::BoundsFast => "7b launch bounds 128 + fast math".into(),
            Rung::Shared => "8 x,y in shared memory".into(),
            Rung::Rotate => "9 rotation recurrence (even grid)".into(),
            Rung::RotateFast => "9b rotation + fast-math anchors".into(),
            Rung::Cheby => "10 three-term recurrence, shifted angle (even grid)".into(),
            Rung::ChebyTab => "11 three-term recurrence, anchors from tables".into(),
            Rung::ChebyTabPipe => "11b as 11, sample loop pipelined".into(),
            Rung::Taylor => "12 Taylor moments per run of frequencies".into(),
        }
    }
    /// The kernel it launches.
    pub fn kernel(&self) -> Kernel {
        match self {
            Rung::Bounds | Rung::BoundsFast => Kernel::Bounds,
            Rung::Shared => Kernel::Shared,
            Rung::Rotate | Rung::RotateFast => Kernel::Rotate,
            Rung::Cheby => Kernel::Cheby,
            Rung::ChebyTab => Kernel::ChebyTab,
            Rung::ChebyTabPipe => Kernel::ChebyTabPipe,
            Rung::Taylor => Kernel::Taylor,
            Rung::FastLean => Kernel::Lean,
            _ => Kernel::Direct,
        }
    }
    /// The module it launches from.
    pub fn module(&self) -> ModuleKey {
        match self {
            Rung::FastMath
            | Rung::FastMathFit
            | Rung::FastLean
            | Rung::BoundsFast
            | Rung::RotateFast => ModuleKey::FAST.ptx(),
            Rung::RegCap(r) => ModuleKey {
                reg_cap: Some(*r),
                ..ModuleKey::PRECISE.ptx()
            },
            Rung::Cubin => ModuleKey::PRECISE.cubin(),
            // The material's JIT rungs load the PTX on purpose (the first
            // call pays the driver's JIT; `cached` keeps the JIT's module).
            Rung::Baseline | Rung::Cached => ModuleKey::PRECISE.ptx(),
            _ => ModuleKey::PRECISE,
        }
    }
}

impl std::str::FromStr for Rung {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let allowed = "baseline, cached, fast-math, fast-math-fit, fast-lean, regcapN (16..=255), cubin, launch-bounds, \
                       launch-bounds-fast, shared, rotate, rotate-fast, cheby, cheby-tab, cheby-tabp, taylor, all";
        Ok(match s {
            "baseline" => Rung::Baseline,
            "cached" => Rung::Cached,
            "fast-math" => Rung::FastMath,
            "fast-math-fit" => Rung::FastMathFit,
            "fast-lean" => Rung::FastLean,
            "cubin" => Rung::Cubin,
            "launch-bounds" => Rung::Bounds,
            "launch-bounds-fast" => Rung::BoundsFast,
            "shared" => Rung::Shared,
            "rotate" => Rung::Rotate,
            "rotate-fast" => Rung::RotateFast,
            "cheby" => Rung::Cheby,
            "cheby-tab" => Rung::ChebyTab,
            "cheby-tabp" => Rung::ChebyTabPipe,
            "taylor" => Rung::Taylor,
            _ => match s.strip_prefix("regcap").and_then(|r| r.parse::<u32>().ok()) {
                Some(r) if (16..=255).contains(&r) => Rung::RegCap(r),
                _ => {
                    return Err(Error::input(
                        "--variant",
                        format!("`{s}`; allowed: {allowed}"),
                    ));
                }
            },
        })
    }
}

/// Grid shape: blocks of `block` threads.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Blocks in the grid.
    pub blocks: u32,
    /// Threads per block.
    pub block: u32,
}

impl Shape {
    /// `self` with the block size `rung` was tuned for, where it has its own
    /// (rung 4c: [`LEAN_BLOCK`]); the other rungs keep `self`.
    pub fn for_rung(self, rung: Rung) -> Shape {
        match rung {
            Rung::FastLean => Shape {
                block: LEAN_BLOCK,
                ..self
            },
            _ => self,
        }
    }

    /// The material's shape on `dev`: SM count x 20 blocks of 128 (on the
    /// simulator: 3 blocks, so a launch stays small).
    pub fn material(dev: &Device) -> Self {
        match dev.as_gpu() {
            Some(g) => Shape {
                blocks: g.info().sm_count * BLOCKS_PER_SM,
                block: BLOCK,
            },
            None => Shape {
                blocks: 3,
                block: BLOCK,
            },
        }
    }
}
