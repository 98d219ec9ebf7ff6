//! PTX text to comparable items, and the comparison.
//!
//! A module is cut into its top-level items (the header directives,
//! declarations, `.func`s and `.entry`s). Each item's lines are normalised
//! so that only code is compared:
//!
//! * comments (`//`, `/* */`) and blank lines go; runs of blanks become one
//!   space (the builder's and LLVM's header comments, `// %bb.3` block
//!   markers and `// begin inline asm` are all comments);
//! * `.loc` and `.file` lines (debug line info, which holds paths) go;
//! * the crate disambiguator of a v0-mangled Rust symbol (`Cs3l1jcaKzlsR_`
//!   in `_RNvNtCs3l1jcaKzlsR_13ptxlab_device7precise...`) becomes `Cs_`, and
//!   the hash of a legacy one (`17h0123456789abcdefE`) becomes `17hE`: cargo
//!   derives them from the package's path and metadata, not from its code;
//! * the function index in block labels (`$L__BB12_3` becomes `$L__BB_3`)
//!   and in `__local_depot12` goes: it is the item's position in the module,
//!   which changes when a kernel is added before it;
//! * with [`Options::numbering`], virtual registers and block labels are
//!   renumbered by first use within the item (`%r17` becomes `%r0` if it is
//!   the first `%r` used, `$L__BB_12` becomes `$L__BB_0` if it is the first
//!   label named) and the counts of `.reg` declarations become `<*>`: the
//!   same code with other register and block numbers then compares equal.

use std::collections::HashMap;

/// What to normalise beyond comments, blanks, symbol hashes and label indices.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Renumber virtual registers and block labels by first use within
    /// each item.
    pub numbering: bool,
    /// Kernel renames applied to the base (old name, new name).
    pub renames: Vec<(String, String)>,
}

/// Renames kernels of `items` (the base): the item's name and the name in
/// its text (the `.entry` line, `<name>_param_<i>`).
pub fn rename(items: &mut [Item], renames: &[(String, String)]) {
    for it in items.iter_mut().filter(|i| i.kind == Kind::Kernel) {
        let Some((old, new)) = renames.iter().find(|(o, _)| *o == it.name) else {
            continue;
        };
        it.name = new.clone();
        for l in &mut it.lines {
            let mut out = String::with_capacity(l.len());
            let mut rest = l.as_str();
            while let Some(p) = rest.find(old.as_str()) {
                let before = rest[..p].chars().last();
                let after = rest[p + old.len()..].chars().next();
                let boundary = |c: Option<char>| c.is_none_or(|c| !is_token_char(c) || c == '_');
                // A whole name, or `<name>_param_<i>`.
                if before.is_none_or(|c| !is_token_char(c))
                    && (boundary(after) && !rest[p + old.len()..].starts_with("_")
                        || rest[p + old.len()..].starts_with("_param_"))
                {
                    out.push_str(&rest[..p]);
                    out.push_str(new);
                } else {
                    out.push_str(&rest[..p + old.len()]);
                }
                rest = &rest[p + old.len()..];
            }
            out.push_str(rest);
            *l = out;
        }
    }
}

/// Kinds of top-level PTX items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `.version`, `.target`, `.address_size`.
    Header,
    /// `.global`, `.shared`, `.const`, `.extern` variables.
    Declaration,
    /// A `.func` prototype (no body).
    FunctionDecl,
    /// A `.func` with a body.
    Function,
    /// An `.entry`: a kernel.
    Kernel,
}

impl Kind {
    /// Word for reports.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Header => "header",
            Kind::Declaration => "variable",
            Kind::FunctionDecl => "prototype",
            Kind::Function => "function",
            Kind::Kernel => "kernel",
        }
    }
}

/// One top-level item: its kind, name and normalised lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Kind.
    pub kind: Kind,
    /// Name (the directive's name for header lines).
    pub name: String,
    /// Normalised lines.
    pub lines: Vec<String>,
}

/// Virtual register classes of LLVM's NVPTX back end.
const REG_CLASSES: &[&str] = &["p", "rs", "r", "rd", "rq", "f", "fd", "h", "hh", "b"];

