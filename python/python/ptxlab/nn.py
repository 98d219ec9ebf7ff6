"""Attention and GEMM on BF16/FP16 GPU tensors (torch or CuPy), without a
copy: the kernels read the caller's tensors in place and write into a
result allocated through the caller's library, on the caller's current
stream."""

from __future__ import annotations

from . import _native
from ._arrays import kind

_TORCH_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "f16"}


def _stream_handle(s):
    # The legacy default stream is 0 in torch and CuPy, 1 in the driver's
    # and __cuda_array_interface__'s convention.
    return 1 if s in (None, 0) else int(s)


class _Gpu:
    """A GPU tensor's address, shape, 16-bit dtype and device."""

    def __init__(self, name, x):
        k = kind(x)
        self.kind = k
        if k == "torch":
            import torch

            if x.device.type != "cuda":
                raise TypeError(f"{name} is a torch tensor on {x.device}; attention and matmul run on CUDA tensors")
            prec = _TORCH_DTYPES.get(str(x.dtype))
            if prec is None:
                raise TypeError(f"{name} has dtype {x.dtype}; give torch.bfloat16 or torch.float16")
            if not x.is_contiguous():
                raise ValueError(f"{name} is not contiguous; call .contiguous() first")
            self.ptr = x.data_ptr()
            self.device = x.device.index
        elif k == "cupy":
            import cupy

            if str(x.dtype) != "float16":
                raise TypeError(f"{name} has dtype {x.dtype}; CuPy tensors must be float16 (CuPy has no bfloat16)")
            if not x.flags.c_contiguous:
                raise ValueError(f"{name} is not C-contiguous; use cupy.ascontiguousarray")
            prec = "f16"
            self.ptr = x.data.ptr
            self.device = int(x.device.id)
        else:
            raise TypeError(
                f"{name} is a {type(x).__module__}.{type(x).__name__}; attention and matmul take "
                "torch or CuPy GPU tensors (BF16/FP16)"
            )
        self.x = x
        self.prec = prec
        self.shape = tuple(x.shape)


def _caller_stream(t):
    """The current stream of ``t``'s library on ``t``'s device (asked once a
    call: the query costs microseconds)."""
    if t.kind == "torch":
        import torch

        return _stream_handle(torch.cuda.current_stream(t.x.device).cuda_stream)
    import cupy

    return _stream_handle(cupy.cuda.get_current_stream().ptr)


def _same(*ts):
    t0 = ts[0]
    for t in ts[1:]:
        if t.kind != t0.kind or t.prec != t0.prec:
            raise TypeError("every tensor must be of one library and one dtype")
        if t.device != t0.device:
            raise ValueError(f"the tensors are on devices {t0.device} and {t.device}; put them on one device")


def _empty(t, shape):
    if t.kind == "torch":
        import torch

        return torch.empty(shape, dtype=t.x.dtype, device=t.x.device)
    import cupy

    with cupy.cuda.Device(t.device):
        return cupy.empty(shape, dtype=t.x.dtype)


