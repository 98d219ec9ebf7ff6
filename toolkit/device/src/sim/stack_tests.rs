//! A simulated thread whose kernel frame does not fit its fiber's stack
//! (`coro::overflow`): the process ends with the simulator's message, not
//! a bare segmentation fault.

use crate::sim::{LaunchSpec, launch};
use crate::thread::Dim3;

/// A kernel whose frame is larger than the fiber's stack ends the
/// process with the simulator's message, not a bare segmentation fault.
/// The test runs itself as a child process with a 64 KiB stack.
#[test]
fn a_thread_that_overflows_its_stack_is_reported() {
    if std::env::var_os("PTXLAB_SIM_OVERFLOW_CHILD").is_some() {
        let spec = LaunchSpec {
            kernel: "big_frame",
            grid: Dim3::x(1),
            block: Dim3::x(2),
            shared_bytes: 0,
        };
        let r = launch(&spec, || {
            let mut frame = [0u8; 512 * 1024];
            core::hint::black_box(&mut frame);
        });
        std::println!("the launch returned: {r:?}");
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "sim::stack_tests::a_thread_that_overflows_its_stack_is_reported",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PTXLAB_SIM_OVERFLOW_CHILD", "1")
        .env("PTXLAB_SIM_STACK_KIB", "64")
        .output()
        .expect("the child test process starts");
    let err = std::string::String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the child should abort; stderr: {err}"
    );
    assert!(
        err.contains("overflowed its stack (64 KiB)") && err.contains("PTXLAB_SIM_STACK_KIB"),
        "stderr: {err}"
    );
}
