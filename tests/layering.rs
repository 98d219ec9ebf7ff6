//! The layers hold: only the runtime talks to the CUDA driver binding.
//!
//! Every Rust source file of the workspace outside `toolkit/runtime/` (the lab, the
//! kernels, the toolkit's other crates, tests, benches, xtask, fuzz targets)
//! is read, and none may name the binding crate: streams, events, device
//! element types and driver errors come from `ptxlab-runtime`'s own types.

use std::path::{Path, PathBuf};

/// The binding's crate name, spelled so that this file does not hold it.
const BINDING: &str = concat!("cuda", "rc");

/// Folders that are not sources of the workspace (build outputs, VCS).
const SKIP: [&str; 4] = ["target", ".git", "node_modules", ".venv"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !SKIP.contains(&name.as_ref()) {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The files under `root` outside `toolkit/runtime/` that name the binding, each
/// with its first such line.
fn offenders(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files.sort();
    files
        .iter()
        .filter(|f| {
            !f.strip_prefix(root)
                .is_ok_and(|r| r.starts_with("toolkit/runtime"))
        })
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let (n, line) = text
                .lines()
                .enumerate()
                .find(|(_, l)| l.contains(BINDING))?;
            let rel = f.strip_prefix(root).unwrap_or(f).display();
            Some(format!("{rel}:{}: {}", n + 1, line.trim()))
        })
        .collect()
}

#[test]
fn only_the_runtime_names_the_driver_binding() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(root, &mut files);
    // The scan sees the workspace: the lab, xtask and this file at least.
    for must in [
        "lab/ptxlab/src/lib.rs",
        "xtask/src/main.rs",
        "tests/layering.rs",
    ] {
        assert!(
            files.iter().any(|f| f.ends_with(must)),
            "the scan did not reach {must}"
        );
    }
    let bad = offenders(root);
    assert!(
        bad.is_empty(),
        "only toolkit/runtime/ may use the CUDA driver binding (`{BINDING}`); use the runtime's own types \
         (ptxlab_runtime::{{Stream, Event, Element}}, runtime::error::DriverStatus, \
         runtime::nccl) instead. Found:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_scan_finds_a_file_that_names_the_binding() {
    let dir = std::env::temp_dir().join(format!("ptxlab-layering-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("lab/ptxlab/src")).unwrap();
    std::fs::create_dir_all(dir.join("toolkit/runtime/src")).unwrap();
    std::fs::create_dir_all(dir.join("target/debug")).unwrap();
    let import = format!("use {BINDING}::driver::CudaStream;\n");
    std::fs::write(dir.join("toolkit/runtime/src/gpu.rs"), &import).unwrap();
    std::fs::write(dir.join("target/debug/out.rs"), &import).unwrap();
    std::fs::write(dir.join("lab/ptxlab/src/ok.rs"), "fn main() {}\n").unwrap();
    assert!(offenders(&dir).is_empty(), "{:?}", offenders(&dir));
    std::fs::write(dir.join("lab/ptxlab/src/bad.rs"), format!("// x\n{import}")).unwrap();
    let bad = offenders(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].starts_with("lab/ptxlab/src/bad.rs:2: use "),
        "{bad:?}"
    );
}
