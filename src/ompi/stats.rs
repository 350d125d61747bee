//! Per-process counters of served and handed-over calls, readable as MPI_T
//! performance variables `coll_sharm_<op>_served` / `coll_sharm_<op>_fallbacks` /
//! `coll_sharm_<op>_hierarchical` (registered by the glue; index = 3·op + kind),
//! and `coll_sharm_<op>_single_copy` (index = 3·COLLS + op, after the others);
//! then the traffic counters of this process, over all collectives
//! (index = 4·COLLS + `Traffic`): messages and bytes sent through Open MPI's
//! PML, the part of them addressed to another node, fragments and bytes
//! published into shared-memory queues (or offered there for single copy),
//! and bytes copied into receive buffers with non-temporal stores; last,
//! `coll_sharm_<op>_pair_buffer` (index = 4·COLLS + TRAFFIC + op): calls in
//! which this process moved data through a two-process communicator's pair
//! buffer (`shm::pair`).
//! The benchmark reads them before and after each measurement to show how
//! much each level of the hierarchy carried.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::kernels::copy;
use crate::ompi::call::{Coll, COLLS};

/// Kinds of counter per collective, in the glue's order.
const KINDS: usize = 3;

/// Traffic counters, in the glue's order (`traffic_names` in component.c).
#[derive(Clone, Copy)]
enum Traffic {
    PmlMessages,
    PmlBytes,
    InterNodeMessages,
    InterNodeBytes,
    ShmMessages,
    ShmBytes,
    /// Kept by `kernels::copy`, where the copies are made.
    NontemporalBytes,
}

const TRAFFIC: usize = 7;

/// Every counter, by MPI_T index: served/fallback/hierarchical per
/// collective, single copy per collective, the traffic counters, then the
/// pair buffer per collective.
const TOTAL: usize = (KINDS + 2) * COLLS + TRAFFIC;

/// One thread's counters.  That thread is their only writer; MPI_T reads
/// sum them over all threads.
///
/// Why per thread and not one set of atomics: an increment shared between
/// threads must be a locked read-modify-write, and on x86 a locked
/// instruction waits until every earlier store of the thread has reached
/// the cache.  The counters are bumped right after a fragment is copied
/// into a queue slot, whose lines the readers hold: each bump waited for
/// those lines' ownership to come back (measured at np=2: 8-byte Bcast and
/// Reduce 0.17 and 0.24 µs with the locked increments, 0.15 and 0.20
/// without; 32 KiB Allgather 2.1 and 1.95 µs).  With one writer a plain
/// load and store suffice: they are Relaxed atomics only so that a reader
/// on another thread sees whole values.
struct Counters {
    cells: [AtomicU64; TOTAL],
}

/// Every thread's counters, for the readers.  A thread's set is leaked on
/// purpose (a few hundred bytes per thread that ever counted), so its
/// counts outlive it and a reader never meets a freed set.
static THREADS: Mutex<Vec<&'static Counters>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: &'static Counters = register();
}

fn register() -> &'static Counters {
    let mine: &'static Counters = Box::leak(Box::new(Counters {
        cells: [const { AtomicU64::new(0) }; TOTAL],
    }));
    THREADS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push(mine);
    mine
}

/// Counts for a thread whose thread-local storage is already gone (a
/// collective from a thread-local destructor): shared, so locked.
static LATE: [AtomicU64; TOTAL] = [const { AtomicU64::new(0) }; TOTAL];

fn bump(index: usize, n: u64) {
    bump_all(&[(index, n)]);
}

/// Adds each `(index, n)`, with one look-up of this thread's counters for
/// all: in a shared object every `thread_local!` access calls
/// `__tls_get_addr`, and a published fragment counts twice.
fn bump_all(adds: &[(usize, u64)]) {
    let counted = MINE.try_with(|mine| {
        for &(index, n) in adds {
            let cell = &mine.cells[index];
            // Single writer: load and store, no locked instruction (see
            // `Counters`).
            cell.store(
                cell.load(Ordering::Relaxed).wrapping_add(n),
                Ordering::Relaxed,
            );
        }
    });
    if counted.is_err() {
        for &(index, n) in adds {
            LATE[index].fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// A call sharm served (flat or hierarchical).
pub fn served(c: Coll) {
    bump(KINDS * c as usize, 1);
}

/// A call handed to the next component.
pub fn fallback(c: Coll) {
    bump(KINDS * c as usize + 1, 1);
}

/// A served call that went through the hierarchy (also counted as served).
pub fn hierarchical(c: Coll) {
    bump(KINDS * c as usize + 2, 1);
}

/// A served call in which this process moved data by single copy.
pub fn single_copy(c: Coll) {
    bump(KINDS * COLLS + c as usize, 1);
}

/// A served call in which this process moved data through the pair buffer
/// of a two-process communicator, or of a two-process group of its
/// hierarchy.
pub fn pair_buffer(c: Coll) {
    bump((KINDS + 1) * COLLS + TRAFFIC + c as usize, 1);
}

/// The counter of traffic kind `t`.
fn traffic(t: Traffic) -> usize {
    (KINDS + 1) * COLLS + t as usize
}

/// One message of `bytes` sent through the PML; `remote`: to a process on
/// another node (as Open MPI sees nodes, not virtual ones).
pub fn pml_sent(bytes: usize, remote: bool) {
    let bytes = bytes as u64;
    let adds = [
        (traffic(Traffic::PmlMessages), 1),
        (traffic(Traffic::PmlBytes), bytes),
        (traffic(Traffic::InterNodeMessages), 1),
        (traffic(Traffic::InterNodeBytes), bytes),
    ];
    // One thread-local look-up for all (`bump_all`); the inter-node pair
    // only for a remote peer.
    bump_all(if remote { &adds } else { &adds[..2] });
}

/// One fragment of `bytes` published into a shared-memory queue, or one
/// single-copy offer of `bytes` (the readers pull them).
pub fn shm_published(bytes: usize) {
    bump_all(&[
        (traffic(Traffic::ShmMessages), 1),
        (traffic(Traffic::ShmBytes), bytes as u64),
    ]);
}

/// Counter `index` (0 for an unknown index): the sum over all threads.
pub fn read(index: usize) -> u64 {
    if index >= TOTAL {
        return 0;
    }
    if index == traffic(Traffic::NontemporalBytes) {
        // Counted where the copies are made, below this layer.
        return copy::landed_nontemporal();
    }
    let threads = THREADS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    threads
        .iter()
        .map(|t| t.cells[index].load(Ordering::Relaxed))
        .fold(LATE[index].load(Ordering::Relaxed), u64::wrapping_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts made on other threads are in the sums, also after those
    /// threads ended.
    #[test]
    fn counts_of_every_thread_add_up() {
        let index = KINDS * COLLS + Coll::Bcast as usize;
        let before = read(index);
        let workers: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..1000 {
                        single_copy(Coll::Bcast);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        single_copy(Coll::Bcast);
        // Other tests may count concurrently: at least these increments.
        assert!(read(index) - before >= 4001);
    }

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
    }

    #[test]
    fn pair_buffer_counters_follow_the_traffic_ones() {
        let index = (KINDS + 1) * COLLS + TRAFFIC + Coll::Gather as usize;
        let before = read(index);
        pair_buffer(Coll::Gather);
        assert!(read(index) - before >= 1);
        assert_eq!(read(TOTAL), 0, "past the end");
    }
}
