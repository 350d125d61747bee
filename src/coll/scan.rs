//! MPI_Scan and MPI_Exscan, in canonical order (`x_0 op ... op x_r`, right
//! for non-commutative operations).
//!
//! * linear: every process publishes each fragment of its input once, to all
//!   higher ranks, and folds the lower ranks' fragments itself, so no chain
//!   of p hops delays the last rank (small messages, few processes).
//! * chain: process r receives the prefix of ranks below it from r-1, extends
//!   it with its own part in its outgoing slot and passes it to r+1: one
//!   fragment read and one reduction per process (large messages, many
//!   processes), pipelined fragment by fragment.

use crate::coll::reduction::{fold_ranks, Piece, Reduction};
use crate::kernels::copy;
use crate::ompi::call::Coll;
use crate::ompi::params::Algorithm;
use crate::shm::channel::Shared;
use crate::shm::queue::Readers;

/// Under `auto`, the chain from this many processes and bytes on.
const CHAIN_MIN_PROCS: usize = 9;
const CHAIN_MIN_BYTES: usize = 64 * 1024;

/// The most bytes `auto` runs linear for (the chain beyond): all of them
/// below `CHAIN_MIN_PROCS` processes with a core each.  On a crowded node
/// the chain from `CHAIN_MIN_BYTES` at any size of communicator: there the
/// processes share the cores, so the work of all of them adds up, and the
/// linear Scan folds p(p-1)/2 vectors where the chain folds p-1.  np=4 and
/// np=8 on 2 cores, 5 rounds in turns (2026-12-01,
/// `docs/benchmark/2026-12-01-l-os/ab/`): the chain's Scan took 0.63 / 0.87x
/// linear's time at np=4 at 1 / 4 MiB, 0.92 / 0.72 / 0.80x at np=8 at 64
/// KiB / 1 / 4 MiB; at 16 KiB 1.10x.  The express lane takes its small
/// calls from the same answer.
pub(crate) fn auto_linear_up_to(sh: &Shared) -> usize {
    if sh.p >= CHAIN_MIN_PROCS || sh.crowded() {
        CHAIN_MIN_BYTES - 1
    } else {
        usize::MAX
    }
}

/// `inclusive`: Scan (else Exscan, whose rank 0 receives nothing).
pub fn scan(sh: &mut Shared, red: &Reduction, inclusive: bool) {
    let bytes = red.layout.span(red.layout.count);
    let chain = match sh.choose(Coll::Scan, Some(bytes)) {
        Algorithm::Chain => true,
        Algorithm::Auto => bytes > auto_linear_up_to(sh),
        _ => false,
    };
    sh.ran(
        if inclusive { Coll::Scan } else { Coll::Exscan },
        if chain {
            Algorithm::Chain
        } else {
            Algorithm::Linear
        },
    );
    if chain {
        chain_scan(sh, red, inclusive)
    } else {
        linear_scan(sh, red, inclusive)
    }
}

fn chain_scan(sh: &mut Shared, red: &Reduction, inclusive: bool) {
    let cut = sh.cut(red.layout.span(red.layout.count));
    let (me, p, f) = (sh.me, sh.p, cut.size);
    let op = sh.next_op();
    for i in 0..red.layout.fragments(f) {
        let (_, n, offset, len) = red.layout.fragment(i, f);
        let pos = cut.pos(op, i);
        // SAFETY (whole block): offsets stay within the buffers of `count`
        // elements; slots and scratch hold a fragment; a received fragment
        // stays valid until released.
        unsafe {
            let own = red.own.add(offset);
            let out = red.rbuf.add(offset);
            let below = (me > 0).then(|| sh.queues.receive_expecting(&sh.waiter, me - 1, pos, len));
            // acc = (prefix below) op x_me: in our outgoing slot when a higher
            // rank needs it, else in scratch.  Our input is read into it
            // before the result overwrites the receive buffer (in place).
            let acc = if me + 1 < p {
                sh.writer.reserve(&sh.queues, &sh.waiter, pos, len)
            } else {
                sh.scratch.ptr()
            };
            copy::copy(acc, own, len);
            if let Some(frag) = below {
                red.fold(frag.data, acc, n);
                if !inclusive {
                    red.layout.copy_to_user(out, frag.data, n);
                }
                sh.queues.release(me, me - 1, frag);
            }
            if inclusive {
                red.layout.copy_to_user(out, acc, n);
            }
            if me + 1 < p {
                sh.writer
                    .publish(&sh.queues, pos, len, Readers::One(me + 1));
            }
        }
    }
}

pub(crate) fn linear_scan(sh: &mut Shared, red: &Reduction, inclusive: bool) {
    let cut = sh.cut(red.layout.span(red.layout.count));
    let (me, p, f) = (sh.me, sh.p, cut.size);
    let op = sh.next_op();
    let upto = if inclusive { me + 1 } else { me };
    for i in 0..red.layout.fragments(f) {
        let (_, n, offset, len) = red.layout.fragment(i, f);
        let pos = cut.pos(op, i);
        // SAFETY (whole block): offsets stay within the buffers of `count`
        // elements; scratch and slots hold a fragment.
        unsafe {
            let own = red.own.add(offset);
            if me + 1 < p {
                sh.send_bytes(own, len, cut.bytes, pos, Readers::Above(me));
            }
            if upto == 0 {
                continue;
            }
            if upto == 1 && me == 0 {
                // Rank 0's Scan: its own input is the result (in place:
                // already there).  (Rank 1's Exscan also folds one rank,
                // but rank 0's.)
                if !red.in_place {
                    red.layout.copy_to_user(red.rbuf.add(offset), own, n);
                }
                continue;
            }
            // Not in place and without padding, the prefix is built in the
            // receive buffer itself.  Otherwise in scratch: our own input
            // must be read before the result overwrites it (in place), and
            // the user's padding must not be written.
            let direct = !red.in_place && red.layout.dense();
            let out = red.rbuf.add(offset);
            let acc = if direct { out } else { sh.scratch.ptr() };
            fold_ranks(sh, 0..upto, own, acc, Piece { pos, n, len }, red);
            if !direct {
                red.layout.copy_to_user(out, acc, n);
            }
        }
    }
}
