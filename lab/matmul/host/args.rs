//! `ptxlab matmul` arguments and the simulator's and CPU's size limits
//! (shared by the f32 and the tensor-core commands).

use super::colsum::Colsum;
use super::fp8::{Fp8Kernel, Fp8Scaling};
use super::launch::elems;
use super::rung::Rung;
use super::tensor::{Precision, TcRung, Tf32x3};
use clap::ValueEnum;
use ptxlab_common::cli::OneOrAll;
use ptxlab_common::error::{Error, Result};

/// `ptxlab matmul` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rows of A and C.
    #[arg(long, default_value_t = 1024, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub m: usize,
    /// Columns of B and C.
    #[arg(long, default_value_t = 1024, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// Columns of A, rows of B.
    #[arg(long, default_value_t = 1024, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub k: usize,
    /// f32 (the SGEMM ladder), bf16 or f16 (the tensor-core ladder: 16-bit
    /// inputs and output, f32 accumulation), tf32x3 (f32 from three TF32
    /// tensor-core products), or fp8 (E4M3 inputs with per-tensor or block
    /// scales, f32 accumulation, BF16 output; k a multiple of 16, an sm_90
    /// GPU).
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
    /// A rung of the ladder --precision picks, or all. With f32: naive, tiled, regblock, vec,
    /// vec1, vec16, vec16x2, vec16s, vecf, vecf2, async, async2, asyncs2, asyncs. With bf16/f16:
    /// mma, ldsm, pipe, pipek, pipew, pipes, pipet, wgmma, ws (wgmma and ws need an sm_90 GPU).
    /// With tf32x3: mma, wgmma. With fp8: ws.
    #[arg(long, value_parser = Variant::parser(), default_value = "all")]
    pub variant: Variant,
    /// With --precision fp8: the per-tensor scale of A, a finite positive
    /// number (A's values are it times their E4M3 codes). Default: A's
    /// largest magnitude over 448, so the codes use E4M3's whole range.
    #[arg(long, allow_negative_numbers = true)]
    pub scale_a: Option<f32>,
    /// With --precision fp8: the per-tensor scale of B (as --scale-a).
    #[arg(long, allow_negative_numbers = true)]
    pub scale_b: Option<f32>,
    /// With --precision fp8: what a scale covers: tensor (one per operand,
    /// --scale-a/--scale-b), or block (DeepGEMM's: one per row of A and
    /// 128-deep block of k, one per 128 x 128 block of B; random inputs
    /// get each block's largest magnitude over 448, or the scales of
    /// --scale-a-file/--scale-b-file).
    #[arg(long, value_enum, default_value_t = Fp8Scaling::Tensor)]
    pub scaling: Fp8Scaling,
    /// With --scaling block: A's block scales, a float32 .npy array of
    /// shape (m, ceil(k / 128)), finite and positive.
    #[arg(long, value_name = "FILE")]
    pub scale_a_file: Option<std::path::PathBuf>,
    /// With --scaling block: B's block scales, a float32 .npy array of
    /// shape (ceil(n / 128), ceil(k / 128)) (row block j covers B's
    /// columns 128 j..128 j + 128), finite and positive.
    #[arg(long, value_name = "FILE")]
    pub scale_b_file: Option<std::path::PathBuf>,
    /// Also compute colsum(A B).
    #[arg(long, value_enum)]
    pub colsum: Option<Colsum>,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = ptxlab_common::Backend::Gpu)]
    pub backend: ptxlab_common::Backend,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = ptxlab_common::cli::DEFAULT_REPS, value_parser = ptxlab_common::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
    /// Print the measured rows as JSON on stdout (the row objects of
    /// `results.json`), and nothing else there.
    #[arg(long)]
    pub json: bool,
}

/// The size label of an `m x n x k` GEMM in report rows: `N^3` for a cube,
/// `(MxK)(KxN)` otherwise.
pub fn size_label(m: usize, n: usize, kk: usize) -> String {
    if m == n && n == kk {
        format!("{m}^3")
    } else {
        format!("({m}x{kk})({kk}x{n})")
    }
}

/// `--variant`: `all`, or the name of one rung. One flag serves four
/// ladders (the SGEMM [`Rung`]s, the tensor-core [`TcRung`]s, the 3xTF32
/// [`Tf32x3`] kernels, the [`Fp8Kernel`]s), so clap checks the name against all of their names
/// (listing them in `--help`, suggesting the nearest for a typo), and
/// [`Variant::pick`] resolves it in the ladder of `--precision`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant(OneOrAll<String>);

/// Every `--variant` value of a `ValueEnum`, in its order.
fn values<R: ValueEnum + 'static>() -> impl Iterator<Item = clap::builder::PossibleValue> {
    R::value_variants()
        .iter()
        .filter_map(ValueEnum::to_possible_value)
}

/// Every `--variant` name of a `ValueEnum`, in its order.
fn names<R: ValueEnum + 'static>() -> Vec<String> {
    values::<R>().map(|v| v.get_name().to_string()).collect()
}

impl Variant {
    /// Every rung of the ladder.
    pub const ALL: Variant = Variant(OneOrAll::All);

    /// The rung named `name` (checked by [`Variant::pick`]).
    pub fn named(name: impl Into<String>) -> Self {
        Variant(OneOrAll::One(name.into()))
    }

    /// The clap value parser: `all` or a rung name of any of the ladders.
    pub fn parser() -> impl clap::builder::TypedValueParser<Value = Self> {
        use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
        let mut all =
            vec![PossibleValue::new("all").help("every rung that applies, in ladder order")];
        for v in values::<Rung>()
            .chain(values::<TcRung>())
            .chain(values::<Tf32x3>())
            .chain(values::<Fp8Kernel>())
        {
            if !all.iter().any(|a| a.get_name() == v.get_name()) {
                all.push(v);
            }
        }
        PossibleValuesParser::new(all).map(|s: String| {
            if s == "all" {
                Variant::ALL
            } else {
                Variant::named(s)
            }
        })
    }

