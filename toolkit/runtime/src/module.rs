//! Modules: the PTX (and cubins) a kernel crate was built into, as
//! `ptxlab-builder` embeds them in a host binary, and which of them a launch
//! loads.
//!
//! A [`Kernels`] value is what `ptxlab_builder::Embed` generates from a
//! kernel crate (`ptxlab_runtime::include_kernels!()` brings it in): one
//! [`ModuleImage`] per build of the crate (precise, fast math, an
//! arch-specific `sm_90a` one), each with its PTX text, its cubins, every
//! [`Entry`] with its parameter types and directives, and the `ptxas`
//! [`Resources`] report. A launch names the kernel and a [`ModuleKey`]
//! (variant, PTX or cubin, register cap); [`Kernels::select`] picks the
//! module of that variant that holds the entry and runs on the GPU, or says
//! in one line why none does.
//! [`ModuleImage::plan`] says in which form that module reaches the GPU: a
//! cubin assembled ahead of time (of the key's register cap, when it asks
//! for one) wherever the build has one that loads there, the PTX through
//! the driver's JIT otherwise or when the key asks for it.

use crate::error::{Error, Result};

/// Which build of the kernel crate a launch uses: the crate is compiled
/// twice, once with IEEE-accurate math and once with fast math (a builder
/// option, not a kernel of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MathMode {
    /// IEEE-accurate math (`div.rn`, `sqrt.rn`, precise `math::` functions).
    #[default]
    Precise,
    /// The fast-math build: SFU approximations, approximate division, FTZ.
    Fast,
}

/// How a module reaches the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Form {
    /// The cubin for this GPU's architecture (and the key's register cap)
    /// when the build has one (no JIT, milliseconds), otherwise the PTX
    /// through the driver's JIT.
    #[default]
    Auto,
    /// PTX, compiled by the driver's JIT at load time, the register cap
    /// written into it (what a lesson on the JIT asks for; the JIT costs
    /// seconds for a large module).
    Ptx,
    /// A cubin assembled ahead of time by `ptxas` (an error when the build
    /// has none for this GPU and register cap).
    Cubin,
}

/// Which module a launch loads its kernel from (cudarc's `CudaModule`): the
/// build (precise or fast math), the form it is loaded in, and an optional
/// register cap (a cubin assembled with that cap when the build has one,
/// see `ptxlab_builder::Embed::reg_capped`; else the cap is written into the
/// PTX before the JIT). A [`LaunchConfig`]
/// carries one (`LaunchConfig::with_module`); the default is the precise
/// build, cubin when there is one for the GPU.
///
/// [`LaunchConfig`]: crate::LaunchConfig
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ModuleKey {
    /// Precise or fast math.
    pub math: MathMode,
    /// Cubin when available, PTX, or cubin only.
    pub form: Form,
    /// Register cap (`.maxnreg`) for every kernel of the module.
    pub reg_cap: Option<u32>,
}

impl ModuleKey {
    /// The fast-math build (cubin when there is one for the GPU).
    pub const FAST: ModuleKey = ModuleKey {
        math: MathMode::Fast,
        form: Form::Auto,
        reg_cap: None,
    };
    /// The default: the precise build (cubin when there is one for the GPU).
    pub const PRECISE: ModuleKey = ModuleKey {
        math: MathMode::Precise,
        form: Form::Auto,
        reg_cap: None,
    };
    /// This key, loaded as PTX through the driver's JIT.
    pub const fn ptx(self) -> ModuleKey {
        ModuleKey {
            form: Form::Ptx,
            ..self
        }
    }
    /// This key, loaded as a cubin only.
    pub const fn cubin(self) -> ModuleKey {
        ModuleKey {
            form: Form::Cubin,
            ..self
        }
    }
    /// This key with every kernel capped at `cap` registers per thread.
    pub const fn capped(self, cap: u32) -> ModuleKey {
        ModuleKey {
            reg_cap: Some(cap),
            ..self
        }
    }
    /// A short label for reports.
    pub fn label(&self) -> String {
        let mut s = match self.math {
            MathMode::Precise => "precise".to_string(),
            MathMode::Fast => "fast-math".to_string(),
        };
        match self.form {
            Form::Auto => {}
            Form::Ptx => s.push_str(", PTX"),
            Form::Cubin => s.push_str(", cubin"),
        }
        if let Some(r) = self.reg_cap {
            s.push_str(&format!(", maxnreg {r}"));
        }
        s
    }
}

