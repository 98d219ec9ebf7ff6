//! `ptxlab_device::println!`: one kernel debug line, the same on the GPU
//! (`vprintf`) and in the simulator (standard output).
//!
//! The format string is Rust's, restricted to what `printf` can say the
//! same way: `{}` and `{:?}` (any integer or float), `{:x}`, `{:X}`,
//! `{:#x}`, `{:#X}` (integers), `{:.N}` (floats), `{{` and `}}`; arguments
//! are positional, one per placeholder. The macro cuts the string into
//! its literal pieces and placeholders; on the GPU a constant C format
//! string is built from them and from each argument's type (every integer
//! as 64 bits, `%lld`/`%llu`/`%llx`; floats as `%f`), the arguments are
//! packed as 8-byte words and `vprintf` is called; on the host the
//! original string is formatted with wrappers that print as `printf`
//! does (floats with six decimals unless a precision is given).

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, LitStr, Token};

struct Input {
    fmt: LitStr,
    args: Vec<Expr>,
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let fmt: LitStr = input.parse()?;
        let args = if input.is_empty() {
            Vec::new()
        } else {
            input.parse::<Token![,]>()?;
            Punctuated::<Expr, Token![,]>::parse_terminated(input)?
                .into_iter()
                .collect()
        };
        Ok(Input { fmt, args })
    }
}

/// One placeholder: its kind for the C format string.
#[derive(Clone, Copy)]
enum Spec {
    /// `{}` / `{:?}`.
    Plain,
    /// `{:x}`, `{:X}`, with `#` or not.
    Hex { upper: bool, alt: bool },
    /// `{:.N}`.
    Precision(u32),
}

/// Splits a format string into literal pieces (with `{{`/`}}` undone) and
/// placeholders; `pieces.len() == specs.len() + 1`.
fn split(s: &str) -> Result<(Vec<String>, Vec<Spec>), String> {
    let mut pieces = vec![String::new()];
    let mut specs = Vec::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '{' if it.peek() == Some(&'{') => {
                it.next();
                pieces.last_mut().expect("non-empty").push('{');
            }
            '}' if it.peek() == Some(&'}') => {
                it.next();
                pieces.last_mut().expect("non-empty").push('}');
            }
            '{' => {
                let mut inner = String::new();
                loop {
                    match it.next() {
                        Some('}') => break,
                        Some(c) => inner.push(c),
                        None => return Err("a `{` without its `}`".into()),
                    }
                }
                let spec = match inner.as_str() {
                    "" | ":?" => Spec::Plain,
                    ":x" => Spec::Hex {
                        upper: false,
                        alt: false,
                    },
                    ":X" => Spec::Hex {
                        upper: true,
                        alt: false,
                    },
                    ":#x" => Spec::Hex {
                        upper: false,
                        alt: true,
                    },
                    ":#X" => Spec::Hex {
                        upper: true,
                        alt: true,
                    },
                    p if p.starts_with(":.") => match p[2..].parse::<u32>() {
                        Ok(n) if n <= 17 => Spec::Precision(n),
                        _ => return Err(format!("`{{{p}}}`: a precision of 0 to 17 digits")),
                    },
                    other => {
                        return Err(format!(
                            "`{{{other}}}`: a kernel's println! takes `{{}}`, `{{:?}}`, `{{:x}}`, \
                             `{{:X}}`, `{{:#x}}`, `{{:#X}}` and `{{:.N}}`, with positional \
                             arguments (printf has no other form that prints the same)"
                        ));
                    }
                };
                specs.push(spec);
                pieces.push(String::new());
            }
            '}' => return Err("a `}` without its `{` (write `}}`)".into()),
            '%' => pieces.last_mut().expect("non-empty").push_str("%%"),
            c => pieces.last_mut().expect("non-empty").push(c),
        }
    }
    Ok((pieces, specs))
}

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let Input { fmt, args } = match syn::parse2::<Input>(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let (pieces, specs) = match split(&fmt.value()) {
        Ok(p) => p,
        Err(e) => return syn::Error::new(fmt.span(), e).to_compile_error(),
    };
    if specs.len() != args.len() {
        return syn::Error::new(
            fmt.span(),
            format!(
                "{} placeholder(s) and {} argument(s)",
                specs.len(),
                args.len()
            ),
        )
        .to_compile_error();
    }
    // The host: the string as it is (plus the newline), the arguments
    // wrapped so they print as printf prints them.
    let host_fmt = LitStr::new(&format!("{}\n", fmt.value()), fmt.span());
    let names: Vec<syn::Ident> = (0..args.len())
        .map(|i| syn::Ident::new(&format!("__a{i}"), Span::mixed_site()))
        .collect();
    // The GPU: the C format string's pieces and each placeholder's form.
    let c_pieces: Vec<String> = pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i + 1 == pieces.len() {
                format!("{p}\n")
            } else {
                p.clone()
            }
        })
        .collect();
    let len: usize = c_pieces.iter().map(|p| p.len()).sum::<usize>() + 8 * specs.len() + 1;
    let forms: Vec<TokenStream> = specs
        .iter()
        .map(|s| match *s {
            Spec::Plain => quote!(::ptxlab_device::print::Form::Plain),
            Spec::Hex { upper, alt } => {
                quote!(::ptxlab_device::print::Form::Hex { upper: #upper, alt: #alt })
            }
            Spec::Precision(n) => quote!(::ptxlab_device::print::Form::Precision(#n)),
        })
        .collect();
    let tys: Vec<syn::Ident> = (0..args.len())
        .map(|i| syn::Ident::new(&format!("__T{i}"), Span::mixed_site()))
        .collect();
    let n = args.len();
    quote! {{
        #[cfg(not(target_arch = "nvptx64"))]
        {
            #( let #names = ::ptxlab_device::print::Host(&(#args)); )*
            ::ptxlab_device::print::host(::core::format_args!(#host_fmt #(, #names)*));
        }
        #[cfg(target_arch = "nvptx64")]
        {
            #[inline(always)]
            fn __print<#(#tys: ::ptxlab_device::print::PrintfArg),*>(#(#names: #tys),*) {
                let fmt: &'static [u8; #len] = const {
                    &::ptxlab_device::print::c_format::<#len>(
                        &[#(#c_pieces),*],
                        &[#((<#tys as ::ptxlab_device::print::PrintfArg>::KIND, #forms)),*],
                    )
                };
                let words: [u64; #n] = [#(::ptxlab_device::print::PrintfArg::bits(#names)),*];
                ::ptxlab_device::print::gpu(fmt, &words);
            }
            __print(#(#args),*);
        }
    }}
}
