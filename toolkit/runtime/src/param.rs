//! [`Param`]: a kernel parameter as the driver receives it, the one type
//! that the launch paths (a device, a stream, a graph capture) and the
//! GPU's argument checks share.

use crate::module::ParamKind;
use ptxlab_device::param::ParamBytes;

/// A raw kernel parameter for the GPU, as the driver receives it.
// A struct's bytes travel inline: the value lives for one launch, on the
// stack, and the device crate has no allocator to box them in.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy)]
pub enum Param {
    /// `.u32`
    U32(u32),
    /// `.s32`
    I32(i32),
    /// `.u64` (pointers and lengths)
    U64(u64),
    /// `.f32`
    F32(f32),
    /// `.f64`
    F64(f64),
    /// `.u8` (a `bool`)
    U8(u8),
    /// `.align A .b8 name[SIZE]`: a `#[repr(C)]` struct deriving
    /// `KernelParams`, in its canonical layout.
    Bytes(ParamBytes),
}

impl Param {
    /// Whether the PTX type `kind` takes this value.
    pub fn matches(&self, kind: ParamKind) -> bool {
        matches!(
            (self, kind),
            (Param::U32(_) | Param::I32(_), ParamKind::U32)
                | (Param::U64(_), ParamKind::U64)
                | (Param::F32(_), ParamKind::F32)
                | (Param::F64(_), ParamKind::F64)
                | (Param::U8(_), ParamKind::U8)
        ) || matches!(
            (self, kind),
            // The size is what the driver copies; LLVM may align the
            // aggregate more strictly than the struct, never less.
            (Param::Bytes(b), ParamKind::Bytes { size, align })
                if b.size == size && align >= b.align
        )
    }
    /// The PTX type of this value, for messages.
    pub fn ptx(&self) -> String {
        match self {
            Param::U32(_) => ".u32",
            Param::I32(_) => ".s32",
            Param::U64(_) => ".u64",
            Param::F32(_) => ".f32",
            Param::F64(_) => ".f64",
            Param::U8(_) => ".u8",
            Param::Bytes(b) => return format!(".align {} .b8[{}]", b.align, b.size),
        }
        .into()
    }
    /// Appends the value to a cudarc launch.
    pub(crate) fn push<'a>(&'a self, b: &mut cudarc::driver::LaunchArgs<'a>) {
        use cudarc::driver::PushKernelArg;
        match self {
            Param::U32(v) => b.arg(v),
            Param::I32(v) => b.arg(v),
            Param::U64(v) => b.arg(v),
            Param::F32(v) => b.arg(v),
            Param::F64(v) => b.arg(v),
            Param::U8(v) => b.arg(v),
            // The driver copies as many bytes as the entry's parameter
            // declares (checked against `size` before every launch).
            Param::Bytes(v) => b.arg(&v.bytes),
        };
    }
}