/// The type of one kernel parameter, as its `.param` line in the PTX declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// `.u8`/`.s8`/`.b8`.
    U8,
    /// `.u16`/`.s16`/`.b16`/`.f16`.
    U16,
    /// `.u32`/`.s32`/`.b32`.
    U32,
    /// `.u64`/`.s64`/`.b64` (pointers and lengths too).
    U64,
    /// `.f32`.
    F32,
    /// `.f64`.
    F64,
    /// A by-value aggregate (`.align A .b8 name[SIZE]`), such as a TMA tensor map.
    Bytes {
        /// Bytes.
        size: u32,
        /// Alignment.
        align: u32,
    },
}

impl ParamKind {
    /// The PTX spelling, for messages.
    pub fn ptx(&self) -> String {
        match self {
            ParamKind::U8 => ".u8".into(),
            ParamKind::U16 => ".u16".into(),
            ParamKind::U32 => ".u32".into(),
            ParamKind::U64 => ".u64".into(),
            ParamKind::F32 => ".f32".into(),
            ParamKind::F64 => ".f64".into(),
            ParamKind::Bytes { size, align } => format!(".align {align} .b8[{size}]"),
        }
    }
}

/// One `.entry` of a module: name, parameter types, and the directives its
/// `#[kernel(...)]` attribute asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Entry (kernel) name.
    pub name: &'static str,
    /// Parameter types, in order (a `DeviceSlice` is a pointer and a length).
    pub params: &'static [ParamKind],
    /// `.maxntid` (0: none).
    pub max_threads: u32,
    /// `.minnctapersm` (0: none).
    pub min_blocks: u32,
    /// `.maxnreg` (0: none).
    pub max_registers: u32,
}

/// `ptxas -v`'s report for one kernel on one arch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// Kernel.
    pub kernel: &'static str,
    /// Arch (`sm_90`).
    pub arch: &'static str,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
    /// Stack frame (local memory) per thread, bytes.
    pub stack_frame: u32,
    /// Static shared memory, bytes.
    pub shared_bytes: u32,
}

impl Resources {
    /// The rows as a Markdown table, the same as the builder's
    /// ([`ptxlab_builder::report_table`]).
    pub fn table(rows: &[Resources]) -> String {
        let rows: Vec<ptxlab_builder::ResourceUsage> = rows
            .iter()
            .map(|r| ptxlab_builder::ResourceUsage {
                kernel: r.kernel.into(),
                arch: r.arch.into(),
                registers: r.registers,
                spill_stores: r.spill_stores,
                spill_loads: r.spill_loads,
                stack_frame: r.stack_frame,
                shared_bytes: r.shared_bytes,
                barriers: 0,
            })
            .collect();
        ptxlab_builder::report_table(&rows)
    }
}

/// A cubin of a module assembled with a register cap: the module's PTX with
/// `.maxnreg cap` written into every entry, assembled ahead of time by
/// `ptxas` for one arch.
#[derive(Debug, Clone, Copy)]
pub struct CappedCubin {
    /// Registers per thread.
    pub cap: u32,
    /// Target arch (`sm_90`).
    pub arch: &'static str,
    /// The cubin.
    pub cubin: &'static [u8],
    /// `ptxas`'s report for the capped kernels.
    pub resources: &'static [Resources],
}

