//! MPI_Allgather(v).
//!
//! * linear: every process publishes its block once, to all others, and
//!   copies every other block out; fragment i of all blocks moves before
//!   fragment i+1 of any, so all processes stream at once.
//!   On two processes, blocks that fit the pair buffer go through it
//!   instead (`coll::pair`).
//! * gather_bcast (Allgather): rank 0 gathers the blocks into its receive
//!   buffer and broadcasts the whole of it: every process polls one queue
//!   instead of p-1, at the price of a second phase.

use crate::coll::bcast;
use crate::coll::gather::{self, rotation, sinks};
use crate::coll::pair;
use crate::coll::single_copy::{Offers, Outcome};
use crate::coll::small::{self, all_travel, travels_with_header, Kind, SayOnce};
use crate::ompi::call::Coll;
use crate::ompi::params::Algorithm;
use crate::ompi::payload::RootSide;
use crate::ompi::payload::{Payload, SelfCopy, TypedBuf};
use crate::shm::channel::{Cut, PeerStream, Shared};
use crate::shm::queue::Readers;
use tracing::trace;

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
    // The trace names the call (Allgatherv runs linear whatever is chosen).
    let called = if uniform {
        Coll::Allgather
    } else {
        Coll::Allgatherv
    };
    sh.ran(called, Algorithm::Linear);
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
    let mut payload = if me == 0 {
        everything.source()
    } else {
        everything.sink()
    };
    bcast::bcast(sh, &mut payload, everything.bytes(), 0)
}

fn linear(sh: &mut Shared, own: Option<TypedBuf>, all: &RootSide) -> bool {
    let (me, p) = (sh.me, sh.p);
    let mine = own.unwrap_or_else(|| all.block(me));
    if let Some(done) = through_pair(sh, own, all) {
        return done;
    }
    if let Some(done) = small(sh, own, all) {
        return done;
    }
    let op = sh.next_op();
    let mut src = mine.source();
    let mine_cut = sh.cut(mine.bytes());
    let mut sinks = sinks(sh, rotation(me, p).map(|r| (r, all.block(r))));
    // All we copy here, our own block included (`Shared::land_call`).
    let landing = sinks
        .iter()
        .filter(|(_, _, cut)| !sh.single_copy_exchange(cut.bytes))
        .map(|(_, _, cut)| cut.bytes)
        .sum::<usize>()
        + own.map_or(0, |_| all.block(me).bytes());
    let stores = sh.land_call(landing);
    let own_copy = SelfCopy::new(own, all.block(me)).landing(stores);
    let done = exchange(sh, (&mut src, mine_cut), &mut sinks, op, own_copy);
    sh.recycle(sinks);
    done
}

/// Whether this process said (at verbose 100) that an Allgather(v) went
/// through the pair buffer (`coll::pair`).
static PAIR_SAID: SayOnce = SayOnce::new();

/// On two processes, the exchange of blocks that fit the pair buffer
/// (`coll::pair`); None where it does not take them.  Asked first on every
/// path (`linear`, and `express` from the lane), from the receive
/// side's sizes, which both processes know: the short path also looks at
/// our own send layout, which the other does not know, so that both take
/// the pair buffer or neither.
fn through_pair(sh: &mut Shared, own: Option<TypedBuf>, all: &RootSide) -> Option<bool> {
    let (me, p) = (sh.me, sh.p);
    if p != 2 {
        return None;
    }
    let (mine, theirs) = (all.block(me), all.block(1 - me));
    let single = |bytes| sh.single_copy_exchange(bytes);
    if !pair::takes(sh, mine.bytes(), theirs.bytes(), single) {
        return None;
    }
    let sent = own.unwrap_or(mine);
    Some(pair::exchange(
        sh,
        ("MPI_Allgather(v)", &PAIR_SAID),
        (&mut sent.source(), sent.bytes()),
        (&mut theirs.sink(), theirs.bytes()),
        SelfCopy::new(own, mine),
    ))
}

/// Whether this process said (at verbose 100) that an own block went in
/// the pass of its fills; once per process is enough for the tests.
static OWN_COPY_IN_FILLS_SAID: SayOnce = SayOnce::new();

/// Whether this process said (at verbose 100) that an Allgather's blocks
/// travelled with their headers (`small`); once per process is enough for
/// the tests.
static SMALL_SAID: SayOnce = SayOnce::new();

/// The express lane's Allgather(v) (`dispatch::express`), which has chosen
/// `linear`: the pair buffer where it takes the blocks, else `small`; None
/// (and nothing done) where neither does.
pub(crate) fn express(sh: &mut Shared, own: Option<TypedBuf>, all: &RootSide) -> Option<bool> {
    if let Some(done) = through_pair(sh, own, all) {
        return Some(done);
    }
    small(sh, own, all)
}

