//! The typed launchers: a [`Plan`] checks a problem against a rung, makes
//! what the rung needs once (TMA tensor maps, rung 1's scratch) and runs
//! the forward pass into `O` (and the log-sum-exp, when asked). Its
//! [`Prepared`] part (scratch, launch shape) does not depend on the
//! tensors, so one problem shape run on many tensors binds it to each.

use super::packed::Packed;
use super::types::{Precision, Rung, Shape};
use kernels_gpu::attention::{Lse, fa2, hopper as hp, split, wide};
use ptxlab_common::error::{Error, Result};
use ptxlab_common::launch;
use ptxlab_common::runtime::{Buffer, Device, LaunchConfig, ModuleKey, TensorMap};
use ptxlab_device::Dim3;
use ptxlab_device::hopper::Swizzle;
use ptxlab_device::mma::{Bf16, F16, Half16};
use ptxlab_matmul::TcRung;
use ptxlab_runtime::{View, ViewMut};
use std::marker::PhantomData;

/// `Q`, `K`, `V` on the device: `(heads, S, D)` row-major 16-bit bits
/// (`K` and `V` with the shape's `K`/`V` heads).
pub struct Inputs {
    /// Queries, `bh x sq x d`.
    pub q: Buffer<u16>,
    /// Keys, `bh_kv x skv x d`.
    pub k: Buffer<u16>,
    /// Values, `bh_kv x skv x d`.
    pub v: Buffer<u16>,
}

impl Inputs {
    /// Uploads the three tensors (bits of the working precision), checking
    /// their lengths against `shape`.
    pub fn upload(dev: &Device, shape: &Shape, q: &[u16], k: &[u16], v: &[u16]) -> Result<Self> {
        Self::upload_lens(dev, (shape.q_len(), shape.kv_len()), q, k, v)
    }

    /// [`Inputs::upload`] against `Q`'s and `K`'s element counts (a packed
    /// batch's: [`Packed::q_len`], [`Packed::kv_len`]).
    pub fn upload_lens(
        dev: &Device,
        (q_len, kv_len): (usize, usize),
        q: &[u16],
        k: &[u16],
        v: &[u16],
    ) -> Result<Self> {
        check_len("Q", q.len(), q_len)?;
        check_len("K", k.len(), kv_len)?;
        check_len("V", v.len(), kv_len)?;
        Ok(Self {
            q: dev.upload(q)?,
            k: dev.upload(k)?,
            v: dev.upload(v)?,
        })
    }
}

/// An input error naming `what` unless it has `want` elements.
pub(super) fn check_len(what: &str, got: usize, want: usize) -> Result<()> {
    if got != want {
        return Err(Error::input(
            what,
            format!("{got} elements; the shape needs {want}"),
        ));
    }
    Ok(())
}

/// Rung 1's scratch: `K^T` of every head and one head's score matrix,
/// rows padded to an even length `ld` (so that no 4-byte word holds values
/// written by two blocks: a 16-bit store is not a race on a GPU, but the
/// simulator's race detector tracks 4-byte words); and for an odd `Skv`,
/// `V` with a zero row after each head's, the `k` of `P V` being `ld`.
struct SplitScratch {
    ld: usize,
    kt: Buffer<u16>,
    s: Buffer<u16>,
    v_padded: Option<Buffer<u16>>,
}

/// What a [`Plan`] makes that does not depend on where `Q`, `K` and `V`
/// are: the checked rung, precision and shape, the launch shape, rung 1's
/// scratch and the stand-in for an unwanted `lse`. [`Plan::new`] makes one
/// and binds it to its tensors; a caller that runs one problem shape on
/// many tensors keeps it ([`Plan::into_prepared`]) and binds it again
/// ([`Prepared::bind`]), which makes only what holds the tensors' addresses
/// or values: the tensor maps and rung 1's padded copy of `V`.
pub struct Prepared {
    rung: Rung,
    prec: Precision,
    shape: Shape,
    split: Option<SplitScratch>,
    /// A one-element stand-in for `lse` when it is not wanted.
    no_lse: Buffer<f32>,
    /// A packed variable-length batch (rung 2 only), or `None`: `shape`'s
    /// dense layout.
    packed: Option<Packed>,
    /// The packed batch's offsets ([`Packed::offsets`]), or a one-element
    /// stand-in for dense problems.
    offsets: Buffer<u32>,
    cfg: LaunchConfig,
}

