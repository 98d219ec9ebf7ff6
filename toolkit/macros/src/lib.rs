//! `#[kernel]`: one Rust function, two products; and the expansion of
//! `ptxlab_runtime::launch!`.
//!
//! ```ignore
//! #[kernel(launch_bounds(256, 2), max_registers = 32)]
//! pub fn scale(x: DeviceSlice<f32>, mut y: DeviceSliceMut<f32>, a: f32) { ... }
//!
//! #[kernel(launch_bounds(256), instances(f32, f64))]
//! pub fn axpy<T: Real>(a: T, x: DeviceSlice<T>, mut y: DeviceSliceMut<T>) { ... }
//!
//! #[kernel(launch_bounds(128), instances(<f32, 4>, <f64, 2> => (max_registers = 64)))]
//! pub fn row_sums<T: Real, const W: usize>(x: DeviceSlice<T>, out: DeviceSliceMut<T>, cols: u32) { ... }
//! ```
//!
//! * For `nvptx64-nvidia-cuda` each instance becomes `#[no_mangle] pub unsafe
//!   extern "gpu-kernel" fn <entry>(...)`, an exported PTX `.entry` named
//!   after the kernel and its generic arguments (`axpy_f32`, `row_sums_f64_2`;
//!   a `bool` const parameter adds its own name when `true` and nothing when
//!   `false`; `name = "..."` overrides). Every `DeviceSlice<T>` /
//!   `DeviceSliceMut<T>` parameter becomes two PTX parameters (`*const T`,
//!   `usize`), because a pointer parameter of a kernel is known to point to
//!   global memory (LLVM emits `ld.global`), where a struct would not be. A
//!   `#[used]` static `__ptxlab_meta_<entry>` carries the launch bounds and
//!   register cap, and `__ptxlab_path_<entry>` the Rust module path; the
//!   builder reads them, removes them, writes the `.maxntid`,
//!   `.minnctapersm` and `.maxnreg` directives into the PTX and groups the
//!   entries of each top-level module into a module of their own. A
//!   generic kernel's body is one `#[inline(always)]` generic function that
//!   every entry calls, so each entry compiles exactly as a hand-written twin
//!   would.
//! * For the host it emits the same function as plain Rust, which the CPU
//!   simulator runs once per simulated thread; a hidden module of the same
//!   name that maps each built instance to its entry name (asking for an
//!   instance that was not built is a compile error naming the ones that
//!   were; a kernel with one type parameter maps them through `Built`, on the
//!   type, with the const parameters as `Built`'s own: `T: axpy::Built`,
//!   `T: rotate::Built<true>`); and one `KernelInfo` per instance in
//!   `ptxlab_device::REGISTRY`, so the host and the tests can list every
//!   entry.

mod launch;
mod params;
mod print;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::visit_mut::VisitMut;
use syn::{
    Expr, FnArg, GenericArgument, GenericParam, Ident, ItemFn, Lit, LitInt, LitStr, Pat,
    PathArguments, Token, Type, parse_macro_input,
};

/// Launch bounds and register cap of one entry.
#[derive(Default, Clone, Copy)]
struct Bounds {
    max_threads: u32,
    min_blocks: u32,
    max_registers: u32,
}

/// One instance of a generic kernel: its generic arguments and, optionally,
/// bounds and an entry name of its own.
struct Instance {
    args: Vec<GenericArgument>,
    bounds: Option<Bounds>,
    name: Option<LitStr>,
    span: Span,
}

#[derive(Default)]
struct Args {
    bounds: Bounds,
    instances: Option<Vec<Instance>>,
}

