//! The express lane: a Barrier goes straight to the flat one, a Bcast of
//! at most one fragment (`f` bytes, 8 KiB by default) in one byte range
//! straight to the queue, a Reduce of as many bytes of a predefined
//! datatype and operation straight to the flat tree, an Allreduce of as
//! many bytes, up to where `auto` runs the `allgather` Allreduce (12 KiB at
//! np=2, 2 KiB else, 16 processes at most), straight to that, a Scan or
//! Exscan of as many bytes straight to the linear Scan, a
//! Reduce_scatter_block of blocks of as many bytes straight to the linear
//! Reduce_scatter (and a Reduce_scatter whose blocks take no more
//! together), and a Gather, Scatter, Allgather or Alltoall, or a Gatherv,
//! Scatterv or Allgatherv, whose blocks travel with their slot headers
//! (`coll::small`: up to 512 bytes each; on two processes an Allgather's
//! and an Alltoall's from 33 bytes go through the pair buffer instead,
//! `coll::pair::MIN_BYTES`) straight to that path, and every
//! Alltoallv straight to `alltoall::alltoall`, without
//! decoding the call into `Args`, routing it, or choosing its algorithm,
//! because all of that was decided once for the communicator
//! (`Express::decide`) when its channel was set up, by the same rules
//! `CommState::route`, `barrier::barrier`, `bcast::bcast`,
//! `reduce::reduce`, `allreduce::allreduce`, `scan::scan`,
//! `reduce_scatter::reduce_scatter_op`, `gather::gather`,
//! `gather::scatter`, `allgather::allgather` and `alltoall::alltoall`
//! apply.  A reduction's datatype and operation facts are kept from one
//! call to the next (`ReduceFacts`), and so is the geometry of predefined
//! datatypes (`Geometries`).
//!
//! Why: for small messages the decisions were most of the call.  An 8-byte
//! Bcast's root ran 789 instructions inside sharm and its reader 687
//! (`bench/hot_path.sh`), where coll/sm's own Bcast runs 213 and 298, and
//! the reader waits for the root's whole path to its publication.  A
//! scratch build that skipped the decisions ran 352 and 220 and took 0.165
//! us instead of 0.300 (coll/sm 0.231; np=2, 4 alternated launches with
//! the cores near, 2026-11-27).  The data movements' 8-byte calls ran
//! 900-1,600 instructions on the ordinary path (2026-11-28, see
//! `movement_call`), the Scans' about 1,000 and Reduce_scatter_block's
//! 1,700 (see `reduction_call`).
//!
//! What may differ per process: only whether its own buffer is one byte
//! range (a datatype of the same signature may not be), its datatype
//! predefined, or (a Gatherv's, Scatterv's or Alltoallv's) whether the
//! blocks it knows of travel with their headers.  The two lanes move the
//! same fragments to the same positions with the same calls
//! (`bcast::one_fragment`, `reduce::tree`, `allreduce::allgather_allreduce`,
//! `scan::linear_scan`, `reduce_scatter::reduce_scatter`,
//! `gather::small_gather`, `gather::small_scatter`, `allgather::express`,
//! `alltoall::express` and `alltoall::alltoall`, after `Shared::untuned`),
//! so a process on each meets the other.
//! Everything else that could send the call elsewhere is agreed and
//! settled here once: the hierarchy, the size limit, a forced algorithm,
//! rules, and the tree `auto` takes; and per call, single copy (from its
//! threshold, agreed too).

use std::ffi::c_void;

use tracing::{debug, trace};

use crate::coll::reduce_scatter::{self, Result::BufferStart};
use crate::coll::reduction::Reduction;
use crate::coll::{allgather, alltoall, gather};
use crate::coll::{allreduce, barrier, bcast, pair, reduce, scan, single_copy_reduce};
use crate::ompi::call::{self, Coll};
use crate::ompi::combine::Combiner;
use crate::ompi::dtype::{self, ReduceLayout};
use crate::ompi::ffi::{self, Call, Dtype, DtypeInfo, Op};
use crate::ompi::params::Algorithm;
use crate::ompi::payload::{RootSide, TypedBuf};
use crate::ompi::stats;
use crate::shm::channel::Shared;
use crate::shm::queue::PREFETCH_MAX_BYTES;

use super::{flat, CommState};

