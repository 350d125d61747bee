//! MPI_Barrier with flags in the segment's sync area; the data queues are
//! never touched, so a barrier costs no slot and cannot wait behind data.
//!
//! * linear: every process stores its `arrive` (Release) and waits until all
//!   others' reached this barrier's number (Acquire): one cache-line hop.
//! * knomial: arrivals climb a k-nomial tree rooted at rank 0: a process waits
//!   until each child's `arrive` reached the barrier's number, then stores
//!   its own; rank 0 then stores `release`, on which everyone else waits.
//!   Two hops per tree level, but O(k) lines polled per process (large p).
//!
//! The Release/Acquire chains order every memory access before the barrier on
//! any process before every access after it on all processes.  Barrier
//! numbers only grow, so a process already in the next barrier never holds
//! back one still leaving this one.

use std::sync::atomic::Ordering;

use crate::ompi::call::Coll;
use crate::ompi::params::Algorithm;
use crate::shm::channel::Shared;

/// Under `auto`, the flat barrier up to this many processes (and always when
/// oversubscribed), the k-nomial tree beyond.
pub const LINEAR_UP_TO: usize = 8;

pub fn barrier(sh: &mut Shared) {
    let alg = sh.choose(Coll::Barrier, Some(0));
    let alg = sh.tree_algorithm(alg, LINEAR_UP_TO);
    sh.ran(Coll::Barrier, alg);
    if alg == Algorithm::Linear {
        return linear(sh);
    }
    let epoch = sh.next_barrier();
    sh.tree_links(Algorithm::Knomial, 0);
    let q = &sh.queues;
    for &c in &sh.kids {
        let line = q.sync(c);
        sh.waiter
            .until(|| line.arrive.load(Ordering::Acquire) >= epoch);
    }
    if sh.me == 0 {
        q.sync(0).release.store(epoch, Ordering::Release);
    } else {
        q.sync(sh.me).arrive.store(epoch, Ordering::Release);
        let root = q.sync(0);
        sh.waiter
            .until(|| root.release.load(Ordering::Acquire) >= epoch);
    }
}

/// The flat barrier (see the module comment).
pub fn linear(sh: &mut Shared) {
    let epoch = sh.next_barrier();
    let q = &sh.queues;
    q.sync(sh.me).arrive.store(epoch, Ordering::Release);
    for r in (0..sh.p).filter(|&r| r != sh.me) {
        let line = q.sync(r);
        sh.waiter
            .until(|| line.arrive.load(Ordering::Acquire) >= epoch);
    }
}