/// How a module would reach a GPU for a [`ModuleKey`] ([`ModuleImage::plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadPlan {
    /// A cubin assembled ahead of time (no JIT), of `reg_cap` when set.
    Cubin {
        /// The cubin's arch (`sm_90`; `sm_80` on an sm_86 GPU).
        arch: &'static str,
        /// Its register cap.
        reg_cap: Option<u32>,
    },
    /// The PTX through the driver's JIT, `reg_cap` written into it when set.
    Ptx {
        /// The PTX target.
        arch: &'static str,
        /// The cap written into it.
        reg_cap: Option<u32>,
    },
    /// The key asks for a cubin and the build has none for this GPU (and cap).
    NoCubin {
        /// Compute capability of the GPU.
        cc: (i32, i32),
        /// The cap asked for.
        reg_cap: Option<u32>,
    },
    /// The module does not run on this GPU (an `sm_90a` module elsewhere).
    NotForThisGpu {
        /// The module's PTX target.
        arch: &'static str,
    },
}

impl LoadPlan {
    /// Whether the load goes through the driver's JIT.
    pub fn is_jit(&self) -> bool {
        matches!(self, LoadPlan::Ptx { .. })
    }
}

impl std::fmt::Display for LoadPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cap = |c: &Option<u32>| c.map_or(String::new(), |c| format!(", maxnreg {c}"));
        match self {
            LoadPlan::Cubin { arch, reg_cap } => write!(f, "cubin {arch}{}", cap(reg_cap)),
            LoadPlan::Ptx { arch, reg_cap } => {
                write!(f, "PTX {arch} through the driver JIT{}", cap(reg_cap))
            }
            LoadPlan::NoCubin { cc, reg_cap } => {
                write!(f, "no cubin for sm_{}{}{}", cc.0, cc.1, cap(reg_cap))
            }
            LoadPlan::NotForThisGpu { arch } => write!(f, "not for this GPU ({arch} only)"),
        }
    }
}

/// `sm_90a` -> (9, 0, true); `sm_80` -> (8, 0, false).
fn parse_arch(arch: &str) -> Option<(i32, i32, bool)> {
    let n = arch.strip_prefix("sm_")?;
    let specific = n.ends_with('a');
    let n: i32 = n.trim_end_matches('a').parse().ok()?;
    Some((n / 10, n % 10, specific))
}

/// Whether a cubin for `arch` loads on a GPU of compute capability `cc`:
/// an `sm_XYa` cubin on XY only; an `sm_XY` cubin on the same major
/// version at minor Y or newer (SASS is compatible within a major version
/// upward: an sm_80 cubin runs on sm_86 and sm_89, not on sm_90).
pub fn cubin_runs_on(arch: &str, cc: (i32, i32)) -> bool {
    match parse_arch(arch) {
        Some((ma, mi, true)) => (ma, mi) == cc,
        Some((ma, mi, false)) => ma == cc.0 && mi <= cc.1,
        None => false,
    }
}

/// One PTX module of a kernel crate, embedded in the host binary: the
/// kernels of one top-level Rust module of the crate (its `group`) in one
/// build, so a program loads only the groups it launches from.
#[derive(Debug, Clone, Copy)]
pub struct ModuleImage {
    /// File stem of the build (`kernels`, `kernels_fast`).
    pub stem: &'static str,
    /// The kernel crate's top-level module the entries come from
    /// (`poisson` for `kernels_gpu::poisson::*`; `lib` for the crate root).
    pub group: &'static str,
    /// Precise or fast math.
    pub math: MathMode,
    /// PTX target (`sm_80`; `sm_90a` runs on sm_90 only).
    pub arch: &'static str,
    /// The PTX text.
    pub ptx: &'static str,
    /// Cubins assembled by `ptxas`, by arch.
    pub cubins: &'static [(&'static str, &'static [u8])],
    /// Register-capped cubins (none unless the build asked for them).
    pub capped: &'static [CappedCubin],
    /// Every entry.
    pub entries: &'static [Entry],
    /// The resource report (empty without `ptxas`).
    pub resources: &'static [Resources],
}