/// Parses one `launch_bounds(..)` / `max_registers = N` / `name = ".."` item
/// into `b`/`name`; `allow_name` says whether `name` is allowed here.
fn parse_bound_item(
    meta: &syn::meta::ParseNestedMeta,
    b: &mut Bounds,
    name: &mut Option<LitStr>,
    allow_name: bool,
) -> syn::Result<bool> {
    if meta.path.is_ident("launch_bounds") {
        let content;
        syn::parenthesized!(content in meta.input);
        let nums = content.parse_terminated(LitInt::parse, Token![,])?;
        let v: Vec<u32> = nums
            .iter()
            .map(|n| n.base10_parse::<u32>())
            .collect::<syn::Result<_>>()?;
        match v.as_slice() {
            [t] => {
                b.max_threads = *t;
                b.min_blocks = 0;
            }
            [t, m] => {
                b.max_threads = *t;
                b.min_blocks = *m;
            }
            _ => {
                return Err(
                    meta.error("launch_bounds takes (max_threads) or (max_threads, min_blocks)")
                );
            }
        }
        if b.max_threads == 0 || b.max_threads > 1024 {
            return Err(meta.error("launch_bounds max_threads must be in 1..=1024"));
        }
        Ok(true)
    } else if meta.path.is_ident("max_registers") {
        let n: LitInt = meta.value()?.parse()?;
        b.max_registers = n.base10_parse()?;
        if !(16..=255).contains(&b.max_registers) {
            return Err(meta.error("max_registers must be in 16..=255"));
        }
        Ok(true)
    } else if allow_name && meta.path.is_ident("name") {
        let s: LitStr = meta.value()?.parse()?;
        if s.value().is_empty()
            || !s
                .value()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(meta.error("an entry name is letters, digits and `_`"));
        }
        *name = Some(s);
        Ok(true)
    } else {
        Ok(false)
    }
}

/// `f32`, `<f32, 4>`, either followed by `=> (launch_bounds(..), max_registers = N, name = "..")`.
fn parse_instance(input: ParseStream, defaults: Bounds) -> syn::Result<Instance> {
    let span = input.span();
    let args = if input.peek(Token![<]) {
        input.parse::<Token![<]>()?;
        let mut v = Vec::new();
        loop {
            if input.peek(Token![>]) {
                break;
            }
            v.push(input.parse::<GenericArgument>()?);
            if input.peek(Token![,]) {
                input.parse::<Token![,]>()?;
            } else {
                break;
            }
        }
        input.parse::<Token![>]>()?;
        v
    } else {
        vec![GenericArgument::Type(input.parse::<Type>()?)]
    };
    let mut bounds = None;
    let mut name = None;
    if input.peek(Token![=>]) {
        input.parse::<Token![=>]>()?;
        let content;
        syn::parenthesized!(content in input);
        let mut b = defaults;
        let parser = syn::meta::parser(|meta| {
            if parse_bound_item(&meta, &mut b, &mut name, true)? {
                Ok(())
            } else {
                Err(meta.error(
                    "an instance takes `launch_bounds(max_threads[, min_blocks])`, \
                     `max_registers = N` or `name = \"entry\"`",
                ))
            }
        });
        syn::parse::Parser::parse2(parser, content.parse::<TokenStream2>()?)?;
        bounds = Some(b);
    }
    Ok(Instance {
        args,
        bounds,
        name,
        span,
    })
}

fn parse_args(attr: TokenStream) -> syn::Result<Args> {
    let mut out = Args::default();
    let mut instance_tokens: Option<TokenStream2> = None;
    let parser = syn::meta::parser(|meta| {
        let mut unused = None;
        if parse_bound_item(&meta, &mut out.bounds, &mut unused, false)? {
            Ok(())
        } else if meta.path.is_ident("instances") {
            let content;
            syn::parenthesized!(content in meta.input);
            instance_tokens = Some(content.parse()?);
            Ok(())
        } else {
            Err(meta.error(
                "expected `launch_bounds(max_threads[, min_blocks])`, `max_registers = N` \
                 or `instances(...)`",
            ))
        }
    });
    syn::parse::Parser::parse(parser, attr)?;
    if let Some(tokens) = instance_tokens {
        // Instances are parsed after the kernel-wide bounds, which they inherit.
        let defaults = out.bounds;
        let list = syn::parse::Parser::parse2(
            |input: ParseStream| {
                let mut v = Vec::new();
                while !input.is_empty() {
                    v.push(parse_instance(input, defaults)?);
                    if input.is_empty() {
                        break;
                    }
                    input.parse::<Token![,]>()?;
                }
                Ok(v)
            },
            tokens,
        )?;
        out.instances = Some(list);
    }
    Ok(out)
}

