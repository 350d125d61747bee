//! MPI_Reduce and MPI_Allreduce over the queues (paper, Algorithm 2 and its
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

use crate::coll::allgather;
use crate::coll::reduce_scatter;
use crate::ompi::dtype::ReduceLayout;
use crate::ompi::ffi::{Dtype, Op};
use crate::ompi::params::Algorithm;
use crate::ompi::payload::Payload;
use crate::ompi::stats::Coll;
use crate::shm::channel::{Cut, Shared};
use crate::shm::queue::{Pos, Readers};

/// Under `auto`, the flat algorithm up to this many processes (and always
/// when oversubscribed), the k-nomial tree beyond.
const LINEAR_UP_TO: usize = 4;

/// One reduction call's buffers and semantics.
pub struct Reduction {
    /// This process's contribution (the receive buffer when MPI_IN_PLACE).
    pub own: *const u8,
    /// The receive buffer (significant at the root / everywhere for Allreduce).
    pub rbuf: *mut u8,
    pub in_place: bool,
    pub layout: ReduceLayout,
    pub dtype: Dtype,
    pub op: Op,
    pub commutative: bool,
}

/// What the tree's root does with a finished fragment.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sink {
    /// It is the reduction's root: into its receive buffer.
    ReceiveBuffer,
    /// Publish it to the root (non-commutative reduce rooted elsewhere).
    Forward(usize),
    /// Publish it to everybody (allreduce).
    Everybody,
}

pub fn reduce(sh: &mut Shared, red: &Reduction, root: usize) {
    let alg = sh.tree_algorithm(Coll::Reduce, LINEAR_UP_TO);
    let tree_root = if red.commutative { root } else { 0 };
    let sink = if tree_root == root {
        Sink::ReceiveBuffer
    } else {
        Sink::Forward(root)
    };
    walk(sh, red, alg, tree_root, sink);
}

/// Messages up to this size use the `allgather` Allreduce under `auto`.
const ALLGATHER_ALLREDUCE_MAX_BYTES: usize = 2048;
/// Messages from this size on use reduce-scatter + allgather under `auto`.
const RSAG_ALLREDUCE_MIN_BYTES: usize = 64 * 1024;

pub fn allreduce(sh: &mut Shared, red: &Reduction) {
    let bytes = red.layout.span(red.layout.count);
    let alg = match sh.params.algorithm(Coll::Allreduce) {
        Algorithm::Auto if bytes <= ALLGATHER_ALLREDUCE_MAX_BYTES && sh.p <= 16 => {
            Algorithm::Allgather
        }
        Algorithm::Auto if bytes >= RSAG_ALLREDUCE_MIN_BYTES && red.layout.dense() => {
            Algorithm::ReduceScatterAllgather
        }
        _ => sh.tree_algorithm(Coll::Allreduce, LINEAR_UP_TO),
    };
    match alg {
        Algorithm::Allgather => allgather_allreduce(sh, red),
        Algorithm::ReduceScatterAllgather if red.layout.dense() => {
            reduce_scatter_allgather(sh, red)
        }
        Algorithm::ReduceScatterAllgather => walk(sh, red, Algorithm::Linear, 0, Sink::Everybody),
        _ => walk(sh, red, alg, 0, Sink::Everybody),
    }
}

/// Large-message Allreduce: process r reduces slice r of the elements (in
/// canonical order, from everybody's queue), then every process publishes
/// its reduced slice and copies the others'.  Each process moves and reduces
/// 1/p of the data, all in parallel, instead of rank 0 reducing everything;
/// every slice is reduced once, so results are bit-identical.  Dense layouts
/// only (slices are then plain byte ranges); others use the tree walk.
fn reduce_scatter_allgather(sh: &mut Shared, red: &Reduction) {
    let (me, p, count, size) = (sh.me, sh.p, red.layout.count, red.layout.size);
    let counts: Vec<usize> = (0..p)
        .map(|r| (r + 1) * count / p - r * count / p)
        .collect();
    reduce_scatter::reduce_scatter(sh, red, &counts, reduce_scatter::Result::SlicePlace);
    let offset = |r: usize| r * count / p * size;
    let op = sh.next_op();
    let peers: Vec<usize> = (1..p).map(|k| (me + k) % p).collect();
    let mut sinks: Vec<(Payload, Cut)> = peers
        .iter()
        // SAFETY: slices lie within the receive buffer.
        .map(|&r| {
            (
                Payload::Contiguous(unsafe { red.rbuf.add(offset(r)) }),
                sh.cut(counts[r] * size),
            )
        })
        .collect();
    let mut mine = Payload::Contiguous(unsafe { red.rbuf.add(offset(me)) });
    let mine_cut = sh.cut(counts[me] * size);
    allgather::exchange(sh, (&mut mine, mine_cut), &peers, &mut sinks, op);
}

