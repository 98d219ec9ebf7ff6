//! `build-ptx` and `inspect`: the kernels to PTX (cubins and the resource
//! report with `ptxas`), every kernel of every module, and one kernel's PTX,
//! registers and SASS.

use crate::cli::{BuildPtxArgs, InspectArgs};
use crate::target::{Arch, Cubins, Module};
use crate::util::root;
use anyhow::{Result, anyhow, bail};
use ptxlab_builder::{BuildOutput, KernelMeta, report_table};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The lab's kernel crate (`kernels-gpu`: `lab/Cargo.toml`, root `lab/kernels.rs`).
pub(crate) fn kernel_crate() -> PathBuf {
    root().join("lab")
}

/// Where `build-ptx` and `inspect` write unless told otherwise.
fn default_out() -> PathBuf {
    root().join("target/ptx-out")
}

/// Builds one module of the lab's kernel crate into `out` and prints its
/// PTX file, kernels with their directives, cubins and resource report.
pub(crate) fn build_module(
    module: Module,
    out: &Path,
    opt_level: u8,
    cubins: Option<&Cubins>,
) -> Result<BuildOutput> {
    let b = module.builder(&kernel_crate(), out, opt_level, cubins)?;
    eprintln!(
        "building the {} module (PTX ISA {}.{}) ...",
        module.label(),
        b.ptx_isa / 10,
        b.ptx_isa % 10
    );
    let built = b.build().map_err(|e| anyhow!("{e}"))?;
    println!(
        "PTX ({}): {} ({} kernels)",
        module.label(),
        built.ptx_path.display(),
        built.kernels.len()
    );
    for k in &built.kernels {
        println!("  {:<40} {}", k.name, directives(k));
    }
    for (a, p) in &built.cubins {
        println!("cubin {a}: {}", p.display());
    }
    match &built.ptxas_note {
        Some(n) => println!("resource report: {n}"),
        None if !built.resources.is_empty() => print!("{}", report_table(&built.resources)),
        None => {}
    }
    Ok(built)
}

/// `.maxntid 256 .maxnreg 32`: a kernel's directives, as the PTX has them.
fn directives(k: &KernelMeta) -> String {
    let mut d = Vec::new();
    if k.max_threads > 0 {
        d.push(format!(".maxntid {}", k.max_threads));
    }
    if k.min_blocks > 0 {
        d.push(format!(".minnctapersm {}", k.min_blocks));
    }
    if k.max_registers > 0 {
        d.push(format!(".maxnreg {}", k.max_registers));
    }
    d.join(" ")
}

/// `cargo xtask build-ptx`.
pub(crate) fn build_ptx(a: &BuildPtxArgs) -> Result<()> {
    let out = a.out.clone().unwrap_or_else(default_out);
    let modules: Vec<Module> = if a.all {
        Module::LAB.to_vec()
    } else {
        vec![Module {
            arch: a.arch.unwrap_or(Arch::Sm80),
            fast: a.fast,
        }]
    };
    for m in modules {
        build_module(m, &out, a.opt_level, a.cubin.as_ref())?;
    }
    Ok(())
}

/// The modules `inspect` searches: one per `--arch` (default the lab's).
fn inspected_modules(a: &InspectArgs) -> Vec<Module> {
    let archs = if a.arch.is_empty() {
        Arch::LAB
    } else {
        &a.arch[..]
    };
    let mut modules: Vec<Module> = Vec::new();
    for &arch in archs {
        let m = Module { arch, fast: a.fast };
        if !modules.contains(&m) {
            modules.push(m);
        }
    }
    modules
}