/// What a communicator's express lane takes (decided once, alike on every
/// process: every input is agreed), and the facts of its last reduction.
#[derive(Clone, Debug, Default)]
pub struct Express {
    /// Barriers take it (the flat one).
    barrier: bool,
    /// Bcasts of 1 to this many bytes; 0: none.
    bcast_up_to: usize,
    /// Reduces of 1 to this many bytes; 0: none.
    reduce_up_to: usize,
    /// Allreduces of 1 to this many bytes; 0: none.
    allreduce_up_to: usize,
    /// Scans and Exscans of 1 to this many bytes; 0: none.
    scan_up_to: usize,
    /// Reduce_scatter_blocks whose blocks take 1 to this many bytes; 0:
    /// none.
    block_reduce_scatter_up_to: usize,
    /// p copies of the last Reduce_scatter_block's count, the slices
    /// `reduce_scatter` takes (kept, so that a call allocates nothing).
    equal_counts: Vec<usize>,
    /// The last Reduce_scatter's counts, for the same reason (a list of its
    /// own: the block's list is checked by its first entry alone).
    counts: Vec<usize>,
    /// Gathers, Scatters, Allgathers and Alltoalls whose blocks take 1 to
    /// this many bytes, in that order; 0: none.  An Allgatherv's blocks
    /// are held to the same; a Gatherv or Scatterv takes the lane wherever
    /// its collective may (`v_movement_call`).
    blocks_up_to: [usize; 4],
    /// The last reduction's (Reduce, Allreduce, Scan and Exscan ask the
    /// same facts of their datatype, operation and count).
    reduce_facts: Option<ReduceFacts>,
    /// The data movements' datatypes.
    geometries: Geometries,
}

/// The data movements the lane takes, in the order of `blocks_up_to`.
const MOVEMENTS: [Coll; 4] = [Coll::Gather, Coll::Scatter, Coll::Allgather, Coll::Alltoall];

/// Where `coll` sits in `MOVEMENTS` (and `blocks_up_to`), by one jump on
/// the operation on the call's path (a search of the array cost the later
/// operations up to 30 instructions a call); None for the others.
const fn movement_index(coll: Coll) -> Option<usize> {
    match coll {
        Coll::Gather => Some(0),
        Coll::Scatter => Some(1),
        Coll::Allgather => Some(2),
        Coll::Alltoall => Some(3),
        _ => None,
    }
}

// `movement_index` and `MOVEMENTS` agree, checked when compiling.
const _: () = {
    let mut i = 0;
    while i < MOVEMENTS.len() {
        assert!(matches!(movement_index(MOVEMENTS[i]), Some(at) if at == i));
        i += 1;
    }
};

/// The geometry of the last two predefined datatypes a data movement
/// named, which the ordinary path asks Open MPI for at every call (the
/// handles of predefined datatypes are never freed, so an equal handle
/// names the same datatype; a derived one's address could be reused, so
/// its geometry is asked for every time).
#[derive(Clone, Copy, Debug, Default)]
struct Geometries {
    kept: [Option<(*mut c_void, DtypeInfo)>; 2],
}

impl Geometries {
    #[inline(always)]
    fn of(&mut self, dtype: *mut c_void) -> DtypeInfo {
        if let Some((_, info)) = self.kept.iter().flatten().find(|(d, _)| *d == dtype) {
            return *info;
        }
        let info = Dtype(dtype).info();
        if info.predefined != 0 {
            // The newest first: a call's two datatypes both stay.
            self.kept = [Some((dtype, info)), self.kept[0]];
        }
        info
    }
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
    /// The facts of `call`'s datatype and operation, and of `count`
    /// elements (a Reduce_scatter's: its counts' sum; the others':
    /// `call.rcount`); None when they are not kept (not both predefined),
    /// or the ordinary path must judge the call (it reports what it cannot
    /// reduce).
    fn of(sh: &mut Shared, call: &Call, count: i32) -> Option<ReduceFacts> {
        let (dt, op) = (Dtype(call.rdtype), Op(call.op));
        let info = dt.info();
        let intrinsic = op.intrinsic();
        if info.predefined == 0 || !intrinsic {
            return None;
        }
        let elements = usize::try_from(count).ok()?;
        let layout = ReduceLayout::of(&info, elements, intrinsic).ok()?;
        layout.fits(sh.fragment()).ok()?;
        Some(ReduceFacts {
            dtype: call.rdtype,
            op: call.op,
            count,
            bytes: dtype::message_bytes(&info, count)? as usize,
            layout,
            comb: sh.combiners.get(op, dt, sh.params.reduction_kernels, true),
            commutative: op.commutative(),
        })
    }