impl ModuleImage {
    /// The entry called `name`.
    pub fn entry(&self, name: &str) -> Option<&'static Entry> {
        self.entries.iter().find(|e| e.name == name)
    }
    /// `sm_90a` -> (9, 0, true); `sm_80` -> (8, 0, false).
    fn target(&self) -> Option<(i32, i32, bool)> {
        parse_arch(self.arch)
    }

    /// The cubin a GPU of compute capability `cc` loads for register cap
    /// `reg_cap` (none: the uncapped cubins), with its arch: the newest one
    /// that loads there ([`cubin_runs_on`]: the exact arch, else an older
    /// one of the same major version); `None` when the build has none that
    /// loads, or the module does not run on that GPU.
    pub fn cubin_for(
        &self,
        cc: (i32, i32),
        reg_cap: Option<u32>,
    ) -> Option<(&'static str, &'static [u8])> {
        if !self.runs_on(cc) {
            return None;
        }
        let newest = |c: &mut dyn Iterator<Item = (&'static str, &'static [u8])>| {
            c.filter(|(a, _)| cubin_runs_on(a, cc))
                .max_by_key(|(a, _)| parse_arch(a))
        };
        match reg_cap {
            None => newest(&mut self.cubins.iter().copied()),
            Some(cap) => newest(
                &mut self
                    .capped
                    .iter()
                    .filter(|c| c.cap == cap)
                    .map(|c| (c.arch, c.cubin)),
            ),
        }
    }

    /// How a launch with `key` would load this module on a GPU of compute
    /// capability `cc` ([`Form::Auto`]: the cubin of the key's cap when the
    /// build has one that loads there, else the PTX through the JIT).
    pub fn plan(&self, cc: (i32, i32), key: ModuleKey) -> LoadPlan {
        if !self.runs_on(cc) {
            return LoadPlan::NotForThisGpu { arch: self.arch };
        }
        let cubin = self.cubin_for(cc, key.reg_cap);
        match (key.form, cubin) {
            (Form::Ptx, _) | (Form::Auto, None) => LoadPlan::Ptx {
                arch: self.arch,
                reg_cap: key.reg_cap,
            },
            (_, Some((arch, _))) => LoadPlan::Cubin {
                arch,
                reg_cap: key.reg_cap,
            },
            (Form::Cubin, None) => LoadPlan::NoCubin {
                cc,
                reg_cap: key.reg_cap,
            },
        }
    }

    /// The forms this module ships in, for listings: `PTX sm_80; cubin
    /// sm_80, sm_90; maxnreg 32 cubin sm_80, sm_90`.
    pub fn forms(&self) -> String {
        let mut s = format!("PTX {}", self.arch);
        if !self.cubins.is_empty() {
            let archs: Vec<&str> = self.cubins.iter().map(|(a, _)| *a).collect();
            s.push_str(&format!("; cubin {}", archs.join(", ")));
        }
        for cap in self.caps() {
            let archs: Vec<&str> = self
                .capped
                .iter()
                .filter(|c| c.cap == cap)
                .map(|c| c.arch)
                .collect();
            s.push_str(&format!("; maxnreg {cap} cubin {}", archs.join(", ")));
        }
        s
    }

    /// The register caps of the capped cubins, each once, in build order.
    pub fn caps(&self) -> Vec<u32> {
        let mut caps: Vec<u32> = Vec::new();
        for c in self.capped {
            if !caps.contains(&c.cap) {
                caps.push(c.cap);
            }
        }
        caps
    }
    /// Whether a GPU of compute capability `cc` can load this module: an
    /// `sm_XY` module runs on XY and newer (the driver JITs it), an `sm_XYa`
    /// module on XY only.
    pub fn runs_on(&self, cc: (i32, i32)) -> bool {
        match self.target() {
            Some((ma, mi, true)) => (ma, mi) == cc,
            Some((ma, mi, false)) => (ma, mi) <= cc,
            None => false,
        }
    }
}

/// The modules built from one kernel crate (what `ptxlab_builder::Embed` generates).
#[derive(Debug, Clone, Copy)]
pub struct Kernels {
    /// The kernel crate's package name.
    pub crate_name: &'static str,
    /// Its modules.
    pub modules: &'static [ModuleImage],
}

