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
}

impl Coll {
    pub fn name(self) -> &'static str {
        match self {
            Coll::Barrier => "MPI_Barrier",
            Coll::Bcast => "MPI_Bcast",
            Coll::Reduce => "MPI_Reduce",
            Coll::Allreduce => "MPI_Allreduce",
        }
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