/// `cargo xtask inspect`: without a kernel (or with `--list`), every kernel
/// of every module; with one, its PTX, resources and SASS, from whichever
/// module holds it.
pub(crate) fn inspect(a: &InspectArgs) -> Result<()> {
    let out = a.out.clone().unwrap_or_else(default_out);
    let no_cubins = Cubins(Vec::new());
    let mut built = Vec::new();
    for m in inspected_modules(a) {
        eprintln!("inspect: building the {} module ...", m.label());
        let b = m.builder(&kernel_crate(), &out, a.opt_level, Some(&no_cubins))?;
        built.push((m, b.build().map_err(|e| anyhow!("{e}"))?));
    }
    let Some(kernel) = a.kernel.as_deref() else {
        print!("{}", kernel_list(&built));
        return Ok(());
    };
    let Some(&(module, _)) = built
        .iter()
        .find(|(_, o)| o.kernels.iter().any(|k| k.name == kernel))
    else {
        bail!("{}", not_found(kernel, &built));
    };
    // Only the module that holds the kernel is assembled.
    let cubins = match &a.cubin {
        Some(c) => c.clone(),
        None if module.arch.is_arch_specific() => Cubins(vec![module.arch]),
        None => Cubins(vec![module.arch.max(Arch::Sm90)]),
    };
    let b = module.builder(&kernel_crate(), &out, a.opt_level, Some(&cubins))?;
    let o = b.build().map_err(|e| anyhow!("{e}"))?;
    show_kernel(kernel, module, &o)
}

/// One line per kernel: name, module (file stem), arch, group, directives.
fn kernel_list(built: &[(Module, BuildOutput)]) -> String {
    let mut s = format!(
        "{:<40} {:<16} {:<7} {:<16} directives\n",
        "kernel", "module", "arch", "group"
    );
    let mut total = 0;
    for (m, o) in built {
        for k in &o.kernels {
            s.push_str(&format!(
                "{:<40} {:<16} {:<7} {:<16} {}\n",
                k.name,
                m.stem(),
                m.arch.name(),
                k.group,
                directives(k)
            ));
        }
        total += o.kernels.len();
    }
    let modules: Vec<String> = built
        .iter()
        .map(|(m, o)| format!("{} {} ({})", o.kernels.len(), m.stem(), m.label()))
        .collect();
    s.push_str(&format!(
        "{total} kernels: {}; `cargo xtask inspect <kernel>` shows one\n",
        modules.join(", ")
    ));
    s
}

/// The error for a kernel no module holds: the kernels whose name contains
/// the one given, or where to find the list.
fn not_found(kernel: &str, built: &[(Module, BuildOutput)]) -> String {
    let needle = kernel.to_lowercase();
    let near: Vec<String> = built
        .iter()
        .flat_map(|(m, o)| {
            o.kernels
                .iter()
                .filter(|k| k.name.to_lowercase().contains(&needle))
                .map(move |k| format!("{} ({})", k.name, m.arch))
        })
        .collect();
    let searched: Vec<String> = built.iter().map(|(m, _)| m.label()).collect();
    if near.is_empty() {
        format!(
            "no kernel `{kernel}` in the {} module(s); `cargo xtask inspect --list` lists every kernel",
            searched.join(", ")
        )
    } else {
        format!(
            "no kernel `{kernel}` in the {} module(s); kernels whose name contains it: {}",
            searched.join(", "),
            near.join(", ")
        )
    }
}

/// The `.entry` of `kernel` in a module's PTX, through its closing brace.
fn entry_text<'a>(ptx: &'a str, kernel: &str) -> Option<&'a str> {
    let start = ptx.find(&format!(".entry {kernel}("))?;
    let body = &ptx[start..];
    let end = body.find("\n}\n").map(|e| e + 2).unwrap_or(body.len());
    Some(&body[..end])
}

/// Prints a kernel's PTX, resource report and SASS.
fn show_kernel(kernel: &str, module: Module, o: &BuildOutput) -> Result<()> {
    let ptx = std::fs::read_to_string(&o.ptx_path)
        .map_err(|e| anyhow!("reading {}: {e}", o.ptx_path.display()))?;
    let Some(entry) = entry_text(&ptx, kernel) else {
        bail!(
            "`{kernel}` is listed but has no `.entry` in {}",
            o.ptx_path.display()
        );
    };
    println!(
        "// ===== PTX ({}, module {}, {}) =====\n.visible {entry}",
        module.label(),
        module.stem(),
        o.ptx_path.display()
    );
    let rows: Vec<_> = o
        .resources
        .iter()
        .filter(|r| r.kernel == kernel)
        .cloned()
        .collect();
    if rows.is_empty() {
        println!(
            "\n// resource report: {}",
            o.ptxas_note
                .as_deref()
                .unwrap_or("none (no cubin asked for)")
        );
    } else {
        println!(
            "\n// ===== resource report (ptxas) =====\n{}",
            report_table(&rows)
        );
    }
    // The cubins of the part that holds the kernel (each part is a module
    // of its own on the GPU, with a cubin per arch).
    let cubins = o
        .parts
        .iter()
        .find(|p| p.kernels.iter().any(|k| k.name == kernel))
        .map(|p| p.cubins.clone())
        .unwrap_or_else(|| o.cubins.clone());
    for (arch, cubin) in &cubins {
        match sass(kernel, cubin) {
            Some((tool, text)) => println!("// ===== SASS ({arch}, {tool}) =====\n{text}"),
            None => println!(
                "// SASS ({arch}): neither cuobjdump nor nvdisasm was found on PATH, beside \
                 ptxas or in $CUDA_HOME/bin (they come with the CUDA toolkit, and from PyPI as \
                 nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm); cubin at {}",
                cubin.display()
            ),
        }
    }
    Ok(())
}

