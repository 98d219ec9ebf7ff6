//! The runtime's one error type. Every variant says what was wrong,
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
         or run the kernels on the CPU simulator instead (`Device::sim()`)"
    )]
    NoDriver {
        /// What was tried.
        detail: String,
    },
    /// The driver loaded but is too old for this build (or lacks an entry
    /// point the runtime calls).
    #[error(
        "the NVIDIA driver is too old for this build: {detail}\nhint: update the NVIDIA driver, \
         or run the kernels on the CPU simulator instead (`Device::sim()`)"
    )]
    DriverTooOld {
        /// The version found, the version needed, or the missing entry point.
        detail: String,
    },
    /// The driver loaded but has no such device.
    #[error(
        "no CUDA device with ordinal {ordinal}: the driver reports {count} device(s)\nhint: pick an \
         ordinal below {count}, check CUDA_VISIBLE_DEVICES, or use the CPU simulator (`Device::sim()`)"
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
    /// The simulator stopped a kernel.
    #[error("simulator: {0}")]
    Sim(#[from] SimError),
    /// A library the runtime loads at run time (NCCL) is missing or is not
    /// the library it should be.
    #[error("{name} could not be loaded: {detail}\nhint: {hint}")]
    Library {
        /// The library's file name (`libnccl.so.2`).
        name: String,
        /// What was tried and what went wrong.
        detail: String,
        /// How to get it.
        hint: String,
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
    ///
    /// The name is the `CUresult` variant's own (`CUDA_ERROR_OUT_OF_MEMORY`),
    /// so it needs no driver; the text is the driver's `cuGetErrorString`
    /// when a driver with that entry point is loaded, else the same text from
    /// [`fallback_text`]. Never panics, with or without a driver.
    pub fn driver(call: impl Into<String>, e: impl Into<DriverStatus>) -> Self {
        let e = DriverError(e.into().0);
        let name = format!("{:?}", e.0);
        let from_driver = if crate::probe::driver_symbol_present("cuGetErrorString") {
            e.error_string()
                .ok()
                .map(|c| c.to_string_lossy().into_owned())
        } else {
            None
        };
        let text = from_driver
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| fallback_text(&name).to_string());
        let hint = hint_for(&name).to_string();
        Error::Driver {
            call: call.into(),
            name,
            text,
            hint,
        }
    }
}

/// The status a failed driver call returned (a `CUresult`), as the runtime
/// passes it to [`Error::driver`]; made from the driver binding's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverStatus(cudarc::driver::sys::CUresult);

impl From<DriverError> for DriverStatus {
    fn from(e: DriverError) -> Self {
        Self(e.0)
    }
}

