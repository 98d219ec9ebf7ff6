//! `#[kernel]`: one Rust function, two products.
//!
//! ```ignore
//! #[kernel(launch_bounds(256, 2), max_registers = 32)]
//! pub fn scale(x: DeviceSlice<f32>, y: DeviceSliceMut<f32>, a: f32) { ... }
//! ```
//!
//! * For `nvptx64-nvidia-cuda` it emits `#[no_mangle] pub unsafe extern
//!   "gpu-kernel" fn scale(...)`, an exported PTX `.entry`. Every
//!   `DeviceSlice<T>`/`DeviceSliceMut<T>` parameter becomes two PTX parameters
//!   (`*const T`, `usize`), because a pointer parameter of a kernel is known to
//!   point to global memory (LLVM emits `ld.global`), where a struct would not
//!   be. A `#[used]` static `__ptxlab_meta_<name>` carries the launch bounds
//!   and register cap; the builder reads it, removes it and writes the
//!   `.maxntid`, `.minnctapersm` and `.maxnreg` directives into the PTX.
//! * For the host it emits the same function as plain Rust, which the CPU
//!   simulator runs once per simulated thread, and registers a `KernelInfo` in
//!   `ptxlab_device::KERNELS` so the host and the tests can list every kernel.

mod print;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::{FnArg, GenericArgument, ItemFn, LitInt, Pat, PathArguments, Type, parse_macro_input};

#[derive(Default)]
struct Args {
    max_threads: u32,
    min_blocks: u32,
    max_registers: u32,
}

fn parse_args(attr: TokenStream) -> syn::Result<Args> {
    let mut out = Args::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("launch_bounds") {
            let content;
            syn::parenthesized!(content in meta.input);
            let nums = content.parse_terminated(LitInt::parse, syn::Token![,])?;
            let v: Vec<u32> = nums
                .iter()
                .map(|n| n.base10_parse::<u32>())
                .collect::<syn::Result<_>>()?;
            match v.as_slice() {
                [t] => out.max_threads = *t,
                [t, b] => {
                    out.max_threads = *t;
                    out.min_blocks = *b;
                }
                _ => {
                    return Err(meta
                        .error("launch_bounds takes (max_threads) or (max_threads, min_blocks)"));
                }
            }
            if out.max_threads == 0 || out.max_threads > 1024 {
                return Err(meta.error("launch_bounds max_threads must be in 1..=1024"));
            }
            Ok(())
        } else if meta.path.is_ident("max_registers") {
            let n: LitInt = meta.value()?.parse()?;
            out.max_registers = n.base10_parse()?;
            if !(16..=255).contains(&out.max_registers) {
                return Err(meta.error("max_registers must be in 16..=255"));
            }
            Ok(())
        } else {
            Err(meta.error(
                "expected `launch_bounds(max_threads[, min_blocks])` or `max_registers = N`",
            ))
        }
    });
    syn::parse::Parser::parse(parser, attr)?;
    Ok(out)
}

use syn::parse::Parse;

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

fn expand(args: Args, func: ItemFn) -> syn::Result<TokenStream2> {
    let sig = &func.sig;
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            "a #[kernel] cannot be generic: write a generic #[inline(always)] device function \
             and one #[kernel] per type that calls it",
        ));
    }
    if !matches!(sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new_spanned(
            &sig.output,
            "a #[kernel] returns nothing",
        ));
    }
    let name = &sig.ident;
    let attrs = &func.attrs;
    let vis = &func.vis;
    let body = &func.block;
    let mut gpu_params = Vec::new();
    let mut rebuild = Vec::new();
    for input in &sig.inputs {
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
        let ident = &pi.ident;
        let ty = &pt.ty;
        match slice_param(ty) {
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
            None => gpu_params.push(quote!(#pi: #ty)),
        }
    }
    let inputs = &sig.inputs;
    let meta = format_ident!("__ptxlab_meta_{}", name);
    let reg = format_ident!("__PTXLAB_KERNEL_{}", name.to_string().to_uppercase());
    let (mt, mb, mr) = (args.max_threads, args.min_blocks, args.max_registers);
    let name_str = name.to_string();
    Ok(quote! {
        #[cfg(target_arch = "nvptx64")]
        #(#attrs)*
        #[unsafe(no_mangle)]
        #vis unsafe extern "gpu-kernel" fn #name(#(#gpu_params),*) {
            #(#rebuild)*
            #body
        }

        #[cfg(target_arch = "nvptx64")]
        #[doc(hidden)]
        #[used]
        #[unsafe(no_mangle)]
        #[allow(non_upper_case_globals)]
        pub static #meta: [u32; 4] = [#mt, #mb, #mr, 0x5054_584c];

        #[cfg(not(target_arch = "nvptx64"))]
        #(#attrs)*
        #vis fn #name(#inputs) #body

        #[cfg(not(target_arch = "nvptx64"))]
        #[::ptxlab_device::__linkme::distributed_slice(::ptxlab_device::KERNELS)]
        #[linkme(crate = ::ptxlab_device::__linkme)]
        #[doc(hidden)]
        static #reg: ::ptxlab_device::KernelInfo = ::ptxlab_device::KernelInfo {
            name: #name_str,
            module: ::core::module_path!(),
            max_threads: #mt,
            min_blocks: #mb,
            max_registers: #mr,
        };
    })
}

/// `ptxlab_device::println!("x = {}, bits {:#x}", x, x.to_bits())`: one
/// line of kernel debug output, printed by `vprintf` on the GPU and to
/// standard output in the simulator, the same way on both (see
/// `ptxlab_device::print` for the accepted placeholders).
#[proc_macro]
pub fn println(input: TokenStream) -> TokenStream {
    print::expand(input.into()).into()
}