impl Prepared {
    /// Checks that `rung` takes `shape` (the error says "not for this
    /// shape: ..." when it does not) and makes the scratch and launch shape.
    pub fn new(dev: &Device, rung: Rung, prec: Precision, shape: Shape) -> Result<Self> {
        if let Some(why) = rung.refuses(&shape) {
            return Err(Error::input(format!("--variant {}", rung.name()), why));
        }
        let (bh, sq, skv, d) = (shape.bh(), shape.sq, shape.skv, shape.d);
        let bh_kv = shape.bh_kv();
        let split = if rung == Rung::Split {
            let ld = skv + skv % 2;
            let v_padded = if ld != skv {
                Some(dev.alloc_filled(bh_kv * ld * d, 0u16)?)
            } else {
                None
            };
            Some(SplitScratch {
                ld,
                kt: dev.alloc_filled(bh_kv * d * ld, 0u16)?,
                s: dev.alloc_filled(sq * ld, 0u16)?,
                v_padded,
            })
        } else {
            None
        };
        let grid = |rows: usize| Dim3::xy(sq.div_ceil(rows) as u32, bh as u32);
        let cfg = |grid: Dim3, shared_bytes: usize| LaunchConfig {
            grid,
            block: Dim3::x(rung.threads()),
            shared_bytes,
            module: ModuleKey::default(),
            cluster: None,
        };
        let cfg = match rung {
            Rung::Split => cfg(Dim3::x(sq as u32), split::softmax_shared_bytes()),
            Rung::Fa2 => cfg(grid(fa2::FA2_BM), fa2::fa2_shared_bytes(d)),
            Rung::Ws | Rung::WsSkip if d == wide::WIDE_D => {
                cfg(grid(hp::HP_BM), wide::wide_shared_bytes())
            }
            Rung::Wgmma | Rung::Ws | Rung::WsSkip => {
                cfg(grid(hp::HP_BM), hp::hopper_shared_bytes(d))
            }
        };
        Ok(Self {
            rung,
            prec,
            shape,
            split,
            no_lse: dev.alloc_filled(1, 0f32)?,
            packed: None,
            offsets: dev.alloc_filled(1, 0u32)?,
            cfg,
        })
    }

    /// Rung 2 on a packed variable-length batch: the `PACKED` instances of
    /// `attn_fa2_ranged`, one row of blocks per query tile of the longest
    /// sequence, per head and per sequence (blocks past a shorter
    /// sequence's queries return at once).
    pub fn packed(dev: &Device, prec: Precision, p: Packed) -> Result<Self> {
        let base = *p.base();
        if let Some(why) = Rung::Fa2.refuses(&base) {
            return Err(Error::input("--cu-seqlens", why));
        }
        let mut me = Self::new(dev, Rung::Fa2, prec, base)?;
        me.cfg.grid = Dim3::new(
            base.sq.div_ceil(fa2::FA2_BM) as u32,
            base.heads as u32,
            p.batch() as u32,
        );
        me.offsets = dev.upload(&p.offsets())?;
        me.packed = Some(p);
        Ok(me)
    }

    /// Elements of `Q` (and `O`), of `K` (and `V`) and of `lse`.
    fn lens(&self) -> (usize, usize, usize) {
        match &self.packed {
            Some(p) => (p.q_len(), p.kv_len(), p.lse_len()),
            None => (
                self.shape.q_len(),
                self.shape.kv_len(),
                self.shape.bh() * self.shape.sq,
            ),
        }
    }

