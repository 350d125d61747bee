//! MPI_Bcast over the queues (paper, Algorithm 1), flat or as a k-nomial tree.
//!
//! The message is a byte stream of `bytes` bytes cut into fragments of f
//! bytes: a contiguous buffer is copied directly, anything else is packed by
//! the root and unpacked by the readers through Open MPI's convertor, so the
//! processes may even use different datatypes with the same type signature.
//!
//! * linear: the root publishes each fragment once to all others, who copy it
//!   out and acknowledge; the root reuses a slot once all have.
//! * knomial: the root publishes to its children; every inner node copies a
//!   fragment out, republishes it in its own queue for its children, then
//!   acknowledges its parent.  Fragments pipeline down the tree.

use crate::coll::pair;
use crate::coll::single_copy;
use crate::ompi::call::Coll;
use crate::ompi::params::Algorithm;
use crate::ompi::payload::Payload;
use crate::shm::channel::Shared;
use crate::shm::queue::{Pos, Readers};

/// Under `auto`, the flat algorithm up to this many processes (and always
/// when oversubscribed), the k-nomial tree beyond.
pub const LINEAR_UP_TO: usize = 8;

/// Broadcasts `bytes` bytes of `payload` from `root`; false when single
/// copy failed (reported).
pub fn bcast(sh: &mut Shared, payload: &mut Payload, bytes: usize, root: usize) -> bool {
    let chosen = sh.choose(Coll::Bcast, Some(bytes));
    // Single copy replaces the algorithm only where none was asked for.
    if chosen == Algorithm::Auto && sh.single_copy(bytes) {
        return single_copy::bcast(sh, payload, bytes, root);
    }
    let alg = sh.tree_algorithm(chosen, LINEAR_UP_TO);
    sh.ran(Coll::Bcast, alg);
    // Two processes, under `auto`: one stream through the pair buffer's
    // small ring (`coll::pair::bcast`).
    if chosen == Algorithm::Auto && pair::takes_stream(sh, bytes) {
        return pair::bcast(sh, payload, bytes, root);
    }
    // Linear is the k-nomial tree whose radix is the process count.
    let cut = sh.cut(bytes);
    let op = sh.next_op();
    let (me, p) = (sh.me, sh.p);
    let parent = sh.tree_links(alg, root);
    let readers = if sh.kids.len() == p - 1 {
        Readers::AllOthers
    } else {
        Readers::List(&sh.kids)
    };
    let has_kids = !sh.kids.is_empty();

    for i in 0..cut.count() {
        let offset = i * cut.size;
        let len = cut.len(i);
        let pos = cut.pos(op, i);
        match parent {
            None => {
                let dst = sh.writer.reserve(&sh.queues, &sh.waiter, pos, len);
                // SAFETY: `dst` is our reserved slot of >= len bytes.
                unsafe { sh.fill_from(payload, bytes, offset, dst, len) };
                sh.writer.publish(&sh.queues, pos, len, readers);
            }
            Some(up) => {
                let frag = sh.queues.receive_expecting(&sh.waiter, up, pos, len);
                debug_assert_eq!(frag.len, len);
                // SAFETY: the fragment stays valid until released below.
                unsafe { sh.land_from(up, payload, bytes, offset, frag) };
                if has_kids {
                    let dst = sh.writer.reserve(&sh.queues, &sh.waiter, pos, len);
                    // SAFETY: distinct slots of distinct queues; both hold len bytes.
                    unsafe { sh.fill(dst, frag.data, len, bytes) };
                    sh.writer.publish(&sh.queues, pos, len, readers);
                }
                sh.queues.release(me, up, frag);
            }
        }
    }
    true
}

/// `bcast` of a stream of `bytes` bytes (1 to one slot's `f`) that is one
/// byte range at `buf`, on the flat tree, for the express lane
/// (`dispatch::express`), which has already ruled out everything else
/// `bcast` might choose.
///
/// It does exactly what `bcast` does under `Linear` for a stream this
/// short: one fragment, at `Pos::new(op, 0)` (`Shared::cut` gives a stream
/// of at most one slot width 1 and span 1), filled by the root for all
/// others and landed by each of them with the same calls.  So a process on
/// this lane and one on `bcast` (whose datatype, say, is not one byte
/// range) meet in the queue.
///
/// # Safety
/// `buf` holds `bytes` bytes: readable at the root, writable elsewhere.
pub unsafe fn one_fragment(sh: &mut Shared, buf: *mut u8, bytes: usize, root: usize) {
    debug_assert!((1..=sh.fragment()).contains(&bytes));
    let pos = Pos::new(sh.next_op(), 0);
    debug_assert_eq!(sh.cut_untuned(bytes).pos(pos.op, 0), pos);
    if sh.me == root {
        let dst = sh.writer.reserve(&sh.queues, &sh.waiter, pos, bytes);
        // SAFETY: `dst` is our reserved slot of >= `bytes` bytes, `buf`
        // holds them (contract), and is not in our queue.
        unsafe { sh.fill(dst, buf, bytes, bytes) };
        sh.writer
            .publish(&sh.queues, pos, bytes, Readers::AllOthers);
    } else {
        let frag = sh.queues.receive_expecting(&sh.waiter, root, pos, bytes);
        debug_assert_eq!(frag.len, bytes);
        // SAFETY: the fragment stays valid until released below; `buf` is
        // writable for `bytes` bytes (contract).
        unsafe { sh.land_from(root, &mut Payload::Contiguous(buf), bytes, 0, frag) };
        sh.queues.release(sh.me, root, frag);
    }
}
