//! Per-process counters of served and handed-over calls, readable as MPI_T
//! performance variables `coll_sharm_<op>_served` / `coll_sharm_<op>_fallbacks` /
//! `coll_sharm_<op>_hierarchical` (registered by the glue; index = 3·op + kind),
//! and `coll_sharm_<op>_single_copy` (index = 3·COLLS + op, after the others);
//! then the traffic counters of this process, over all collectives
//! (index = 4·COLLS + `Traffic`): messages and bytes sent through Open MPI's
//! PML, the part of them addressed to another node, and fragments and bytes
//! published into shared-memory queues (or offered there for single copy).
//! The benchmark reads them before and after each measurement to show how
//! much each level of the hierarchy carried.

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

/// Traffic counters, in the glue's order (`traffic_names` in component.c).
#[derive(Clone, Copy)]
enum Traffic {
    PmlMessages,
    PmlBytes,
    InterNodeMessages,
    InterNodeBytes,
    ShmMessages,
    ShmBytes,
}

const TRAFFIC: usize = 6;

static TRAFFIC_COUNTERS: [AtomicU64; TRAFFIC] = [const { AtomicU64::new(0) }; TRAFFIC];

fn add(t: Traffic, n: usize) {
    TRAFFIC_COUNTERS[t as usize].fetch_add(n as u64, Ordering::Relaxed);
}

/// One message of `bytes` sent through the PML; `remote`: to a process on
/// another node (as Open MPI sees nodes, not virtual ones).
pub fn pml_sent(bytes: usize, remote: bool) {
    add(Traffic::PmlMessages, 1);
    add(Traffic::PmlBytes, bytes);
    if remote {
        add(Traffic::InterNodeMessages, 1);
        add(Traffic::InterNodeBytes, bytes);
    }
}

/// One fragment of `bytes` published into a shared-memory queue, or one
/// single-copy offer of `bytes` (the readers pull them).
pub fn shm_published(bytes: usize) {
    add(Traffic::ShmMessages, 1);
    add(Traffic::ShmBytes, bytes);
}

/// Counter `index` (0 for an unknown index).
pub fn read(index: usize) -> u64 {
    let counter = match index.checked_sub(KINDS * COLLS) {
        None => COUNTERS.get(index),
        Some(i) if i < COLLS => SINGLE_COPY.get(i),
        Some(i) => TRAFFIC_COUNTERS.get(i - COLLS),
    };
    counter.map_or(0, |c| c.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_counters_follow_the_single_copy_ones() {
        let base = (KINDS + 1) * COLLS;
        let before: Vec<u64> = (0..TRAFFIC).map(|k| read(base + k)).collect();
        pml_sent(100, true);
        pml_sent(10, false);
        shm_published(7);
        let after: Vec<u64> = (0..TRAFFIC).map(|k| read(base + k)).collect();
        // Other tests may count concurrently: at least these increments.
        let grew: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        assert!(grew[0] >= 2 && grew[1] >= 110, "{grew:?}");
        assert!(grew[2] >= 1 && grew[3] >= 100, "{grew:?}");
        assert!(grew[4] >= 1 && grew[5] >= 7, "{grew:?}");
        assert_eq!(read(base + TRAFFIC), 0, "past the end");
    }
}