    /// The plan of these tensors: checks their lengths against the shape,
    /// makes their tensor maps (the Hopper rungs) and, for rung 1 with an
    /// odd `Skv`, copies `V` into its padded scratch (a download and an
    /// upload: it depends on `V`'s values, so every bind makes it again).
    pub fn bind<'a>(mut self, dev: &Device, x: &'a Inputs) -> Result<Plan<'a>> {
        let sh = self.shape;
        let (ql, kl, _) = self.lens();
        check_len("Q", x.q.len(), ql)?;
        check_len("K", x.k.len(), kl)?;
        check_len("V", x.v.len(), kl)?;
        let (bh, sq, skv, d, bh_kv) = (sh.bh(), sh.sq, sh.skv, sh.d, sh.bh_kv());
        let maps = if self.rung.hopper() {
            // `Q` in boxes of a block's query rows, `K` and `V` in boxes of
            // a key tile's rows (fewer at D = 256), 64 columns each.
            let box_cols = hp::HP_BOX_COLS as u32;
            let map = |b: &'a Buffer<u16>, n: usize, rows: usize| {
                TensorMap::tiled_2d(dev, b, n, d, rows as u32, box_cols, Swizzle::B128)
            };
            let kv_rows = hp::hp_bn(d);
            Some([
                map(&x.q, bh * sq, hp::HP_BM)?,
                map(&x.k, bh_kv * skv, kv_rows)?,
                map(&x.v, bh_kv * skv, kv_rows)?,
            ])
        } else {
            None
        };
        if let Some(SplitScratch {
            ld,
            v_padded: Some(vp),
            ..
        }) = self.split.as_mut()
        {
            let ld = *ld;
            let v = dev.download(&x.v)?;
            let mut p = vec![0u16; bh_kv * ld * d];
            for h in 0..bh_kv {
                p[h * ld * d..(h * ld + skv) * d]
                    .copy_from_slice(&v[h * skv * d..(h + 1) * skv * d]);
            }
            dev.write(vp, &p)?;
        }
        Ok(Plan {
            x,
            maps,
            prepared: self,
        })
    }

    /// The rung it runs.
    pub fn rung(&self) -> Rung {
        self.rung
    }

    /// The precision it runs in.
    pub fn precision(&self) -> Precision {
        self.prec
    }

    /// The problem shape it was made for (of a packed plan: its base,
    /// batch 1 with the longest sequences' lengths).
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The packed batch of a [`Prepared::packed`] plan; `None` for a dense
    /// one. A plan serves a call only with the same shape and batch.
    pub fn packed_batch(&self) -> Option<&Packed> {
        self.packed.as_ref()
    }

    /// Device bytes it holds (rung 1's scratch and the `lse` stand-in).
    pub fn device_bytes(&self) -> usize {
        let split = self.split.as_ref().map_or(0, |s| {
            2 * (s.kt.len() + s.s.len() + s.v_padded.as_ref().map_or(0, |v| v.len()))
        });
        split + 4 * self.no_lse.len() + 4 * self.offsets.len()
    }
}

/// One attention forward pass, ready to launch.
pub struct Plan<'a> {
    x: &'a Inputs,
    maps: Option<[TensorMap<'a>; 3]>,
    prepared: Prepared,
}

impl<'a> Plan<'a> {
    /// Checks that `rung` takes `shape` (the error says "not for this
    /// shape: ..." when it does not) and makes what it needs
    /// ([`Prepared::new`], then [`Prepared::bind`] to `x`).
    pub fn new(
        dev: &Device,
        rung: Rung,
        prec: Precision,
        shape: Shape,
        x: &'a Inputs,
    ) -> Result<Self> {
        Prepared::new(dev, rung, prec, shape)?.bind(dev, x)
    }

    /// The part of the plan that does not depend on its tensors, to bind
    /// to others of the same shape ([`Prepared::bind`]).
    pub fn into_prepared(self) -> Prepared {
        self.prepared
    }

    /// Rung 2 on the packed batch `p` ([`Prepared::packed`]) bound to `x`
    /// (`Q` as `(T_q, H, D)`, `K` and `V` as `(T_kv, H_kv, D)`).
    pub fn packed(dev: &Device, prec: Precision, p: Packed, x: &'a Inputs) -> Result<Self> {
        Prepared::packed(dev, prec, p)?.bind(dev, x)
    }

