//! The lab's error type: the runtime's errors (driver, launch, input,
//! memory, simulator), plus what only the lab does: checking a result
//! against its reference, and reading and writing files.

/// Result alias of the lab.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the lab.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An error of the runtime (the driver, a launch, an input, the simulator).
    #[error(transparent)]
    Runtime(#[from] ptxlab_runtime::Error),
    /// A result did not match its CPU reference.
    #[error("verification failed for {what}: {detail}")]
    Verification {
        /// What was checked.
        what: String,
        /// Error measured and the tolerance.
        detail: String,
    },
    /// No GPU to run on: the runtime's reason (its first line), and the
    /// lab's way out instead of the runtime's hint.
    #[error("{}", no_gpu_text(.0))]
    NoGpu(ptxlab_runtime::Error),
    /// A file could not be read or written.
    #[error("{path}: {detail}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        detail: String,
    },
}

impl Error {
    /// Opens GPU `ordinal`, naming the lab's `--backend` options when there
    /// is none (the runtime knows no command line).
    pub fn open_gpu(ordinal: usize) -> Result<ptxlab_runtime::Device> {
        ptxlab_runtime::Device::gpu(ordinal).map_err(|e| match e {
            ptxlab_runtime::Error::NoDriver { .. }
            | ptxlab_runtime::Error::DriverTooOld { .. }
            | ptxlab_runtime::Error::NoDevice { .. } => Error::NoGpu(e),
            e => Error::Runtime(e),
        })
    }
    /// An invalid input: `what` names it, `detail` says what is wrong and
    /// what is allowed (the runtime's [`Input`](ptxlab_runtime::Error::Input)).
    pub fn input(what: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::Runtime(ptxlab_runtime::Error::input(what, detail))
    }
    /// A failed driver call (see [`ptxlab_runtime::Error::driver`]).
    pub fn driver(
        call: impl Into<String>,
        e: impl Into<ptxlab_runtime::error::DriverStatus>,
    ) -> Self {
        Self::Runtime(ptxlab_runtime::Error::driver(call, e))
    }
    /// A feature the backend does not have.
    pub fn unsupported(
        what: impl Into<String>,
        backend: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Self::Runtime(ptxlab_runtime::Error::Unsupported {
            what: what.into(),
            backend: backend.into(),
            hint: hint.into(),
        })
    }
    /// The runtime's error, when this is one.
    pub fn runtime(&self) -> Option<&ptxlab_runtime::Error> {
        match self {
            Self::Runtime(e) | Self::NoGpu(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ptxlab_device::sim::SimError> for Error {
    fn from(e: ptxlab_device::sim::SimError) -> Self {
        Self::Runtime(e.into())
    }
}

/// The runtime's first line, then the lab's hint: what to do about the
/// driver, or the `--backend` options that run without a GPU.
fn no_gpu_text(e: &ptxlab_runtime::Error) -> String {
    let first = e.to_string();
    let first = first.lines().next().unwrap_or_default();
    let fix = match e {
        ptxlab_runtime::Error::DriverTooOld { .. } => "update the NVIDIA driver",
        ptxlab_runtime::Error::NoDevice { .. } => "check CUDA_VISIBLE_DEVICES and the GPU ordinal",
        _ => "install the NVIDIA driver (it provides libcuda.so.1)",
    };
    format!(
        "{first}\nhint: {fix}, or run on the CPU: `--backend sim` runs the same kernels on the \
         simulator, `--backend cpu` the CPU baselines"
    )
}