    /// `call`'s reduction with these facts (its count: the facts').
    #[inline(always)]
    fn reduction(&self, call: &Call) -> Reduction {
        let in_place = call.sbuf == ffi::in_place();
        Reduction {
            own: if in_place { call.rbuf } else { call.sbuf }.cast(),
            rbuf: call.rbuf.cast(),
            in_place,
            layout: self.layout,
            comb: self.comb,
            commutative: self.commutative,
        }
    }

    fn of_the_same(&self, call: &Call, count: i32) -> bool {
        self.dtype == call.rdtype && self.op == call.op && self.count == count
    }

    /// The kept facts when `call` names the same datatype, operation and
    /// `count`, else new ones, kept (None: as `of`).
    #[inline(always)]
    fn kept(
        kept: &mut Option<ReduceFacts>,
        sh: &mut Shared,
        call: &Call,
        count: i32,
    ) -> Option<ReduceFacts> {
        match *kept {
            Some(facts) if facts.of_the_same(call, count) => Some(facts),
            _ => {
                let facts = ReduceFacts::of(sh, call, count)?;
                *kept = Some(facts);
                Some(facts)
            }
        }
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
        // The most bytes of `coll`'s calls (of each block, for the data
        // movements: `most` of them) the lane takes, or why none; `runs`:
        // whether `auto` runs the lane's algorithm at this process count,
        // and up to how many bytes, or why not.
        let up_to = |coll: Coll, most: usize, runs: Result<usize, &'static str>| {
            let why_not = if hierarchy {
                Err("the hierarchy decides")
            } else if most == 0 {
                Err("coll_sharm_max_message_size leaves no bytes")
            } else if sh.ruled_up_to(coll.ruled_as(), most) {
                Err("a rule speaks for its small calls")
            } else {
                runs.map(|bytes| bytes.min(most))
            };
            // Scan's decisions are Exscan's too (`scan::scan`), and a data
            // movement's its v-variant's (`v_movement_call`).
            let name = match coll {
                Coll::Scan => "MPI_Scan and MPI_Exscan",
                Coll::Gather => "MPI_Gather and MPI_Gatherv",
                Coll::Scatter => "MPI_Scatter and MPI_Scatterv",
                Coll::Allgather => "MPI_Allgather and MPI_Allgatherv",
                Coll::ReduceScatterBlock => "MPI_Reduce_scatter_block and MPI_Reduce_scatter",
                _ => coll.name(),
            };
            match why_not {
                Ok(most) => {
                    let each = if MOVEMENTS.contains(&coll) || coll == Coll::ReduceScatterBlock {
                        " a block"
                    } else {
                        ""
                    };
                    debug!("{label}: express lane for {name} of up to {most} bytes{each}");
                    most
                }
                Err(why) => {
                    debug!("{label}: no express lane for {name} ({why})");
                    0
                }
            }
        };
        // The flat tree, the one the lane runs (a forced or `auto` tree).
        let flat = |coll: Coll, linear_up_to: usize| match sh
            .tree_algorithm(sh.params.algorithm(coll), linear_up_to)
        {
            Algorithm::Linear => Ok(usize::MAX),
            _ => Err("it runs a tree here"),
        };
        // `auto`'s `allgather` Allreduce (a forced algorithm, even
        // `allgather`, is the ordinary path's to run: it has no size limit).
        let allgather = match (
            sh.params.algorithm(Coll::Allreduce),
            allreduce::allgather_up_to(sh),
        ) {
            (Algorithm::Auto, 0) => Err("it runs a tree here"),
            (Algorithm::Auto, bytes) => Ok(bytes),
            _ => Err("coll_sharm_allreduce_algorithm decides"),
        };
        // `auto`'s linear Scan (a forced `linear` too; `scan::scan` runs
        // linear for any algorithm but the chain).
        let linear_scan = match sh.params.algorithm(Coll::Scan) {
            Algorithm::Chain => Err("coll_sharm_scan_algorithm decides"),
            Algorithm::Auto => Ok(scan::auto_linear_up_to(sh)),
            _ => Ok(usize::MAX),
        };
        // Reduce_scatter(_block)'s linear algorithm, unless the other is
        // forced (`reduce_scatter::reduce_scatter_op`).
        let linear_reduce_scatter = match sh.params.algorithm(Coll::ReduceScatter) {
            Algorithm::ReduceThenScatter => Err("coll_sharm_reduce_scatter_algorithm decides"),
            _ => Ok(usize::MAX),
        };
        // The most bytes of each of a call's p blocks the size limit leaves
        // (it counts all p); a block the lane takes is also one fragment.
        let each_of_p = sh
            .params
            .max_message_size
            .map_or(u64::MAX, |max| max / sh.p as u64);
        let fragment_blocks = each_of_p.min(f as u64) as usize;
        // A Barrier moves no bytes: neither the size limit nor a rule's
        // sizes but 0 concern it.
        let barrier_why_not = if hierarchy {
            Some("the hierarchy decides")
        } else if flat(Coll::Barrier, barrier::LINEAR_UP_TO).is_err() {
            Some("it runs a tree here")
        } else if sh.ruled(Coll::Barrier, 0, 0) {
            Some("a rule speaks for it")
        } else {
            None
        };
        match barrier_why_not {
            None => debug!("{label}: express lane for MPI_Barrier"),
            Some(why) => debug!("{label}: no express lane for MPI_Barrier ({why})"),
        }
        // Blocks that travel with their headers: at most
        // `PREFETCH_MAX_BYTES` and one fragment each, and p of them within
        // the size limit.
        let block_most = each_of_p.min(PREFETCH_MAX_BYTES.min(f) as u64) as usize;
        // Gather and Scatter have one algorithm and no rules; Allgather
        // and Alltoall run the path of such blocks under `auto` and
        // `linear` (Alltoall when the ring has a slot per process:
        // `alltoall::small`).
        let movement = |coll: Coll| match (coll, sh.params.algorithm(coll)) {
            (Coll::Gather | Coll::Scatter, _) => Ok(usize::MAX),
            (Coll::Alltoall, _) if sh.p > sh.queues.layout().s => {
                Err("the ring has fewer slots than processes")
            }
            (_, Algorithm::Auto | Algorithm::Linear) => Ok(usize::MAX),
            (Coll::Allgather, _) => Err("coll_sharm_allgather_algorithm decides"),
            _ => Err("coll_sharm_alltoall_algorithm decides"),
        };
        Express {
            barrier: barrier_why_not.is_none(),
            bcast_up_to: up_to(Coll::Bcast, most, flat(Coll::Bcast, bcast::LINEAR_UP_TO)),
            reduce_up_to: up_to(Coll::Reduce, most, flat(Coll::Reduce, reduce::LINEAR_UP_TO)),
            allreduce_up_to: up_to(Coll::Allreduce, most, allgather),
            scan_up_to: up_to(Coll::Scan, most, linear_scan),
            block_reduce_scatter_up_to: up_to(
                Coll::ReduceScatterBlock,
                fragment_blocks,
                linear_reduce_scatter,
            ),
            equal_counts: Vec::new(),
            counts: Vec::new(),
            blocks_up_to: MOVEMENTS.map(|coll| up_to(coll, block_most, movement(coll))),
            reduce_facts: None,
            geometries: Geometries::default(),
        }
    }

    /// Whether any call may take the lane.
    pub fn open(&self) -> bool {
        self.barrier
            || self.bcast_up_to > 0
            || self.reduce_up_to > 0
            || self.allreduce_up_to > 0
            || self.scan_up_to > 0
            || self.block_reduce_scatter_up_to > 0
            || self.blocks_up_to.iter().any(|&b| b > 0)
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
    // One jump on the operation (a chain of comparisons cost the later
    // operations in it up to 30 instructions a call); the calls that never
    // qualify pay no more than that, and the calls with counts per process
    // have their own entry (`run_counted`).
    let coll = Coll::from_raw(call.coll)?;
    if matches!(
        coll,
        Coll::Gatherv | Coll::Scatterv | Coll::Allgatherv | Coll::Alltoallv | Coll::ReduceScatter
    ) {
        return None;
    }
    let movement = movement_index(coll);
    let (sh, lane) = st.express()?;
    // SAFETY (block): forwarded contract.
    unsafe {
        match coll {
            Coll::Barrier => barrier_call(sh, lane),
            Coll::Bcast => bcast_call(sh, lane, call),
            _ => match movement {
                Some(which) => movement_call(sh, lane, call, which),
                None => reduction_call(sh, lane, call, coll),
            },
        }
    }
}

