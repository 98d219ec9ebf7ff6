//! One error type for the host library. Every variant says what was wrong,
//! the value and the limit where there is one, and what to do.

use cudarc::driver::DriverError;
use ptxlab_device::sim::SimError;

/// Result alias of the host library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong on the host side.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `libcuda` could not be loaded.
    #[error(
        "no NVIDIA driver: {detail}\nhint: install the NVIDIA driver (it provides libcuda.so.1), \
         or use `--backend sim` (CPU simulator) or `--backend cpu` (CPU baselines)"
    )]
    NoDriver {
        /// What was tried.
        detail: String,
    },
    /// The driver loaded but has no such device.
    #[error(
        "no CUDA device with ordinal {ordinal}: the driver reports {count} device(s)\nhint: pick an \
         ordinal below {count}, check CUDA_VISIBLE_DEVICES, or use `--backend sim`"
    )]
    NoDevice {
        /// Ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// A driver call failed.
    #[error("{call} failed: {name}: {text}\nhint: {hint}")]
    Driver {
        /// The driver call.
        call: String,
        /// `CUDA_ERROR_*` name.
        name: String,
        /// The driver's own description.
        text: String,
        /// What to do.
        hint: String,
    },
    /// A launch configuration outside the device's or the kernel's limits.
    #[error("invalid launch of `{kernel}`: {what} is {value}, but {limit}")]
    Launch {
        /// Kernel name.
        kernel: String,
        /// Which setting.
        what: String,
        /// The value given.
        value: String,
        /// The limit and what to do.
        limit: String,
    },
    /// Inputs of the wrong shape, length, or value.
    #[error("invalid input: {what}: {detail}")]
    Input {
        /// Which input.
        what: String,
        /// What is wrong and what is allowed.
        detail: String,
    },
    /// Not enough device memory for a request.
    #[error(
        "not enough device memory for {what}: {requested} bytes requested, {free} bytes free of \
         {total}\nhint: use a smaller size"
    )]
    OutOfMemory {
        /// What was being allocated.
        what: String,
        /// Bytes requested.
        requested: u64,
        /// Bytes free.
        free: u64,
        /// Bytes on the device.
        total: u64,
    },
    /// A GPU result did not match its CPU reference.
    #[error("verification failed for {what}: {detail}")]
    Verification {
        /// What was checked.
        what: String,
        /// Error measured and the tolerance.
        detail: String,
    },
    /// The simulator stopped a kernel.
    #[error("simulator: {0}")]
    Sim(#[from] SimError),
    /// A file could not be read or written.
    #[error("{path}: {detail}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        detail: String,
    },
    /// A feature that the chosen backend does not have.
    #[error("{what} is not available on the {backend} backend\nhint: {hint}")]
    Unsupported {
        /// The feature.
        what: String,
        /// Backend name.
        backend: String,
        /// What to do.
        hint: String,
    },
}

impl Error {
    /// Shorthand for [`Error::Input`].
    pub fn input(what: impl Into<String>, detail: impl Into<String>) -> Self {
        Error::Input {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// Wraps a driver error, keeping the `CUDA_ERROR_*` name and the driver's
    /// text and adding a hint for the common ones.
    pub fn driver(call: impl Into<String>, e: DriverError) -> Self {
        let name = e
            .error_name()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{:?}", e.0));
        let text = e
            .error_string()
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "no description".into());
        let hint = hint_for(&name).to_string();
        Error::Driver {
            call: call.into(),
            name,
            text,
            hint,
        }
    }
}

/// Fix hints by `CUDA_ERROR_*` name.
pub fn hint_for(name: &str) -> &'static str {
    match name.trim_start_matches("CUDA_ERROR_") {
        "UNSUPPORTED_PTX_VERSION" => {
            "the driver is older than the PTX target; rebuild with a lower --arch or PTX ISA \
             (PTXLAB_ARCH=sm_80) or update the driver"
        }
        "INVALID_PTX" | "INVALID_IMAGE" => {
            "the module does not match this GPU or driver; rebuild the kernels (`cargo xtask build-ptx`)"
        }
        "NO_BINARY_FOR_GPU" => {
            "the cubin was built for another GPU; use the PTX module (JIT) or build a cubin for this arch"
        }
        "OUT_OF_MEMORY" => "free device memory or use a smaller problem",
        "LAUNCH_OUT_OF_RESOURCES" => {
            "registers x threads per block exceed the SM: use a smaller block, or a register cap \
             (max_registers) / launch_bounds on the kernel"
        }
        "ILLEGAL_ADDRESS" => {
            "a kernel accessed memory outside its buffers; run it on the simulator \
             (`--backend sim`) to get the block, thread and index"
        }
        "LAUNCH_FAILED" | "ILLEGAL_INSTRUCTION" | "ASSERT" => {
            "a kernel trapped (a checked index was out of bounds, or lengths differed); run it on \
             the simulator (`--backend sim`) to see where"
        }
        "NOT_INITIALIZED" | "NO_DEVICE" => "check the driver installation and CUDA_VISIBLE_DEVICES",
        "INVALID_VALUE" => "an argument was out of range (launch shape, size, or pointer)",
        "NOT_FOUND" => "the kernel name is not in the module; rebuild the kernels",
        _ => "see the CUDA driver API documentation for this error",
    }
}