/// Removes comments from one line; `in_block` carries an open `/* */`.
fn strip_comments(line: &str, in_block: &mut bool) -> String {
    let mut out = String::new();
    let mut rest = line;
    loop {
        if *in_block {
            match rest.find("*/") {
                Some(e) => {
                    rest = &rest[e + 2..];
                    *in_block = false;
                }
                None => return out,
            }
        }
        let line_c = rest.find("//");
        let block_c = rest.find("/*");
        match (line_c, block_c) {
            (Some(l), Some(b)) if b < l => {
                out.push_str(&rest[..b]);
                out.push(' ');
                rest = &rest[b + 2..];
                *in_block = true;
            }
            (None, Some(b)) => {
                out.push_str(&rest[..b]);
                out.push(' ');
                rest = &rest[b + 2..];
                *in_block = true;
            }
            (Some(l), _) => {
                out.push_str(&rest[..l]);
                return out;
            }
            (None, None) => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%'
}

/// `Cs<base62>_<digit>` -> `Cs_<digit>` inside a v0 symbol; `17h<16 hex>E`
/// -> `17hE` inside a legacy one.
fn normalise_symbol(tok: &str) -> String {
    if tok.starts_with("_R") {
        let b = tok.as_bytes();
        let mut out = String::with_capacity(tok.len());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'C' && b.get(i + 1) == Some(&b's') {
                let mut j = i + 2;
                while j < b.len() && b[j].is_ascii_alphanumeric() {
                    j += 1;
                }
                if j > i + 2
                    && b.get(j) == Some(&b'_')
                    && b.get(j + 1).is_some_and(u8::is_ascii_digit)
                {
                    out.push_str("Cs_");
                    i = j + 1;
                    continue;
                }
            }
            out.push(b[i] as char);
            i += 1;
        }
        return out;
    }
    if tok.starts_with("_ZN") {
        let b = tok.as_bytes();
        let mut out = String::with_capacity(tok.len());
        let mut i = 0;
        while i < b.len() {
            if tok[i..].starts_with("17h")
                && b.len() >= i + 20
                && b[i + 3..i + 19].iter().all(u8::is_ascii_hexdigit)
                && b[i + 19] == b'E'
            {
                out.push_str("17hE");
                i += 20;
                continue;
            }
            out.push(b[i] as char);
            i += 1;
        }
        return out;
    }
    tok.to_string()
}

/// `$L__BB12_3` -> `$L__BB_3`, `__local_depot12` -> `__local_depot`.
fn normalise_label(tok: &str) -> String {
    if let Some(rest) = tok.strip_prefix("$L__BB") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with('_') {
            return format!("$L__BB{}", &rest[digits..]);
        }
    }
    if let Some(rest) = tok.strip_prefix("__local_depot")
        && !rest.is_empty()
        && rest.bytes().all(|c| c.is_ascii_digit())
    {
        return "__local_depot".into();
    }
    tok.to_string()
}

/// A virtual register `%<class><n>`: its class and number.
fn register(tok: &str) -> Option<(&str, u64)> {
    let body = tok.strip_prefix('%')?;
    let letters = body.bytes().take_while(u8::is_ascii_lowercase).count();
    let (class, num) = body.split_at(letters);
    if num.is_empty() || !REG_CLASSES.contains(&class) {
        return None;
    }
    Some((class, num.parse().ok()?))
}

/// Per-item state of register renumbering.
#[derive(Default)]
struct Renumber {
    map: HashMap<(String, u64), u64>,
    next: HashMap<String, u64>,
}

impl Renumber {
    fn get(&mut self, class: &str, n: u64) -> u64 {
        if let Some(&v) = self.map.get(&(class.to_string(), n)) {
            return v;
        }
        let next = self.next.entry(class.to_string()).or_insert(0);
        let v = *next;
        *next += 1;
        self.map.insert((class.to_string(), n), v);
        v
    }
}

