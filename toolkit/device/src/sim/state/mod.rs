//! What the engines keep, as plain data: the asynchronous operations in
//! flight of a block ([`asyncs`]), the race detector's shadow of a block's
//! shared memory ([`shared`]) and of the launch's global memory
//! ([`global`]), and a thread-block cluster's barrier counts and DSMEM
//! shadow ([`cluster`]). The block ([`block`](super::block)) owns one of
//! each block-level record and hands it back to the next block on its OS
//! thread; what the records mean is decided in the engines (`asyncs`,
//! `race`, `cluster`), which reach the current block through the block
//! layer. Nothing here imports another file of the simulator.

pub(crate) mod asyncs;
pub(crate) mod cluster;
pub(crate) mod global;
pub(crate) mod shared;