/// Where a CUDA tool may be: on `PATH`, beside the `ptxas` the builder
/// uses, in `$CUDA_HOME/bin`.
fn cuda_tool_candidates(tool: &str) -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from(tool)];
    if let Ok(ptxas) = ptxlab_builder::find_ptxas()
        && let Some(dir) = ptxas.parent()
    {
        v.push(dir.join(tool));
    }
    if let Some(home) = std::env::var_os("CUDA_HOME") {
        v.push(PathBuf::from(home).join("bin").join(tool));
    }
    v
}

/// The SASS of `kernel` in `cubin`, and the tool that made it: cuobjdump
/// (`-sass -fun <name>`), else nvdisasm (the whole cubin, cut to the
/// kernel's `.text` section: its `-fun` takes symbol indices, not names).
fn sass(kernel: &str, cubin: &Path) -> Option<(&'static str, String)> {
    let output = |tool: &PathBuf, args: &[&std::ffi::OsStr]| {
        Command::new(tool)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    for tool in cuda_tool_candidates("cuobjdump") {
        let args = [
            "-sass".as_ref(),
            "-fun".as_ref(),
            kernel.as_ref(),
            cubin.as_os_str(),
        ];
        if let Some(text) = output(&tool, &args) {
            return Some(("cuobjdump", text));
        }
    }
    for tool in cuda_tool_candidates("nvdisasm") {
        if let Some(text) = output(&tool, &["-c".as_ref(), cubin.as_os_str()]) {
            return sass_section(&text, kernel).map(|t| ("nvdisasm", t));
        }
    }
    None
}

/// The lines of `kernel`'s `.text` section in `nvdisasm -c` output, from its
/// `//----- .text.<kernel> -----` header to the next section's header.
fn sass_section(text: &str, kernel: &str) -> Option<String> {
    let header = format!(" .text.{kernel} ");
    let mut lines = text
        .lines()
        .skip_while(|l| !(l.starts_with("//") && l.contains(&header)));
    let first = lines.next()?;
    let mut out = String::from(first);
    out.push('\n');
    for l in lines.take_while(|l| !l.starts_with("//---")) {
        out.push_str(l);
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_cut_at_its_closing_brace() {
        let ptx =
            ".visible .entry a(\n.param .u64 p\n)\n{\n ret;\n}\n\n.visible .entry ab(\n)\n{\n}\n";
        assert_eq!(
            entry_text(ptx, "a"),
            Some(".entry a(\n.param .u64 p\n)\n{\n ret;\n}")
        );
        assert_eq!(entry_text(ptx, "ab"), Some(".entry ab(\n)\n{\n}"));
        assert_eq!(entry_text(ptx, "b"), None);
    }

    #[test]
    fn nvdisasm_output_is_cut_to_the_kernel() {
        let text = "\t.target\tsm_90a\n\n//----- .text.k_skip -----\n\t.section\t.text.k_skip\nk_skip:\n  /*0000*/ EXIT ;\n\n//----- .text.k -----\n\t.section\t.text.k\nk:\n  /*0000*/ NOP ;\n  /*0010*/ EXIT ;\n//----- .nv.shared.k -----\n";
        assert_eq!(
            sass_section(text, "k").as_deref(),
            Some(
                "//----- .text.k -----\n\t.section\t.text.k\nk:\n  /*0000*/ NOP ;\n  /*0010*/ EXIT ;\n"
            )
        );
        assert!(
            sass_section(text, "k_skip")
                .unwrap()
                .contains("k_skip:\n  /*0000*/ EXIT")
        );
        assert_eq!(sass_section(text, "j"), None);
    }
}