/// `Some((is_mut, elem))` for `DeviceSlice<T>` / `DeviceSliceMut<T>` parameters.
fn slice_param(ty: &Type) -> Option<(bool, Type)> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    let is_mut = match seg.ident.to_string().as_str() {
        "DeviceSlice" => false,
        "DeviceSliceMut" => true,
        _ => return None,
    };
    let PathArguments::AngleBracketed(a) = &seg.arguments else {
        return None;
    };
    let elem = a.args.iter().rev().find_map(|g| match g {
        GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })?;
    Some((is_mut, elem))
}

/// Marks a function as a GPU kernel; see the crate docs.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = match parse_args(attr) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error().into(),
    };
    let func = parse_macro_input!(item as ItemFn);
    match expand(args, func) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// A generic parameter of the kernel: a type or a const.
enum Param {
    Type(Ident),
    Const(Ident, Box<Type>),
}

impl Param {
    fn ident(&self) -> &Ident {
        match self {
            Param::Type(i) | Param::Const(i, _) => i,
        }
    }
}

/// Replaces the kernel's generic parameters by one instance's arguments in
/// the parameter types of an entry.
struct Substitute<'a> {
    params: &'a [Param],
    args: &'a [GenericArgument],
}

impl Substitute<'_> {
    fn find(&self, path: &syn::Path) -> Option<&GenericArgument> {
        let id = path.get_ident()?;
        let i = self.params.iter().position(|p| p.ident() == id)?;
        self.args.get(i)
    }
}

impl VisitMut for Substitute<'_> {
    fn visit_type_mut(&mut self, t: &mut Type) {
        if let Type::Path(p) = t
            && p.qself.is_none()
            && let Some(GenericArgument::Type(new)) = self.find(&p.path)
        {
            *t = new.clone();
            return;
        }
        syn::visit_mut::visit_type_mut(self, t);
    }
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Path(p) = e
            && p.qself.is_none()
            && let Some(arg) = self.find(&p.path)
        {
            match arg {
                GenericArgument::Const(c) => *e = c.clone(),
                GenericArgument::Type(Type::Path(tp)) => {
                    *e = Expr::Path(syn::ExprPath {
                        attrs: Vec::new(),
                        qself: None,
                        path: tp.path.clone(),
                    })
                }
                _ => {}
            }
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// The part of an entry name one generic argument contributes (`None`: none).
fn name_part(param: &Param, arg: &GenericArgument, span: Span) -> syn::Result<Option<String>> {
    let err = || {
        syn::Error::new(
            span,
            "cannot derive an entry name from this generic argument: give the instance a name, \
             e.g. `<..> => (name = \"my_kernel_variant\")`",
        )
    };
    let lit_part = |lit: &Lit| -> syn::Result<Option<String>> {
        match lit {
            Lit::Int(i) => Ok(Some(i.base10_digits().to_string())),
            Lit::Bool(b) => Ok(b.value.then(|| param.ident().to_string().to_lowercase())),
            _ => Err(err()),
        }
    };
    match (param, arg) {
        (Param::Type(_), GenericArgument::Type(Type::Path(p))) => {
            let seg = p.path.segments.last().ok_or_else(err)?;
            let mut s = seg.ident.to_string().to_lowercase();
            if let PathArguments::AngleBracketed(a) = &seg.arguments {
                for g in &a.args {
                    match g {
                        GenericArgument::Type(Type::Path(inner)) => {
                            let last = inner.path.segments.last().ok_or_else(err)?;
                            s.push('_');
                            s.push_str(&last.ident.to_string().to_lowercase());
                        }
                        GenericArgument::Const(Expr::Lit(l)) => {
                            if let Some(p) = lit_part(&l.lit)? {
                                s.push('_');
                                s.push_str(&p);
                            }
                        }
                        _ => return Err(err()),
                    }
                }
            }
            Ok(Some(s))
        }
        (Param::Const(..), GenericArgument::Const(Expr::Lit(l))) => lit_part(&l.lit),
        (Param::Const(..), GenericArgument::Const(Expr::Unary(u)))
            if matches!(u.op, syn::UnOp::Neg(_)) =>
        {
            match &*u.expr {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Int(i), ..
                }) => Ok(Some(format!("m{}", i.base10_digits()))),
                _ => Err(err()),
            }
        }
        // A named constant (`<f32, BLOCK>`): its name, lower case.
        (Param::Const(..), GenericArgument::Type(Type::Path(p))) => match p.path.get_ident() {
            Some(i) => Ok(Some(i.to_string().to_lowercase())),
            None => Err(err()),
        },
        (Param::Const(..), GenericArgument::Const(Expr::Path(p))) => match p.path.get_ident() {
            Some(i) => Ok(Some(i.to_string().to_lowercase())),
            None => Err(err()),
        },
        (Param::Type(_), _) => Err(syn::Error::new(
            span,
            format!(
                "`{}` is a type parameter: this instance must give a type here",
                param.ident()
            ),
        )),
        _ => Err(err()),
    }
}

