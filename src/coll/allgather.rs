//! MPI_Allgather(v).
//!
//! * linear: every process publishes its block once, to all others, and
//!   copies every other block out; fragment i of all blocks moves before
//!   fragment i+1 of any, so all processes stream at once.
//! * gather_bcast (Allgather): rank 0 gathers the blocks into its receive
//!   buffer and broadcasts the whole of it: every process polls one queue
//!   instead of p-1, at the price of a second phase.

use crate::coll::bcast;
use crate::coll::gather::{self, sinks};
use crate::coll::single_copy::{Offers, Outcome};
use crate::ompi::call::Coll;
use crate::ompi::params::Algorithm;
use crate::ompi::payload::RootSide;
use crate::ompi::payload::{Payload, TypedBuf};
use crate::shm::channel::{Cut, Shared};
use crate::shm::queue::Readers;

/// `own`: this process's send block (None: MPI_IN_PLACE, the block is already
/// in `all` at this process's place).  `all`: the receive side; `uniform`:
/// MPI_Allgather (equal blocks, one after the other).
pub fn allgather(sh: &mut Shared, own: Option<TypedBuf>, all: &RootSide, uniform: bool) -> bool {
    let whole = i32::try_from(all.count as i64 * sh.p as i64).ok();
    let chosen = sh.choose(Coll::Allgather, uniform.then(|| all.block(sh.me).bytes()));
    if let (true, Algorithm::GatherBcast, Some(whole)) = (uniform, chosen, whole) {
        sh.ran(Coll::Allgather, Algorithm::GatherBcast);
        return gather_bcast(sh, own, all, whole);
    }
    sh.ran(Coll::Allgather, Algorithm::Linear);
    linear(sh, own, all)
}

fn gather_bcast(sh: &mut Shared, own: Option<TypedBuf>, all: &RootSide, whole: i32) -> bool {
    let me = sh.me;
    // Only rank 0 may leave its block where it is (in place).
    let mine = if me == 0 {
        own
    } else {
        Some(own.unwrap_or_else(|| all.block(me)))
    };
    if !gather::gather(sh, mine, all, 0) {
        return false;
    }
    let everything = TypedBuf::new(all.whole.buf, whole, all.whole.dtype);
    let payload = if me == 0 {
        everything.source()
    } else {
        everything.sink()
    };
    let Some(mut payload) = payload else {
        return false;
    };
    bcast::bcast(sh, &mut payload, everything.bytes(), 0)
}

fn linear(sh: &mut Shared, own: Option<TypedBuf>, all: &RootSide) -> bool {
    let op = sh.next_op();
    let (me, p) = (sh.me, sh.p);
    let mine = own.unwrap_or_else(|| all.block(me));
    let Some(mut src) = mine.source() else {
        return false;
    };
    let mine_cut = sh.cut(mine.bytes());
    let peers: Vec<usize> = (1..p).map(|k| (me + k) % p).collect();
    let Some(mut sinks) = sinks(sh, peers.iter().map(|&r| all.block(r))) else {
        return false;
    };
    if !exchange(sh, (&mut src, mine_cut), &peers, &mut sinks, op) {
        return false;
    }
    match own {
        Some(src) => src.copy_to(&all.block(me)),
        None => true,
    }
}

/// Publishes our stream to all others and receives every peer's: fragment i
/// of ours, then fragment i of everybody's, so all processes stream at once.
/// Streams large enough go by single copy instead (every block's size is
/// known to all): our offer first, the queue streams, then the pulls.  False
/// when a pull failed (reported).
pub(crate) fn exchange(
    sh: &mut Shared,
    (src, mine): (&mut Payload, Cut),
    peers: &[usize],
    sinks: &mut [(Payload, Cut)],
    op: u64,
) -> bool {
    let mut offers = Offers::default();
    let mine = if sh.single_copy(mine.bytes) {
        offers.make(sh, src, mine.bytes, op, Readers::AllOthers);
        sh.cut(0)
    } else {
        mine
    };
    let queued = |sh: &Shared, cut: &Cut| !sh.single_copy(cut.bytes);
    let most = sinks
        .iter()
        .filter(|(_, cut)| queued(sh, cut))
        .map(|(_, cut)| cut.count())
        .fold(mine.count(), usize::max);
    for i in 0..most {
        if i < mine.count() {
            sh.send(src, mine, op, i, Readers::AllOthers);
        }
        for (&r, (sink, cut)) in peers.iter().zip(sinks.iter_mut()) {
            if i < cut.count() && queued(sh, cut) {
                sh.recv(r, sink, *cut, op, i);
            }
        }
    }
    let mut outcome = Outcome::default();
    for (&r, (sink, cut)) in peers.iter().zip(sinks.iter_mut()) {
        if !queued(sh, cut) {
            outcome.note(sh.take(r, op, sink, cut.bytes));
        }
    }
    offers.settle(sh);
    outcome.finish("exchanging blocks")
}