/// `run` for the calls with counts per process: a Gatherv, Scatterv or
/// Allgatherv (`v_movement_call`), an Alltoallv (`alltoallv_call`) or a
/// Reduce_scatter (`reduce_scatter_call`); None for any other call.  A second entry, out
/// of line, tried after `run`: with these calls in `run` (even as a call
/// out of line), the other calls on the lane ran 13-25 instructions more
/// (`bench/hot_path.sh`, np=2, 8 bytes).
///
/// # Safety
/// As `run`.
#[inline(never)]
pub unsafe fn run_counted(st: &mut CommState, call: &Call) -> Option<i32> {
    let coll = Coll::from_raw(call.coll)?;
    if !matches!(
        coll,
        Coll::Gatherv | Coll::Scatterv | Coll::Allgatherv | Coll::Alltoallv | Coll::ReduceScatter
    ) {
        return None;
    }
    let (sh, lane) = st.express()?;
    // SAFETY (block): forwarded contract.
    unsafe {
        match coll {
            Coll::ReduceScatter => reduce_scatter_call(sh, lane, call),
            Coll::Alltoallv => alltoallv_call(sh, lane, call),
            _ => v_movement_call(sh, lane, call, coll),
        }
    }
}

/// The side of a v-variant whose p blocks lie in `whole` as the call's
/// `counts` and `displs` say.
///
/// # Safety
/// `counts` and `displs` address p integers that outlive the call.
unsafe fn counted_side<'a>(
    whole: TypedBuf,
    counts: *const i32,
    displs: *const i32,
    p: usize,
) -> RootSide<'a> {
    RootSide {
        whole,
        count: 0,
        // SAFETY: forwarded contract.
        counts: Some(unsafe { (call::ints(counts, p), call::ints(displs, p)) }),
    }
}