def _check_scale_window(scale, window):
    if scale is not None and not isinstance(scale, (int, float)):
        raise TypeError(f"scale must be a number or None; got {type(scale).__name__}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise ValueError(f"window must be a whole number of keys, at least 1, or None; got {window!r}")


def _ptr(x):
    return x.data_ptr() if kind(x) == "torch" else x.data.ptr


def attention(q, k, v, causal=False, scale=None, window=None):
    """``softmax(scale q k^T [causal mask]) v`` for ``(batch, heads, seq,
    dim)`` tensors (torch's ``scaled_dot_product_attention`` layout and
    causal convention: query ``i`` sees keys ``j <= i``; ``scale`` defaults
    to ``1 / sqrt(dim)``). ``k`` and ``v`` may have fewer heads than ``q``
    (grouped-query attention, torch's ``enable_gqa=True``): ``(batch,
    kv_heads, seq_kv, dim)`` with ``kv_heads`` dividing ``heads``; query
    head ``h`` reads key/value head ``h // (heads // kv_heads)``. A sliding
    ``window`` ``W`` (local attention) lets query ``i`` see the keys with
    ``|i - j| < W`` (with ``causal``, ``i - W < j <= i``). Returns a new
    tensor of ``q``'s kind, dtype and device, written by the kernel in
    place."""
    tq, tk, tv = _Gpu("q", q), _Gpu("k", k), _Gpu("v", v)
    _same(tq, tk, tv)
    if len(tq.shape) != 4 or len(tk.shape) != 4 or len(tv.shape) != 4:
        raise ValueError(
            f"q, k, v have shapes {tq.shape}, {tk.shape}, {tv.shape}; give 4-D (batch, heads, seq, dim) tensors"
        )
    b, h, sq, d = tq.shape
    if (tk.shape != tv.shape or tk.shape[0] != b or tk.shape[3] != d
            or tk.shape[1] == 0 or h % tk.shape[1] != 0):
        raise ValueError(
            f"k and v must have one shape (batch, kv_heads, seq_kv, dim) = ({b}, *, *, {d}) with kv_heads "
            f"dividing q's {h} heads; got {tk.shape} and {tv.shape}"
        )
    _check_scale_window(scale, window)
    o = _empty(tq, (b, h, sq, d))
    _native.attention(
        tq.ptr, tk.ptr, tv.ptr, _ptr(o), b, h, sq, tk.shape[2], d, bool(causal),
        None if scale is None else float(scale), tq.prec, tq.device, _caller_stream(tq), tk.shape[1],
        window,
    )
    return o


def _offsets(name, x):
    """``x`` (a list, a NumPy array, or a torch/CuPy tensor, read back to
    the host) as a list of whole numbers; the native side checks their
    order."""
    if x is None:
        return None
    if hasattr(x, "tolist"):
        if len(getattr(x, "shape", (0,))) != 1:
            raise ValueError(f"{name} has shape {tuple(x.shape)}; give a 1-D list of B + 1 offsets")
        if "int" not in str(getattr(x, "dtype", "int")):
            raise TypeError(f"{name} has dtype {x.dtype}; give integer offsets")
        x = x.tolist()
    try:
        out = [int(o) for o in x]
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of whole numbers (cu_seqlens); got {x!r}") from None
    if any(o < 0 for o in out):
        raise ValueError(f"{name} holds a negative offset ({min(out)}); the offsets start at 0 and increase")
    return out


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k=None, causal=False, scale=None, window=None):
    """Attention over a packed batch of sequences of different lengths, in
    FlashAttention's ``flash_attn_varlen_func`` layout: ``q`` is ``(T_q,
    heads, dim)``, ``k`` and ``v`` ``(T_kv, kv_heads, dim)`` (``kv_heads``
    dividing ``heads``), and sequence ``b`` holds query tokens
    ``cu_seqlens_q[b]:cu_seqlens_q[b+1]`` and key tokens
    ``cu_seqlens_k[b]:cu_seqlens_k[b+1]`` (default: ``cu_seqlens_q``). The
    offsets start at 0 and increase; the last ones are ``T_q`` and
    ``T_kv``. ``causal`` (query ``i`` sees keys ``j <= i`` of its own
    sequence) and ``window`` count within each sequence. Returns a new
    ``(T_q, heads, dim)`` tensor of ``q``'s kind, dtype and device."""
    tq, tk, tv = _Gpu("q", q), _Gpu("k", k), _Gpu("v", v)
    _same(tq, tk, tv)
    if len(tq.shape) != 3 or len(tk.shape) != 3 or len(tv.shape) != 3:
        raise ValueError(
            f"q, k, v have shapes {tq.shape}, {tk.shape}, {tv.shape}; give 3-D (tokens, heads, dim) tensors"
        )
    t, h, d = tq.shape
    if tk.shape != tv.shape or tk.shape[2] != d or tk.shape[1] == 0 or h % tk.shape[1] != 0:
        raise ValueError(
            f"k and v must have one shape (tokens_kv, kv_heads, dim) = (*, *, {d}) with kv_heads dividing "
            f"q's {h} heads; got {tk.shape} and {tv.shape}"
        )
    cu_q = _offsets("cu_seqlens_q", cu_seqlens_q)
    cu_k = _offsets("cu_seqlens_k", cu_seqlens_k)
    for name, cu, tokens in (("cu_seqlens_q", cu_q, t), ("cu_seqlens_k", cu_k if cu_k is not None else cu_q, tk.shape[0])):
        if cu and cu[-1] != tokens:
            raise ValueError(
                f"{name} ends at {cu[-1]} but the tensor holds {tokens} tokens; the last offset is the token count"
            )
    _check_scale_window(scale, window)
    o = _empty(tq, (t, h, d))
    _native.attention_varlen(
        tq.ptr, tk.ptr, tv.ptr, _ptr(o), h, tk.shape[1], d, cu_q, cu_k, bool(causal),
        None if scale is None else float(scale), window, tq.prec, tq.device, _caller_stream(tq),
    )
    return o


def matmul(a, b):
    """``a @ b`` for 2-D BF16/FP16 GPU tensors (f32 accumulation, the result
    rounded to the inputs' dtype). Returns a new tensor of ``a``'s kind,
    dtype and device, written by the kernel in place."""
    ta, tb = _Gpu("a", a), _Gpu("b", b)
    _same(ta, tb)
    if len(ta.shape) != 2 or len(tb.shape) != 2:
        raise ValueError(f"a and b have shapes {ta.shape} and {tb.shape}; give 2-D matrices")
    m, kk = ta.shape
    if tb.shape[0] != kk:
        raise ValueError(f"a is {m} x {kk} and b is {tb.shape[0]} x {tb.shape[1]}; the inner sizes must agree")
    n = tb.shape[1]
    c = _empty(ta, (m, n))
    _native.matmul(ta.ptr, tb.ptr, _ptr(c), m, n, kk, ta.prec, ta.device, _caller_stream(ta))
    return c
