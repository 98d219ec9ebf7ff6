//! The PTX targets the tools build for, and the modules of the lab.
//!
//! The lab embeds three modules (lab/common/build.rs): precise and fast-math ones
//! for sm_80, which every GPU from A100 up runs, and an `sm_90a` one with the
//! Hopper kernels (`wgmma`, TMA, `setmaxnreg`), which only sm_90 runs and
//! which needs a newer PTX ISA. [`Module`] is one of them, or any other
//! target the tools are asked for.

use anyhow::{Result, bail};
use clap::ValueEnum;
use ptxlab_builder::{ARCH_SPECIFIC_PTX_ISA, Builder, DEFAULT_PTX_ISA};
use std::path::Path;
use std::str::FromStr;

/// A PTX target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub(crate) enum Arch {
    /// Ampere (A100): the lab's portable modules.
    #[value(name = "sm_80")]
    Sm80,
    /// Ampere (A10, RTX 30xx).
    #[value(name = "sm_86")]
    Sm86,
    /// Ada (L4, L40, RTX 40xx).
    #[value(name = "sm_89")]
    Sm89,
    /// Hopper (H100, H200), portable instructions only.
    #[value(name = "sm_90")]
    Sm90,
    /// Hopper's arch-specific target: the lab's module of Hopper kernels.
    #[value(name = "sm_90a")]
    Sm90a,
}

impl Arch {
    /// The archs whose modules the lab embeds (lab/common/build.rs).
    pub(crate) const LAB: &[Arch] = &[Arch::Sm80, Arch::Sm90a];

    /// The name `llc`, `ptxas` and the runtime use (`sm_90a`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Arch::Sm80 => "sm_80",
            Arch::Sm86 => "sm_86",
            Arch::Sm89 => "sm_89",
            Arch::Sm90 => "sm_90",
            Arch::Sm90a => "sm_90a",
        }
    }

    /// An arch-specific (`a`) target: its PTX runs on that arch only.
    pub(crate) fn is_arch_specific(self) -> bool {
        self == Arch::Sm90a
    }

    /// The compute capability times ten (`90` for sm_90 and sm_90a).
    fn number(self) -> u32 {
        match self {
            Arch::Sm80 => 80,
            Arch::Sm86 => 86,
            Arch::Sm89 => 89,
            Arch::Sm90 | Arch::Sm90a => 90,
        }
    }

    /// The PTX ISA version its module is written in: the arch-specific
    /// instructions need a newer one than the portable modules.
    pub(crate) fn ptx_isa(self) -> u32 {
        if self.is_arch_specific() {
            ARCH_SPECIFIC_PTX_ISA
        } else {
            DEFAULT_PTX_ISA
        }
    }

    /// The kernel crate's cargo features for this target: `sm90a` selects
    /// the Hopper kernels (kernels-gpu's feature, as lab/common/build.rs turns on).
    fn features(self) -> Vec<String> {
        if self.is_arch_specific() {
            vec![self.name().replace('_', "")]
        } else {
            Vec::new()
        }
    }

    /// Cubins assembled when none are asked for: an arch-specific module's
    /// own arch; for a portable one its arch and sm_90 (the GPUs the lab is
    /// timed on).
    fn default_cubins(self) -> Vec<Arch> {
        if self.is_arch_specific() || self >= Arch::Sm90 {
            vec![self]
        } else {
            vec![self, Arch::Sm90]
        }
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `--cubin`: archs to assemble cubins for, or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cubins(pub Vec<Arch>);

impl FromStr for Cubins {
    type Err = String;

    /// `none`, or comma-separated archs (`sm_80,sm_90`).
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "none" {
            return Ok(Cubins(Vec::new()));
        }
        let mut v = Vec::new();
        for a in s.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let arch = Arch::from_str(a, false).map_err(|_| {
                format!(
                    "`{a}` is not a target; allowed: {}, comma-separated, or `none`",
                    allowed_archs()
                )
            })?;
            if !v.contains(&arch) {
                v.push(arch);
            }
        }
        if v.is_empty() {
            return Err(format!(
                "no arch given; allowed: {}, comma-separated, or `none`",
                allowed_archs()
            ));
        }
        Ok(Cubins(v))
    }
}

