//! MPI_Gather(v) and MPI_Scatter(v) over the queues.
//!
//! Gather: every process publishes its block as a stream in its own queue for
//! the root alone; the root takes fragment i of every block before fragment
//! i+1 of any, so all senders stream at once.  Positions are per queue, so the
//! root needs nobody else's counts but its own `recvcounts`.
//!
//! Scatter: the root streams block r to process r in round r, each round with
//! its own operation number, so process r finds its data knowing only its own
//! receive count (Scatterv's other counts are known to the root alone).
//!
//! Streams large enough go by single copy instead (`single_copy`): the root
//! offers each block's place and its sender writes it there (gather, when
//! CMA writes are permitted: `SingleCopy::push`), or a sender offers its
//! block and the root reads it (gather otherwise), or the root offers each
//! block and its receiver reads it (scatter); both ends of a stream know its
//! size, so they decide alike.  On two processes, a Gather block of 64 KiB
//! to 8 MiB that does not go by single copy streams through the pair
//! buffer's ring instead of the queue (`coll::pair::gather`), and so does
//! a Scatter(v)'s block for the other process (`coll::pair::scatter`).
//!
//! Why Gather pushes: reading, the root makes every copy itself, its own
//! block's and then each sender's, one after the other; writing, each
//! sender copies its block on its own core while the root copies its own
//! (np=2: two copies in a row become two side by side).

use crate::coll::pair;
use crate::coll::single_copy::{Offers, Outcome};
use crate::coll::small::{self, all_travel, travels_with_header, Kind, SayOnce};
use crate::ompi::call::Coll;
use crate::ompi::payload::{Payload, RootSide, TypedBuf};
use crate::shm::channel::{Cut, PeerStream, Shared};
use crate::shm::queue::{Pos, Readers};
use crate::shm::single::Landing;

/// A sink per (peer, block), with the block's cut, in a list from
/// `Shared::peer_streams` (hand it back with `Shared::recycle`).
pub(crate) fn sinks(
    sh: &mut Shared,
    blocks: impl Iterator<Item = (usize, TypedBuf)>,
) -> Vec<PeerStream> {
    let mut list = sh.peer_streams();
    for (r, b) in blocks {
        list.push((r, b.sink(), sh.cut(b.bytes())));
    }
    list
}

/// On two processes, the bytes of the non-root's block, as each process
/// knows them: the non-root from its own block (`own`), the root from the
/// other's block of `root_side` (MPI requires the two to match).  A Gather
/// or Scatter decides its pair-buffer route from it, so both decide alike.
fn others_block(me: usize, root: usize, own: Option<&TypedBuf>, root_side: &RootSide) -> usize {
    match own {
        Some(own) if me != root => own.bytes(),
        _ => root_side.block(1 - me).bytes(),
    }
}

/// The other processes in rotation order from `me`: me+1, me+2, ... mod p.
pub(crate) fn rotation(me: usize, p: usize) -> impl Iterator<Item = usize> {
    (1..p).map(move |k| (me + k) % p)
}

/// Receives fragment i of every stream before fragment i+1 of any, so all
/// senders stream at once; then pulls the streams that come by single copy.
/// With `pushed`, the streams their senders write (`Shared::single_copy_push`)
/// are left to the caller (`gather`).  False when a pull failed (reported).
pub(crate) fn receive_all(
    sh: &mut Shared,
    sinks: &mut [PeerStream],
    op: u64,
    pushed: bool,
) -> bool {
    let queued = |sh: &Shared, cut: &Cut| queued(sh, cut.bytes, pushed);
    let pulled = |sh: &Shared, cut: &Cut| {
        !written_by_sender(sh, cut.bytes, pushed) && sh.single_copy(cut.bytes)
    };
    let most = sinks
        .iter()
        .filter(|(_, _, cut)| queued(sh, cut))
        .map(|(_, _, cut)| cut.count())
        .max()
        .unwrap_or(0);
    for i in 0..most {
        for (r, sink, cut) in sinks.iter_mut() {
            if i < cut.count() && queued(sh, cut) {
                sh.recv(*r, sink, *cut, op, i);
            }
        }
    }
    let mut outcome = Outcome::default();
    for (r, sink, cut) in sinks.iter_mut() {
        if pulled(sh, cut) {
            outcome.note(sh.take(*r, op, sink, cut.bytes));
        }
    }
    outcome.finish("receiving blocks")
}