/// Normalises one comment-free, trimmed line.
fn normalise_line(line: &str, regs: Option<&mut Renumber>) -> String {
    let collapsed = line.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut regs = regs;
    let mut out = String::with_capacity(collapsed.len());
    let mut chars = collapsed.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !is_token_char(c) {
            out.push(c);
            continue;
        }
        let mut end = i + c.len_utf8();
        while let Some(&(j, d)) = chars.peek() {
            if !is_token_char(d) {
                break;
            }
            end = j + d.len_utf8();
            chars.next();
        }
        let tok = &collapsed[i..end];
        let mut t = normalise_label(&normalise_symbol(tok));
        if let Some(r) = regs.as_deref_mut() {
            if let Some((class, n)) = register(&t) {
                t = format!("%{class}{}", r.get(class, n));
            } else if let Some(n) = t.strip_prefix("$L__BB_").and_then(|n| n.parse().ok()) {
                t = format!("$L__BB_{}", r.get("$L__BB_", n));
            } else if t
                .strip_prefix('%')
                .is_some_and(|c| REG_CLASSES.contains(&c))
                && collapsed[end..].starts_with('<')
            {
                // `.reg .b32 %r<45>;`: the count follows the numbering.
                if let Some(close) = collapsed[end..].find('>') {
                    out.push_str(&t);
                    out.push_str("<*>");
                    for _ in 0..close + 1 {
                        chars.next();
                    }
                    continue;
                }
            }
        }
        out.push_str(&t);
    }
    out
}

/// The name of an item from its first normalised lines joined by spaces.
fn item_name(kind: Kind, text: &str) -> String {
    let after = |kw: &str| text.find(kw).map(|p| text[p + kw.len()..].trim_start());
    let ident = |s: &str| -> String { s.chars().take_while(|&c| is_token_char(c)).collect() };
    match kind {
        Kind::Header => text.split_whitespace().next().unwrap_or("").to_string(),
        Kind::Kernel => after(".entry ").map(ident).unwrap_or_default(),
        Kind::Function | Kind::FunctionDecl => {
            let Some(mut s) = after(".func ") else {
                return String::new();
            };
            if s.starts_with('(') {
                // Skip the return parameter list.
                let mut depth = 0;
                for (i, c) in s.char_indices() {
                    match c {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                s = s[i + 1..].trim_start();
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            ident(s)
        }
        Kind::Declaration => {
            let end = text.find(['[', '=', ';']).unwrap_or(text.len());
            text[..end]
                .split_whitespace()
                .last()
                .unwrap_or("")
                .to_string()
        }
    }
}

/// Cuts a PTX module into normalised top-level items, in order.
pub fn parse(ptx: &str, opts: &Options) -> Vec<Item> {
    let mut items = Vec::new();
    let mut in_block = false;
    let mut cur: Vec<String> = Vec::new();
    let mut depth: i64 = 0;
    let mut regs = Renumber::default();
    let finish = |cur: &mut Vec<String>, items: &mut Vec<Item>, regs: &mut Renumber| {
        if cur.is_empty() {
            return;
        }
        let text = cur.join(" ");
        let kind = if text.contains(".entry ") {
            Kind::Kernel
        } else if text.contains(".func ") {
            if text.contains('{') {
                Kind::Function
            } else {
                Kind::FunctionDecl
            }
        } else if [".version", ".target", ".address_size"]
            .iter()
            .any(|d| text.starts_with(d))
        {
            Kind::Header
        } else {
            Kind::Declaration
        };
        items.push(Item {
            kind,
            name: item_name(kind, &text),
            lines: std::mem::take(cur),
        });
        *regs = Renumber::default();
    };
    for raw in ptx.lines() {
        let line = strip_comments(raw, &mut in_block);
        let line = line.trim();
        if line.is_empty() || line.starts_with(".loc") || line.starts_with(".file") {
            continue;
        }
        let norm = normalise_line(line, opts.numbering.then_some(&mut regs));
        let header = depth == 0
            && cur.is_empty()
            && [".version", ".target", ".address_size"]
                .iter()
                .any(|d| norm.starts_with(d));
        for c in norm.chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
        }
        let ends = depth <= 0 && (norm.ends_with(';') || norm.ends_with('}'));
        cur.push(norm);
        if header || ends {
            depth = 0;
            finish(&mut cur, &mut items, &mut regs);
        }
    }
    finish(&mut cur, &mut items, &mut regs);
    items
}

/// How an item compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Same normalised lines.
    Identical,
    /// Different: the first differing line (0-based) and up to three lines
    /// from there on each side, and each side's length.
    Differs {
        /// First differing line.
        line: usize,
        /// Base lines from there.
        base: Vec<String>,
        /// Current lines from there.
        current: Vec<String>,
        /// Lines in the base item.
        base_len: usize,
        /// Lines in the current item.
        current_len: usize,
    },
    /// Only in the current module.
    Added,
    /// Only in the base module.
    Removed,
}

/// One item's comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Kind.
    pub kind: Kind,
    /// Name.
    pub name: String,
    /// Result.
    pub status: Status,
}

