//! Per-process counters of served and handed-over calls, readable as MPI_T
//! performance variables `coll_sharm_<op>_served` / `coll_sharm_<op>_fallbacks`
//! (registered by the glue; index = 2·op + kind).

use std::sync::atomic::{AtomicU64, Ordering};

/// Collective operations, in the order of `enum sharm_coll` in sharm_glue.h.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Coll {
    Barrier = 0,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    ReduceScatterBlock,
    ReduceScatter,
    Scan,
    Exscan,
}

const ALL: [Coll; COLLS] = [
    Coll::Barrier,
    Coll::Bcast,
    Coll::Reduce,
    Coll::Allreduce,
    Coll::Gather,
    Coll::Gatherv,
    Coll::Scatter,
    Coll::Scatterv,
    Coll::Allgather,
    Coll::Allgatherv,
    Coll::Alltoall,
    Coll::Alltoallv,
    Coll::ReduceScatterBlock,
    Coll::ReduceScatter,
    Coll::Scan,
    Coll::Exscan,
];

const NAMES: [&str; COLLS] = [
    "MPI_Barrier",
    "MPI_Bcast",
    "MPI_Reduce",
    "MPI_Allreduce",
    "MPI_Gather",
    "MPI_Gatherv",
    "MPI_Scatter",
    "MPI_Scatterv",
    "MPI_Allgather",
    "MPI_Allgatherv",
    "MPI_Alltoall",
    "MPI_Alltoallv",
    "MPI_Reduce_scatter_block",
    "MPI_Reduce_scatter",
    "MPI_Scan",
    "MPI_Exscan",
];

impl Coll {
    pub fn from_raw(v: i32) -> Option<Coll> {
        ALL.get(usize::try_from(v).ok()?).copied()
    }

    pub fn name(self) -> &'static str {
        NAMES[self as usize]
    }
}

/// Number of collectives the glue registers counters for (SHARM_COLL_COUNT).
const COLLS: usize = 16;

static COUNTERS: [AtomicU64; 2 * COLLS] = [const { AtomicU64::new(0) }; 2 * COLLS];

pub fn served(c: Coll) {
    COUNTERS[2 * c as usize].fetch_add(1, Ordering::Relaxed);
}

pub fn fallback(c: Coll) {
    COUNTERS[2 * c as usize + 1].fetch_add(1, Ordering::Relaxed);
}

/// Counter `index` (0 for an unknown index).
pub fn read(index: usize) -> u64 {
    COUNTERS.get(index).map_or(0, |c| c.load(Ordering::Relaxed))
}