/// The driver's own description of the common `CUDA_ERROR_*` codes (what
/// `cuGetErrorString` returns), used when no driver is loaded to ask.
pub fn fallback_text(name: &str) -> &'static str {
    match name.trim_start_matches("CUDA_ERROR_") {
        "INVALID_VALUE" => "invalid argument",
        "OUT_OF_MEMORY" => "out of memory",
        "NOT_INITIALIZED" => "initialization error",
        "NO_DEVICE" => "no CUDA-capable device is detected",
        "INVALID_DEVICE" => "invalid device ordinal",
        "INVALID_IMAGE" => "device kernel image is invalid",
        "INVALID_PTX" => "a PTX JIT compilation failed",
        "UNSUPPORTED_PTX_VERSION" => "the provided PTX was compiled with an unsupported toolchain.",
        "NO_BINARY_FOR_GPU" => "no kernel image is available for execution on the device",
        "NOT_FOUND" => "named symbol not found",
        "LAUNCH_OUT_OF_RESOURCES" => "too many resources requested for launch",
        "LAUNCH_FAILED" => "unspecified launch failure",
        "ILLEGAL_ADDRESS" => "an illegal memory access was encountered",
        "ILLEGAL_INSTRUCTION" => "an illegal instruction was encountered",
        "ASSERT" => "device-side assert triggered",
        _ => "no description (no driver was loaded to describe this code)",
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
            "a kernel accessed memory outside its buffers; run it on the CPU \
             simulator (`Device::sim()`) to get the block, thread and index"
        }
        "LAUNCH_FAILED" | "ILLEGAL_INSTRUCTION" | "ASSERT" => {
            "a kernel trapped (a checked index was out of bounds, or lengths differed); run it on \
             the CPU simulator (`Device::sim()`) to see where"
        }
        "NOT_INITIALIZED" | "NO_DEVICE" => "check the driver installation and CUDA_VISIBLE_DEVICES",
        "INVALID_VALUE" => "an argument was out of range (launch shape, size, or pointer)",
        "NOT_FOUND" => "the kernel name is not in the module; rebuild the kernels",
        _ => "see the CUDA driver API documentation for this error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::sys::CUresult;

    /// The text the driver gives for `code` when one is loaded, else the
    /// fallback table's (which holds the driver's own wording).
    fn expected_text(code: CUresult) -> String {
        let name = format!("{code:?}");
        if crate::probe::driver_symbol_present("cuGetErrorString") {
            DriverError(code)
                .error_string()
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default()
        } else {
            fallback_text(&name).to_string()
        }
    }

    #[test]
    fn driver_errors_keep_name_and_text_and_gain_a_hint() {
        for (code, call, hint_needle) in [
            (
                CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                "cuModuleLoadData",
                "the driver is older than the PTX target",
            ),
            (
                CUresult::CUDA_ERROR_OUT_OF_MEMORY,
                "cuMemAlloc",
                "free device memory or use a smaller problem",
            ),
            (
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "cuLaunchKernel(vector_add_f32)",
                "an argument was out of range",
            ),
            (
                CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
                "cuStreamSynchronize",
                "Device::sim()",
            ),
        ] {
            let e = Error::driver(call, DriverError(code));
            let Error::Driver {
                call: c,
                name,
                text,
                hint,
            } = &e
            else {
                panic!("not a driver error: {e:?}");
            };
            let want_name = format!("{code:?}");
            assert!(want_name.starts_with("CUDA_ERROR_"), "{want_name}");
            assert_eq!(c, call);
            assert_eq!(name, &want_name);
            assert_eq!(text, &expected_text(code));
            assert!(
                !text.is_empty() && !text.starts_with("no description"),
                "{text}"
            );
            assert!(hint.contains(hint_needle), "{hint}");
            let shown = e.to_string();
            assert!(
                shown.starts_with(&format!("{call} failed: {want_name}: {text}\nhint: ")),
                "{shown}"
            );
            assert!(
                shown.ends_with(hint_needle) || shown.contains(hint_needle),
                "{shown}"
            );
        }
    }

    #[test]
    fn fallback_texts_are_the_drivers_wording() {
        assert_eq!(fallback_text("CUDA_ERROR_OUT_OF_MEMORY"), "out of memory");
        assert_eq!(
            fallback_text("CUDA_ERROR_INVALID_VALUE"),
            "invalid argument"
        );
        assert_eq!(
            fallback_text("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
            "the provided PTX was compiled with an unsupported toolchain."
        );
        assert!(fallback_text("CUDA_ERROR_SOMETHING_NEW").starts_with("no description"));
    }

    #[test]
    fn every_hint_says_what_to_do() {
        for name in [
            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
            "CUDA_ERROR_INVALID_PTX",
            "CUDA_ERROR_NO_BINARY_FOR_GPU",
            "CUDA_ERROR_OUT_OF_MEMORY",
            "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
            "CUDA_ERROR_ILLEGAL_ADDRESS",
            "CUDA_ERROR_LAUNCH_FAILED",
            "CUDA_ERROR_NO_DEVICE",
            "CUDA_ERROR_INVALID_VALUE",
            "CUDA_ERROR_NOT_FOUND",
            "CUDA_ERROR_UNKNOWN",
        ] {
            assert!(hint_for(name).len() > 20, "{name}: {}", hint_for(name));
        }
        assert!(hint_for("CUDA_ERROR_UNKNOWN").contains("documentation"));
    }

    #[test]
    fn driver_too_old_and_no_driver_name_the_way_out() {
        let e = Error::DriverTooOld {
            detail: "it supports CUDA 11.0".into(),
        };
        let t = e.to_string();
        assert!(t.contains("too old") && t.contains("CUDA 11.0") && t.contains("Device::sim()"));
        let e = Error::NoDriver {
            detail: "libcuda.so could not be loaded".into(),
        };
        let t = e.to_string();
        assert!(t.starts_with("no NVIDIA driver: libcuda.so") && t.contains("Device::sim()"));
        // The runtime knows no command line: no option of any program's.
        assert!(!t.contains("--backend"), "{t}");
    }
}