/// `linear` for blocks that all travel with their slot headers
/// (`coll::small`): our block published once, our own copy, then each
/// peer's block copied out in rotation.  None (and nothing done) when a
/// block does not fit.  The caller chose `linear` (`express`, or
/// `allgather`) and found that the pair buffer does not take the blocks.
///
/// The queue sees exactly what `linear` does for such blocks (one fragment
/// each at `cut.pos(op, 0)`, ours published before any is read).  In the
/// benchmark's method (a barrier before every call) Allgather 8 B went 0.33
/// -> 0.24 us with it, tuned 0.26 beside (np=2, 2026-11-26).
fn small(sh: &mut Shared, own: Option<TypedBuf>, all: &RootSide) -> Option<bool> {
    let (me, p) = (sh.me, sh.p);
    let mine = all.block(me);
    let sent = own.unwrap_or(mine);
    if !all_travel(sh, all, None, Kind::Exchange) || !travels_with_header(sh, &sent, Kind::Exchange)
    {
        return None;
    }
    if SMALL_SAID.first() {
        trace!("MPI_Allgather(v): blocks travel with their headers");
    }
    let op = sh.next_op();
    let len = sent.bytes();
    small::publish(sh, &sent, sh.cut(len).pos(op, 0), Readers::AllOthers);
    let copied = own.is_none_or(|from| from.copy_to(&mine, sh.landing()));
    for r in rotation(me, p) {
        let block = all.block(r);
        small::take(sh, r, sh.cut(block.bytes()).pos(op, 0), &block);
    }
    Some(copied)
}

/// Publishes our stream to all others and receives every peer's, all
/// processes streaming at once.  Reads trail our writes by as many
/// fragments as every queue involved holds without a cycle of waits
/// (`Cut::lag`): a process that has published fragment t has read
/// everything up to t - lag, so the process furthest behind can always
/// move (its writes wait for readers that are further on, its reads for
/// writers that are further on).  A stream that fits the queue is thus
/// written whole before anything is read: no hand-off waits for the line
/// transfer of the one before.  `own_copy` runs once our stream is out, while
/// the peers read it.  Streams large enough go by single copy instead (every
/// block's size is known to all): our offer first, the queue streams, then
/// the pulls.  False when a pull or the own copy failed (reported).
///
/// With a core per process, a contiguous own block that is not too large to
/// stay cached goes to its place in the receive buffer in the same pass as
/// its fills into our queue (`Shared::send_copying`): each vector is read
/// once and stored twice, instead of the block being read again for its
/// own copy.  np=2, `bench/paired_ab.c` (2026-11-26, one pass over two,
/// 6 launches with fresh data before every call / 4 with reused data):
/// 16 KiB 0.95 / 0.99, 64 KiB 0.99 / 1.00, 256 KiB 0.95 / 0.95, 1 MiB
/// 0.92 / 1.03, 4 MiB 0.97 (fresh).  On a crowded node it is left out:
/// np=4 on 2 cores it took 1.19x the time at 64 KiB and 1.06x at 1 MiB
/// (each fill then takes longer before its readers may start, and they
/// may be waiting for the core).
pub(crate) fn exchange(
    sh: &mut Shared,
    (src, mine): (&mut Payload, Cut),
    sinks: &mut [PeerStream],
    op: u64,
    mut own_copy: SelfCopy,
) -> bool {
    let mut offers = Offers::default();
    let mine = if sh.single_copy_exchange(mine.bytes) {
        offers.make(sh, src, mine.bytes, op, Readers::AllOthers);
        sh.cut(0)
    } else {
        mine
    };
    let queued = |sh: &Shared, cut: &Cut| !sh.single_copy_exchange(cut.bytes);
    let streams = || {
        sinks
            .iter()
            .filter(|(_, _, cut)| queued(sh, cut))
            .map(|(_, _, cut)| *cut)
            .chain([mine])
    };
    let most = streams().map(|cut| cut.count()).max().unwrap_or(0);
    let slots = sh.queues.layout().s;
    let lag = streams().map(|cut| cut.lag(slots, most)).min().unwrap_or(0);
    // Our block's own copy in the same pass as its fills (see the docs).
    let copying = match src {
        Payload::Contiguous(base) if mine.bytes > 0 && !sh.crowded() => own_copy
            .hand_over(*base, mine.bytes)
            .map(|to| (*base as *const u8, to)),
        _ => None,
    };
    if copying.is_some() && OWN_COPY_IN_FILLS_SAID.first() {
        trace!("MPI_Allgather(v): own block copied in the pass of its fills");
    }
    for step in 0..most + lag {
        match copying {
            // SAFETY: `hand_over` checked both ranges: `mine.bytes` each, apart.
            Some((base, to)) if step < mine.count() => unsafe {
                sh.send_copying(base, to, mine, op, step, Readers::AllOthers)
            },
            None if step < mine.count() => sh.send(src, mine, op, step, Readers::AllOthers),
            _ => {}
        }
        if step + 1 >= mine.count() {
            own_copy.run();
        }
        let Some(i) = step.checked_sub(lag) else {
            continue;
        };
        for (r, sink, cut) in sinks.iter_mut() {
            if i < cut.count() && queued(sh, cut) {
                sh.recv(*r, sink, *cut, op, i);
            }
        }
    }
    let mut outcome = Outcome::default();
    for (r, sink, cut) in sinks.iter_mut() {
        if !queued(sh, cut) {
            outcome.note(sh.take(*r, op, sink, cut.bytes));
        }
    }
    let copied = own_copy.finish();
    offers.settle(sh);
    outcome.finish("exchanging blocks") && copied
}
