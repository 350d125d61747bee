//! MPI_Reduce over the queues, and the tree walk Allreduce shares (paper, Algorithm 2 and its
//! k-nomial variant).
//!
//! Both are one k-nomial tree walk; "linear" is the tree whose radix is the
//! process count (every process a child of the root).  For each fragment
//! (whole elements only) a node combines its own elements with its children's
//! partial results, which it reads straight from their queues:
//!
//! `acc = R(c_m); acc = R(c_{m-1}) op acc; ...; acc = x_v op acc`
//!
//! Open MPI's reduce primitive computes `target = source op target`, so this
//! yields `x_v op R(c_1) op ... op R(c_m)`, and because subtrees are
//! contiguous rank ranges taken in increasing order (see `tree`), the result
//! is MPI's canonical `x_0 op x_1 op ... op x_{p-1}` for non-commutative
//! operations too.  For those the tree is rooted at rank 0 and rank 0 hands
//! the result to the root; commutative operations root the tree at the root.
//!
//! A node's accumulator is the slot it publishes to its parent, so partial
//! results are never copied twice.  Allreduce is a reduction to rank 0 whose
//! result slots are published to everybody: every process copies the same
//! bytes, so all get bit-identical results.  Non-root processes trail the
//! result by up to s-1 fragments behind their own contributions, which keeps
//! the pipeline full without a cycle of waits (a process never holds a slot
//! that rank 0 needs while waiting for rank 0).

use crate::coll::pair;
use crate::coll::reduction::Reduction;
use crate::coll::single_copy_reduce;
use crate::kernels::copy;
use crate::ompi::call::Coll;
use crate::ompi::params::Algorithm;
use crate::shm::channel::{Cut, Shared};
use crate::shm::queue::Readers;

/// Under `auto`, the flat algorithm up to this many processes (and always
/// when oversubscribed), the k-nomial tree beyond.
pub(crate) const LINEAR_UP_TO: usize = 4;

/// What the tree's root does with a finished fragment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sink {
    /// It is the reduction's root: into its receive buffer.
    ReceiveBuffer,
    /// Publish it to the root (non-commutative reduce rooted elsewhere).
    Forward(usize),
    /// Publish it to everybody (allreduce).
    Everybody,
}

/// False when single copy failed (reported).
pub fn reduce(sh: &mut Shared, red: &Reduction, root: usize) -> bool {
    let chosen = sh.choose(Coll::Reduce, Some(red.layout.span(red.layout.count)));
    // Single copy replaces the algorithm only where none was asked for.
    if chosen == Algorithm::Auto && single_copy_reduce::applies(sh, red) {
        return single_copy_reduce::reduce(sh, red, Some(root));
    }
    let alg = sh.tree_algorithm(chosen, LINEAR_UP_TO);
    sh.ran(Coll::Reduce, alg);
    // Two processes, under `auto`: one stream through the pair buffer's
    // small ring (`coll::pair::reduce`), as a Bcast's; smaller vectors
    // through its halves, by turns (`coll::pair::reduce_exchange`).
    if chosen == Algorithm::Auto {
        if pair::takes_reduce(sh, red) {
            return pair::reduce(sh, red, root);
        }
        if let Some(route) = pair::reduce_route(sh, red) {
            return pair::reduce_exchange(sh, red, root, route);
        }
    }
    tree(sh, red, alg, root);
    true
}

/// `reduce` on the tree of `alg`, once chosen (the express lane comes
/// here straight, `dispatch::express`, after `Shared::untuned`).
pub fn tree(sh: &mut Shared, red: &Reduction, alg: Algorithm, root: usize) {
    let tree_root = if red.commutative { root } else { 0 };
    let sink = if tree_root == root {
        Sink::ReceiveBuffer
    } else {
        Sink::Forward(root)
    };
    walk(sh, red, alg, tree_root, sink);
}

