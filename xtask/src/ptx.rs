//! `build-ptx` and `inspect`: the kernels to PTX (cubins and the resource
//! report with `ptxas`), and one kernel's PTX, registers and SASS.

use crate::{opt, root};
use anyhow::{Result, bail};
use ptxlab_builder::{Builder, report_table};
use std::path::PathBuf;
use std::process::Command;

pub(crate) fn builder(args: &[String]) -> Result<Builder> {
    let out = opt(args, "--out")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/ptx-out"));
    let mut b = Builder::new(root().join("kernels-gpu"), out);
    if let Some(a) = opt(args, "--arch") {
        Builder::validate_arch(&a).map_err(|e| anyhow::anyhow!("{e}"))?;
        b.arch = a;
    }
    if let Some(o) = opt(args, "--opt-level") {
        b.opt_level = match o.parse::<u8>() {
            Ok(v) if v <= 3 => v,
            _ => bail!("--opt-level `{o}`: allowed 0, 1, 2, 3"),
        };
    }
    b.fast_math = args.iter().any(|a| a == "--fast");
    if b.fast_math {
        b.stem = "kernels_fast".into();
    }
    let cubins = opt(args, "--cubin").unwrap_or_else(|| {
        if b.arch.starts_with("sm_9") {
            b.arch.clone()
        } else {
            format!("{},sm_90", b.arch)
        }
    });
    b.cubin_archs = cubins
        .split(',')
        .filter(|s| !s.is_empty() && *s != "none")
        .map(str::to_string)
        .collect();
    Ok(b)
}

pub(crate) fn build_ptx(args: &[String]) -> Result<ptxlab_builder::BuildOutput> {
    let b = builder(args)?;
    eprintln!(
        "building kernels for {} (fast math: {}) ...",
        b.arch, b.fast_math
    );
    let out = b.build().map_err(|e| anyhow::anyhow!("{e}"))?;
    println!(
        "PTX: {} ({} kernels)",
        out.ptx_path.display(),
        out.kernels.len()
    );
    for k in &out.kernels {
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
        println!("  {:<32} {}", k.name, d.join(" "));
    }
    for (a, p) in &out.cubins {
        println!("cubin {a}: {}", p.display());
    }
    match &out.ptxas_note {
        Some(n) => println!("resource report: {n}"),
        None if !out.resources.is_empty() => print!("{}", report_table(&out.resources)),
        None => {}
    }
    Ok(out)
}

pub(crate) fn inspect(args: &[String]) -> Result<()> {
    let Some(kernel) = args.first().filter(|a| !a.starts_with("--")) else {
        bail!("usage: cargo xtask inspect <kernel> [--arch sm_XX] [--fast]");
    };
    let mut b = builder(&args[1..])?;
    if b.cubin_archs.is_empty() {
        b.cubin_archs = vec!["sm_90".into()];
    }
    let out = b.build().map_err(|e| anyhow::anyhow!("{e}"))?;
    let ptx = std::fs::read_to_string(&out.ptx_path)?;
    let Some(start) = ptx.find(&format!(".entry {kernel}(")) else {
        let names: Vec<_> = out.kernels.iter().map(|k| k.name.as_str()).collect();
        bail!(
            "no kernel `{kernel}`; the kernels are: {}",
            names.join(", ")
        );
    };
    let body = &ptx[start..];
    let end = body.find("\n}\n").map(|e| e + 2).unwrap_or(body.len());
    println!("// ===== PTX ({}) =====\n.visible {}", b.arch, &body[..end]);
    let rows: Vec<_> = out
        .resources
        .iter()
        .filter(|r| r.kernel == *kernel)
        .cloned()
        .collect();
    if rows.is_empty() {
        println!(
            "\n// resource report: {}",
            out.ptxas_note.as_deref().unwrap_or("none")
        );
    } else {
        println!(
            "\n// ===== resource report (ptxas) =====\n{}",
            report_table(&rows)
        );
    }
    for (arch, cubin) in &out.cubins {
        let tools = [
            (
                "cuobjdump",
                vec![
                    "-sass".to_string(),
                    "-fun".into(),
                    kernel.clone(),
                    cubin.display().to_string(),
                ],
            ),
            (
                "nvdisasm",
                vec![
                    "-fun".to_string(),
                    kernel.clone(),
                    cubin.display().to_string(),
                ],
            ),
        ];
        let mut shown = false;
        for (tool, targs) in tools {
            if let Ok(o) = Command::new(tool).args(&targs).output()
                && o.status.success()
            {
                println!(
                    "// ===== SASS ({arch}, {tool}) =====\n{}",
                    String::from_utf8_lossy(&o.stdout)
                );
                shown = true;
                break;
            }
        }
        if !shown {
            println!(
                "// SASS: neither cuobjdump nor nvdisasm is on PATH (they come with the CUDA toolkit); cubin at {}",
                cubin.display()
            );
        }
    }
    Ok(())
}