    /// The rungs of ladder `R` (`--precision`'s, named `precision` in the
    /// error): all of them, or the one named, which must be one of `R`'s.
    pub fn pick<R: ValueEnum + Clone + Send + Sync + 'static>(
        &self,
        precision: Precision,
    ) -> Result<Vec<R>> {
        let one = match &self.0 {
            OneOrAll::All => OneOrAll::All,
            OneOrAll::One(s) => OneOrAll::One(R::from_str(s, false).map_err(|_| {
                Error::input(
                    "--variant",
                    format!(
                        "`{s}` is not a rung of --precision {}; allowed: {}, all",
                        ptxlab_common::cli::value_name(&precision),
                        names::<R>().join(", ")
                    ),
                )
            })?),
        };
        Ok(one.rungs())
    }
}

/// Most multiply-adds (`m n k`) of a simulated run (512^3).
pub const SIM_MAX_MNK: usize = 1 << 27;
/// Most multiply-adds of a `--backend cpu` run (its one-thread baseline).
pub const CPU_MAX_MNK: usize = 1 << 36;

/// Refuses a simulated product of more than [`SIM_MAX_MNK`] multiply-adds;
/// `more` ends the advice (another backend to use, or nothing).
pub(super) fn check_sim_size(
    backend: ptxlab_common::Backend,
    (m, n, kk): (usize, usize, usize),
    more: &str,
) -> Result<()> {
    if backend == ptxlab_common::Backend::Sim
        && m.saturating_mul(n).saturating_mul(kk) > SIM_MAX_MNK
    {
        return Err(Error::input(
            "matmul",
            format!(
                "{m}x{n}x{kk} is too large for the simulator; use m*n*k <= 2^27 (e.g. --m 512 --n 512 \
                 --k 512){more}"
            ),
        ));
    }
    Ok(())
}

/// The elements of `A`, `B` and the result `out` (`m x n`) together, or an
/// error when they overflow the address space.
pub(super) fn product_elems(out: &str, (m, n, kk): (usize, usize, usize)) -> Result<usize> {
    [elems("A", m, kk)?, elems("B", kk, n)?, elems(out, m, n)?]
        .iter()
        .try_fold(0usize, |a, &b| a.checked_add(b))
        .ok_or_else(|| {
            Error::input(
                "--m/--n/--k",
                format!("A, B and {out} together overflow the address space"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn parse(words: &[&str]) -> std::result::Result<Args, clap::Error> {
        let argv = std::iter::once("matmul").chain(words.iter().copied());
        Cli::try_parse_from(argv).map(|c| c.args)
    }

    #[test]
    fn enums_keep_their_command_line_names_and_order() {
        let joined = |v: Vec<String>| v.join(", ");
        assert_eq!(
            joined(names::<Rung>()),
            "naive, tiled, regblock, vec, vec1, vec16, vec16x2, vec16s, vecf, vecf2, async, \
             async2, asyncs2, asyncs"
        );
        assert_eq!(
            joined(names::<TcRung>()),
            "mma, ldsm, pipe, pipek, pipew, pipes, pipet, wgmma, ws"
        );
        assert_eq!(joined(names::<Tf32x3>()), "mma, wgmma");
        assert_eq!(joined(names::<Precision>()), "f32, bf16, f16, tf32x3, fp8");
        assert_eq!(joined(names::<Fp8Kernel>()), "ws");
        assert_eq!(joined(names::<Colsum>()), "direct, fused");
        // The ladders' `ALL` lists are the enums' order.
        assert_eq!(Rung::ALL.as_slice(), Rung::value_variants());
        assert_eq!(TcRung::ALL.as_slice(), TcRung::value_variants());
        assert_eq!(Tf32x3::ALL.as_slice(), Tf32x3::value_variants());
        assert_eq!(Fp8Kernel::ALL.as_slice(), Fp8Kernel::value_variants());
    }

    #[test]
    fn options_parse_to_their_types() {
        let a = parse(&[
            "--precision",
            "bf16",
            "--variant",
            "pipek",
            "--colsum",
            "fused",
        ])
        .unwrap();
        assert_eq!(a.precision, Precision::Bf16);
        assert_eq!(
            a.variant.pick::<TcRung>(a.precision).unwrap(),
            vec![TcRung::PipeK]
        );
        assert_eq!(a.colsum, Some(Colsum::Fused));
        let a = parse(&[]).unwrap();
        assert_eq!(
            (a.precision, a.variant, a.colsum),
            (Precision::F32, Variant::ALL, None)
        );
    }

    #[test]
    fn typos_are_refused_by_clap_with_a_suggestion() {
        for (words, want) in [
            (&["--variant", "vec16z"][..], "vec16"),
            (&["--precision", "bf61"][..], "bf16"),
            (&["--colsum", "fuse"][..], "fused"),
        ] {
            let e = parse(words).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue, "{words:?}");
            let text = e.to_string();
            assert!(
                text.contains(&format!("'{}'", words[1])) && text.contains(want),
                "{words:?}: {text}"
            );
        }
    }

    #[test]
    fn a_rung_of_another_ladder_is_refused_after_the_precision_is_known() {
        let a = parse(&["--precision", "tf32x3", "--variant", "pipes"]).unwrap();
        let e = a
            .variant
            .pick::<Tf32x3>(a.precision)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--variant") && e.contains("`pipes` is not a rung of --precision tf32x3"),
            "{e}"
        );
        assert!(e.contains("allowed: mma, wgmma, all"), "{e}");
    }
}