/// `run_counted` for an Alltoallv: its two sides, with their counts, from
/// the kept geometries, straight to `alltoall::alltoall`, which is what the
/// ordinary path runs for any Alltoallv on a communicator whose lane is
/// open (it applies no size limit, rule or algorithm of its own to one:
/// the sizes are not known alike, and `alltoall` runs pairwise whatever is
/// chosen).  So the lane decides nothing here; it skips the decoding and
/// the route, and counts single copy as `flat::run` does.
///
/// # Safety
/// As `run`; the counts and displacements are p integers.
#[inline(always)]
unsafe fn alltoallv_call(sh: &mut Shared, lane: &mut Express, call: &Call) -> Option<i32> {
    let p = sh.p;
    let (send, recv) = lane.geometries.buffers(call, Coll::Alltoall, false);
    // SAFETY: the counts and displacements are p integers (contract).
    let side = |whole, counts, displs| unsafe { counted_side(whole, counts, displs, p) };
    let recv = side(recv?, call.rcounts, call.rdispls);
    let send = send.map(|buf| side(buf, call.scounts, call.sdispls));
    stats::served(Coll::Alltoallv);
    trace!("MPI_Alltoallv on {p} processes takes the express lane");
    let done = alltoall::alltoall(sh, send.as_ref(), &recv, false);
    flat::count_routes(sh, Coll::Alltoallv);
    Some(if done { ffi::success() } else { ffi::error() })
}