    /// Runs the forward pass: `O` (`bh x sq x d` bits) and, when given, the
    /// log-sum-exp per query row (`bh x sq`).
    pub fn run(
        &mut self,
        dev: &Device,
        o: &mut Buffer<u16>,
        lse: Option<&mut Buffer<f32>>,
    ) -> Result<()> {
        let (ql, _, ll) = self.prepared.lens();
        check_len("O", o.len(), ql)?;
        if let Some(l) = &lse {
            check_len("lse", l.len(), ll)?;
        }
        if self.prepared.rung == Rung::Split {
            return match self.prepared.prec {
                Precision::Bf16 => self.run_split::<Bf16>(dev, o, lse),
                Precision::F16 => self.run_split::<F16>(dev, o, lse),
            };
        }
        match (self.prepared.prec, self.prepared.shape.d) {
            (Precision::Bf16, 64) => Fused::<Bf16, 64>::run(self, dev, o, lse),
            (Precision::Bf16, 128) => Fused::<Bf16, 128>::run(self, dev, o, lse),
            (Precision::F16, 64) => Fused::<F16, 64>::run(self, dev, o, lse),
            (Precision::F16, 128) => Fused::<F16, 128>::run(self, dev, o, lse),
            (Precision::Bf16, wide::WIDE_D) => self.run_wide::<Bf16>(dev, o, lse),
            (Precision::F16, wide::WIDE_D) => self.run_wide::<F16>(dev, o, lse),
            _ => unreachable!("Plan::new refused other head dims for the fused rungs"),
        }
    }

    /// Rungs 4 and 5 at `D = 256` ([`wide::attn_ws_wide`]; the only rungs
    /// [`Rung::refuses`] lets through at that `D` besides rung 1).
    fn run_wide<H: Half16>(
        &mut self,
        dev: &Device,
        o: &mut Buffer<u16>,
        lse: Option<&mut Buffer<f32>>,
    ) -> Result<()>
    where
        wide::attn_ws_wide::Of<H, false>: wide::attn_ws_wide::Instance,
        wide::attn_ws_wide::Of<H, true>: wide::attn_ws_wide::Instance,
    {
        let shape = self.prepared.shape.kernel_shape();
        let want = if lse.is_some() { Lse::Store } else { Lse::Skip };
        let cfg = self.prepared.cfg;
        let lse = match lse {
            Some(l) => l,
            None => &mut self.prepared.no_lse,
        };
        let Some([mq, mk, mv]) = &self.maps else {
            unreachable!("Plan::new made the tensor maps of the Hopper rungs")
        };
        let (mq, mk, mv) = (mq.buffer(), mk.buffer(), mv.buffer());
        match self.prepared.rung {
            Rung::Ws => launch!(
                dev,
                cfg,
                attention::wide::attn_ws_wide::<H, false>(mq, mk, mv, o, lse, shape, want)
            ),
            Rung::WsSkip => launch!(
                dev,
                cfg,
                attention::wide::attn_ws_wide::<H, true>(mq, mk, mv, o, lse, shape, want)
            ),
            r => unreachable!("Rung::refuses keeps rung {} from D = 256", r.number()),
        }
    }

