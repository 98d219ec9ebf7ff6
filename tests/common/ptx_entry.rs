//! Reading one kernel out of a PTX module. Shared by `tests/ptx.rs`,
//! `tests/attention.rs` and `tests/cluster.rs`.

/// The text of one `.entry` of `ptx` (header and body); panics naming the
/// kernel when the module does not export it.
pub fn entry<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("kernel `{name}` is not exported in the PTX"));
    let rest = &ptx[start..];
    // LLVM closes every function with this comment; a plain "}" line can
    // also close a scope inside an inline-asm block (wgmma's).
    let end = rest
        .find("// -- End function")
        .or_else(|| rest.find("\n}\n").map(|e| e + 3))
        .unwrap_or(rest.len());
    &rest[..end]
}
