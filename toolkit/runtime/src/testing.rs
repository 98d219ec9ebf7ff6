//! GPU tests that skip where there is no GPU, and cannot skip where one is
//! expected.
//!
//! A GPU test asks [`gpu_or_skip`] for GPU 0. Without an NVIDIA driver it
//! prints one line (`skipped: no NVIDIA driver ...`) and gets `None`, so CI
//! machines without a GPU pass. With [`REQUIRE_GPU`] (`PTXLAB_REQUIRE_GPU`)
//! set to any value, the same situation is a failure that names the
//! variable: a run on a GPU machine (the bundle's `run.sh` and `sanitize.sh`
//! set it) cannot pass by skipping. It works like `PTXLAB_REQUIRE_PTXAS` for
//! the `ptxas` checks.
//!
//! Where a driver is present, the device must open: an error of
//! [`Device::gpu`] then fails the test whether or not the variable is set (a
//! broken driver or a busy GPU is not "no GPU").
//!
//! ```ignore
//! #[test]
//! fn gpu_matches_the_cpu() {
//!     let Some(dev) = ptxlab_runtime::testing::gpu_or_skip() else { return };
//!     // ...
//! }
//! ```

use crate::device::Device;
use crate::probe::driver_present;

/// The environment variable that turns a GPU test's skip into a failure.
pub const REQUIRE_GPU: &str = "PTXLAB_REQUIRE_GPU";

/// `true` when [`REQUIRE_GPU`] is set (to any value): GPU tests must run.
pub fn gpu_required() -> bool {
    std::env::var_os(REQUIRE_GPU).is_some()
}

/// Skips a GPU test for `reason` (printing `skipped: <reason>`), or, when
/// [`REQUIRE_GPU`] is set, panics naming the variable and the reason.
/// Returns `None` so a test can write `return skip_gpu_test(...)` from a
/// function that hands out an `Option`.
pub fn skip_gpu_test<T>(reason: &str) -> Option<T> {
    assert!(
        !gpu_required(),
        "{REQUIRE_GPU} is set, so this GPU test may not skip, but {reason}"
    );
    println!("skipped: {reason}");
    None
}

/// GPU `ordinal` for a test: `None` (after one line saying why) when this
/// machine has no NVIDIA driver, unless [`REQUIRE_GPU`] is set, which makes
/// that a failure. With a driver present, a device that does not open fails
/// the test with the driver's error.
pub fn gpu_or_skip_at(ordinal: usize) -> Option<Device> {
    if !driver_present() {
        return skip_gpu_test("no NVIDIA driver (libcuda.so.1 could not be loaded)");
    }
    match Device::gpu(ordinal) {
        Ok(d) => Some(d),
        Err(e) => panic!("a driver is present, so GPU {ordinal} must open: {e}"),
    }
}

/// GPU 0 for a test: [`gpu_or_skip_at`]`(0)`.
pub fn gpu_or_skip() -> Option<Device> {
    gpu_or_skip_at(0)
}