/// Whether a stream of `bytes` bytes that `receive_all` receives is left
/// to its caller: with `pushed`, one its sender writes into our buffer
/// (`Shared::single_copy_push`).
fn written_by_sender(sh: &Shared, bytes: usize, pushed: bool) -> bool {
    pushed && sh.single_copy_push(bytes)
}

/// Whether a stream of `bytes` bytes is copied by its receiver: not
/// written by its sender and not pulled by single copy.  Those are the
/// streams `receive_all` takes through the queues (`Shared::land_call`),
/// and, on two processes, a Gather's through the pair buffer's ring.
fn queued(sh: &Shared, bytes: usize, pushed: bool) -> bool {
    !(written_by_sender(sh, bytes, pushed) || sh.single_copy(bytes))
}

/// Sends the `bytes` bytes of `src` to `readers` as operation `op`: by
/// single copy when the channel moves streams of that size so (the
/// receiving `receive_all` decides from the same size, so both ends agree),
/// else fragment by fragment through our queue.
pub(crate) fn send_stream(
    sh: &mut Shared,
    src: &mut Payload,
    bytes: usize,
    op: u64,
    readers: Readers<'_>,
) {
    if sh.single_copy(bytes) {
        let mut offers = Offers::default();
        offers.make(sh, src, bytes, op, readers);
        offers.settle(sh);
        return;
    }
    sh.send_all(src, sh.cut(bytes), op, readers);
}

/// `own` is this process's send block (None: MPI_IN_PLACE at the root).
///
/// Operation numbers: `first` for the senders' queues (a queued stream, or
/// the outcome of a write), `first + r` for the root's offer of block r's
/// place, so that each offer has a slot of its own.
pub fn gather(sh: &mut Shared, own: Option<TypedBuf>, root_side: &RootSide, root: usize) -> bool {
    // No rules for Gather: back to the built-in cut and radix.
    sh.choose(Coll::Gather, None);
    if let Some(done) = small_gather(sh, own, root_side, root) {
        return done;
    }
    let (me, p) = (sh.me, sh.p);
    // Two processes: the other's block as one stream through the pair
    // buffer's ring (`coll::pair::gather`), when its root copies it itself
    // (`queued`: neither pushed nor pulled by single copy).  Both know its
    // size (the root from its receive block), so both take the ring or
    // neither.
    if p == 2 {
        let bytes = others_block(me, root, own.as_ref(), root_side);
        if pair::takes_stream(sh, bytes) && queued(sh, bytes, true) {
            return pair::gather(sh, own, root_side, root, bytes);
        }
    }
    let first = sh.next_ops(p);
    if me != root {
        let own = own.expect("only the root may pass MPI_IN_PLACE");
        let mut src = own.source();
        let bytes = own.bytes();
        if sh.single_copy_push(bytes) {
            let written = sh.give(root, first + me as u64, &mut src, bytes);
            sh.report(written.is_ok(), Pos::new(first, 0), root);
            let mut outcome = Outcome::default();
            outcome.note(written);
            return outcome.finish("MPI_Gather(v)");
        }
        send_stream(sh, &mut src, bytes, first, Readers::One(root));
        return true;
    }
    let blocks = rotation(me, p).map(|r| (r, root_side.block(r)));
    let mut sinks = sinks(sh, blocks);
    // All we copy here, our own block included (`Shared::land_call`): the
    // blocks that go by single copy, pushed or pulled, are the kernel's.
    let landing = sinks
        .iter()
        .filter(|(_, _, cut)| queued(sh, cut.bytes, true))
        .map(|(_, _, cut)| cut.bytes)
        .sum::<usize>();
    let own_landing = own.as_ref().map_or(0, |_| root_side.block(me).bytes());
    let stores = sh.land_call(landing + own_landing);
    // The places of the blocks their senders write: offered before anything
    // else, so that the senders copy while we copy our own block.
    let mut landings: Vec<(usize, Pos, Landing)> = Vec::new();
    for (k, (r, sink, cut)) in sinks.iter().enumerate() {
        if sh.single_copy_push(cut.bytes) {
            let landing = Landing::new(sink, cut.bytes);
            let pos = sh.offer(landing.addr, cut.bytes, first + *r as u64, Readers::One(*r));
            landings.push((k, pos, landing));
        }
    }
    if !landings.is_empty() {
        tracing::trace!(
            "MPI_Gather(v): {} blocks written by their senders",
            landings.len()
        );
    }
    let copied = own.is_none_or(|src| src.copy_to(&root_side.block(me), stores));
    let mut received = receive_all(sh, &mut sinks, first, true);
    for (k, pos, landing) in &landings {
        let r = sinks[*k].0;
        // The sender acknowledged the offer before it reported.
        let written = sh.outcome(r, Pos::new(first, 0));
        sh.settle(*pos);
        if written {
            landing.finish(&mut sinks[*k].1);
        } else {
            tracing::error!("MPI_Gather(v): rank {r} could not write its block (single copy)");
            received = false;
        }
    }
    sh.recycle(sinks);
    received && copied
}

