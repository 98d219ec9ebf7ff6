//! The two lanes of a GPU slab and the stream a slab's launch or copy goes
//! to. (Launches and copies take typed views of the buffers: `Buffer::view`.)

use super::team::Member;
use ptxlab_common::runtime::Stream;

/// Which stream of a GPU slab a launch goes to.
#[derive(Clone, Copy)]
pub(super) enum Lane {
    A,
    B,
}

/// The stream of `lane` on a GPU member (`None` on the simulator).
pub(super) fn stream_of(mem: &Member, lane: Lane) -> Option<&Stream> {
    mem.streams.as_ref().map(|s| match lane {
        Lane::A => &s.a,
        Lane::B => &s.b,
    })
}
