//! `ptxlab matmul` arguments and the simulator's and CPU's size limits
//! (shared by the f32 and the tensor-core commands).

/// `ptxlab matmul` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Rows of A and C.
    #[arg(long, default_value_t = 1024, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub m: usize,
    /// Columns of B and C.
    #[arg(long, default_value_t = 1024, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub n: usize,
    /// Columns of A, rows of B.
    #[arg(long, default_value_t = 1024, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub k: usize,
    /// f32 (the SGEMM ladder), bf16 or f16 (the tensor-core ladder: 16-bit
    /// inputs and output, f32 accumulation), or tf32x3 (f32 from three TF32
    /// tensor-core products).
    #[arg(long, default_value = "f32")]
    pub precision: String,
    /// With --precision f32: naive, tiled, regblock, vec, vec1, vec16, vec16x2, vec16s, vecf, vecf2,
    /// async, async2, asyncs2, asyncs or all. With bf16/f16: mma, ldsm, pipe, pipek, pipew, pipes, pipet, wgmma, ws
    /// or all (wgmma and ws need an sm_90 GPU). With tf32x3: mma, wgmma or all.
    #[arg(long, default_value = "all")]
    pub variant: String,
    /// Also compute colsum(A B): direct or fused.
    #[arg(long)]
    pub colsum: Option<String>,
    /// gpu, sim or cpu.
    #[arg(long, value_enum, default_value_t = crate::Backend::Gpu)]
    pub backend: crate::Backend,
    /// Timed repetitions (1..=10000).
    #[arg(long, default_value_t = 10, value_parser = crate::cli::parse_whole::<usize>, allow_negative_numbers = true)]
    pub reps: usize,
}

/// Most multiply-adds (`m n k`) of a simulated run (512^3).
pub const SIM_MAX_MNK: usize = 1 << 27;
/// Most multiply-adds of a `--backend cpu` run (its one-thread baseline).
pub const CPU_MAX_MNK: usize = 1 << 36;