/// `run` for a Barrier.
#[inline]
fn barrier_call(sh: &mut Shared, lane: &Express) -> Option<i32> {
    if !lane.barrier {
        return None;
    }
    stats::served(Coll::Barrier);
    trace!(
        "MPI_Barrier on {} processes runs Linear (express lane)",
        sh.p
    );
    barrier::linear(sh);
    Some(ffi::success())
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

/// `run` for a Reduce, Allreduce, Scan, Exscan or Reduce_scatter_block
/// (`coll`; the last one's count and bytes are a block's).
///
/// np=2, instructions per 8-byte call inside sharm (`bench/hot_path.sh`,
/// 2026-11-28, each process), on the ordinary path and here: Scan
/// 1,032/1,054 and 699/719, Exscan 1,015/933 and 684/601,
/// Reduce_scatter_block 1,706/1,694 and 1,266/1,255.
///
/// # Safety
/// As `run`.
#[inline(always)]
unsafe fn reduction_call(
    sh: &mut Shared,
    lane: &mut Express,
    call: &Call,
    coll: Coll,
) -> Option<i32> {
    let up_to = match coll {
        Coll::Reduce => lane.reduce_up_to,
        Coll::Allreduce => lane.allreduce_up_to,
        Coll::ReduceScatterBlock => lane.block_reduce_scatter_up_to,
        _ => lane.scan_up_to,
    };
    if up_to == 0 || call.rcount as usize > up_to {
        return None;
    }
    let facts = ReduceFacts::kept(&mut lane.reduce_facts, sh, call, call.rcount)?;
    if facts.bytes == 0 || facts.bytes > up_to {
        return None;
    }
    let red = facts.reduction(call);
    // Single copy takes over only under `auto` (`reduce::reduce`,
    // `allreduce::allreduce`); the Allreduce lane is `auto`'s alone.  The
    // Scans and Reduce_scatter have no single-copy path.
    if matches!(coll, Coll::Reduce | Coll::Allreduce)
        && sh.params.algorithm(coll) == Algorithm::Auto
        && single_copy_reduce::applies(sh, &red)
    {
        return None;
    }
    stats::served(coll);
    sh.untuned();
    match coll {
        Coll::Reduce => reduce_call(sh, &red, call.root as usize),
        Coll::Allreduce => {
            trace!(
                "MPI_Allreduce on {} processes runs Allgather (express lane)",
                sh.p
            );
            // Two processes: its exchange through the pair buffer.
            if pair::takes_allreduce(sh, &red, facts.bytes) {
                pair::allreduce(sh, &red);
            } else {
                allreduce::allgather_allreduce(sh, &red);
            }
        }
        _ => scan_or_reduce_scatter(sh, &mut lane.equal_counts, red, coll),
    }
    flat::count_routes(sh, coll);
    Some(ffi::success())
}

/// The Reduce's end of `reduction_call`: on two processes under `auto`,
/// through the pair buffer where it takes the vector
/// (`pair::reduce_route`, as `reduce::reduce` decides), else the flat
/// tree.  Out of line, as `scan_or_reduce_scatter`.
#[inline(never)]
fn reduce_call(sh: &mut Shared, red: &Reduction, root: usize) {
    let route = match sh.params.algorithm(Coll::Reduce) {
        Algorithm::Auto => pair::reduce_route(sh, red),
        _ => None,
    };
    match route {
        Some(route) => {
            trace!(
                "MPI_Reduce on {} processes runs {route:?} through the pair buffer (express lane)",
                sh.p
            );
            pair::reduce_exchange(sh, red, root, route);
        }
        None => {
            trace!(
                "MPI_Reduce on {} processes runs Linear (express lane)",
                sh.p
            );
            reduce::tree(sh, red, Algorithm::Linear, root);
        }
    }
}

/// The Scans' and Reduce_scatter_block's end of `reduction_call`, out of
/// line: with them inline, `reduction_call` no longer fitted into the
/// entry, and the Reduce's and Allreduce's calls paid about 40
/// instructions more (`bench/hot_path.sh`, 2026-11-28).  `red` has a
/// Reduce_scatter_block's block as its layout's count; `equal_counts` is
/// the lane's.
#[inline(never)]
fn scan_or_reduce_scatter(
    sh: &mut Shared,
    equal_counts: &mut Vec<usize>,
    mut red: Reduction,
    coll: Coll,
) {
    let p = sh.p;
    if coll != Coll::ReduceScatterBlock {
        trace!(
            "{} on {p} processes runs Linear (express lane)",
            coll.name()
        );
        scan::linear_scan(sh, &red, coll == Coll::Scan);
        return;
    }
    trace!("MPI_Reduce_scatter_block on {p} processes runs Linear (express lane)");
    let count = red.layout.count;
    if equal_counts.len() != p || equal_counts[0] != count {
        *equal_counts = vec![count; p];
    }
    // It reduces p blocks (no overflow: a block is at most a fragment, and
    // p at most `MAX_PROCS`).
    red.layout.count = count * p;
    reduce_scatter::reduce_scatter(sh, &red, equal_counts, BufferStart);
}

/// `run` for a Reduce_scatter: Reduce_scatter_block's lane (the same
/// function, `reduce_scatter::reduce_scatter`, the same algorithm and
/// rules), for p counts that take at most p of its blocks together.  So
/// their sum is within the size limit the ordinary path applies, and their
/// average, which its rules see, within the bytes no rule speaks for.
///
/// # Safety
/// As `run`; the counts are p integers.
#[inline(never)]
unsafe fn reduce_scatter_call(sh: &mut Shared, lane: &mut Express, call: &Call) -> Option<i32> {
    let up_to = lane.block_reduce_scatter_up_to;
    if up_to == 0 {
        return None;
    }
    let p = sh.p;
    // SAFETY: the counts are significant everywhere: p integers (contract).
    let counts = unsafe { call::ints(call.rcounts, p) };
    // A negative count is left to the ordinary path, which says why.
    let total = counts.iter().try_fold(0i32, |sum, &c| {
        (c >= 0).then(|| sum.checked_add(c)).flatten()
    })?;
    let facts = ReduceFacts::kept(&mut lane.reduce_facts, sh, call, total)?;
    if facts.bytes == 0 || facts.bytes > up_to * p {
        return None;
    }
    let red = facts.reduction(call);
    stats::served(Coll::ReduceScatter);
    sh.untuned();
    trace!("MPI_Reduce_scatter on {p} processes runs Linear (express lane)");
    lane.counts.clear();
    lane.counts.extend(counts.iter().map(|&c| c as usize));
    reduce_scatter::reduce_scatter(sh, &red, &lane.counts, BufferStart);
    Some(ffi::success())
}

/// `run` for a Gather, Scatter, Allgather or Alltoall (`MOVEMENTS[which]`):
/// the typed buffers the ordinary path would decode, from the kept
/// geometries, handed to the path of blocks that travel with their headers
/// (which checks that they do, and does nothing when they do not).
///
/// np=2, instructions per 8-byte call inside sharm on the ordinary path
/// (`bench/hot_path.sh`, 2026-11-28): Gather 1,172 at the root and 894
/// at the sender, Scatter 1,024 and 753, Allgather 1,418, Alltoall 1,584.
///
/// # Safety
/// As `run`.
#[inline(always)]
unsafe fn movement_call(
    sh: &mut Shared,
    lane: &mut Express,
    call: &Call,
    which: usize,
) -> Option<i32> {
    let up_to = lane.blocks_up_to[which];
    if up_to == 0 {
        return None;
    }
    let coll = MOVEMENTS[which];
    let (me, p) = (sh.me, sh.p);
    let root = call.root as usize;
    let in_place = |ptr: *const c_void| ptr == ffi::in_place();
    let (sdt, rdt) = (Dtype(call.sdtype), Dtype(call.rdtype));
    // Only the buffers significant at this process: a non-root's receive
    // side of a Gather (send side of a Scatter) may name any datatype.
    // (`Geometries::buffers` says the same; written out here, the calls
    // keep 12-17 instructions that the helper's inlining costs them:
    // Gather 771/714 against 754/699, Alltoall 1255 against 1241.)
    let sends = match coll {
        Coll::Scatter => me == root,
        _ => !in_place(call.sbuf),
    };
    let receives = match coll {
        Coll::Gather => me == root,
        Coll::Scatter => !in_place(call.rbuf),
        _ => true,
    };
    let send = sends.then(|| {
        let info = lane.geometries.of(call.sdtype);
        TypedBuf::with_info(call.sbuf.cast(), call.scount, sdt, info)
    });
    let recv = receives.then(|| {
        let info = lane.geometries.of(call.rdtype);
        TypedBuf::with_info(call.rbuf.cast(), call.rcount, rdt, info)
    });
    let side = |whole: TypedBuf| RootSide {
        whole,
        count: whole.count,
        counts: None,
    };
    // The block every process knows the size of (`Args::shared_bytes`
    // counts p of them).
    let block = match coll {
        Coll::Gather if me != root => send,
        Coll::Scatter if me == root => send,
        Coll::Allgather | Coll::Alltoall if send.is_some() => send,
        _ => recv,
    }?;
    let bytes = block.bytes();
    if bytes == 0 || bytes > up_to {
        return None;
    }
    // Gather's and Scatter's `choose` does no more; Allgather's and
    // Alltoall's settled `auto` or `linear` with no rule (`decide`).
    sh.untuned();
    // A non-root's side of the root's blocks is not used: its own block
    // stands in.  A non-root without its own block (MPI_IN_PLACE, which is
    // erroneous there) is left to the ordinary path.
    let done = match coll {
        Coll::Gather => {
            let (own, all) = if me == root {
                (send, recv?)
            } else {
                (Some(send?), send?)
            };
            gather::small_gather(sh, own, &side(all), root)
        }
        Coll::Scatter => {
            let (own, all) = if me == root {
                (recv, send?)
            } else {
                (Some(recv?), recv?)
            };
            gather::small_scatter(sh, own, &side(all), root)
        }
        Coll::Allgather => allgather::express(sh, send, &side(recv?)),
        _ => alltoall::express(sh, &side(send?), &side(recv?)),
    }?;
    stats::served(coll);
    flat::count_routes(sh, coll);
    trace!(
        "{} on {p} processes runs Linear (express lane)",
        coll.name()
    );
    Some(if done { ffi::success() } else { ffi::error() })
}

impl Geometries {
    /// The send and receive buffers of a data movement `coll` (or its
    /// v-variant: the whole buffer of a side with counts, whose count is
    /// not used) that are significant at this process (`at_root`: it is
    /// the root), from the kept geometries: a non-root's receive side of a
    /// Gather (send side of a Scatter) may name any datatype, and
    /// MPI_IN_PLACE names none.
    #[inline(always)]
    fn buffers(
        &mut self,
        call: &Call,
        coll: Coll,
        at_root: bool,
    ) -> (Option<TypedBuf>, Option<TypedBuf>) {
        let in_place = |ptr: *const c_void| ptr == ffi::in_place();
        let sends = match coll {
            Coll::Scatter => at_root,
            _ => !in_place(call.sbuf),
        };
        let receives = match coll {
            Coll::Gather => at_root,
            Coll::Scatter => !in_place(call.rbuf),
            _ => true,
        };
        let send = sends.then(|| {
            let info = self.of(call.sdtype);
            TypedBuf::with_info(call.sbuf.cast(), call.scount, Dtype(call.sdtype), info)
        });
        let recv = receives.then(|| {
            let info = self.of(call.rdtype);
            TypedBuf::with_info(call.rbuf.cast(), call.rcount, Dtype(call.rdtype), info)
        });
        (send, recv)
    }
}

/// `run` for a Gatherv, Scatterv or Allgatherv (`called`): the path of
/// blocks that travel with their headers that `movement_call` takes for
/// their collective, with the call's counts.
///
/// An Allgatherv's p blocks are checked one by one: each within the lane's
/// bytes keeps them within the size limit the ordinary path applies to
/// their sum.  A Gatherv or Scatterv has no such limit there (its sizes
/// are not known alike), so the lane checks no more than the small path
/// does itself (`small_start`): what the ordinary path would run, it runs.
/// A process whose blocks do not travel with their headers goes the
/// ordinary path, which moves the same blocks to the same positions, so it
/// meets the others.
///
/// # Safety
/// As `run`; the counts and displacements are p integers where they are
/// significant.
#[inline(always)]
unsafe fn v_movement_call(
    sh: &mut Shared,
    lane: &mut Express,
    call: &Call,
    called: Coll,
) -> Option<i32> {
    let coll = match called {
        Coll::Gatherv => Coll::Gather,
        Coll::Scatterv => Coll::Scatter,
        _ => Coll::Allgather,
    };
    let up_to = lane.blocks_up_to[movement_index(coll)?];
    if up_to == 0 {
        return None;
    }
    let (me, p) = (sh.me, sh.p);
    let root = call.root as usize;
    let (send, recv) = lane.geometries.buffers(call, coll, me == root);
    // SAFETY: where a side with counts is significant, its counts and
    // displacements are p integers (contract).
    let counted = |whole, counts, displs| unsafe { counted_side(whole, counts, displs, p) };
    // A non-root's own block, standing for the root's side (not used).
    let own = |block: TypedBuf| RootSide {
        whole: block,
        count: block.count,
        counts: None,
    };
    // Gather's and Scatter's `choose` does no more; Allgatherv runs linear
    // whatever Allgather's algorithm and rules say.
    sh.untuned();
    let done = match called {
        Coll::Gatherv if me == root => {
            gather::small_gather(sh, send, &counted(recv?, call.rcounts, call.rdispls), root)
        }
        Coll::Gatherv => gather::small_gather(sh, send, &own(send?), root),
        Coll::Scatterv if me == root => {
            gather::small_scatter(sh, recv, &counted(send?, call.scounts, call.sdispls), root)
        }
        Coll::Scatterv => gather::small_scatter(sh, recv, &own(recv?), root),
        _ => {
            let all = counted(recv?, call.rcounts, call.rdispls);
            let within = |r: usize| (1..=up_to).contains(&all.block(r).bytes());
            if !(0..p).all(within) {
                return None;
            }
            allgather::express(sh, send, &all)
        }
    }?;
    stats::served(called);
    flat::count_routes(sh, called);
    trace!(
        "{} on {p} processes runs Linear (express lane)",
        called.name()
    );
    Some(if done { ffi::success() } else { ffi::error() })
}