/// `own` is this process's receive block (None: MPI_IN_PLACE at the root).
pub fn scatter(sh: &mut Shared, own: Option<TypedBuf>, root_side: &RootSide, root: usize) -> bool {
    sh.choose(Coll::Scatter, None);
    if let Some(done) = small_scatter(sh, own, root_side, root) {
        return done;
    }
    let (me, p) = (sh.me, sh.p);
    // Two processes: the other's block as one stream through the pair
    // buffer's ring (`coll::pair::scatter`) unless it goes by single copy.
    // Both know its size (the root from its send block), so both take the
    // ring or neither.
    if p == 2 {
        let bytes = others_block(me, root, own.as_ref(), root_side);
        if pair::takes_stream(sh, bytes) && !sh.single_copy_scatter(bytes) {
            return pair::scatter(sh, own, root_side, root, bytes);
        }
    }
    let first = sh.next_ops(p);
    let round = |r: usize| first + r as u64;
    if me != root {
        let own = own.expect("only the root may pass MPI_IN_PLACE");
        let mut sink = own.sink();
        if sh.single_copy_scatter(own.bytes()) {
            let mut outcome = Outcome::default();
            outcome.note(sh.take(root, round(me), &mut sink, own.bytes()));
            return outcome.finish("MPI_Scatter(v)");
        }
        let cut = sh.cut(own.bytes());
        for i in 0..cut.count() {
            sh.recv(root, &mut sink, cut, round(me), i);
        }
        return true;
    }
    let mut offers = Offers::default();
    for r in rotation(me, p) {
        let block = root_side.block(r);
        let mut src = block.source();
        if sh.single_copy_scatter(block.bytes()) {
            offers.make(sh, &mut src, block.bytes(), round(r), Readers::One(r));
            continue;
        }
        sh.send_all(&mut src, sh.cut(block.bytes()), round(r), Readers::One(r));
    }
    // Our own block while the receivers copy or pull theirs.
    let copied = own.is_none_or(|dst| root_side.block(me).copy_to(&dst, sh.landing()));
    offers.settle(sh);
    copied
}

/// Whether this process said (at verbose 100) that a Gather's or a
/// Scatter's blocks travelled with their headers; once per process is
/// enough for the tests.
static GATHER_SAID: SayOnce = SayOnce::new();
static SCATTER_SAID: SayOnce = SayOnce::new();