impl Kernels {
    /// The PTX of every portable (not arch-specific) module of `math`, one
    /// after the other (for inspection and tests; a GPU loads them one by one).
    pub fn ptx(&self, math: MathMode) -> String {
        self.modules
            .iter()
            .filter(|m| m.math == math && !m.arch.ends_with('a'))
            .map(|m| m.ptx)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The PTX of the modules built for `arch` exactly (`sm_90a`).
    pub fn ptx_for_arch(&self, arch: &str) -> String {
        self.modules
            .iter()
            .filter(|m| m.arch == arch)
            .map(|m| m.ptx)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The module of `variant` that holds `entry` and runs on a GPU of
    /// compute capability `cc`: an arch-specific module for exactly this GPU
    /// first, then the newest portable one. When none fits, the error says
    /// why in one line: no such kernel (a typo, or a stale build), or a
    /// kernel built only for another arch (Hopper-only instructions).
    pub fn select(
        &self,
        math: MathMode,
        entry: &str,
        cc: (i32, i32),
    ) -> Result<&'static ModuleImage> {
        let holding: Vec<&'static ModuleImage> = self
            .modules
            .iter()
            .filter(|m| m.math == math && m.entry(entry).is_some())
            .collect();
        let best = holding
            .iter()
            .filter(|m| m.runs_on(cc))
            .max_by_key(|m| m.target().map(|(a, b, s)| (s, a, b)));
        if let Some(m) = best {
            return Ok(m);
        }
        if holding.is_empty() {
            let other = self
                .modules
                .iter()
                .find(|m| m.entry(entry).is_some())
                .map(|m| format!(" (it is in the {:?} build `{}`)", m.math, m.stem))
                .unwrap_or_default();
            return Err(Error::input(
                "kernel",
                format!(
                    "`{entry}` is not an entry of the {math:?} build of `{}`{other}: rebuild if \
                     the embedded PTX is stale",
                    self.crate_name
                ),
            ));
        }
        let archs: Vec<&str> = holding.iter().map(|m| m.arch).collect();
        Err(Error::Unsupported {
            what: format!("kernel `{entry}` (built for {})", archs.join(", ")),
            backend: format!("gpu (compute capability {}.{})", cc.0, cc.1),
            hint: "it uses instructions of another architecture (an `a` target such as sm_90a \
                   runs on that GPU only: wgmma and TMA need an H100/H200); run it on that GPU or \
                   on the CPU simulator (`Device::sim()`)"
                .into(),
        })
    }

    /// Every entry name, once (the union over the modules).
    pub fn entry_names(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = Vec::new();
        for m in self.modules {
            for e in m.entries {
                if !v.contains(&e.name) {
                    v.push(e.name);
                }
            }
        }
        v
    }

    /// The resource report of `kernel` on `arch` in the `math` build,
    /// assembled with register cap `cap` (from the capped cubins).
    pub fn capped_resources(
        &self,
        kernel: &str,
        arch: &str,
        math: MathMode,
        cap: u32,
    ) -> Option<&'static Resources> {
        self.modules
            .iter()
            .filter(|m| m.math == math)
            .flat_map(|m| m.capped.iter())
            .filter(|c| c.cap == cap && c.arch == arch)
            .flat_map(|c| c.resources.iter())
            .find(|r| r.kernel == kernel)
    }

    /// The resource report of `kernel` on `arch` in the `math` build.
    pub fn resources(
        &self,
        kernel: &str,
        arch: &str,
        math: MathMode,
    ) -> Option<&'static Resources> {
        self.modules
            .iter()
            .filter(|m| m.math == math)
            .flat_map(|m| m.resources.iter())
            .find(|r| r.kernel == kernel && r.arch == arch)
    }
}