/// Small-message Allreduce: each process publishes its fragment once to all
/// others and folds all p fragments itself in rank order.  One hop instead
/// of two (up to rank 0 and back); every process runs the same operation on
/// the same operands in the same order, and MPI's predefined operations
/// work element by element, so all results are bit-identical.
fn allgather_allreduce(sh: &mut Shared, red: &Reduction) {
    let cut = sh.cut(red.layout.span(red.layout.count));
    let (f, p) = (cut.size, sh.p);
    let op = sh.next_op();
    for i in 0..red.layout.fragments(f) {
        let (_, n, offset, len) = red.layout.fragment(i, f);
        let pos = cut.pos(op, i);
        // SAFETY: offsets stay within the user buffers; slots and scratch hold
        // a fragment.  Our own published slot stays unchanged until we reuse
        // it, so it serves as our operand even when the input is in place.
        unsafe {
            let mine = sh.writer.reserve(&sh.queues, &sh.waiter, pos, len);
            std::ptr::copy_nonoverlapping(red.own.add(offset), mine, len);
            sh.writer.publish(&sh.queues, pos, len, Readers::AllOthers);
            let piece = Piece { pos, n, len };
            if red.layout.dense() {
                fold_ranks(sh, 0..p, mine, red.rbuf.add(offset), piece, red);
            } else {
                let acc = sh.scratch.ptr();
                fold_ranks(sh, 0..p, mine, acc, piece, red);
                red.layout.copy_to_user(red.rbuf.add(offset), acc, n);
            }
        }
    }
}

fn walk(sh: &mut Shared, red: &Reduction, alg: Algorithm, tree_root: usize, sink: Sink) {
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
        cut.lag_limit(sh.queues.layout().s)
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
            let frag = sh.queues.receive(&sh.waiter, tree_root, cut.pos(op, i));
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
                let frag = sh.queues.receive(&sh.waiter, c, pos);
                red.op.reduce(frag.data, acc, n, red.dtype);
                sh.queues.release(sh.me, c, frag);
            }
        } else if let Some((&last, rest)) = sh.kids.split_last() {
            let frag = sh.queues.receive(&sh.waiter, last, pos);
            std::ptr::copy_nonoverlapping(frag.data, acc, len);
            sh.queues.release(sh.me, last, frag);
            for &c in rest.iter().rev() {
                let frag = sh.queues.receive(&sh.waiter, c, pos);
                red.op.reduce(frag.data, acc, n, red.dtype);
                sh.queues.release(sh.me, c, frag);
            }
            red.op.reduce(own, acc, n, red.dtype);
        } else {
            std::ptr::copy_nonoverlapping(own, acc, len);
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

/// One fragment of a reduction: its position and its `n` elements' `len` bytes.
#[derive(Clone, Copy)]
pub(crate) struct Piece {
    pub pos: Pos,
    pub n: usize,
    pub len: usize,
}

/// Folds fragment `piece` of processes `ranks` (ascending) into `acc` in
/// canonical order: `acc = x_first op ... op x_last`, our own part read at
/// `own`, the others from their queues.  `acc` must not alias `own`.
///
/// # Safety
/// `own` and `acc` must address `piece.len` bytes holding `piece.n` elements.
pub(crate) unsafe fn fold_ranks(
    sh: &mut Shared,
    ranks: std::ops::Range<usize>,
    own: *const u8,
    acc: *mut u8,
    piece: Piece,
    red: &Reduction,
) {
    let mut first = true;
    for w in ranks.rev() {
        let frag = (w != sh.me).then(|| sh.queues.receive(&sh.waiter, w, piece.pos));
        let src = frag.map_or(own, |f| f.data);
        if first {
            std::ptr::copy_nonoverlapping(src, acc, piece.len);
            first = false;
        } else {
            red.op.reduce(src, acc, piece.n, red.dtype);
        }
        if let Some(f) = frag {
            sh.queues.release(sh.me, w, f);
        }
    }
}