    /// Rung 1: `K^T` for all `K` heads, then per query head `S = Q K^T`
    /// (with its group's `K^T`), the softmax in place, `O = P V` (rows of
    /// `K^T` and `S` padded to `ld`).
    fn run_split<H: Half16 + split::attn_softmax::Built>(
        &mut self,
        dev: &Device,
        o: &mut Buffer<u16>,
        mut lse: Option<&mut Buffer<f32>>,
    ) -> Result<()> {
        let sh = self.prepared.shape;
        let (bh, sq, skv, d, group) = (sh.bh(), sh.sq, sh.skv, sh.d, sh.group());
        let Some(sc) = self.prepared.split.as_mut() else {
            unreachable!("Plan::new made rung 1's scratch")
        };
        let t = split::TRANSPOSE_TILE;
        let tcfg = LaunchConfig {
            grid: Dim3::new(
                skv.div_ceil(t as usize) as u32,
                d.div_ceil(t as usize) as u32,
                sh.bh_kv() as u32,
            ),
            block: Dim3::xy(t, split::TRANSPOSE_ROWS),
            shared_bytes: split::transpose_shared_bytes(),
            module: ModuleKey::default(),
            cluster: None,
        };
        launch!(
            dev,
            tcfg,
            attention::split::attn_transpose(
                &self.x.k,
                &mut sc.kt,
                skv as u32,
                d as u32,
                sc.ld as u32
            )
        )?;
        let ld = sc.ld;
        let v = sc.v_padded.as_ref().unwrap_or(&self.x.v);
        let rows = split::SoftmaxRows {
            cols: skv as u32,
            ld: sc.ld as u32,
            scale_log2: sh.scale_log2(),
            causal: sh.causal as u32,
            window: sh.window.unwrap_or(0) as u32,
        };
        let want = if lse.is_some() { Lse::Store } else { Lse::Skip };
        for h in 0..bh {
            let (qa, ka) = (h * sq * d, (h / group) * ld * d);
            gemm_pipes::<H>(
                dev,
                self.x.q.view(qa..qa + sq * d)?,
                sc.kt.view(ka..ka + ld * d)?,
                sc.s.view_mut(0..sq * ld)?,
                sq,
                ld,
                d,
            )?;
            let lv = match lse.as_deref_mut() {
                Some(l) => l.view_mut(h * sq..(h + 1) * sq)?,
                None => self.prepared.no_lse.view_mut(0..1)?,
            };
            launch!(
                dev,
                self.prepared.cfg,
                attention::split::attn_softmax::<H>(sc.s.view_mut(0..sq * ld)?, lv, rows, want)
            )?;
            gemm_pipes::<H>(
                dev,
                sc.s.view(0..sq * ld)?,
                v.view(ka..ka + ld * d)?,
                o.view_mut(qa..qa + sq * d)?,
                sq,
                d,
                ld,
            )?;
        }
        Ok(())
    }
}

/// `C = A B` (`m x k` times `k x n`, 16-bit, row-major) with the tensor
/// ladder's rung 3d (`mma.sync`, any shape), on views of larger buffers.
fn gemm_pipes<H: Half16>(
    dev: &Device,
    a: View<'_, u16>,
    b: View<'_, u16>,
    c: ViewMut<'_, u16>,
    m: usize,
    n: usize,
    k: usize,
) -> Result<()> {
    let cfg = TcRung::PipeS.config(dev, m, n)?;
    let (m, n, k) = (m as u32, n as u32, k as u32);
    if H::IS_BF16 {
        launch!(dev, cfg, tensor::matmul_pipes::<Bf16>(a, b, c, m, n, k))
    } else {
        launch!(dev, cfg, tensor::matmul_pipes::<F16>(a, b, c, m, n, k))
    }
}

/// The fused rungs for one `(H, D)`: the only place their kernels are
/// named; [`Plan::run`] picks the instance from the precision and `d`.
struct Fused<H, const D: usize>(PhantomData<H>);

impl<H: Half16, const D: usize> Fused<H, D>
where
    fa2::attn_fa2::Of<H, D>: fa2::attn_fa2::Instance,
    fa2::attn_fa2_ranged::Of<H, D, false>: fa2::attn_fa2_ranged::Instance,
    fa2::attn_fa2_ranged::Of<H, D, true>: fa2::attn_fa2_ranged::Instance,
    hp::attn_wgmma::Of<H, D>: hp::attn_wgmma::Instance,
    hp::attn_ws::Of<H, D, false>: hp::attn_ws::Instance,
    hp::attn_ws::Of<H, D, true>: hp::attn_ws::Instance,
{
    fn run(
        p: &mut Plan<'_>,
        dev: &Device,
        o: &mut Buffer<u16>,
        lse: Option<&mut Buffer<f32>>,
    ) -> Result<()> {
        let shape = p.prepared.shape.kernel_shape();
        let want = if lse.is_some() { Lse::Store } else { Lse::Skip };
        let cfg = p.prepared.cfg;
        let lse = match lse {
            Some(l) => l,
            None => &mut p.prepared.no_lse,
        };
        let x = p.x;
        if p.prepared.rung == Rung::Fa2 {
            let offsets = &p.prepared.offsets;
            return if p.prepared.packed.is_some() {
                launch!(
                    dev,
                    cfg,
                    attention::fa2::attn_fa2_ranged::<H, D, true>(
                        &x.q, &x.k, &x.v, o, lse, offsets, shape, want
                    )
                )
            } else if p.prepared.shape.window.is_some() {
                launch!(
                    dev,
                    cfg,
                    attention::fa2::attn_fa2_ranged::<H, D, false>(
                        &x.q, &x.k, &x.v, o, lse, offsets, shape, want
                    )
                )
            } else {
                launch!(
                    dev,
                    cfg,
                    attention::fa2::attn_fa2::<H, D>(&x.q, &x.k, &x.v, o, lse, shape, want)
                )
            };
        }
        let Some([mq, mk, mv]) = &p.maps else {
            unreachable!("Plan::new made the tensor maps of the Hopper rungs")
        };
        let (mq, mk, mv) = (mq.buffer(), mk.buffer(), mv.buffer());
        match p.prepared.rung {
            Rung::Wgmma => launch!(
                dev,
                cfg,
                attention::hopper::attn_wgmma::<H, D>(mq, mk, mv, o, lse, shape, want)
            ),
            Rung::Ws => launch!(
                dev,
                cfg,
                attention::hopper::attn_ws::<H, D, false>(mq, mk, mv, o, lse, shape, want)
            ),
            Rung::WsSkip => launch!(
                dev,
                cfg,
                attention::hopper::attn_ws::<H, D, true>(mq, mk, mv, o, lse, shape, want)
            ),
            Rung::Split | Rung::Fa2 => unreachable!("handled above"),
        }
    }
}

