//! Owner of the workspace-level `tests/` and `benches/`; see the README.
//!
//! Under `cargo test --doc -p ptxlab-suite` it also compiles the Rust
//! examples of the book (`docs/book/src`): each chapter is the doc comment
//! of an item that exists only for doctests, so a block marked `rust`
//! must build against the workspace's crates (`rust,ignore` marks the
//! fragments that need a GPU build or another crate's layout).

/// Compiles the Rust blocks of one chapter of the book as doctests.
macro_rules! book_chapters {
    ($($name:ident => $file:literal),* $(,)?) => {
        $(
            #[cfg(doctest)]
            #[doc = include_str!(concat!("../docs/book/src/", $file))]
            pub struct $name;
        )*
    };
}

book_chapters! {
    Introduction => "introduction.md",
    GettingStarted => "getting-started.md",
    OwnKernels => "own-kernels.md",
    WritingKernels => "writing-kernels.md",
    Launching => "launching.md",
    Simulator => "simulator.md",
    Debugging => "debugging.md",
    Measuring => "measuring.md",
    Report => "report.md",
    Architecture => "architecture.md",
    MathFunctions => "math.md",
    CudaOxide => "cuda-oxide.md",
    Reference => "reference.md",
    Workloads => "workloads/README.md",
    VectorAdd => "workloads/vector-add.md",
    Primitives => "workloads/primitives.md",
    Poisson => "workloads/poisson.md",
    PoissonMultiGpu => "workloads/poisson-multi-gpu.md",
    Diffusion => "workloads/diffusion.md",
    LombScargle => "workloads/lomb-scargle.md",
    Matmul => "workloads/matmul.md",
    Fusion => "workloads/fusion.md",
    Attention => "workloads/attention.md",
}
