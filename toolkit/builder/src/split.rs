//! Splitting one PTX module into several: one per group of entries (the
//! kernels of one top-level Rust module), each holding the header, its
//! entries and exactly the functions and variables they reach. A program
//! then loads (and, for PTX, JIT-compiles) only the groups it launches from.

use std::collections::{BTreeSet, HashMap};

/// Kinds of top-level PTX items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// `.version`, `.target`, `.address_size`.
    Header,
    /// A variable: `.global`, `.const`, `.shared`, `.extern .shared`.
    Variable,
    /// A `.func`, declared or defined.
    Function,
    /// An `.entry`.
    Entry,
}

/// One top-level item of a PTX module, with the comment lines before it.
#[derive(Debug, Clone)]
pub struct Item {
    /// Kind.
    pub kind: ItemKind,
    /// Symbol name (empty for header lines).
    pub name: String,
    /// The item's lines, as in the module.
    pub text: String,
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// The code part of a line (before a `//` comment).
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

/// The symbol a function or entry header line declares.
fn function_name(line: &str) -> String {
    let mut rest = code(line).trim();
    for kw in [".visible", ".weak", ".extern", ".entry", ".func"] {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix(kw) {
            rest = r;
        }
    }
    rest = rest.trim_start();
    if rest.starts_with('(') {
        // A return-value parameter list: `(.param .b32 func_retval0) name(`.
        let mut depth = 0;
        let mut end = 0;
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = rest[end..].trim_start();
    }
    rest.chars().take_while(|c| is_ident(*c)).collect()
}

/// The symbol a variable line declares (`.global .align 8 .b8 NAME[16] = ...;`).
fn variable_name(line: &str) -> String {
    let c = code(line);
    let decl = c
        .split('=')
        .next()
        .unwrap_or(c)
        .trim()
        .trim_end_matches(';');
    let last = decl.split_whitespace().last().unwrap_or("");
    last.chars().take_while(|c| is_ident(*c)).collect()
}

/// Cuts a PTX module into its top-level items.
pub fn cut(ptx: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let mut pending = String::new();
    let mut current: Option<(Item, i32, bool)> = None;
    for line in ptx.lines() {
        if let Some((item, depth, opened)) = current.as_mut() {
            item.text.push_str(line);
            item.text.push('\n');
            let c = code(line);
            for ch in c.chars() {
                match ch {
                    '{' => {
                        *depth += 1;
                        *opened = true;
                    }
                    '}' => *depth -= 1,
                    _ => {}
                }
            }
            let done = if *opened {
                *depth <= 0
            } else {
                c.trim_end().ends_with(';')
            };
            if done && let Some((item, _, _)) = current.take() {
                items.push(item);
            }
            continue;
        }
        let t = line.trim_start();
        let starts_item = line.starts_with('.');
        if !starts_item || t.is_empty() {
            pending.push_str(line);
            pending.push('\n');
            continue;
        }
        let c = code(t);
        let kind = if c.starts_with(".version")
            || c.starts_with(".target")
            || c.starts_with(".address_size")
        {
            ItemKind::Header
        } else if c.contains(".entry") {
            ItemKind::Entry
        } else if c.contains(".func") {
            ItemKind::Function
        } else {
            ItemKind::Variable
        };
        let name = match kind {
            ItemKind::Header => String::new(),
            ItemKind::Entry | ItemKind::Function => function_name(t),
            ItemKind::Variable => variable_name(t),
        };
        let mut text = std::mem::take(&mut pending);
        text.push_str(line);
        text.push('\n');
        let mut depth = 0;
        let mut opened = false;
        for ch in c.chars() {
            match ch {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        // A variable's initialiser `{...}` is on its line; functions and
        // entries end with their body's `}` (or a prototype's `;`).
        let single = kind == ItemKind::Header
            || kind == ItemKind::Variable
            || (opened && depth <= 0)
            || (!opened && c.trim_end().ends_with(';'));
        let item = Item { kind, name, text };
        if single {
            items.push(item);
        } else {
            current = Some((item, depth, opened));
        }
    }
    if let Some((item, _, _)) = current {
        items.push(item);
    }
    if !pending.trim().is_empty()
        && let Some(last) = items.last_mut()
    {
        last.text.push_str(&pending);
    }
    items
}

/// The identifiers an item's code mentions.
fn mentions(text: &str) -> BTreeSet<&str> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        for tok in code(line).split(|c: char| !is_ident(c)) {
            if !tok.is_empty() {
                out.insert(tok);
            }
        }
    }
    out
}

/// Splits `ptx` into one module per group: `group_of(entry)` names each
/// entry's group. Each module holds the header, the group's entries, and
/// the functions and variables they reach (directly or through each other),
/// in the original order. Groups come out sorted by name.
pub fn split(ptx: &str, group_of: impl Fn(&str) -> String) -> Vec<(String, String)> {
    let items = cut(ptx);
    // Symbols defined by functions and variables (a function may appear
    // twice: its prototype, then its definition).
    let mut defined: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        if matches!(it.kind, ItemKind::Function | ItemKind::Variable) && !it.name.is_empty() {
            defined.entry(it.name.as_str()).or_default().push(i);
        }
    }
    let mut groups: BTreeSet<String> = BTreeSet::new();
    let mut entry_group: HashMap<usize, String> = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        if it.kind == ItemKind::Entry {
            let g = group_of(&it.name);
            groups.insert(g.clone());
            entry_group.insert(i, g);
        }
    }
    let mut out = Vec::new();
    for g in groups {
        let mut keep: BTreeSet<usize> = BTreeSet::new();
        let mut stack: Vec<usize> = entry_group
            .iter()
            .filter(|(_, eg)| **eg == g)
            .map(|(i, _)| *i)
            .collect();
        while let Some(i) = stack.pop() {
            if !keep.insert(i) {
                continue;
            }
            for m in mentions(&items[i].text) {
                if let Some(defs) = defined.get(m) {
                    for d in defs {
                        if !keep.contains(d) {
                            stack.push(*d);
                        }
                    }
                }
            }
        }
        let mut text = String::new();
        for (i, it) in items.iter().enumerate() {
            if it.kind == ItemKind::Header || keep.contains(&i) {
                text.push_str(&it.text);
            }
        }
        out.push((g, text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//\n// Generated\n//\n\n.version 7.8\n.target sm_80\n.address_size 64\n\n\
        \t// .globl\ta\n\
        .func helper\n(\n\t.param .b32 helper_param_0\n)\n;\n\
        .func  (.param .align 16 .b8 func_retval0[8]) other\n(\n)\n;\n\
        .extern .shared .align 1 .b8 gpu_launch_sized_workgroup_mem[];\n\
        .global .align 8 .b8 TABLE[4] = {1, 2, 3, 4};\n\
        .visible .entry a(\n\t.param .u64 a_param_0\n)\n.maxntid 256, 1, 1\n{\n\tld.global.u32 %r1, [TABLE];\n\tcall.uni helper, (param0);\n}\n\
        .visible .entry b(\n)\n{\n\tst.shared.u32 [gpu_launch_sized_workgroup_mem], %r1;\n\tcall.uni (retval0), other, ();\n}\n\
        .func helper(\n\t.param .b32 helper_param_0\n)\n{\n\t{ // callseq\n\tret;\n\t}\n}\n\
        .func  (.param .align 16 .b8 func_retval0[8]) other(\n)\n{\n\tret;\n}\n";

    #[test]
    fn items_are_cut_with_their_names() {
        let items = cut(PTX);
        let names: Vec<(ItemKind, &str)> =
            items.iter().map(|i| (i.kind, i.name.as_str())).collect();
        assert_eq!(
            names,
            [
                (ItemKind::Header, ""),
                (ItemKind::Header, ""),
                (ItemKind::Header, ""),
                (ItemKind::Function, "helper"),
                (ItemKind::Function, "other"),
                (ItemKind::Variable, "gpu_launch_sized_workgroup_mem"),
                (ItemKind::Variable, "TABLE"),
                (ItemKind::Entry, "a"),
                (ItemKind::Entry, "b"),
                (ItemKind::Function, "helper"),
                (ItemKind::Function, "other"),
            ]
        );
        // Nothing is lost or duplicated.
        let joined: String = items.iter().map(|i| i.text.as_str()).collect();
        assert_eq!(joined, PTX);
    }

    #[test]
    fn each_group_keeps_what_its_entries_reach() {
        let parts = split(PTX, |e| if e == "a" { "x".into() } else { "y".into() });
        assert_eq!(parts.len(), 2);
        let (gx, x) = &parts[0];
        let (gy, y) = &parts[1];
        assert_eq!((gx.as_str(), gy.as_str()), ("x", "y"));
        for p in [x, y] {
            assert!(p.contains(".version 7.8") && p.contains(".target sm_80"));
        }
        assert!(x.contains(".entry a(") && !x.contains(".entry b("));
        assert!(x.contains("TABLE[4]") && x.matches(".func helper").count() == 2);
        assert!(!x.contains("gpu_launch_sized_workgroup_mem") && !x.contains("other"));
        assert!(y.contains(".entry b(") && y.contains("gpu_launch_sized_workgroup_mem[]"));
        assert!(y.matches("other").count() >= 3 && !y.contains("helper") && !y.contains("TABLE"));
    }
}