/// The PTX entry of `rung`'s main kernel for `prec` and `d`, with or
/// without a sliding `window` (for the resource report; rung 1's is its
/// softmax).
pub fn entry(rung: Rung, prec: Precision, d: usize, window: bool) -> Option<&'static str> {
    fn of<H: Half16 + split::attn_softmax::Built, const D: usize>(
        rung: Rung,
        window: bool,
    ) -> &'static str
    where
        fa2::attn_fa2::Of<H, D>: fa2::attn_fa2::Instance,
        fa2::attn_fa2_ranged::Of<H, D, false>: fa2::attn_fa2_ranged::Instance,
        hp::attn_wgmma::Of<H, D>: hp::attn_wgmma::Instance,
        hp::attn_ws::Of<H, D, false>: hp::attn_ws::Instance,
        hp::attn_ws::Of<H, D, true>: hp::attn_ws::Instance,
    {
        match rung {
            Rung::Split => <H as split::attn_softmax::Built>::ENTRY,
            Rung::Fa2 if window => {
                <fa2::attn_fa2_ranged::Of<H, D, false> as fa2::attn_fa2_ranged::Instance>::ENTRY
            }
            Rung::Fa2 => <fa2::attn_fa2::Of<H, D> as fa2::attn_fa2::Instance>::ENTRY,
            Rung::Wgmma => <hp::attn_wgmma::Of<H, D> as hp::attn_wgmma::Instance>::ENTRY,
            Rung::Ws => <hp::attn_ws::Of<H, D, false> as hp::attn_ws::Instance>::ENTRY,
            Rung::WsSkip => <hp::attn_ws::Of<H, D, true> as hp::attn_ws::Instance>::ENTRY,
        }
    }
    Some(match (prec, d) {
        (Precision::Bf16, 64) => of::<Bf16, 64>(rung, window),
        (Precision::Bf16, 128) => of::<Bf16, 128>(rung, window),
        (Precision::F16, 64) => of::<F16, 64>(rung, window),
        (Precision::F16, 128) => of::<F16, 128>(rung, window),
        (_, wide::WIDE_D) if matches!(rung, Rung::Ws | Rung::WsSkip) => {
            use wide::attn_ws_wide::{Instance, Of};
            let skip = rung == Rung::WsSkip;
            match (prec, skip) {
                (Precision::Bf16, false) => <Of<Bf16, false> as Instance>::ENTRY,
                (Precision::Bf16, true) => <Of<Bf16, true> as Instance>::ENTRY,
                (Precision::F16, false) => <Of<F16, false> as Instance>::ENTRY,
                (Precision::F16, true) => <Of<F16, true> as Instance>::ENTRY,
            }
        }
        _ if rung == Rung::Split => match prec {
            Precision::Bf16 => <Bf16 as split::attn_softmax::Built>::ENTRY,
            Precision::F16 => <F16 as split::attn_softmax::Built>::ENTRY,
        },
        _ => return None,
    })
}

