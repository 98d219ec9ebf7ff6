//! Fails early, with what to do, when the compiler is not a nightly: the
//! device layer (and every kernel crate on it) uses unstable features
//! (`#![feature(...)]`, `-Zbuild-std=core` for the GPU), so on a stable or
//! beta toolchain rustc would stop at the first `#![feature]` with E0554,
//! before ptxlab-builder could say which toolchain to install.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = std::process::Command::new(&rustc).arg("-V").output() else {
        return; // rustc itself will report what is wrong
    };
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !version.contains("nightly") && !version.contains("-dev") {
        eprintln!(
            "\n\nptxlab-device needs a nightly Rust toolchain, but the compiler is `{version}`.\n\
             GPU kernels use unstable features (extern \"gpu-kernel\", -Zbuild-std=core).\n\
             hint: put ptxlab's rust-toolchain.toml beside your Cargo.toml (channel = \
             \"nightly-2026-05-20\", components = [\"rust-src\", \"llvm-tools\"]) and run \
             `rustup toolchain install` there; a project made by `cargo xtask \
             new-kernel-crate` has one. Check for a `+stable` or RUSTUP_TOOLCHAIN that \
             overrides it.\n"
        );
        std::process::exit(1);
    }
}