pub(crate) fn walk(sh: &mut Shared, red: &Reduction, alg: Algorithm, tree_root: usize, sink: Sink) {
    let cut = sh.cut(red.layout.span(red.layout.count));
    let f = cut.size;
    let op = sh.next_op();
    let me = sh.me;
    let parent = sh.tree_links(alg, tree_root);
    let frags = red.layout.fragments(f);
    // Who, besides the tree, reads the result from the tree root's queue.
    let result_reader = match sink {
        Sink::Forward(r) if me == r => true,
        Sink::Everybody => me != tree_root,
        _ => false,
    };
    let lag = if sink == Sink::Everybody {
        cut.lag(sh.queues.layout().s, frags)
    } else {
        0
    };

    for step in 0..frags + lag {
        if step < frags {
            combine_fragment(sh, red, cut, step, op, parent, sink);
        }
        if result_reader && step >= lag {
            let i = step - lag;
            let (_, n, offset, len) = red.layout.fragment(i, f);
            let frag = sh
                .queues
                .receive_expecting(&sh.waiter, tree_root, cut.pos(op, i), len);
            debug_assert_eq!(frag.len, len);
            // SAFETY: rbuf holds the whole result; the fragment is valid until released.
            unsafe { red.layout.copy_to_user(red.rbuf.add(offset), frag.data, n) };
            sh.queues.release(me, tree_root, frag);
        }
    }
}

/// Computes this node's partial result for fragment `i` and delivers it.
fn combine_fragment(
    sh: &mut Shared,
    red: &Reduction,
    cut: Cut,
    i: usize,
    op: u64,
    parent: Option<usize>,
    sink: Sink,
) {
    let (_, n, offset, len) = red.layout.fragment(i, cut.size);
    let pos = cut.pos(op, i);
    // SAFETY (pointer arithmetic below): offsets stay within the user buffers,
    // which hold `count` elements.
    let own = unsafe { red.own.add(offset) };

    // Where the partial result accumulates: our own slot when it goes on to
    // another process; at the root the receive buffer itself when that is
    // safe, else the scratch fragment.
    let publishes = parent.is_some() || sink != Sink::ReceiveBuffer;
    let mut in_scratch = false;
    let (acc, acc_holds_own) = if publishes {
        (sh.writer.reserve(&sh.queues, &sh.waiter, pos, len), false)
    } else if red.in_place && red.commutative {
        // Order-free: the receive buffer already holds our part; the
        // operation writes element data only, never padding.
        (unsafe { red.rbuf.add(offset) }, true)
    } else if !red.in_place && red.layout.dense() {
        (unsafe { red.rbuf.add(offset) }, false)
    } else {
        // In place and ordered (our part must be combined last), or padded
        // elements whose padding must not be written into the user's buffer.
        in_scratch = true;
        (sh.scratch.ptr(), false)
    };

    // SAFETY: every pointer addresses `len` bytes: user buffers by the layout,
    // slots by the fragment size; received fragments stay valid until released.
    unsafe {
        if acc_holds_own {
            for &c in &sh.kids {
                let frag = sh.queues.receive_expecting(&sh.waiter, c, pos, len);
                red.fold(frag.data, acc, n);
                sh.queues.release(sh.me, c, frag);
            }
        } else if let Some((&last, rest)) = sh.kids.split_last() {
            // The last child's part and the next one (the child before it,
            // or our own) meet in one fused pass instead of copy + fold.
            let high = sh.queues.receive_expecting(&sh.waiter, last, pos, len);
            match rest.split_last() {
                Some((&next, _)) => {
                    let frag = sh.queues.receive_expecting(&sh.waiter, next, pos, len);
                    red.fused(frag.data, high.data, acc, n, len);
                    sh.queues.release(sh.me, next, frag);
                }
                None => red.fused(own, high.data, acc, n, len),
            }
            sh.queues.release(sh.me, last, high);
            if let Some((_, before)) = rest.split_last() {
                for &c in before.iter().rev() {
                    let frag = sh.queues.receive_expecting(&sh.waiter, c, pos, len);
                    red.fold(frag.data, acc, n);
                    sh.queues.release(sh.me, c, frag);
                }
                red.fold(own, acc, n);
            }
        } else if publishes {
            // A leaf: our part goes on unchanged.
            sh.fill(acc, own, len, cut.bytes);
        } else {
            copy::copy(acc, own, len);
        }
    }

    match (parent, sink) {
        (Some(up), _) => sh.writer.publish(&sh.queues, pos, len, Readers::One(up)),
        (None, Sink::Forward(root)) => sh.writer.publish(&sh.queues, pos, len, Readers::One(root)),
        (None, Sink::Everybody) => {
            sh.writer.publish(&sh.queues, pos, len, Readers::AllOthers);
            // SAFETY: our own published slot is only read by others until we reuse it.
            unsafe { red.layout.copy_to_user(red.rbuf.add(offset), acc, n) };
        }
        (None, Sink::ReceiveBuffer) => {
            if in_scratch {
                // SAFETY: scratch holds the fragment; rbuf its place.
                unsafe { red.layout.copy_to_user(red.rbuf.add(offset), acc, n) };
            }
        }
    }
}