/// The PTX entry of rung 2's packed variable-length kernel for `prec` and
/// `d` (for the resource report).
pub fn packed_entry(prec: Precision, d: usize) -> Option<&'static str> {
    fn of<H: Half16, const D: usize>() -> &'static str
    where
        fa2::attn_fa2_ranged::Of<H, D, true>: fa2::attn_fa2_ranged::Instance,
    {
        <fa2::attn_fa2_ranged::Of<H, D, true> as fa2::attn_fa2_ranged::Instance>::ENTRY
    }
    Some(match (prec, d) {
        (Precision::Bf16, 64) => of::<Bf16, 64>(),
        (Precision::Bf16, 128) => of::<Bf16, 128>(),
        (Precision::F16, 64) => of::<F16, 64>(),
        (Precision::F16, 128) => of::<F16, 128>(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{errors, verify};
    use crate::cpu::{POISON_16, all_rows, check_inputs, reference, widen};

    /// One prepared plan bound in turn to two sets of tensors (other
    /// buffers, other values) gives each its own result: the reference's
    /// within the rung's bound, bit for bit a fresh plan's, and not the
    /// other set's (a tensor map or padded `V` kept from the first bind
    /// would read the first set).
    #[test]
    fn a_prepared_plan_rebinds_to_other_tensors() {
        let dev = Device::sim();
        let prec = Precision::Bf16;
        // Odd Skv (rung 1 pads V), two query heads per K/V head.
        let shape = Shape::new(1, 2, 20, 17, 64, true, None)
            .and_then(|s| s.with_kv_heads(1))
            .unwrap();
        let sets: Vec<[Vec<u16>; 3]> = (0..2)
            .map(|seed| check_inputs(&shape, prec, 40 + seed, 2.0).unwrap())
            .collect();
        let mut ran = 0;
        for rung in Rung::ALL {
            if rung.refuses(&shape).is_some() {
                continue;
            }
            ran += 1;
            let mut prepared = Some(Prepared::new(&dev, rung, prec, shape).unwrap());
            let mut outs = Vec::new();
            for [q, k, v] in &sets {
                let x = Inputs::upload(&dev, &shape, q, k, v).unwrap();
                let mut o = dev.alloc_filled(shape.q_len(), POISON_16).unwrap();
                let mut plan = prepared.take().unwrap().bind(&dev, &x).unwrap();
                plan.run(&dev, &mut o, None).unwrap();
                prepared = Some(plan.into_prepared());
                let o = dev.download(&o).unwrap();
                let mut fresh = dev.alloc_filled(shape.q_len(), POISON_16).unwrap();
                Plan::new(&dev, rung, prec, shape, &x)
                    .and_then(|mut p| p.run(&dev, &mut fresh, None))
                    .unwrap();
                assert_eq!(o, dev.download(&fresh).unwrap(), "{}", rung.name());
                let refr = reference(
                    &shape,
                    &widen(prec, q),
                    &widen(prec, k),
                    &widen(prec, v),
                    all_rows(&shape),
                );
                let e = errors(&shape, prec, &refr, &o, None).unwrap();
                verify(&rung.name(), rung, prec, refr.max_score, &e).unwrap();
                outs.push(o);
            }
            assert_ne!(outs[0], outs[1], "{}", rung.name());
        }
        assert!(ran >= 3, "only {ran} rungs take the test shape");
    }

    #[test]
    fn a_prepared_plan_refuses_tensors_of_another_shape() {
        let dev = Device::sim();
        let shape = Shape::new(1, 1, 8, 8, 64, false, None).unwrap();
        let p = Prepared::new(&dev, Rung::Fa2, Precision::F16, shape).unwrap();
        let [q, k, v] = check_inputs(&shape, Precision::F16, 1, 1.0).unwrap();
        let x = Inputs {
            q: dev.upload(&q[..q.len() - 64]).unwrap(),
            k: dev.upload(&k).unwrap(),
            v: dev.upload(&v).unwrap(),
        };
        let e = p.bind(&dev, &x).err().unwrap().to_string();
        assert!(e.contains("Q") && e.contains("the shape needs 512"), "{e}");
    }
}
