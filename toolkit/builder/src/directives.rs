//! What the builder reads from and writes into the PTX: the kernels' launch
//! bounds and register caps (carried by `__ptxlab_meta_<kernel>` statics that
//! `#[kernel]` leaves behind, turned into `.maxntid`/`.minnctapersm`/
//! `.maxnreg` directives), and each entry's parameter list (so the runtime
//! can check a launch's arguments against the PTX it loads).

use crate::consts::META_MAGIC;
use crate::error::{BuildError, err};
use serde::{Deserialize, Serialize};

/// One `.entry` of a PTX module: its directives (as written in the kernel's
/// source) and its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelMeta {
    /// Entry name.
    pub name: String,
    /// `.maxntid` (0: none).
    pub max_threads: u32,
    /// `.minnctapersm` (0: none).
    pub min_blocks: u32,
    /// `.maxnreg` (0: none).
    pub max_registers: u32,
    /// PTX parameter types in order: `u32`, `u64`, `f32`, `f64`, ... or
    /// `bytes:SIZE:ALIGN` for a by-value aggregate.
    #[serde(default)]
    pub params: Vec<String>,
    /// The loadable module the entry is built into: the top-level Rust
    /// module of the kernel crate it is defined in (`poisson` for
    /// `kernels_gpu::poisson::...`, `lib` for the crate root).
    #[serde(default)]
    pub group: String,
}

/// The group of a kernel defined in Rust module `path` (`my_crate::a::b`
/// gives `a`; the crate root gives `lib`).
pub fn group_of_path(path: &str) -> String {
    path.split("::").nth(1).unwrap_or("lib").to_string()
}

/// Names of the `ptx_kernel` functions defined in textual LLVM IR.
pub fn kernel_names_in_ir(ir: &str) -> Vec<String> {
    ir.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("define ")?;
            if !rest.contains("ptx_kernel ") {
                return None;
            }
            let at = rest.find('@')?;
            let name: String = rest[at + 1..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.' || *c == '$')
                .collect();
            Some(name)
        })
        .collect()
}

fn entry_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    let rest = t
        .strip_prefix(".visible .entry ")
        .or_else(|| t.strip_prefix(".entry "))?;
    Some(
        rest.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
            .collect(),
    )
}

