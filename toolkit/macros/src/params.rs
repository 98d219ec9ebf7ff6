//! `#[derive(KernelParams)]`: a `#[repr(C)]` struct of kernel-parameter
//! fields, or a field-less `#[repr(u32)]` enum, as a by-value kernel
//! parameter (see `ptxlab_device::param`).

use proc_macro2::TokenStream as TokenStream2;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields};

/// The derive's expansion.
pub fn expand(input: DeriveInput) -> syn::Result<TokenStream2> {
    let reprs = repr_words(&input)?;
    match &input.data {
        Data::Struct(s) => expand_struct(&input, &s.fields, &reprs),
        Data::Enum(e) => expand_enum(&input, e, &reprs),
        Data::Union(_) => Err(syn::Error::new_spanned(
            &input.ident,
            "KernelParams is for a `#[repr(C)]` struct or a field-less `#[repr(u32)]` enum, \
             not a union",
        )),
    }
}

/// The words inside the item's `#[repr(...)]` attributes.
fn repr_words(input: &DeriveInput) -> syn::Result<Vec<String>> {
    let mut out = Vec::new();
    for a in &input.attrs {
        if a.path().is_ident("repr") {
            a.parse_nested_meta(|m| {
                if let Some(i) = m.path.get_ident() {
                    out.push(i.to_string());
                }
                if m.input.peek(syn::token::Paren) {
                    let content;
                    syn::parenthesized!(content in m.input);
                    let _: TokenStream2 = content.parse()?;
                }
                Ok(())
            })?;
        }
    }
    Ok(out)
}

fn expand_struct(
    input: &DeriveInput,
    fields: &Fields,
    reprs: &[String],
) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    if !reprs.iter().any(|r| r == "C") || reprs.iter().any(|r| r == "packed") {
        return Err(syn::Error::new_spanned(
            name,
            "a struct kernel parameter needs `#[repr(C)]` (not packed), so the host and the \
             device lay it out the same way",
        ));
    }
    let Fields::Named(named) = fields else {
        return Err(syn::Error::new_spanned(
            name,
            "a struct kernel parameter has named fields",
        ));
    };
    if named.named.is_empty() {
        return Err(syn::Error::new_spanned(
            name,
            "a struct kernel parameter has at least one field",
        ));
    }
    let (impl_g, ty_g, where_g) = input.generics.split_for_impl();
    let mut where_clause = where_g.cloned().unwrap_or_else(|| syn::parse_quote!(where));
    let pf = quote!(::ptxlab_device::param::ParamField);
    let mut checks = Vec::new();
    let mut writes = Vec::new();
    for (i, f) in named.named.iter().enumerate() {
        let fname = f.ident.as_ref().expect("named fields");
        let ty = &f.ty;
        where_clause
            .predicates
            .push(syn::parse_quote!(#ty: ::ptxlab_device::param::ParamField));
        let off = format_ident!("__off{}", i);
        let msg = format!(
            "field `{fname}` of `{name}` is not at its canonical #[repr(C)] offset on this target \
             (host and device layouts would differ)"
        );
        checks.push(quote! {
            let #off = __l.field(<#ty as #pf>::SIZE, <#ty as #pf>::ALIGN);
            assert!(
                ::core::mem::size_of::<#ty>() == <#ty as #pf>::SIZE
                    && ::core::mem::align_of::<#ty>() == <#ty as #pf>::ALIGN,
                #msg
            );
            assert!(::core::mem::offset_of!(Self, #fname) == #off, #msg);
        });
        writes.push(quote! {
            <#ty as #pf>::write(&self.#fname, &mut out[Self::__PTXLAB_OFFSETS[#i]..]);
        });
    }
    let n = named.named.len();
    let offsets: Vec<TokenStream2> = named
        .named
        .iter()
        .map(|f| {
            let fname = f.ident.as_ref().expect("named fields");
            quote!(::core::mem::offset_of!(Self, #fname))
        })
        .collect();
    let size_msg = format!(
        "`{name}`: its size or alignment on this target is not the canonical #[repr(C)] one, or it \
         is over PARAM_BYTES_MAX bytes"
    );
    Ok(quote! {
        impl #impl_g #name #ty_g #where_clause {
            #[doc(hidden)]
            const __PTXLAB_OFFSETS: [usize; #n] = [#(#offsets),*];
            #[doc(hidden)]
            const __PTXLAB_LAYOUT: ::ptxlab_device::param::Layout = {
                let mut __l = ::ptxlab_device::param::Layout::new();
                #(#checks)*
                assert!(
                    __l.size() == ::core::mem::size_of::<Self>()
                        && __l.align() == ::core::mem::align_of::<Self>()
                        && __l.size() <= ::ptxlab_device::param::PARAM_BYTES_MAX,
                    #size_msg
                );
                __l
            };
        }
        // SAFETY: the size, alignment and every field offset are asserted
        // (in `__PTXLAB_LAYOUT`, evaluated by `SIZE`) to be the canonical
        // #[repr(C)] layout computed from the fields' own `ParamField`
        // constants, on whichever target this is compiled for; `write`
        // stores each field's device bytes at its offset.
        unsafe impl #impl_g ::ptxlab_device::param::ParamField for #name #ty_g #where_clause {
            const SIZE: usize = Self::__PTXLAB_LAYOUT.size();
            const ALIGN: usize = Self::__PTXLAB_LAYOUT.align();
            #[inline]
            fn write(&self, out: &mut [u8]) {
                #(#writes)*
            }
        }
        impl #impl_g ::ptxlab_device::mem::KernelScalar for #name #ty_g #where_clause {
            fn scalar_value(self) -> ::ptxlab_device::mem::ScalarValue {
                let mut b = ::ptxlab_device::param::ParamBytes::zeroed(
                    <Self as #pf>::SIZE,
                    <Self as #pf>::ALIGN,
                );
                <Self as #pf>::write(&self, &mut b.bytes);
                ::ptxlab_device::mem::ScalarValue::Bytes(b)
            }
            const LAYOUT_CHECKED: () = {
                let _ = <Self as #pf>::SIZE;
            };
        }
    })
}

fn expand_enum(
    input: &DeriveInput,
    e: &syn::DataEnum,
    reprs: &[String],
) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "an enum kernel parameter has no generic parameters",
        ));
    }
    if !reprs.iter().any(|r| r == "u32") {
        return Err(syn::Error::new_spanned(
            name,
            "an enum kernel parameter needs `#[repr(u32)]` (it travels as a `.u32`)",
        ));
    }
    if let Some(v) = e.variants.iter().find(|v| !v.fields.is_empty()) {
        return Err(syn::Error::new_spanned(
            &v.ident,
            "an enum kernel parameter is field-less: this variant carries data",
        ));
    }
    Ok(quote! {
        // SAFETY: a field-less #[repr(u32)] enum is four bytes aligned to
        // four on every target; `write` stores its discriminant, which is
        // the value of one of its variants.
        unsafe impl ::ptxlab_device::param::ParamField for #name {
            const SIZE: usize = 4;
            const ALIGN: usize = 4;
            #[inline]
            fn write(&self, out: &mut [u8]) {
                out[..4].copy_from_slice(&(*self as u32).to_le_bytes());
            }
        }
        impl ::ptxlab_device::mem::KernelScalar for #name {
            #[inline]
            fn scalar_value(self) -> ::ptxlab_device::mem::ScalarValue {
                ::ptxlab_device::mem::ScalarValue::U32(self as u32)
            }
        }
    })
}