/// Writes `.maxnreg cap` into every `.entry` of a PTX module (replacing an
/// existing one), as `max_registers` would: a register cap without
/// recompiling the kernels, for the driver's JIT. It is
/// [`ptxlab_builder::with_register_cap`], the rewrite the builder makes
/// before it assembles a capped cubin, so a capped JIT and a capped cubin
/// start from the same PTX. A cap outside
/// [`REG_CAP_RANGE`](ptxlab_builder::REG_CAP_RANGE) is refused.
pub fn with_register_cap(ptx: &str, cap: u32) -> Result<String> {
    ptxlab_builder::with_register_cap(ptx, cap)
        .map_err(|e| Error::input(e.step, format!("{}; {}", e.detail, e.hint)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &[ParamKind] = &[ParamKind::U64, ParamKind::U64];
    static PORTABLE: &[Entry] = &[Entry {
        name: "saxpy",
        params: P,
        max_threads: 256,
        min_blocks: 0,
        max_registers: 32,
    }];
    static HOPPER: &[Entry] = &[Entry {
        name: "gemm_wgmma",
        params: P,
        max_threads: 384,
        min_blocks: 1,
        max_registers: 0,
    }];
    fn image(stem: &'static str, arch: &'static str, entries: &'static [Entry]) -> ModuleImage {
        ModuleImage {
            stem,
            group: "lib",
            math: MathMode::Precise,
            arch,
            ptx: "",
            cubins: &[],
            capped: &[],
            entries,
            resources: &[],
        }
    }
    static MODULES: [ModuleImage; 2] = [
        ModuleImage {
            stem: "kernels",
            group: "lib",
            math: MathMode::Precise,
            arch: "sm_80",
            ptx: "",
            cubins: &[],
            capped: &[],
            entries: PORTABLE,
            resources: &[],
        },
        ModuleImage {
            stem: "kernels_sm90a",
            group: "lib",
            math: MathMode::Precise,
            arch: "sm_90a",
            ptx: "",
            cubins: &[],
            capped: &[],
            entries: HOPPER,
            resources: &[],
        },
    ];
    static KERNELS: Kernels = Kernels {
        crate_name: "demo",
        modules: &MODULES,
    };

    #[test]
    fn arch_specific_modules_run_on_their_arch_only() {
        let a = image("a", "sm_90a", HOPPER);
        assert!(a.runs_on((9, 0)) && !a.runs_on((8, 0)) && !a.runs_on((10, 0)));
        let p = image("p", "sm_80", PORTABLE);
        assert!(p.runs_on((8, 0)) && p.runs_on((9, 0)) && !p.runs_on((7, 5)));
    }

    #[test]
    fn select_picks_the_module_that_holds_the_kernel_and_runs_here() {
        let m = KERNELS.select(MathMode::Precise, "saxpy", (9, 0)).unwrap();
        assert_eq!(m.stem, "kernels");
        let m = KERNELS
            .select(MathMode::Precise, "gemm_wgmma", (9, 0))
            .unwrap();
        assert_eq!(m.stem, "kernels_sm90a");
        // On an A100 the Hopper kernel is refused in one line that says why.
        let e = KERNELS
            .select(MathMode::Precise, "gemm_wgmma", (8, 0))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("gemm_wgmma") && e.contains("sm_90a") && e.contains("8.0"),
            "{e}"
        );
        assert!(
            !e.trim_end().contains('\n') || e.lines().count() <= 2,
            "{e}"
        );
        // A typo or a stale build.
        let e = KERNELS
            .select(MathMode::Precise, "saxpi", (9, 0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`saxpi`") && e.contains("rebuild"), "{e}");
        // A kernel missing from the fast-math build names the module it is in.
        let e = KERNELS
            .select(MathMode::Fast, "saxpy", (9, 0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("Precise") && e.contains("`kernels`"), "{e}");
        assert_eq!(KERNELS.entry_names(), ["saxpy", "gemm_wgmma"]);
    }

    static CUBIN80: &[u8] = b"80";
    static CUBIN90: &[u8] = b"90";
    static CAPPED90: &[u8] = b"90/32";
    static BOTH: &[(&str, &[u8])] = &[("sm_80", CUBIN80), ("sm_90", CUBIN90)];
    static HOPPER_CUBIN: &[(&str, &[u8])] = &[("sm_90a", CUBIN90)];
    static CAPPED: &[CappedCubin] = &[CappedCubin {
        cap: 32,
        arch: "sm_90",
        cubin: CAPPED90,
        resources: &[],
    }];
    fn shipped(
        arch: &'static str,
        cubins: &'static [(&'static str, &'static [u8])],
    ) -> ModuleImage {
        ModuleImage {
            cubins,
            capped: CAPPED,
            ..image("kernels", arch, PORTABLE)
        }
    }

    #[test]
    fn cubins_are_picked_by_arch_family_and_cap() {
        let m = shipped("sm_80", BOTH);
        let arch = |cc, cap| m.cubin_for(cc, cap).map(|(a, _)| a);
        assert_eq!(arch((9, 0), None), Some("sm_90"));
        assert_eq!(arch((8, 0), None), Some("sm_80"));
        // An sm_80 cubin loads on the rest of Ampere and on Ada.
        assert_eq!(arch((8, 6), None), Some("sm_80"));
        assert_eq!(arch((8, 9), None), Some("sm_80"));
        // Not across a major version: Blackwell gets the PTX.
        assert_eq!(arch((10, 0), None), None);
        // A cap picks the capped cubin, and only of that cap.
        assert_eq!(m.cubin_for((9, 0), Some(32)), Some(("sm_90", CAPPED90)));
        assert_eq!(arch((8, 0), Some(32)), None);
        assert_eq!(arch((9, 0), Some(40)), None);
        assert!(cubin_runs_on("sm_90a", (9, 0)) && !cubin_runs_on("sm_90a", (9, 1)));
        assert!(!cubin_runs_on("sm_90", (8, 9)) && !cubin_runs_on("sm_86", (8, 0)));
    }

    #[test]
    fn the_plan_says_cubin_or_jit_and_why() {
        let m = shipped("sm_80", BOTH);
        let h = (9, 0);
        let plan = |key| m.plan(h, key).to_string();
        assert_eq!(plan(ModuleKey::PRECISE), "cubin sm_90");
        assert_eq!(
            plan(ModuleKey::PRECISE.capped(32)),
            "cubin sm_90, maxnreg 32"
        );
        // A lesson can still ask for the JIT, with or without the cap.
        assert_eq!(
            plan(ModuleKey::PRECISE.ptx()),
            "PTX sm_80 through the driver JIT"
        );
        assert_eq!(
            plan(ModuleKey::PRECISE.ptx().capped(32)),
            "PTX sm_80 through the driver JIT, maxnreg 32"
        );
        assert!(m.plan(h, ModuleKey::PRECISE.ptx()).is_jit());
        assert!(!m.plan(h, ModuleKey::PRECISE).is_jit());
        // A cap the build did not assemble falls back to the JIT (Auto) or
        // is refused (Cubin).
        assert!(m.plan(h, ModuleKey::PRECISE.capped(40)).is_jit());
        assert_eq!(
            plan(ModuleKey::PRECISE.cubin().capped(40)),
            "no cubin for sm_90, maxnreg 40"
        );
        let a = ModuleImage {
            cubins: HOPPER_CUBIN,
            ..image("kernels_sm90a", "sm_90a", HOPPER)
        };
        assert_eq!(a.plan(h, ModuleKey::PRECISE).to_string(), "cubin sm_90a");
        assert_eq!(
            a.plan((8, 0), ModuleKey::PRECISE).to_string(),
            "not for this GPU (sm_90a only)"
        );
        assert_eq!(
            m.forms(),
            "PTX sm_80; cubin sm_80, sm_90; maxnreg 32 cubin sm_90"
        );
        assert_eq!(image("k", "sm_80", PORTABLE).forms(), "PTX sm_80");
    }

    #[test]
    fn register_caps_are_written_into_every_entry() {
        let ptx = ".visible .entry a(\n.param .u64 a_p\n)\n.maxnreg 64\n{\nret;\n}\n.visible .entry b(\n)\n{\nret;\n}\n";
        let capped = with_register_cap(ptx, 40).unwrap();
        assert_eq!(capped.matches(".maxnreg 40").count(), 2);
        assert!(!capped.contains(".maxnreg 64"));
        let e = with_register_cap(ptx, 8).unwrap_err().to_string();
        assert!(e.contains("16..=255"), "{e}");
    }
}
