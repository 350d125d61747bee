//! The express lane: a Bcast of at most one fragment (`f` bytes, 8 KiB by
//! default) in one byte range goes straight to the queue, without decoding
//! the call into `Args`, routing it, or choosing its algorithm, because all
//! of that was decided once for the communicator (`Express::decide`) when
//! its channel was set up, by the same rules `CommState::route` and
//! `bcast::bcast` apply.
//!
//! Why: for small messages the decisions were most of the call.  An 8-byte
//! Bcast's root ran 789 instructions inside sharm and its reader 687
//! (`bench/hot_path.sh`), where coll/sm's own Bcast runs 213 and 298, and
//! the reader waits for the root's whole path to its publication.  A
//! scratch build that skipped the decisions ran 352 and 220 and took 0.165
//! us instead of 0.300 (coll/sm 0.231; np=2, 4 alternated launches with
//! the cores near, 2026-11-27).
//!
//! What may differ per process: only whether its own buffer is one byte
//! range (a datatype of the same signature may not be).  The two lanes move
//! the same fragment to the same position with the same calls
//! (`bcast::one_fragment`), so a process on each meets the other.
//! Everything else that could send the call elsewhere is agreed and
//! settled here once: the hierarchy, the size limit, a forced algorithm,
//! rules, and the tree `auto` takes; and per call, single copy (from its
//! threshold, agreed too).

use tracing::{debug, trace};

use crate::coll::bcast;
use crate::ompi::call::Coll;
use crate::ompi::ffi::{self, Call, Dtype};
use crate::ompi::params::Algorithm;
use crate::ompi::payload::TypedBuf;
use crate::ompi::stats;
use crate::shm::channel::Shared;

use super::CommState;

/// What a communicator's express lane takes (decided once, alike on every
/// process: every input is agreed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Express {
    /// Bcasts of 1 to this many bytes; 0: none.
    bcast_up_to: usize,
}

impl Express {
    /// The lane of the channel `sh`; `hierarchy`: the communicator's calls
    /// may go through its hierarchy (then none take the lane: the route
    /// decides per call).
    pub fn decide(sh: &Shared, hierarchy: bool, label: &str) -> Express {
        let f = sh.fragment();
        let most = sh
            .params
            .max_message_size
            .map_or(f as u64, |max| max.min(f as u64)) as usize;
        let flat = sh.tree_algorithm(sh.params.algorithm(Coll::Bcast), bcast::LINEAR_UP_TO)
            == Algorithm::Linear;
        let why_not = if hierarchy {
            Some("the hierarchy decides")
        } else if most == 0 {
            Some("coll_sharm_max_message_size is 0")
        } else if !flat {
            Some("Bcast runs a tree here")
        } else if sh.ruled_up_to(Coll::Bcast, most) {
            Some("a rule speaks for small Bcasts")
        } else {
            None
        };
        match why_not {
            None => {
                debug!("{label}: express lane for Bcasts of up to {most} bytes");
                Express { bcast_up_to: most }
            }
            Some(why) => {
                debug!("{label}: no express lane ({why})");
                Express::default()
            }
        }
    }

    /// Whether any call may take the lane.
    pub fn open(self) -> bool {
        self.bcast_up_to > 0
    }
}

/// Runs `call` on the express lane when it qualifies, and returns its
/// return code; None sends it down the ordinary path.
///
/// # Safety
/// `call` is a call Open MPI made on the communicator of `st`, with the
/// application's (validated) arguments.
#[inline]
pub unsafe fn run(st: &mut CommState, call: &Call) -> Option<i32> {
    // The cheapest tests first: the calls that never qualify pay one
    // comparison, and large Bcasts two more (a count above the lane's
    // bytes is above them in any datatype that holds data; asking the
    // datatype costs a call into the glue).  Out of line, the rest cost
    // a qualifying Bcast 24 more instructions and the others no fewer.
    if call.coll != Coll::Bcast as i32 {
        return None;
    }
    let (sh, lane) = st.express()?;
    if call.rcount as usize > lane.bcast_up_to {
        return None;
    }
    let buf = TypedBuf::new(call.rbuf.cast(), call.rcount, Dtype(call.rdtype));
    let bytes = buf.bytes();
    // Zero bytes take the route's own shortcut; larger calls, and a stream
    // single copy would take (its threshold is the user's), the ordinary
    // path.
    if bytes == 0 || bytes > lane.bcast_up_to || sh.single_copy(bytes) {
        return None;
    }
    let at = buf.byte_range()?;
    stats::served(Coll::Bcast);
    trace!("MPI_Bcast on {} processes runs Linear (express lane)", sh.p);
    // SAFETY: a valid MPI buffer of `bytes` bytes in one byte range from
    // `at`; the root (validated by Open MPI) is a rank of the channel.
    unsafe { bcast::one_fragment(sh, at, bytes, call.root as usize) };
    Some(ffi::success())
}
