//! Reduce and Allreduce by single copy (CMA), for dense element layouts.
//!
//! Every process offers its whole input to all others.  Process r reduces
//! slice r of the elements (about count/p): chunk by chunk (`CHUNK` bytes, so
//! the operands stay in cache) it pulls each peer's part of the chunk
//! straight from that peer's buffer and folds it, in MPI's canonical order
//! `x_0 op (x_1 op (... op x_{p-1}))` (so non-commutative operations are
//! right).  The first operand is pulled straight into the accumulator.  Then
//! the reduced slices move: Allreduce offers each slice to all, and everyone
//! pulls the others' slices into its receive buffer (each slice is reduced
//! once, so all results are bit-identical); Reduce offers them to the root.
//!
//! In place: process r writes only slice r of its receive buffer while the
//! others read their own slices of it; it writes slice q there only after
//! pulling q's reduced slice, which q offers only once it has finished
//! reading everybody's slice q.

use crate::coll::reduction::{self, Reduction};
use crate::coll::single_copy::Outcome;
use crate::kernels::copy;
use crate::shm::channel::Shared;
use crate::shm::cma::Remote;
use crate::shm::queue::{Incoming, Readers};
use crate::shm::single::CHUNK;

/// Whether this reduction can go by single copy: a dense layout (slices are
/// plain byte ranges) and elements that fit a staging chunk, and a size at
/// the channel's threshold.  Every input is shared by all processes.
pub fn applies(sh: &Shared, red: &Reduction) -> bool {
    let l = &red.layout;
    l.dense() && l.size <= CHUNK && sh.single_copy(l.count * l.size)
}

/// Reduces to `root`, or to everybody when `root` is None; false when a pull
/// failed (reported).
pub fn reduce(sh: &mut Shared, red: &Reduction, root: Option<usize>) -> bool {
    let (me, p) = (sh.me, sh.p);
    let (count, size) = (red.layout.count, red.layout.size);
    // Slice r (`reduction::slice`), as (byte offset, bytes).
    let slice = |r: usize| {
        let (first, n) = reduction::slice(r, p, count);
        (first * size, n * size)
    };
    let inputs = sh.next_op();
    let results = sh.next_op();
    let mut outcome = Outcome::default();

    let offered_input = sh.offer(red.own, count * size, inputs, Readers::AllOthers);
    let (off, len) = slice(me);
    let result_here = root.is_none_or(|r| r == me);
    let acc = if result_here {
        // SAFETY: the slice lies within the receive buffer.
        unsafe { red.rbuf.add(off) }
    } else {
        sh.single.as_mut().expect("single copy is on").spare(len)
    };
    let mut peers: Vec<Option<(Remote, Incoming)>> = Vec::with_capacity(p);
    for w in 0..p {
        peers.push(if w == me {
            None
        } else {
            match sh.accept(w, inputs) {
                Ok(offer) => Some(offer),
                Err(e) => {
                    outcome.note(Err(e));
                    None
                }
            }
        });
    }
    if peers
        .iter()
        .enumerate()
        .all(|(w, x)| w == me || x.is_some())
    {
        // SAFETY: `acc` holds the slice; the inputs hold all elements.
        let folded = unsafe { fold_slice(sh, red, &peers, acc, off, len) };
        outcome.note(folded);
    }
    for (w, offer) in peers.into_iter().enumerate() {
        if let Some((_, frag)) = offer {
            sh.done(w, frag);
        }
    }

    // The reduced slices.
    let readers = match root {
        None => Readers::AllOthers,
        Some(r) => Readers::One(r),
    };
    let offered_result = (root != Some(me)).then(|| sh.offer(acc, len, results, readers));
    if result_here {
        for q in (0..p).filter(|&q| q != me) {
            let (q_off, q_len) = slice(q);
            let pulled = sh.accept(q, results).and_then(|(remote, frag)| {
                let r = if remote.len == q_len {
                    // SAFETY: slice q lies within the receive buffer.
                    unsafe { remote.pull(0, red.rbuf.add(q_off), q_len) }
                } else {
                    Err(format!(
                        "rank {q} offered {} bytes, {q_len} expected",
                        remote.len
                    ))
                };
                sh.done(q, frag);
                r
            });
            outcome.note(pulled);
        }
    }
    sh.settle(offered_input);
    if let Some(pos) = offered_result {
        sh.settle(pos);
    }
    outcome.finish(if root.is_some() {
        "MPI_Reduce"
    } else {
        "MPI_Allreduce"
    })
}

/// Reduces bytes `[off, off + len)` of all inputs into `acc`, chunk by chunk.
///
/// # Safety
/// `acc` must hold `len` bytes; our input (`red.own`) and every peer's offer
/// must hold `off + len` bytes.  When the input is in place at this process
/// and `acc` is its receive buffer, `acc` is our own operand.
unsafe fn fold_slice(
    sh: &mut Shared,
    red: &Reduction,
    peers: &[Option<(Remote, Incoming)>],
    acc: *mut u8,
    off: usize,
    len: usize,
) -> Result<(), String> {
    let (me, p, size) = (sh.me, sh.p, red.layout.size);
    let single = sh.single.as_ref().expect("single copy is on");
    let (stage, own_copy) = (single.stage(), single.stage().add(CHUNK));
    let own_is_acc = std::ptr::eq(red.own.add(off), acc);
    let chunk = CHUNK / size * size;
    let mut at = 0;
    while at < len {
        let bytes = chunk.min(len - at);
        let n = bytes / size;
        let acc_c = acc.add(at);
        let remote = |w: usize| &peers[w].as_ref().expect("accepted").0;
        if own_is_acc && red.commutative {
            // Order-free: our part is already in place; fold the others in.
            for w in (0..p).filter(|&w| w != me) {
                remote(w).pull(off + at, stage, bytes)?;
                red.fold(stage, acc_c, n);
            }
        } else {
            let own_c: *const u8 = if own_is_acc {
                // Our operand comes last in the order; keep it aside.
                copy::copy(own_copy, acc_c, bytes);
                own_copy
            } else {
                red.own.add(off + at)
            };
            for w in (0..p).rev() {
                let first = w == p - 1;
                match (w == me, first) {
                    (true, true) => copy::copy(acc_c, own_c, bytes),
                    (true, false) => red.fold(own_c, acc_c, n),
                    (false, true) => remote(w).pull(off + at, acc_c, bytes)?,
                    (false, false) => {
                        remote(w).pull(off + at, stage, bytes)?;
                        red.fold(stage, acc_c, n);
                    }
                }
            }
        }
        at += bytes;
    }
    Ok(())
}
