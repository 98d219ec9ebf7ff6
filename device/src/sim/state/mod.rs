//! What the engines above the scheduler keep, as plain data: the
//! asynchronous operations in flight of a block ([`asyncs`]), the race
//! detector's shadow of a block's shared memory ([`shared`]) and of the
//! launch's global memory ([`global`]). The scheduler's block owns one of
//! each and hands it back to the next block on its OS thread; what the
//! records mean is decided in the engines (`asyncs`, `race`), which sit
//! above the scheduler and reach the current block through it.

pub(crate) mod asyncs;
pub(crate) mod global;
pub(crate) mod shared;
