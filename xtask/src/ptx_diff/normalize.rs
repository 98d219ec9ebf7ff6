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
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Renumber virtual registers and block labels by first use within
    /// each item.
    pub numbering: bool,
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
pub fn parse(ptx: &str, opts: Options) -> Vec<Item> {
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
mod tests {
    use super::*;

    const BASE: &str = r#"//
// Generated by LLVM NVPTX Back-End
//

.version 7.8
.target sm_80
.address_size 64

	// .globl	saxpy           // -- Begin function saxpy
.func  (.param .b32 func_retval0) _RNvNtCs3l1jcaKzlsR_13ptxlab_device7precise3sin
(
	.param .b32 _RNvNtCs3l1jcaKzlsR_13ptxlab_device7precise3sin_param_0
)
;
.global .align 4 .b8 _RNvCsAbC_6tables5TABLE[8] = {1, 2, 3, 4, 5, 6, 7, 8};
                                        // @saxpy
.visible .entry saxpy(
	.param .f32 saxpy_param_0,
	.param .u64 .ptr .align 1 saxpy_param_1
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<5>;

// %bb.0:
	ld.param.b32 	%r1, [saxpy_param_0];   // a
	setp.gt.u32 	%p1, %r1, 3;
	@%p1 bra 	$L__BB0_2;
// %bb.1:
	add.s32 	%r3, %r1, %r1;
$L__BB0_2:
	ret;

}
"#;

    fn names(items: &[Item]) -> Vec<(Kind, &str)> {
        items.iter().map(|i| (i.kind, i.name.as_str())).collect()
    }

    #[test]
    fn cuts_a_module_into_named_items() {
        let items = parse(BASE, Options::default());
        assert_eq!(
            names(&items),
            vec![
                (Kind::Header, ".version"),
                (Kind::Header, ".target"),
                (Kind::Header, ".address_size"),
                (Kind::FunctionDecl, "_RNvNtCs_13ptxlab_device7precise3sin"),
                (Kind::Declaration, "_RNvCs_6tables5TABLE"),
                (Kind::Kernel, "saxpy"),
            ]
        );
        let k = &items[5];
        assert!(k.lines.contains(&".maxntid 256, 1, 1".to_string()));
        // Comments gone, blanks collapsed, nothing empty.
        assert!(k.lines.iter().all(|l| !l.contains("//") && !l.is_empty()));
        assert!(
            k.lines
                .contains(&"ld.param.b32 %r1, [saxpy_param_0];".to_string())
        );
    }

    #[test]
    fn comments_blank_lines_and_layout_do_not_count() {
        let other = BASE
            .replace("// @saxpy", "// something else entirely")
            .replace("\t", "    ")
            .replace("// %bb.1:", "/* a block\n comment */")
            .replace("ret;", "ret; // done\n\n");
        let cmp = compare(
            &parse(BASE, Options::default()),
            &parse(&other, Options::default()),
        );
        assert!(cmp.iter().all(|o| o.status == Status::Identical), "{cmp:?}");
    }

    #[test]
    fn symbol_hashes_and_label_indices_do_not_count() {
        let other = BASE
            .replace("Cs3l1jcaKzlsR_", "Cs9ZZq1x_")
            .replace("CsAbC_", "CsXyZ12_")
            .replace("$L__BB0_2", "$L__BB7_2");
        let cmp = compare(
            &parse(BASE, Options::default()),
            &parse(&other, Options::default()),
        );
        assert!(cmp.iter().all(|o| o.status == Status::Identical), "{cmp:?}");
        // But the block number within the kernel does.
        let moved = BASE.replace("$L__BB0_2", "$L__BB0_3");
        let cmp = compare(
            &parse(BASE, Options::default()),
            &parse(&moved, Options::default()),
        );
        assert!(matches!(cmp[5].status, Status::Differs { .. }));
        assert_eq!(
            normalise_symbol("_ZN4core3fmt5write17h0123456789abcdefE"),
            "_ZN4core3fmt5write17hE"
        );
        assert_eq!(normalise_label("__local_depot12"), "__local_depot");
        assert_eq!(normalise_label("$L__BB"), "$L__BB");
    }

    #[test]
    fn a_code_change_is_found_with_its_first_line() {
        let other = BASE.replace("add.s32 \t%r3, %r1, %r1;", "mul.lo.s32 \t%r3, %r1, %r1;");
        assert_ne!(other, BASE);
        let cmp = compare(
            &parse(BASE, Options::default()),
            &parse(&other, Options::default()),
        );
        let k = cmp.iter().find(|o| o.name == "saxpy").unwrap();
        match &k.status {
            Status::Differs {
                line,
                base,
                current,
                base_len,
                current_len,
            } => {
                assert_eq!(base[0], "add.s32 %r3, %r1, %r1;");
                assert_eq!(current[0], "mul.lo.s32 %r3, %r1, %r1;");
                assert_eq!(base_len, current_len);
                assert_eq!(parse(BASE, Options::default())[5].lines[*line], base[0]);
            }
            s => panic!("expected a difference, got {s:?}"),
        }
        let (text, differs) = render("kernels.ptx", &cmp);
        assert!(differs);
        assert!(text.contains("differs   saxpy"), "{text}");
        assert!(text.contains("- add.s32 %r3, %r1, %r1;"), "{text}");
        assert!(text.contains("+ mul.lo.s32 %r3, %r1, %r1;"), "{text}");
        assert!(text.contains("kernels: 0 identical, 1 differs, 0 added, 0 removed"));
    }

    #[test]
    fn a_changed_directive_is_a_difference() {
        let other = BASE.replace(".maxntid 256, 1, 1", ".maxntid 128, 1, 1\n.maxnreg 32");
        let cmp = compare(
            &parse(BASE, Options::default()),
            &parse(&other, Options::default()),
        );
        assert!(matches!(
            cmp.iter().find(|o| o.name == "saxpy").unwrap().status,
            Status::Differs { .. }
        ));
    }

    #[test]
    fn register_and_label_numbering_count_unless_asked_not_to() {
        // The same code with other register numbers and counts.
        let other = BASE
            .replace("%r3", "%r9")
            .replace("%r1", "%r4")
            .replace("%r<5>", "%r<10>");
        let plain = compare(
            &parse(BASE, Options::default()),
            &parse(&other, Options::default()),
        );
        assert!(matches!(plain[5].status, Status::Differs { .. }));
        let regs = Options { numbering: true };
        let renum = compare(&parse(BASE, regs), &parse(&other, regs));
        assert!(
            renum.iter().all(|o| o.status == Status::Identical),
            "{renum:?}"
        );
        // Block labels too, but only with the option.
        let relabelled = other.replace("$L__BB0_2", "$L__BB0_9");
        let plain = compare(
            &parse(BASE, Options::default()),
            &parse(&relabelled, Options::default()),
        );
        assert!(matches!(plain[5].status, Status::Differs { .. }));
        let renum = compare(&parse(BASE, regs), &parse(&relabelled, regs));
        assert!(
            renum.iter().all(|o| o.status == Status::Identical),
            "{renum:?}"
        );
        // Renumbering keeps which operands are the same register.
        let swapped = BASE.replace("add.s32 \t%r3, %r1, %r1;", "add.s32 \t%r3, %r1, %r3;");
        let renum = compare(&parse(BASE, regs), &parse(&swapped, regs));
        assert!(matches!(renum[5].status, Status::Differs { .. }));
        // Special registers are never renamed.
        let mut r = Renumber::default();
        assert_eq!(
            normalise_line("mov.u32 %r7, %tid.x;", Some(&mut r)),
            "mov.u32 %r0, %tid.x;"
        );
        assert_eq!(
            normalise_line(".reg .b64 %rd<12>;", Some(&mut r)),
            ".reg .b64 %rd<*>;"
        );
    }

    #[test]
    fn added_and_removed_kernels_are_named() {
        let second = BASE.replace("saxpy", "scale");
        let both = format!("{BASE}{}", &second[second.find("// @scale").unwrap()..]);
        let cmp = compare(
            &parse(BASE, Options::default()),
            &parse(&both, Options::default()),
        );
        let status = |n: &str| &cmp.iter().find(|o| o.name == n).unwrap().status;
        assert_eq!(status("saxpy"), &Status::Identical);
        assert_eq!(status("scale"), &Status::Added);
        let (text, differs) = render("m", &cmp);
        assert!(!differs, "an added kernel is not a difference: {text}");
        let cmp = compare(
            &parse(&both, Options::default()),
            &parse(BASE, Options::default()),
        );
        assert_eq!(
            cmp.iter().find(|o| o.name == "scale").unwrap().status,
            Status::Removed
        );
        let (text, differs) = render("m", &cmp);
        assert!(!differs);
        assert!(text.contains("removed   scale"), "{text}");
        assert!(text.contains("kernels: 1 identical, 0 differs, 0 added, 1 removed"));
    }

    #[test]
    fn a_changed_function_body_is_a_difference() {
        let with_body = |op: &str| {
            format!(
                ".version 7.8\n.func (.param .b32 func_retval0) helper(\n.param .b32 helper_param_0\n)\n{{\n{op} %r1, %r1, 1;\nret;\n}}\n"
            )
        };
        let cmp = compare(
            &parse(&with_body("add.s32"), Options::default()),
            &parse(&with_body("sub.s32"), Options::default()),
        );
        let f = cmp.iter().find(|o| o.name == "helper").unwrap();
        assert_eq!(f.kind, Kind::Function);
        assert!(matches!(f.status, Status::Differs { .. }));
        let (text, differs) = render("m", &cmp);
        assert!(differs);
        assert!(text.contains("differs   helper (function)"), "{text}");
    }
}
