//! A missing, broken or too-old driver: one clear error line for every
//! subcommand that opens a GPU.

use crate::common::*;

/// Every subcommand that opens a GPU, with small valid options.
const GPU_RUNS: &[&[&str]] = &[
    &["vector-add", "--n", "10"],
    &["poisson", "--size", "5", "--iters", "1"],
    &["lomb-scargle", "--start", "1", "--step", "1", "--n", "3"],
    &["reduce", "--n", "10"],
    &["histogram", "--n", "10"],
    &["monte-carlo-pi", "--n", "100"],
    &["diffusion", "--size", "5", "--iters", "1"],
    &["matmul", "--m", "3", "--n", "3", "--k", "3"],
    &["fusion", "--n", "10"],
    &["launch-overhead", "--kernels", "1"],
];

/// The one error line (and its hint) of a run that cannot open the GPU; no
/// other output comes first (the device is opened before the inputs are made).
fn assert_one_error_line(args: &[&str], env: &[(&str, &str)], error: &[&str], hint: &str) {
    let r = ptxlab_env(args, env);
    assert_eq!(r.code, 1, "ptxlab {args:?}: {}", r.text());
    assert!(
        r.stdout.trim().is_empty(),
        "ptxlab {args:?} printed before failing:\n{}",
        r.stdout
    );
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "ptxlab {args:?}: want one error line and one hint:\n{}",
        r.stderr
    );
    for e in error {
        assert!(
            lines[0].contains(e),
            "ptxlab {args:?}: expected `{e}` in `{}`",
            lines[0]
        );
    }
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    assert!(
        lines[1].starts_with("hint: ") && lines[1].contains(hint),
        "{}",
        lines[1]
    );
}

#[test]
fn missing_driver_is_one_clear_line_for_every_gpu_subcommand() {
    if real_driver_installed() {
        return;
    }
    let dir = empty_lib_dir();
    for args in GPU_RUNS {
        let mut a = args.to_vec();
        a.extend_from_slice(&["--backend", "gpu"]);
        assert_one_error_line(
            &a,
            &[("LD_LIBRARY_PATH", &dir)],
            &["error: no NVIDIA driver: libcuda.so / libcuda.so.1 could not be loaded"],
            "--backend sim",
        );
    }
    let r = ptxlab_env(&["info"], &[("LD_LIBRARY_PATH", &dir)]);
    assert_eq!(r.code, 0);
    assert!(
        r.stdout.starts_with("GPU: none (no NVIDIA driver:"),
        "{}",
        r.stdout
    );
}

/// Builds a stub `libcuda.so` from C source in its own folder; `None` (and
/// a note) where no C compiler is available.
fn stub_driver(name: &str, source: &str) -> Option<String> {
    let dir = tmp_dir().join(format!("stub-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("stub.c");
    std::fs::write(&c, source).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let ok = std::process::Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join("libcuda.so"))
        .arg(&c)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("skipped: no C compiler (`{cc}`) to build a stub libcuda");
        return None;
    }
    Some(dir.to_string_lossy().into_owned())
}

#[test]
fn broken_or_too_old_driver_is_refused_clearly() {
    let run = ["vector-add", "--n", "10", "--backend", "gpu"];
    let hint = "--backend sim";
    // A libcuda that is no driver at all.
    let Some(dir) = stub_driver("empty", "int not_cuda(void) { return 0; }\n") else {
        return;
    };
    assert_one_error_line(
        &run,
        &[("LD_LIBRARY_PATH", &dir)],
        &[
            "no NVIDIA driver",
            "does not export cuDriverGetVersion",
            "check LD_LIBRARY_PATH",
        ],
        hint,
    );
    // A driver for CUDA 10.2: older than the embedded PTX needs.
    let old = "int cuDriverGetVersion(int *v) { *v = 10020; return 0; }\n";
    let dir = stub_driver("old", old).unwrap();
    let isa = ptxlab::runtime::driver::ptx_isa_version(ptxlab::modules::ptx(false))
        .expect("the PTX has a .version");
    let need = ptxlab::runtime::driver::cuda_for_ptx_isa(isa).expect("a known PTX ISA");
    assert_one_error_line(
        &run,
        &[("LD_LIBRARY_PATH", &dir)],
        &[
            "the NVIDIA driver is too old for this build",
            "it supports CUDA 10.2",
            &format!("PTX ISA {}.{}", isa.0, isa.1),
            &format!("CUDA {}.{} or newer", need.0, need.1),
        ],
        "update the NVIDIA driver",
    );
    // New enough by its version, but without the entry points the runtime
    // calls (its driver binding would panic on the first one).
    let partial = "int cuDriverGetVersion(int *v) { *v = 12080; return 0; }\n";
    let dir = stub_driver("partial", partial).unwrap();
    assert_one_error_line(
        &run,
        &[("LD_LIBRARY_PATH", &dir)],
        &[
            "too old for this build",
            "CUDA 12.8",
            "does not export cuInit",
        ],
        "update the NVIDIA driver",
    );
    // Every entry point present, but no device: the driver's error keeps its
    // CUDA_ERROR_* name and the driver's own text, and gains the hint.
    let mut src = String::from(
        "int cuDriverGetVersion(int *v) { *v = 12080; return 0; }\n\
         int cuGetErrorString(int e, const char **s) { *s = e == 100 ? \"no CUDA-capable device is detected (stub)\" : \"stub\"; return 0; }\n\
         int cuGetErrorName(int e, const char **s) { *s = \"CUDA_ERROR_STUB\"; return 0; }\n",
    );
    for sym in ptxlab::runtime::probe::REQUIRED_DRIVER_SYMBOLS {
        if !["cuDriverGetVersion", "cuGetErrorString", "cuGetErrorName"].contains(sym) {
            src.push_str(&format!("int {sym}(void) {{ return 100; }}\n"));
        }
    }
    let dir = stub_driver("nodevice", &src).unwrap();
    for args in GPU_RUNS {
        let mut a = args.to_vec();
        a.extend_from_slice(&["--backend", "gpu"]);
        assert_one_error_line(
            &a,
            &[("LD_LIBRARY_PATH", &dir)],
            &[
                "error: cuDeviceGetCount failed: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected (stub)",
            ],
            "check the driver installation and CUDA_VISIBLE_DEVICES",
        );
    }
}
