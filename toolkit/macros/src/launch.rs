//! The expansions of `launch!` and `entry!`: a kernel call's path and
//! generic arguments name one built instance, whose PTX entry name the
//! hidden module `#[kernel]` generated beside the kernel provides.

use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, GenericArgument, PathArguments, Token};

struct LaunchInput {
    krate: TokenStream2,
    target: Expr,
    kernels: Expr,
    cfg: Expr,
    call: syn::ExprCall,
}

impl Parse for LaunchInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        // `$crate` arrives as one identifier-like token (or a path when the
        // caller passes one explicitly).
        let mut krate = TokenStream2::new();
        while !input.peek(Token![,]) {
            let tt: proc_macro2::TokenTree = input.parse()?;
            krate.extend(std::iter::once(tt));
        }
        input.parse::<Token![,]>()?;
        let target: Expr = input.parse()?;
        input.parse::<Token![,]>()?;
        let kernels: Expr = input.parse()?;
        input.parse::<Token![,]>()?;
        let cfg: Expr = input.parse()?;
        input.parse::<Token![,]>()?;
        let call: Expr = input.parse()?;
        let _ = input.parse::<Option<Token![,]>>()?;
        let Expr::Call(call) = call else {
            return Err(syn::Error::new_spanned(
                call,
                "expected a kernel call: `path::to::kernel(args..)` or `path::to::kernel::<T>(args..)`",
            ));
        };
        Ok(Self {
            krate,
            target,
            kernels,
            cfg,
            call,
        })
    }
}

pub(crate) fn launch_impl(input: TokenStream2) -> syn::Result<TokenStream2> {
    let LaunchInput {
        krate,
        target,
        kernels,
        cfg,
        call,
    } = syn::parse2(input)?;
    let Expr::Path(fpath) = &*call.func else {
        return Err(syn::Error::new_spanned(
            &call.func,
            "expected the kernel's path, e.g. `my_kernels::saxpy` or `my_kernels::axpy::<f32>`",
        ));
    };
    let fn_path = &fpath.path;
    let entry = instance_entry(fpath)?;
    let args: Vec<&Expr> = call.args.iter().collect();
    let n = args.len();
    if n > 16 {
        return Err(syn::Error::new_spanned(
            &call.args,
            "launch! takes at most 16 kernel arguments",
        ));
    }
    let bind = format_ident!("bind{}", n);
    Ok(quote! {{
        let __entry: &'static str = #entry;
        let __cfg: #krate::LaunchConfig = #cfg;
        let __call = #krate::launch::#bind(#fn_path, (#(#args,)*));
        #krate::launch::Launch::launch_call(#target, #kernels, __entry, &__cfg, __call)
    }})
}

/// The entry name of the instance `path` names, as an expression:
/// `a::b::kernel::<G>` -> `<a::b::kernel::Of<G> as a::b::kernel::Instance>::ENTRY`
/// (the hidden module `#[kernel]` generated beside the kernel; a compile
/// error names the built instances when there is no such instance).
pub(crate) fn instance_entry(path: &syn::ExprPath) -> syn::Result<TokenStream2> {
    if path.qself.is_some() {
        return Err(syn::Error::new_spanned(
            path,
            "a kernel path has no `<T as Trait>` part",
        ));
    }
    let mut module_path = path.path.clone();
    let last = module_path
        .segments
        .last_mut()
        .ok_or_else(|| syn::Error::new_spanned(path, "empty kernel path"))?;
    let gargs: Punctuated<GenericArgument, Token![,]> =
        match std::mem::replace(&mut last.arguments, PathArguments::None) {
            PathArguments::None => Punctuated::new(),
            PathArguments::AngleBracketed(a) => a.args,
            PathArguments::Parenthesized(p) => {
                return Err(syn::Error::new_spanned(
                    p,
                    "expected `::<...>` generic arguments",
                ));
            }
        };
    let of = if gargs.is_empty() {
        quote!(#module_path::Of)
    } else {
        quote!(#module_path::Of<#gargs>)
    };
    Ok(quote!(<#of as #module_path::Instance>::ENTRY))
}