fn allowed_archs() -> String {
    Arch::value_variants()
        .iter()
        .map(|a| a.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One module of the kernel crate: a target, precise or fast math.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Module {
    /// The PTX target.
    pub arch: Arch,
    /// The fast-math build.
    pub fast: bool,
}

impl Module {
    /// The modules the lab embeds: precise and fast math for sm_80, and the
    /// sm_90a module (precise).
    pub(crate) const LAB: &[Module] = &[
        Module {
            arch: Arch::Sm80,
            fast: false,
        },
        Module {
            arch: Arch::Sm80,
            fast: true,
        },
        Module {
            arch: Arch::Sm90a,
            fast: false,
        },
    ];

    /// The file stem, as lab/common/build.rs names the lab's modules: `kernels`,
    /// `kernels_fast`, `kernels_sm90a` (and `kernels_sm90a_fast`).
    pub(crate) fn stem(self) -> String {
        let mut s = String::from("kernels");
        if self.arch.is_arch_specific() {
            s.push('_');
            s.push_str(&self.arch.name().replace('_', ""));
        }
        if self.fast {
            s.push_str("_fast");
        }
        s
    }

    /// A label for reports: `sm_80 precise`, `sm_90a fast-math`.
    pub(crate) fn label(self) -> String {
        format!(
            "{} {}",
            self.arch,
            if self.fast { "fast-math" } else { "precise" }
        )
    }

    /// A folder name for this module's build (`sm_90a-precise`).
    pub(crate) fn dir_name(self) -> String {
        format!(
            "{}-{}",
            self.arch,
            if self.fast { "fast-math" } else { "precise" }
        )
    }

    /// The modules compared or searched for `archs`: for a portable target
    /// its precise module (and, with `with_fast`, its fast-math one); for an
    /// arch-specific one its precise module. Each once, in order.
    pub(crate) fn for_archs(archs: &[Arch], with_fast: bool) -> Vec<Module> {
        let mut v: Vec<Module> = Vec::new();
        for &arch in archs {
            let mut add = |fast| {
                let m = Module { arch, fast };
                if !v.contains(&m) {
                    v.push(m);
                }
            };
            add(false);
            if with_fast && !arch.is_arch_specific() {
                add(true);
            }
        }
        v
    }

    /// A builder of the lab's kernel crate for this module, writing into
    /// `out`, with `cubins` (default: [`Arch::default_cubins`]).
    pub(crate) fn builder(
        self,
        crate_dir: &Path,
        out: &Path,
        opt_level: u8,
        cubins: Option<&Cubins>,
    ) -> Result<Builder> {
        let cubins = match cubins {
            Some(c) => c.0.clone(),
            None => self.arch.default_cubins(),
        };
        for c in &cubins {
            self.check_cubin(*c)?;
        }
        let mut b = Builder::new(crate_dir, out);
        b.arch = self.arch.name().into();
        b.ptx_isa = self.arch.ptx_isa();
        b.features = self.arch.features();
        b.opt_level = opt_level;
        b.fast_math = self.fast;
        b.stem = self.stem();
        b.cubin_archs = cubins.iter().map(|a| a.name().to_string()).collect();
        Ok(b)
    }

    /// Can `ptxas` assemble this module's PTX for `cubin`?
    fn check_cubin(self, cubin: Arch) -> Result<()> {
        if self.arch.is_arch_specific() && cubin != self.arch {
            bail!(
                "--cubin {cubin}: the {} module's PTX is arch-specific; its only cubin arch is {}",
                self.arch,
                self.arch
            );
        }
        if cubin.number() < self.arch.number() {
            bail!(
                "--cubin {cubin}: PTX for {} cannot be assembled for an older arch; \
                 allowed: {} or newer",
                self.arch,
                self.arch
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_modules_are_named_as_the_host_names_them() {
        let stems: Vec<String> = Module::LAB.iter().map(|m| m.stem()).collect();
        assert_eq!(stems, ["kernels", "kernels_fast", "kernels_sm90a"]);
        assert_eq!(Arch::Sm90a.ptx_isa(), ARCH_SPECIFIC_PTX_ISA);
        assert_eq!(Arch::Sm80.ptx_isa(), DEFAULT_PTX_ISA);
        assert_eq!(Arch::Sm90a.features(), ["sm90a"]);
        assert!(Arch::Sm90.features().is_empty());
    }

    #[test]
    fn cubin_lists_parse_and_are_checked_against_the_module() {
        assert_eq!("none".parse::<Cubins>().unwrap(), Cubins(vec![]));
        assert_eq!(
            "sm_80,sm_90".parse::<Cubins>().unwrap(),
            Cubins(vec![Arch::Sm80, Arch::Sm90])
        );
        let e = "sm_70".parse::<Cubins>().unwrap_err();
        assert!(e.contains("`sm_70`") && e.contains("sm_90a"), "{e}");
        assert!(",".parse::<Cubins>().is_err());
        let hopper = Module {
            arch: Arch::Sm90a,
            fast: false,
        };
        assert!(hopper.check_cubin(Arch::Sm90a).is_ok());
        assert!(hopper.check_cubin(Arch::Sm90).is_err());
        let ampere = Module {
            arch: Arch::Sm90,
            fast: false,
        };
        assert!(ampere.check_cubin(Arch::Sm80).is_err());
        assert!(ampere.check_cubin(Arch::Sm90a).is_ok());
    }
}
