//! `ptxas`: cubins and the per-kernel resource report (registers, spills,
//! stack frame, static shared memory) parsed from `ptxas -v`.

use crate::error::{BuildError, err};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;

/// What `ptxas -v` reports for one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResourceUsage {
    /// Entry name.
    pub kernel: String,
    /// Target arch (`sm_90`).
    pub arch: String,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
    /// Bytes of stack frame (local memory) per thread.
    pub stack_frame: u32,
    /// Bytes of static shared memory.
    pub shared_bytes: u32,
    /// Named barriers used.
    pub barriers: u32,
}

/// `ptxas -v` of a PTX file for `arch`: writes the cubin, returns the report.
pub fn assemble(
    ptxas: &Path,
    ptx: &Path,
    arch: &str,
    cubin: &Path,
) -> Result<Vec<ResourceUsage>, BuildError> {
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .args(["-O3", "-v"])
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .output()
        .map_err(|e| err("ptxas", e.to_string(), "check PTXLAB_PTXAS"))?;
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() {
        return Err(err(
            format!("ptxas -arch={arch}"),
            text,
            "the PTX was rejected: if it names the PTX version, use a newer ptxas or a lower --ptx-isa",
        ));
    }
    Ok(parse_ptxas_report(&text, arch))
}

/// Parses `ptxas -v` output into one [`ResourceUsage`] per kernel.
pub fn parse_ptxas_report(text: &str, arch: &str) -> Vec<ResourceUsage> {
    let mut out: Vec<ResourceUsage> = Vec::new();
    let num_before = |s: &str, unit: &str| -> u32 {
        s.split(',')
            .find(|p| p.contains(unit))
            .and_then(|p| p.split_whitespace().find_map(|w| w.parse::<u32>().ok()))
            .unwrap_or(0)
    };
    for line in text.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            out.push(ResourceUsage {
                kernel: rest.trim().to_string(),
                arch: arch.to_string(),
                ..Default::default()
            });
        } else if line.contains("bytes stack frame") {
            if let Some(k) = out.last_mut() {
                k.stack_frame = num_before(line, "stack frame");
                k.spill_stores = num_before(line, "spill stores");
                k.spill_loads = num_before(line, "spill loads");
            }
        } else if let Some(rest) = line.split("Used ").nth(1)
            && let Some(k) = out.last_mut()
        {
            k.registers = num_before(rest, "registers");
            k.barriers = num_before(rest, "barriers");
            k.shared_bytes = num_before(rest, "smem");
        }
    }
    out
}

/// Renders a resource report as a Markdown table.
pub fn report_table(rows: &[ResourceUsage]) -> String {
    let mut s = String::from(
        "| kernel | arch | registers | spill stores (B) | spill loads (B) | stack (B) | static smem (B) |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            r.kernel,
            r.arch,
            r.registers,
            r.spill_stores,
            r.spill_loads,
            r.stack_frame,
            r.shared_bytes
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_report_is_parsed() {
        let text = "ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
                    ptxas info    : Function properties for k\n    \
                    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
                    ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]\n";
        let r = parse_ptxas_report(text, "sm_90");
        assert_eq!(
            r,
            vec![ResourceUsage {
                kernel: "k".into(),
                arch: "sm_90".into(),
                registers: 32,
                spill_stores: 4,
                spill_loads: 12,
                stack_frame: 8,
                shared_bytes: 1024,
                barriers: 1
            }]
        );
    }
}