/// Lines shown for a differing item.
const SHOWN: usize = 3;

/// Compares the items of two modules by (kind, name): the current module's
/// order, then the removed ones in the base's order.
pub fn compare(base: &[Item], current: &[Item]) -> Vec<Outcome> {
    let key = |i: &Item| (i.kind, i.name.clone());
    let base_map: HashMap<_, _> = base.iter().map(|i| (key(i), i)).collect();
    let cur_keys: std::collections::HashSet<_> = current.iter().map(key).collect();
    let mut out = Vec::new();
    for c in current {
        let status = match base_map.get(&key(c)) {
            None => Status::Added,
            Some(b) if b.lines == c.lines => Status::Identical,
            Some(b) => {
                let line = b
                    .lines
                    .iter()
                    .zip(&c.lines)
                    .position(|(x, y)| x != y)
                    .unwrap_or(b.lines.len().min(c.lines.len()));
                let take = |v: &[String]| v.iter().skip(line).take(SHOWN).cloned().collect();
                Status::Differs {
                    line,
                    base: take(&b.lines),
                    current: take(&c.lines),
                    base_len: b.lines.len(),
                    current_len: c.lines.len(),
                }
            }
        };
        out.push(Outcome {
            kind: c.kind,
            name: c.name.clone(),
            status,
        });
    }
    for b in base {
        if !cur_keys.contains(&key(b)) {
            out.push(Outcome {
                kind: b.kind,
                name: b.name.clone(),
                status: Status::Removed,
            });
        }
    }
    out
}

/// The report of one module: one line per kernel, the other items only when
/// not identical, and a summary. Returns the text and whether an item present
/// in both differs.
pub fn render(module: &str, outcomes: &[Outcome]) -> (String, bool) {
    use std::fmt::Write;
    let mut s = String::new();
    let mut counts: HashMap<(bool, &str), usize> = HashMap::new();
    let mut differs = false;
    for o in outcomes {
        let word = match &o.status {
            Status::Identical => "identical",
            Status::Differs { .. } => "differs",
            Status::Added => "added",
            Status::Removed => "removed",
        };
        let kernel = o.kind == Kind::Kernel;
        *counts.entry((kernel, word)).or_default() += 1;
        if matches!(o.status, Status::Differs { .. }) {
            differs = true;
        }
        if !kernel && o.status == Status::Identical {
            continue;
        }
        let what = if kernel {
            String::new()
        } else {
            format!(" ({})", o.kind.label())
        };
        let _ = writeln!(s, "  {word:<9} {}{what}", o.name);
        if let Status::Differs {
            line,
            base,
            current,
            base_len,
            current_len,
        } = &o.status
        {
            let _ = writeln!(
                s,
                "            first difference at line {} of {base_len} (base) / {current_len} (current):",
                line + 1
            );
            for l in base {
                let _ = writeln!(s, "            - {l}");
            }
            for l in current {
                let _ = writeln!(s, "            + {l}");
            }
        }
    }
    let count = |k: bool, w: &str| counts.get(&(k, w)).copied().unwrap_or(0);
    let words = ["identical", "differs", "added", "removed"];
    let kernels: Vec<String> = words
        .iter()
        .map(|w| format!("{} {w}", count(true, w)))
        .collect();
    let others: Vec<String> = words
        .iter()
        .map(|w| format!("{} {w}", count(false, w)))
        .collect();
    let head = format!(
        "{module}: kernels: {}; functions, variables, header: {}\n",
        kernels.join(", "),
        others.join(", ")
    );
    (head + &s, differs)
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
