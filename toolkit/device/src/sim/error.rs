//! What a simulated launch reports when it fails: [`Fault`] (what went wrong)
//! inside [`SimError`] (where: kernel, block, thread, source line).

use crate::dim3::Dim3;
use std::boxed::Box;
use std::fmt;
use std::string::String;

/// One side of a data race: who touched the word, how, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaceAccess {
    /// Block of the thread.
    pub block: Dim3,
    /// Thread within its block.
    pub thread: Dim3,
    /// `true` for a write, `false` for a read.
    pub write: bool,
    /// Kernel source line of the access (`file:line:column`).
    pub location: String,
}

impl fmt::Display for RaceAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} by thread {} of block {} at {}",
            if self.write { "written" } else { "read" },
            self.thread,
            self.block,
            self.location
        )
    }
}

/// A data race: two threads touched the same memory word, at least one of
/// them writing, with nothing ordering the two accesses. In shared memory: no
/// `sync_threads` (nor a warp collective both took part in) between them; in
/// global memory: two different blocks of one launch. Atomics never count.
/// The result of such a kernel depends on the hardware's schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Race {
    /// `"shared memory"` or `"global memory"`.
    pub space: &'static str,
    /// The word: its byte offset in shared memory, or the element index and
    /// address of the global access.
    pub word: String,
    /// The earlier access.
    pub first: RaceAccess,
    /// The access that found the conflict.
    pub second: RaceAccess,
    /// When both happened: the barrier interval, or "in one launch".
    pub interval: String,
}

impl fmt::Display for Race {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "data race on {} {}: {}, then {}, {}",
            self.space, self.word, self.first, self.second, self.interval
        )
    }
}

/// A misuse of an asynchronous operation (`cp.async`, TMA, mbarrier,
/// `wgmma`): what was touched too early or waited for wrongly, and the
/// operation it concerns. The thread and line of the access that found it
/// are the [`SimError`]'s own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsyncHazard {
    /// The operation: `"cp.async"`, `"TMA load"`, `"TMA store"`, `"wgmma"`
    /// or `"mbarrier"`.
    pub op: &'static str,
    /// Block of the thread that issued it.
    pub block: Dim3,
    /// Thread that issued it (or initialised the mbarrier).
    pub thread: Dim3,
    /// Kernel source line that issued it (`file:line:column`).
    pub location: String,
    /// The whole story in one sentence: what happened, to which operation,
    /// and what the program must do first.
    pub detail: String,
}

impl fmt::Display for AsyncHazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

/// What went wrong inside a simulated kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// An index past the end of a buffer or shared-memory view.
    OutOfBounds {
        /// `"shared memory"`, `"device buffer (read)"`, ...
        space: &'static str,
        /// The index used.
        index: usize,
        /// The length of the view.
        len: usize,
    },
    /// A shared-memory view larger than the launch's dynamic shared memory.
    SharedTooSmall {
        /// Bytes the view needs (offset + length).
        needed: usize,
        /// Bytes the launch provided.
        available: usize,
    },
    /// A wide access at an address not aligned to its width.
    Misaligned {
        /// Address.
        addr: usize,
        /// Required alignment.
        align: usize,
    },
    /// A `sync_threads` not reached by every thread of the block.
    DivergentBarrier {
        /// Which threads arrived where.
        detail: String,
    },
    /// A warp function called with an inconsistent or invalid mask.
    WarpMask {
        /// What was wrong.
        detail: String,
    },
    /// Every live thread of a block waits (at a barrier or in a warp
    /// function) for a thread that waits elsewhere: on a GPU, a hang.
    Deadlock {
        /// Who waits where.
        detail: String,
    },
    /// Two threads touched the same memory word, at least one of them
    /// writing, with nothing ordering the two accesses (see [`Race`]).
    Race(Box<Race>),
    /// An asynchronous operation was used wrongly: its destination read
    /// before the wait that completes it, its source or operands
    /// overwritten while it runs, an mbarrier misused (see [`AsyncHazard`]).
    Async(Box<AsyncHazard>),
    /// The kernel called `trap`.
    Trap {
        /// Why.
        reason: String,
    },
    /// The kernel panicked (for example an arithmetic overflow in a debug build).
    Panic {
        /// The panic message.
        message: String,
    },
    /// The launch itself is invalid.
    InvalidLaunch {
        /// What is wrong and what is allowed.
        detail: String,
    },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::OutOfBounds { space, index, len } => {
                write!(
                    f,
                    "out-of-bounds access to {space}: index {index}, length {len}"
                )
            }
            Fault::SharedTooSmall { needed, available } => write!(
                f,
                "shared-memory view needs {needed} bytes but the launch provides {available}; \
                 raise the launch's shared_bytes"
            ),
            Fault::Misaligned { addr, align } => {
                write!(
                    f,
                    "misaligned wide access at {addr:#x}: needs {align}-byte alignment"
                )
            }
            Fault::DivergentBarrier { detail } => write!(f, "divergent barrier: {detail}"),
            Fault::WarpMask { detail } => write!(f, "invalid warp operation: {detail}"),
            Fault::Deadlock { detail } => write!(f, "deadlock: {detail}"),
            Fault::Race(r) => write!(f, "{r}"),
            Fault::Async(a) => write!(f, "{a}"),
            Fault::Trap { reason } => write!(f, "trap: {reason}"),
            Fault::Panic { message } => write!(f, "panic: {message}"),
            Fault::InvalidLaunch { detail } => write!(f, "invalid launch: {detail}"),
        }
    }
}

/// A failed simulated launch: the fault, and where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimError {
    /// Kernel name.
    pub kernel: String,
    /// Block of the faulting thread.
    pub block: Dim3,
    /// Faulting thread within its block.
    pub thread: Dim3,
    /// What went wrong.
    pub fault: Fault,
    /// Source location in the kernel, when known.
    pub location: Option<String>,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel `{}`, block {}, thread {}: {}",
            self.kernel, self.block, self.thread, self.fault
        )?;
        if let Some(l) = &self.location {
            write!(f, " (at {l})")?;
        }
        Ok(())
    }
}

impl std::error::Error for SimError {}