/// The kernel name after `marker` in a PTX line and the bytes of its
/// initialiser (`{1, 2, ...}`; none without one), or `None` without `marker`.
fn marked_bytes(line: &str, marker: &str) -> Option<(String, Vec<u8>)> {
    let pos = line.find(marker)?;
    let name: String = line[pos + marker.len()..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let bytes: Vec<u8> = line
        .split_once('{')
        .map(|(_, b)| {
            b.trim_end_matches(['}', ';', ' '])
                .split(',')
                .filter_map(|x| x.trim().parse::<u8>().ok())
                .collect()
        })
        .unwrap_or_default();
    Some((name, bytes))
}

/// Reads every `__ptxlab_meta_<kernel>` global from the PTX, removes it, and
/// writes the directives it encodes before the kernel's body. Returns the new
/// PTX and the metadata (without parameters: see [`kernels_in_ptx`]).
pub fn apply_directives(ptx: &str) -> Result<(String, Vec<KernelMeta>), BuildError> {
    let mut metas = Vec::new();
    let mut kept = Vec::new();
    let mut groups: Vec<(String, String)> = Vec::new();
    for line in ptx.lines() {
        if let Some((name, bytes)) = marked_bytes(line, "__ptxlab_path_")
            && line.contains(".global")
        {
            groups.push((name, group_of_path(&String::from_utf8_lossy(&bytes))));
            continue;
        }
        if let Some((name, bytes)) = marked_bytes(line, "__ptxlab_meta_")
            && line.contains(".global")
        {
            let mut words = [0u32; 4];
            for (i, b) in bytes.iter().enumerate().take(16) {
                words[i / 4] |= (*b as u32) << (8 * (i % 4));
            }
            if words[3] != META_MAGIC {
                return Err(err(
                    "read kernel metadata",
                    format!("bad metadata for `{name}`: {line}"),
                    "",
                ));
            }
            metas.push(KernelMeta {
                name,
                max_threads: words[0],
                min_blocks: words[1],
                max_registers: words[2],
                params: Vec::new(),
                group: String::new(),
            });
            continue;
        }
        kept.push(line);
    }
    for m in &mut metas {
        m.group = groups
            .iter()
            .find(|(n, _)| *n == m.name)
            .map(|(_, g)| g.clone())
            .unwrap_or_else(|| "lib".into());
    }
    let mut out = String::with_capacity(ptx.len() + 256);
    let mut pending: Option<&KernelMeta> = None;
    for line in kept {
        if let Some(name) = entry_name(line) {
            pending = metas.iter().find(|m| m.name == name);
        }
        if line.trim() == "{"
            && let Some(m) = pending.take()
        {
            if m.max_threads > 0 {
                out.push_str(&format!(".maxntid {}, 1, 1\n", m.max_threads));
            }
            if m.min_blocks > 0 {
                out.push_str(&format!(".minnctapersm {}\n", m.min_blocks));
            }
            if m.max_registers > 0 {
                out.push_str(&format!(".maxnreg {}\n", m.max_registers));
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok((out, metas))
}

/// The type of one `.param` line of an entry: `.param .u64 .ptr .global
/// .align 4 k_param_0` gives `u64`; `.param .align 64 .b8 k_param_0[128]`
/// gives `bytes:128:64`.
fn param_type(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix(".param")?;
    let toks: Vec<&str> = rest.split_whitespace().collect();
    let mut align = 0u32;
    let mut i = 0;
    while i < toks.len() {
        match toks[i] {
            ".align" => {
                align = toks.get(i + 1)?.parse().ok()?;
                i += 2;
            }
            t if t.starts_with('.') && t != ".ptr" && !t.starts_with(".global") => {
                let ty = t.trim_start_matches('.').to_string();
                let name = toks.get(i + 1).copied().unwrap_or("");
                if let Some(open) = name.find('[') {
                    let n: u32 = name[open + 1..].trim_end_matches([']', ',']).parse().ok()?;
                    let elem = match ty.as_str() {
                        "b8" | "u8" | "s8" => 1,
                        "b16" | "u16" | "s16" | "f16" => 2,
                        "b32" | "u32" | "s32" | "f32" => 4,
                        _ => 8,
                    };
                    return Some(format!("bytes:{}:{}", n * elem, align.max(elem)));
                }
                return Some(ty);
            }
            _ => i += 1,
        }
    }
    None
}

/// Parameter types of entry `kernel` in a PTX module (see [`KernelMeta::params`]),
/// or `None` when the module has no such entry.
pub fn entry_params(ptx: &str, kernel: &str) -> Option<Vec<String>> {
    kernels_in_ptx(ptx)
        .into_iter()
        .find(|k| k.name == kernel)
        .map(|k| k.params)
}

/// Kernels (`.entry`) in a PTX file, with the directives and the parameter
/// types of each.
pub fn kernels_in_ptx(ptx: &str) -> Vec<KernelMeta> {
    let mut out: Vec<KernelMeta> = Vec::new();
    let mut current: Option<KernelMeta> = None;
    for line in ptx.lines() {
        let t = line.trim();
        if let Some(name) = entry_name(line) {
            current = Some(KernelMeta {
                name,
                max_threads: 0,
                min_blocks: 0,
                max_registers: 0,
                params: Vec::new(),
                group: String::new(),
            });
            continue;
        }
        if let Some(k) = current.as_mut() {
            let num = |s: &str| {
                s.split([',', ' '])
                    .find_map(|x| x.trim().parse::<u32>().ok())
                    .unwrap_or(0)
            };
            if t.starts_with(".param") {
                if let Some(p) = param_type(t) {
                    k.params.push(p);
                }
            } else if let Some(v) = t.strip_prefix(".maxntid") {
                k.max_threads = num(v);
            } else if let Some(v) = t.strip_prefix(".minnctapersm") {
                k.min_blocks = num(v);
            } else if let Some(v) = t.strip_prefix(".maxnreg") {
                k.max_registers = num(v);
            } else if t == "{" {
                out.extend(current.take());
            }
        }
    }
    out
}

/// The register caps ptxas accepts in `.maxnreg`.
pub const REG_CAP_RANGE: std::ops::RangeInclusive<u32> = 16..=255;

/// Writes `.maxnreg cap` into every `.entry` of a PTX module, replacing a
/// `.maxnreg` it already has (the other directives stay). It is the one
/// rewrite of the toolkit: the builder makes it before it assembles a capped
/// cubin and the runtime's PTX path before the driver's JIT, so a capped
/// cubin and a capped JIT start from the same PTX. A cap outside
/// [`REG_CAP_RANGE`] is refused.
pub fn with_register_cap(ptx: &str, cap: u32) -> Result<String, BuildError> {
    if !REG_CAP_RANGE.contains(&cap) {
        return Err(err(
            "register cap",
            format!("{cap} registers"),
            format!(
                "a cap is {}..={} registers per thread",
                REG_CAP_RANGE.start(),
                REG_CAP_RANGE.end()
            ),
        ));
    }
    let mut out = String::with_capacity(ptx.len() + 1024);
    let mut in_header = false;
    for line in ptx.lines() {
        let t = line.trim();
        if t.starts_with(".visible .entry") || t.starts_with(".entry") {
            in_header = true;
        }
        if in_header && t.starts_with(".maxnreg") {
            continue;
        }
        if in_header && t == "{" {
            out.push_str(&format!(".maxnreg {cap}\n"));
            in_header = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_caps_replace_the_entries_own() {
        let ptx = ".visible .entry a(\n.param .u64 a_p\n)\n.maxntid 128, 1, 1\n.maxnreg 64\n{\nret;\n}\n.visible .entry b(\n)\n{\nret;\n}\n";
        let capped = with_register_cap(ptx, 32).unwrap();
        assert_eq!(capped.matches(".maxnreg 32\n{").count(), 2);
        assert!(!capped.contains(".maxnreg 64") && capped.contains(".maxntid 128, 1, 1"));
        let k = kernels_in_ptx(&capped);
        assert!(k.iter().all(|k| k.max_registers == 32), "{k:?}");
        let e = with_register_cap(ptx, 8).unwrap_err().to_string();
        assert!(e.contains("8 registers") && e.contains("16..=255"), "{e}");
    }

    #[test]
    fn directives_are_inserted_and_meta_removed() {
        let ptx = ".visible .global .align 4 .b8 __ptxlab_meta_k[16] = {0, 1, 0, 0, 2, 0, 0, 0, 32, 0, 0, 0, 76, 88, 84, 80};\n\
                   .visible .global .align 1 .b8 __ptxlab_path_k[9] = {107, 58, 58, 115, 116, 101, 110, 99, 105};\n\
                   .visible .entry k(\n\t.param .u64 .ptr .global .align 4 k_param_0,\n\t.param .u64 k_param_1,\n\t.param .f32 k_param_2,\n\t.param .align 64 .b8 k_param_3[128]\n)\n{\n\tret;\n}\n";
        let (out, metas) = apply_directives(ptx).unwrap();
        assert_eq!(
            metas,
            vec![KernelMeta {
                name: "k".into(),
                max_threads: 256,
                min_blocks: 2,
                max_registers: 32,
                params: vec![],
                group: "stenci".into(),
            }]
        );
        assert!(!out.contains("__ptxlab_meta_") && !out.contains("__ptxlab_path_"));
        assert!(out.contains(".maxntid 256, 1, 1\n.minnctapersm 2\n.maxnreg 32\n{"));
        let found = kernels_in_ptx(&out);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (
                found[0].max_threads,
                found[0].min_blocks,
                found[0].max_registers
            ),
            (256, 2, 32)
        );
        assert_eq!(found[0].params, ["u64", "u64", "f32", "bytes:128:64"]);
        assert_eq!(entry_params(&out, "k").unwrap(), found[0].params);
        assert_eq!(entry_params(&out, "nope"), None);
    }
}
