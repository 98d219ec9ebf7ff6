//! The rungs of the ladder (names, labels, kernel and module of each) and
//! the launch shape.

use super::launch::Kernel;
use kernels_gpu::lomb::{BLOCK, BLOCKS_PER_SM, LEAN_BLOCK};
use ptxlab_common::cli::OneOrAll;
use ptxlab_common::runtime::{Device, ModuleKey};

/// One rung of the ladder (`--variant`; the CLI names are clap values: see
/// [`variant_parser`]).
///
/// Every rung of [`Rung::LADDER`] loads a cubin assembled ahead of time for
/// the GPU's architecture when the build has one ([`Rung::module`]): the
/// precise or fast-math module, or, for a register cap the build assembled
/// (`lab/common/build.rs`), the module capped at it. None of them waits for the
/// driver's JIT, which costs seconds per module on a fresh machine. The
/// material's JIT lesson (the first pass pays the JIT, then the module is
/// cached) is [`Rung::Jit`], outside the ladder: it runs when asked for by
/// name (`--variant jit`), never from `--variant all` or `ptxlab bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// 1: module loaded and function looked up on every call (the cubin
    /// for the GPU: what reloading costs without the JIT).
    Baseline,
    /// 2: cached module and function (normal `launch!`).
    Cached,
    /// The material's JIT lesson: the precise module's PTX through the
    /// driver's JIT, then cached. Its first pass times the JIT (seconds for
    /// the Lomb-Scargle module on a fresh machine), its timed runs the JIT's
    /// code; set against the cached rung and the cubin rung's first pass.
    /// Not in [`Rung::LADDER`]: only `--variant jit` runs it, so no default
    /// run or bench loads a module through the JIT.
    Jit,
    /// 4: the fast-math module (SFU sin/cos, approximate division, FTZ).
    FastMath,
    /// 4b: fast math, one frequency per thread (`ceil(nf/128)` blocks).
    FastMathFit,
    /// 4c: fast math, lean kernel (`LEAN_FREQS` frequencies per thread,
    /// four sums, least-squares finish).
    FastLean,
    /// 5: the precise module capped at `N` registers per thread (`.maxnreg
    /// N`): the cubin assembled with that cap when the build has one (the
    /// ladder's caps), else the cap written into the PTX and the driver's
    /// JIT. `regcapN` on the command line, `N` in [`REG_CAPS`].
    RegCap(u32),
    /// 6: the precompiled cubin only (an error where the build has none for
    /// the GPU).
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

/// The register caps of `--variant regcapN` (ptxas's `.maxnreg` range).
pub const REG_CAPS: std::ops::RangeInclusive<u32> = 16..=255;

/// The kernel crate's group (top-level module) of the Lomb-Scargle kernels:
/// the module every rung loads.
pub const GROUP: &str = "lomb";

