//! Per-process counters of served and handed-over calls, readable as MPI_T
//! performance variables `coll_sharm_<op>_served` / `coll_sharm_<op>_fallbacks` /
//! `coll_sharm_<op>_hierarchical` (registered by the glue; index = 3·op + kind),
//! and `coll_sharm_<op>_single_copy` (index = 3·COLLS + op, after the others).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::ompi::call::{Coll, COLLS};

/// Kinds of counter per collective, in the glue's order.
const KINDS: usize = 3;

static COUNTERS: [AtomicU64; KINDS * COLLS] = [const { AtomicU64::new(0) }; KINDS * COLLS];

/// A call sharm served (flat or hierarchical).
pub fn served(c: Coll) {
    COUNTERS[KINDS * c as usize].fetch_add(1, Ordering::Relaxed);
}

/// A call handed to the next component.
pub fn fallback(c: Coll) {
    COUNTERS[KINDS * c as usize + 1].fetch_add(1, Ordering::Relaxed);
}

/// A served call that went through the hierarchy (also counted as served).
pub fn hierarchical(c: Coll) {
    COUNTERS[KINDS * c as usize + 2].fetch_add(1, Ordering::Relaxed);
}

static SINGLE_COPY: [AtomicU64; COLLS] = [const { AtomicU64::new(0) }; COLLS];

/// A served call in which this process moved data by single copy.
pub fn single_copy(c: Coll) {
    SINGLE_COPY[c as usize].fetch_add(1, Ordering::Relaxed);
}

/// Counter `index` (0 for an unknown index).
pub fn read(index: usize) -> u64 {
    let counter = match index.checked_sub(KINDS * COLLS) {
        None => COUNTERS.get(index),
        Some(i) => SINGLE_COPY.get(i),
    };
    counter.map_or(0, |c| c.load(Ordering::Relaxed))
}