/// One entry to emit: its name, bounds and (for a generic kernel) the
/// generic arguments.
struct EntrySpec {
    name: String,
    bounds: Bounds,
    args: Vec<GenericArgument>,
}

fn entries(
    kernel: &Ident,
    params: &[Param],
    args: &Args,
    generics: &syn::Generics,
) -> syn::Result<Vec<EntrySpec>> {
    let Some(instances) = &args.instances else {
        if !params.is_empty() {
            return Err(syn::Error::new_spanned(
                generics,
                "a generic #[kernel] names the instances to build: add `instances(f32, f64)` \
                 (types), or `instances(<f32, 4>, <f64, 2>)` (several parameters), to its \
                 attribute",
            ));
        }
        return Ok(vec![EntrySpec {
            name: kernel.to_string(),
            bounds: args.bounds,
            args: Vec::new(),
        }]);
    };
    if params.is_empty() {
        return Err(syn::Error::new(
            kernel.span(),
            "`instances(...)` is for generic kernels; this kernel has no type or const parameters",
        ));
    }
    if instances.is_empty() {
        return Err(syn::Error::new(
            kernel.span(),
            "`instances()` is empty: name at least one instance to build",
        ));
    }
    let mut out: Vec<EntrySpec> = Vec::new();
    for inst in instances {
        if inst.args.len() != params.len() {
            return Err(syn::Error::new(
                inst.span,
                format!(
                    "this instance has {} generic argument(s); `{}` takes {} ({})",
                    inst.args.len(),
                    kernel,
                    params.len(),
                    params
                        .iter()
                        .map(|p| p.ident().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        let name = match &inst.name {
            Some(n) => n.value(),
            None => {
                let mut s = kernel.to_string();
                for (p, a) in params.iter().zip(&inst.args) {
                    if let Some(part) = name_part(p, a, inst.span)? {
                        s.push('_');
                        s.push_str(&part);
                    }
                }
                s
            }
        };
        if out.iter().any(|e| e.name == name) {
            return Err(syn::Error::new(
                inst.span,
                format!(
                    "two instances would both be the entry `{name}`: give one a `name = \"..\"`"
                ),
            ));
        }
        out.push(EntrySpec {
            name,
            bounds: inst.bounds.unwrap_or(args.bounds),
            args: inst.args.clone(),
        });
    }
    Ok(out)
}

fn expand(args: Args, func: ItemFn) -> syn::Result<TokenStream2> {
    let sig = &func.sig;
    if !matches!(sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new_spanned(
            &sig.output,
            "a #[kernel] returns nothing",
        ));
    }
    let mut params = Vec::new();
    for g in &sig.generics.params {
        match g {
            GenericParam::Type(t) => params.push(Param::Type(t.ident.clone())),
            GenericParam::Const(c) => {
                params.push(Param::Const(c.ident.clone(), Box::new(c.ty.clone())))
            }
            GenericParam::Lifetime(l) => {
                return Err(syn::Error::new_spanned(
                    l,
                    "a #[kernel] takes no lifetime parameters: leave the lifetimes of \
                     `DeviceSlice`/`DeviceSliceMut` elided",
                ));
            }
        }
    }
    let name = &sig.ident;
    let attrs = &func.attrs;
    let vis = &func.vis;
    let body = &func.block;
    let inputs = &sig.inputs;
    let generics = &sig.generics;
    let where_clause = &sig.generics.where_clause;
    let specs = entries(name, &params, &args, generics)?;

    // The parameters, checked once.
    let mut arg_names = Vec::new();
    for input in inputs {
        let FnArg::Typed(pt) = input else {
            return Err(syn::Error::new_spanned(
                input,
                "a #[kernel] takes no `self`",
            ));
        };
        let Pat::Ident(pi) = &*pt.pat else {
            return Err(syn::Error::new_spanned(
                &pt.pat,
                "kernel parameters must be plain names",
            ));
        };
        arg_names.push(pi.ident.clone());
    }

    let generic = !params.is_empty();
    let mut out = TokenStream2::new();

    // GPU: one exported entry per instance.
    for spec in &specs {
        let entry = format_ident!("{}", spec.name);
        let mut gpu_params = Vec::new();
        let mut rebuild = Vec::new();
        for input in inputs {
            let FnArg::Typed(pt) = input else {
                unreachable!("checked above")
            };
            let Pat::Ident(pi) = &*pt.pat else {
                unreachable!("checked above")
            };
            let ident = &pi.ident;
            let mut ty = (*pt.ty).clone();
            if generic {
                Substitute {
                    params: &params,
                    args: &spec.args,
                }
                .visit_type_mut(&mut ty);
            }
            match slice_param(&ty) {
                Some((is_mut, elem)) => {
                    let p = format_ident!("{}__ptr", ident);
                    let l = format_ident!("{}__len", ident);
                    if is_mut {
                        gpu_params.push(quote!(#p: *mut #elem, #l: usize));
                    } else {
                        gpu_params.push(quote!(#p: *const #elem, #l: usize));
                    }
                    rebuild.push(quote! {
                        #[allow(clippy::undocumented_unsafe_blocks)]
                        // SAFETY: the host launcher passes the pointer and length of a live
                        // device allocation of at least `len` elements.
                        let #pi = unsafe { <#ty>::from_raw_parts(#p, #l) };
                    });
                }
                None => {
                    gpu_params.push(quote!(#pi: #ty));
                    // A struct parameter's layout assertions run in every
                    // build of the entry (see `ptxlab_device::param`).
                    rebuild.push(quote! {
                        #[allow(clippy::let_unit_value)]
                        let () = <#ty as ::ptxlab_device::mem::KernelScalar>::LAYOUT_CHECKED;
                    });
                }
            }
        }
        let meta = format_ident!("__ptxlab_meta_{}", spec.name);
        let Bounds {
            max_threads: mt,
            min_blocks: mb,
            max_registers: mr,
        } = spec.bounds;
        if generic {
            let gargs = &spec.args;
            out.extend(quote! {
                #[cfg(target_arch = "nvptx64")]
                #[doc(hidden)]
                #[unsafe(no_mangle)]
                pub unsafe extern "gpu-kernel" fn #entry(#(#gpu_params),*) {
                    #(#rebuild)*
                    #name::<#(#gargs),*>(#(#arg_names),*)
                }
            });
        } else {
            out.extend(quote! {
                #[cfg(target_arch = "nvptx64")]
                #(#attrs)*
                #[unsafe(no_mangle)]
                #vis unsafe extern "gpu-kernel" fn #entry(#(#gpu_params),*) {
                    #(#rebuild)*
                    #body
                }
            });
        }
        // The Rust module the entry comes from, as bytes: the builder groups
        // the entries of one top-level module into one loadable module.
        let path = format_ident!("__ptxlab_path_{}", spec.name);
        out.extend(quote! {
            #[cfg(target_arch = "nvptx64")]
            #[doc(hidden)]
            #[used]
            #[unsafe(no_mangle)]
            #[allow(non_upper_case_globals)]
            pub static #meta: [u32; 4] = [#mt, #mb, #mr, 0x5054_584c];

            #[cfg(target_arch = "nvptx64")]
            #[doc(hidden)]
            #[used]
            #[unsafe(no_mangle)]
            #[allow(non_upper_case_globals)]
            pub static #path: [u8; ::core::module_path!().len()] = {
                let s = ::core::module_path!().as_bytes();
                let mut a = [0u8; ::core::module_path!().len()];
                let mut i = 0;
                while i < s.len() {
                    a[i] = s[i];
                    i += 1;
                }
                a
            };
        });
    }
    if generic {
        // The body every GPU entry calls, inlined into each.
        out.extend(quote! {
            #[cfg(target_arch = "nvptx64")]
            #(#attrs)*
            #[inline(always)]
            #vis fn #name #generics (#inputs) #where_clause #body
        });
    }

    // Host: the function itself (the simulator runs it), the instance map
    // and one registration per entry.
    out.extend(quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        #(#attrs)*
        #vis fn #name #generics (#inputs) #where_clause #body
    });
    let type_params: Vec<&Ident> = params
        .iter()
        .filter_map(|p| match p {
            Param::Type(i) => Some(i),
            Param::Const(..) => None,
        })
        .collect();
    let struct_params: Vec<TokenStream2> = params
        .iter()
        .map(|p| match p {
            Param::Type(i) => quote!(#i),
            Param::Const(i, t) => quote!(const #i: #t),
        })
        .collect();
    let listed: Vec<String> = specs
        .iter()
        .map(|s| {
            if generic {
                let a = &s.args;
                format!("{name}::<{}>", quote!(#(#a),*))
            } else {
                name.to_string()
            }
        })
        .collect();
    let note = format!(
        "the instances built are: {}; add the one you need to `instances(...)` in `{name}`'s \
         #[kernel] attribute",
        listed.join(", ")
    );
    // A kernel with one type parameter (the common case: `instances(f32,
    // f64)`) maps its instances through `Built`, implemented on the type
    // itself, so host code generic over `T` can require `T: kernel::Built`
    // (or a trait of its own with such supertraits) and launch
    // `kernel::<T>`. Its const parameters, if any, become `Built`'s
    // (`T: kernel::Built<true>` for `kernel::<T, true>`); other kernels map
    // `Of<args..>` directly.
    let by_type = params
        .iter()
        .filter(|p| matches!(p, Param::Type(_)))
        .count()
        == 1;
    let consts: Vec<(&Ident, &Type)> = params
        .iter()
        .filter_map(|p| match p {
            Param::Const(i, t) => Some((i, &**t)),
            Param::Type(_) => None,
        })
        .collect();
    let const_idents: Vec<&Ident> = consts.iter().map(|(i, _)| *i).collect();
    let const_decls: Vec<TokenStream2> = consts.iter().map(|(i, t)| quote!(const #i: #t)).collect();
    let message = if by_type && consts.is_empty() {
        format!("kernel `{name}` was not built for `{{Self}}`")
    } else if by_type {
        let with: Vec<String> = const_idents
            .iter()
            .map(|c| format!("{c} = {{{c}}}"))
            .collect();
        format!(
            "kernel `{name}` was not built for `{{Self}}` with {}",
            with.join(", ")
        )
    } else {
        format!("kernel `{name}` was not built for these generic arguments (`{{Self}}`)")
    };
    let impls: Vec<TokenStream2> = specs
        .iter()
        .map(|s| {
            let ename = &s.name;
            let a = &s.args;
            if by_type {
                // The type argument, and the const ones (braced: any const
                // expression is a valid `Built<..>` argument then).
                let mut ty = None;
                let mut cargs = Vec::new();
                for (p, g) in params.iter().zip(a) {
                    match p {
                        Param::Type(_) => ty = Some(g),
                        Param::Const(..) => cargs.push(quote!({ #g })),
                    }
                }
                let generics = if cargs.is_empty() {
                    TokenStream2::new()
                } else {
                    quote!(<#(#cargs),*>)
                };
                quote! {
                    impl Built #generics for #ty {
                        const ENTRY: &'static str = #ename;
                    }
                }
            } else if generic {
                quote! {
                    impl Instance for Of<#(#a),*> {
                        const ENTRY: &'static str = #ename;
                    }
                }
            } else {
                quote! {
                    impl Instance for Of {
                        const ENTRY: &'static str = #ename;
                    }
                }
            }
        })
        .collect();
    let built = if by_type {
        let t = type_params[0];
        let of_args: Vec<&Ident> = params.iter().map(Param::ident).collect();
        let (decl, args) = if consts.is_empty() {
            (TokenStream2::new(), TokenStream2::new())
        } else {
            (quote!(<#(#const_decls),*>), quote!(<#(#const_idents),*>))
        };
        quote! {
            /// The instances of this kernel, by their type argument (and
            /// const arguments): `T: Built` lets generic host code launch
            /// `kernel::<T>`.
            #[diagnostic::on_unimplemented(message = #message, label = "no such instance", note = #note)]
            pub trait Built #decl {
                /// The `.entry` name in the PTX.
                const ENTRY: &'static str;
            }
            impl<#(#struct_params),*> Instance for Of<#(#of_args),*>
            where
                #t: Built #args,
            {
                const ENTRY: &'static str = <#t as Built #args>::ENTRY;
            }
        }
    } else {
        TokenStream2::new()
    };
    let struct_def = if generic {
        quote! {
            pub struct Of<#(#struct_params),*>(::core::marker::PhantomData<(#(#type_params,)*)>);
        }
    } else {
        quote! { pub struct Of; }
    };
    out.extend(quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code, unused_imports)]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;
            /// The PTX entry of one built instance (see `#[kernel]`).
            #[diagnostic::on_unimplemented(message = #message, label = "no such instance", note = #note)]
            pub trait Instance {
                /// The `.entry` name in the PTX.
                const ENTRY: &'static str;
            }
            /// One instance of the kernel, by its generic arguments.
            #struct_def
            #built
            #(#impls)*
        }
    });
    for s in &specs {
        let reg = format_ident!("__PTXLAB_KERNEL_{}", s.name.to_uppercase());
        let ename = &s.name;
        let Bounds {
            max_threads: mt,
            min_blocks: mb,
            max_registers: mr,
        } = s.bounds;
        out.extend(quote! {
            #[cfg(not(target_arch = "nvptx64"))]
            #[::ptxlab_device::__linkme::distributed_slice(::ptxlab_device::REGISTRY)]
            #[linkme(crate = ::ptxlab_device::__linkme)]
            #[doc(hidden)]
            static #reg: ::ptxlab_device::KernelInfo = ::ptxlab_device::KernelInfo {
                name: #ename,
                module: ::core::module_path!(),
                max_threads: #mt,
                min_blocks: #mb,
                max_registers: #mr,
            };
        });
    }
    Ok(out)
}

/// `launch!`'s expansion: `__launch!($crate, target, kernels, cfg, path::to::kernel::<G..>(args..))`.
///
/// The kernel's generic arguments pick the instance, whose entry name comes
/// from the hidden module `#[kernel]` generated beside the kernel (a compile
/// error names the built instances when there is no such instance). The
/// arguments are evaluated once and matched to the kernel's parameter types
/// through `KernelArg`, so literals take the parameter's type.
#[doc(hidden)]
#[proc_macro]
pub fn __launch(input: TokenStream) -> TokenStream {
    match launch::launch_impl(input.into()) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `entry!`'s expansion: `__entry!(path::to::kernel::<G..>)` is the name of
/// that instance's PTX entry, a `&'static str` checked at compile time.
#[doc(hidden)]
#[proc_macro]
pub fn __entry(input: TokenStream) -> TokenStream {
    let path = parse_macro_input!(input as syn::ExprPath);
    match launch::instance_entry(&path) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `ptxlab_device::println!("x = {}, bits {:#x}", x, x.to_bits())`: one
/// line of kernel debug output, printed by `vprintf` on the GPU and to
/// standard output in the simulator, the same way on both (see
/// `ptxlab_device::print` for the accepted placeholders).
#[proc_macro]
pub fn println(input: TokenStream) -> TokenStream {
    print::expand(input.into()).into()
}

/// `#[derive(KernelParams)]`: makes a `#[repr(C)]` struct whose fields are
/// kernel-parameter types (scalars, `bool`, such enums and structs), or a
/// field-less `#[repr(u32)]` enum, a by-value kernel parameter. The struct's
/// size, alignment and field offsets are asserted at compile time to be the
/// canonical `#[repr(C)]` ones on every target it is built for (see
/// `ptxlab_device::param`).
#[proc_macro_derive(KernelParams)]
pub fn derive_kernel_params(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as syn::DeriveInput);
    match params::expand(input) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}