impl Rung {
    /// The rung a run without `--variant` takes: the direct kernel with
    /// launch bounds, from the precompiled module (no JIT wait on a cold
    /// start), on any frequency grid and for both models.
    pub const DEFAULT: Rung = Rung::Bounds;
    /// The default ladder, in order (`--variant all`, `ptxlab bench`);
    /// [`Rung::Jit`] is not in it.
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
    /// The rungs outside [`Rung::LADDER`], run only when named.
    pub const OPT_IN: [Rung; 1] = [Rung::Jit];
    /// CLI name (`regcap` and its cap for [`Rung::RegCap`]).
    pub fn name(&self) -> String {
        match self {
            Rung::RegCap(r) => format!("regcap{r}"),
            _ => self.word().into(),
        }
    }
    /// The CLI name without a register cap.
    fn word(&self) -> &'static str {
        match self {
            Rung::Baseline => "baseline",
            Rung::Cached => "cached",
            Rung::Jit => "jit",
            Rung::FastMath => "fast-math",
            Rung::FastMathFit => "fast-math-fit",
            Rung::FastLean => "fast-lean",
            Rung::RegCap(_) => "regcap",
            Rung::Cubin => "cubin",
            Rung::Bounds => "launch-bounds",
            Rung::BoundsFast => "launch-bounds-fast",
            Rung::Shared => "shared",
            Rung::Rotate => "rotate",
            Rung::RotateFast => "rotate-fast",
            Rung::Cheby => "cheby",
            Rung::ChebyTab => "cheby-tab",
            Rung::ChebyTabPipe => "cheby-tabp",
            Rung::Taylor => "taylor",
        }
    }
    /// Report label.
    pub fn label(&self) -> String {
        match self {
            Rung::Baseline => "1 baseline (module loaded every call)".into(),
            Rung::Cached => "2 cached module (precise Rust sincos)".into(),
            Rung::Jit => "2j PTX through the driver's JIT, then cached".into(),
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
    /// Whether the rung loads its module's PTX through the driver's JIT
    /// even where the build has cubins: [`Rung::Jit`] (on purpose), and a
    /// register cap the build did not assemble (`regcapN` off the ladder).
    pub fn needs_jit(&self) -> bool {
        match self {
            Rung::Jit => true,
            Rung::RegCap(r) => {
                !ptxlab_common::modules::reg_caps(GROUP, ptxlab_common::runtime::MathMode::Precise)
                    .contains(r)
            }
            _ => false,
        }
    }
    /// The module it launches from: the precise or fast-math build, capped
    /// for [`Rung::RegCap`], in the form [`Form::Auto`](ptxlab_common::Form::Auto)
    /// picks (the cubin for the GPU, of the cap, where the build has one);
    /// [`Rung::Jit`] forces the PTX, [`Rung::Cubin`] the cubin.
    pub fn module(&self) -> ModuleKey {
        match self {
            Rung::FastMath
            | Rung::FastMathFit
            | Rung::FastLean
            | Rung::BoundsFast
            | Rung::RotateFast => ModuleKey::FAST,
            Rung::RegCap(r) => ModuleKey::PRECISE.capped(*r),
            Rung::Cubin => ModuleKey::PRECISE.cubin(),
            Rung::Jit => ModuleKey::PRECISE.ptx(),
            _ => ModuleKey::PRECISE,
        }
    }
    /// `regcapN` with `N` in [`REG_CAPS`]; `None` when `s` is not
    /// `regcap` and digits, an error when `N` is out of range.
    fn parse_reg_cap(s: &str) -> Option<std::result::Result<Rung, String>> {
        let n = s.strip_prefix("regcap")?;
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(match n.parse::<u32>() {
            Ok(r) if REG_CAPS.contains(&r) => Ok(Rung::RegCap(r)),
            _ => Err(format!(
                "`{s}`: regcapN takes a register cap N in {}..={} (e.g. regcap24)",
                REG_CAPS.start(),
                REG_CAPS.end()
            )),
        })
    }
}

/// `--variant`'s values: every rung of [`Rung::LADDER`] by its CLI name
/// (`regcap32` for the ladder's register cap), with its label as help; any
/// `regcapN` parses too ([`variant_parser`]).
impl clap::ValueEnum for Rung {
    fn value_variants<'a>() -> &'a [Self] {
        &Rung::LADDER
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let name = match self {
            Rung::RegCap(32) => "regcap32",
            Rung::RegCap(_) => return None,
            r => r.word(),
        };
        let help = match self {
            Rung::RegCap(_) => format!(
                "{}; any regcapN, N in {}..={} (caps without a cubin in the build go through \
                 the driver's JIT)",
                self.label(),
                REG_CAPS.start(),
                REG_CAPS.end()
            ),
            Rung::Jit => format!("{} (the JIT lesson; not part of `all`)", self.label()),
            r => r.label(),
        };
        Some(clap::builder::PossibleValue::new(name).help(help))
    }
    fn from_str(input: &str, ignore_case: bool) -> std::result::Result<Self, String> {
        if let Some(r) = Rung::parse_reg_cap(input) {
            return r;
        }
        Rung::LADDER
            .iter()
            .chain(Rung::OPT_IN.iter())
            .find(|r| {
                r.to_possible_value()
                    .is_some_and(|v| v.matches(input, ignore_case))
            })
            .copied()
            .ok_or_else(|| format!("invalid variant: {input}"))
    }
}

/// The clap parser of `--variant`: `all`, a rung of the ladder by name
/// (listed with its label in `--help`; a typo gets clap's suggestion),
/// `regcapN` for any register cap `N` in [`REG_CAPS`], or `jit` (the
/// opt-in rung of [`Rung::OPT_IN`]).
pub fn variant_parser() -> VariantParser {
    VariantParser
}

/// See [`variant_parser`].
#[derive(Debug, Clone, Copy)]
pub struct VariantParser;

impl clap::builder::TypedValueParser for VariantParser {
    type Value = OneOrAll<Rung>;
    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<Self::Value, clap::Error> {
        if let Some(r) = value
            .to_str()
            .and_then(|v| Rung::OPT_IN.iter().find(|r| r.word() == v))
        {
            return Ok(OneOrAll::One(*r));
        }
        if let Some(r) = value.to_str().and_then(Rung::parse_reg_cap) {
            return r.map(OneOrAll::One).map_err(|e| {
                let flag = arg.map_or("--variant".into(), |a| a.to_string());
                clap::Error::raw(
                    clap::error::ErrorKind::InvalidValue,
                    format!("invalid value for '{flag}': {e}\n"),
                )
                .with_cmd(cmd)
            });
        }
        OneOrAll::<Rung>::parser().parse_ref(cmd, arg, value)
    }
    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let all = clap::builder::PossibleValue::new("all")
            .help("every rung that applies, in ladder order");
        let rungs = Rung::LADDER
            .iter()
            .chain(Rung::OPT_IN.iter())
            .filter_map(clap::ValueEnum::to_possible_value);
        Some(Box::new(std::iter::once(all).chain(rungs)))
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
