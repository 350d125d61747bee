//! The express lane: a Bcast of at most one fragment (`f` bytes, 8 KiB by
//! default) in one byte range goes straight to the queue, and a Reduce of
//! as many bytes of a predefined datatype and operation straight to the
//! flat tree, without decoding the call into `Args`, routing it, or
//! choosing its algorithm, because all of that was decided once for the
//! communicator (`Express::decide`) when its channel was set up, by the
//! same rules `CommState::route`, `bcast::bcast` and `reduce::reduce`
//! apply.  A Reduce's datatype and operation facts are kept from one call
//! to the next (`ReduceFacts`).
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
//! range (a datatype of the same signature may not be), or its datatype
//! predefined.  The two lanes move the same fragments to the same positions
//! with the same calls (`bcast::one_fragment`, `reduce::tree` after
//! `Shared::untuned`), so a process on each meets the other.
//! Everything else that could send the call elsewhere is agreed and
//! settled here once: the hierarchy, the size limit, a forced algorithm,
//! rules, and the tree `auto` takes; and per call, single copy (from its
//! threshold, agreed too).

use std::ffi::c_void;

use tracing::{debug, trace};

use crate::coll::reduction::Reduction;
use crate::coll::{bcast, reduce, single_copy_reduce};
use crate::ompi::call::Coll;
use crate::ompi::combine::Combiner;
use crate::ompi::dtype::{self, ReduceLayout};
use crate::ompi::ffi::{self, Call, Dtype, Op};
use crate::ompi::params::Algorithm;
use crate::ompi::payload::TypedBuf;
use crate::ompi::stats;
use crate::shm::channel::Shared;

use super::CommState;

/// What a communicator's express lane takes (decided once, alike on every
/// process: every input is agreed), and the facts of its last Reduce.
#[derive(Clone, Copy, Debug, Default)]
pub struct Express {
    /// Bcasts of 1 to this many bytes; 0: none.
    bcast_up_to: usize,
    /// Reduces of 1 to this many bytes; 0: none.
    reduce_up_to: usize,
    reduce_facts: Option<ReduceFacts>,
}

/// What a Reduce needs to know of its datatype, operation and count, which
/// the ordinary path asks Open MPI for at every call.  Kept only for a
/// predefined datatype and operation: their handles are never freed, so a
/// later call with equal handles names the same objects (a derived
/// datatype's address could be reused by another one).
#[derive(Clone, Copy, Debug)]
struct ReduceFacts {
    dtype: *mut c_void,
    op: *mut c_void,
    count: i32,
    bytes: usize,
    layout: ReduceLayout,
    comb: Combiner,
    commutative: bool,
}

impl ReduceFacts {
    /// The facts of `call`'s datatype, operation and count; None when they
    /// are not kept (not both predefined), or the ordinary path must judge
    /// the call (it reports what it cannot reduce).
    fn of(sh: &mut Shared, call: &Call) -> Option<ReduceFacts> {
        let (dt, op) = (Dtype(call.rdtype), Op(call.op));
        let info = dt.info();
        let intrinsic = op.intrinsic();
        if info.predefined == 0 || !intrinsic {
            return None;
        }
        let count = usize::try_from(call.rcount).ok()?;
        let layout = ReduceLayout::of(&info, count, intrinsic).ok()?;
        layout.fits(sh.fragment()).ok()?;
        Some(ReduceFacts {
            dtype: call.rdtype,
            op: call.op,
            count: call.rcount,
            bytes: dtype::message_bytes(&info, call.rcount)? as usize,
            layout,
            comb: sh.combiners.get(op, dt, sh.params.reduction_kernels, true),
            commutative: op.commutative(),
        })
    }

    fn of_the_same(&self, call: &Call) -> bool {
        self.dtype == call.rdtype && self.op == call.op && self.count == call.rcount
    }
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
        // The most bytes of `coll`'s calls the lane takes, or why none.
        let up_to = |coll: Coll, linear_up_to: usize| {
            let flat =
                sh.tree_algorithm(sh.params.algorithm(coll), linear_up_to) == Algorithm::Linear;
            let why_not = if hierarchy {
                Some("the hierarchy decides")
            } else if most == 0 {
                Some("coll_sharm_max_message_size is 0")
            } else if !flat {
                Some("it runs a tree here")
            } else if sh.ruled_up_to(coll, most) {
                Some("a rule speaks for its small calls")
            } else {
                None
            };
            match why_not {
                None => {
                    debug!(
                        "{label}: express lane for {} of up to {most} bytes",
                        coll.name()
                    );
                    most
                }
                Some(why) => {
                    debug!("{label}: no express lane for {} ({why})", coll.name());
                    0
                }
            }
        };
        Express {
            bcast_up_to: up_to(Coll::Bcast, bcast::LINEAR_UP_TO),
            reduce_up_to: up_to(Coll::Reduce, reduce::LINEAR_UP_TO),
            reduce_facts: None,
        }
    }

    /// Whether any call may take the lane.
    pub fn open(&self) -> bool {
        self.bcast_up_to > 0 || self.reduce_up_to > 0
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
    // The calls that never qualify pay two comparisons.
    let bcast = call.coll == Coll::Bcast as i32;
    if !bcast && call.coll != Coll::Reduce as i32 {
        return None;
    }
    let (sh, lane) = st.express()?;
    // SAFETY: forwarded contract.
    unsafe {
        if bcast {
            bcast_call(sh, lane, call)
        } else {
            reduce_call(sh, lane, call)
        }
    }
}

/// `run` for a Bcast.
///
/// # Safety
/// As `run`.
#[inline]
unsafe fn bcast_call(sh: &mut Shared, lane: &Express, call: &Call) -> Option<i32> {
    // A count above the lane's bytes is above them in any datatype that
    // holds data: large Bcasts do not ask the datatype (a call into the
    // glue).
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

/// `run` for a Reduce.
///
/// # Safety
/// As `run`.
#[inline]
unsafe fn reduce_call(sh: &mut Shared, lane: &mut Express, call: &Call) -> Option<i32> {
    if lane.reduce_up_to == 0 || call.rcount as usize > lane.reduce_up_to {
        return None;
    }
    let facts = match lane.reduce_facts {
        Some(facts) if facts.of_the_same(call) => facts,
        _ => {
            let facts = ReduceFacts::of(sh, call)?;
            lane.reduce_facts = Some(facts);
            facts
        }
    };
    if facts.bytes == 0 || facts.bytes > lane.reduce_up_to {
        return None;
    }
    let in_place = call.sbuf == ffi::in_place();
    let red = Reduction {
        own: if in_place { call.rbuf } else { call.sbuf }.cast(),
        rbuf: call.rbuf.cast(),
        in_place,
        layout: facts.layout,
        comb: facts.comb,
        commutative: facts.commutative,
    };
    // Single copy takes over only under `auto` (`reduce::reduce`).
    if sh.params.algorithm(Coll::Reduce) == Algorithm::Auto && single_copy_reduce::applies(sh, &red)
    {
        return None;
    }
    stats::served(Coll::Reduce);
    trace!(
        "MPI_Reduce on {} processes runs Linear (express lane)",
        sh.p
    );
    sh.untuned();
    reduce::tree(sh, &red, Algorithm::Linear, call.root as usize);
    Some(ffi::success())
}