/// The start of `small_gather` (`kind` Gather) and `small_scatter`:
/// whether the blocks this process moves all travel with their headers
/// (the root's, its own aside; another process's own), and then the call's
/// operation numbers, the first returned.  None, and nothing done, when a
/// block does not.
#[inline(always)]
fn small_start(
    sh: &mut Shared,
    own: Option<&TypedBuf>,
    root_side: &RootSide,
    root: usize,
    kind: Kind,
) -> Option<u64> {
    let me = sh.me;
    let fits = match own {
        _ if me == root => all_travel(sh, root_side, Some(me), kind),
        Some(own) => travels_with_header(sh, own, kind),
        None => panic!("only the root may pass MPI_IN_PLACE"),
    };
    if !fits {
        return None;
    }
    let (said, name) = match kind {
        Kind::Scatter => (&SCATTER_SAID, "MPI_Scatter(v)"),
        _ => (&GATHER_SAID, "MPI_Gather(v)"),
    };
    if said.first() {
        tracing::trace!("{name}: blocks travel with their headers");
    }
    Some(sh.next_ops(sh.p))
}

/// `gather` for blocks that all travel with their slot headers
/// (`coll::small`): a sender publishes its block for the root, and the root
/// copies its own block, then each sender's in rotation.  None (and nothing
/// done) when a block this process moves does not fit.  The caller
/// (`gather`, or the express lane) reset the call's cut.
///
/// The queue sees what `gather` does for such blocks: each sender's block
/// as the one fragment of operation `first`, where the root takes it, and
/// nothing in the root's queue (the root offers places only for blocks its
/// senders write, never for these).  A process on either path meets the
/// others on theirs.
pub(crate) fn small_gather(
    sh: &mut Shared,
    own: Option<TypedBuf>,
    root_side: &RootSide,
    root: usize,
) -> Option<bool> {
    let (me, p) = (sh.me, sh.p);
    let first = small_start(sh, own.as_ref(), root_side, root, Kind::Gather)?;
    if me != root {
        let own = own.expect("checked above");
        let pos = sh.cut(own.bytes()).pos(first, 0);
        small::publish(sh, &own, pos, Readers::One(root));
        return Some(true);
    }
    let copied = own.is_none_or(|src| src.copy_to(&root_side.block(me), sh.landing()));
    for r in rotation(me, p) {
        let block = root_side.block(r);
        small::take(sh, r, sh.cut(block.bytes()).pos(first, 0), &block);
    }
    Some(copied)
}

/// `scatter` for blocks that all travel with their slot headers
/// (`coll::small`): the root publishes each receiver's block in its round,
/// then copies its own; a receiver copies its block out.  None (and
/// nothing done) when a block this process moves does not fit.  The caller
/// (`scatter`, or the express lane) reset the call's cut.
///
/// The queue sees what `scatter` does for such blocks: block r as the one
/// fragment of operation `first + r` of the root's queue.
pub(crate) fn small_scatter(
    sh: &mut Shared,
    own: Option<TypedBuf>,
    root_side: &RootSide,
    root: usize,
) -> Option<bool> {
    let (me, p) = (sh.me, sh.p);
    let first = small_start(sh, own.as_ref(), root_side, root, Kind::Scatter)?;
    if me != root {
        let own = own.expect("checked above");
        let pos = sh.cut(own.bytes()).pos(first + me as u64, 0);
        small::take(sh, root, pos, &own);
        return Some(true);
    }
    for r in rotation(me, p) {
        let block = root_side.block(r);
        let pos = sh.cut(block.bytes()).pos(first + r as u64, 0);
        small::publish(sh, &block, pos, Readers::One(r));
    }
    Some(own.is_none_or(|dst| root_side.block(me).copy_to(&dst, sh.landing())))
}
