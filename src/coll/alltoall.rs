//! MPI_Alltoall(v).
//!
//! * pairwise (Alltoallv always; Alltoall above one fragment per block): p-1
//!   rounds; in round k a process streams its block for me XOR k and
//!   receives the block of me XOR k when p is a power of two, else for
//!   (me+k) mod p and from (me-k) mod p, its reads trailing its writes by
//!   what the queues hold (so no round waits in a cycle).  Each round has
//!   its own operation number (`Rounds`), so a receiver needs only its own
//!   counts.  A process whose blocks the ring holds all at once publishes
//!   every round's block before it reads any (`publishes_first`); on a
//!   crowded node the rounds are spaced in the ring for that.
//! * pulls as offered (crowded node, every block of this process by single
//!   copy): the rounds' offers all at once, then the pulls in the order the
//!   offers appear (`pull_any`).
//! * linear (Alltoall, equal blocks): one operation; every process publishes
//!   its p-1 blocks one after the other (block for (me+j) mod p at positions
//!   j·F ...), and reads its own block from every queue, trailing its writing
//!   by up to one queue's worth of positions (the argument of
//!   Reduce_scatter).  All pairs move at once: one phase instead of p-1.

use crate::coll::gather::rotation;
use crate::coll::pair;
use crate::coll::single_copy::{Offers, Outcome};
use crate::coll::small::{self, all_travel, Kind, SayOnce};
use crate::ompi::call::Coll;
use crate::ompi::ffi::Crowding;
use crate::ompi::params::Algorithm;
use crate::ompi::payload::RootSide;
use crate::ompi::payload::{Payload, SelfCopy};
use crate::shm::channel::Shared;
use crate::shm::queue::{Pos, Readers, PREFETCH_MAX_BYTES};
use tracing::trace;

/// Where the block for each destination comes from: the send side, or (in
/// place, a small Alltoall on a crowded node: `CROWDED_ASIDE_ALL_BYTES`) a
/// packed copy of the receive buffer, since a block may be overwritten
/// before it is sent.
struct Sources<'a> {
    send: Option<&'a RootSide<'a>>,
    copy: Vec<u8>,
    offsets: Vec<usize>,
}

impl<'a> Sources<'a> {
    fn new(send: Option<&'a RootSide<'a>>, recv: &RootSide, p: usize) -> Sources<'a> {
        let mut copy = Vec::new();
        let mut offsets = Vec::new();
        if send.is_none() {
            offsets.resize(p + 1, 0);
            for r in 0..p {
                let end = offsets[r] + recv.block(r).bytes();
                offsets[r + 1] = end;
            }
            copy.resize(offsets[p], 0);
            for (r, &offset) in offsets[..p].iter().enumerate() {
                let block = recv.block(r);
                let mut src = block.source();
                // SAFETY: `copy` holds offsets[p] bytes.
                unsafe { src.read(0, copy.as_mut_ptr().add(offset), block.bytes()) };
            }
        }
        Sources {
            send,
            copy,
            offsets,
        }
    }

    /// The length of the stream for destination `to`.
    fn bytes(&self, to: usize) -> usize {
        match self.send {
            Some(side) => side.block(to).bytes(),
            None => self.offsets[to + 1] - self.offsets[to],
        }
    }

    /// The stream for destination `to`, and its length.
    fn block(&mut self, to: usize) -> (Payload, usize) {
        match self.send {
            Some(side) => {
                let block = side.block(to);
                (block.source(), block.bytes())
            }
            // SAFETY: offsets lie within `copy`.
            None => (
                Payload::Contiguous(unsafe { self.copy.as_mut_ptr().add(self.offsets[to]) }),
                self.offsets[to + 1] - self.offsets[to],
            ),
        }
    }
}

/// On a crowded node an in-place Alltoall whose receive buffer takes at most
/// this many bytes is copied aside whole and then runs as any other, its
/// rounds published first where they fit (`publishes_first`, `small`);
/// other in-place calls go a block at a time (`in_place`), whose rounds each
/// need both of their processes on a core.  np=8 on 2 cores, 3 launches of
/// 3,000 calls (2026-11-29, µs, whole copy / a block at a time, each block
/// copied aside as in 2576a39 / coll/tuned):
/// blocks of 8 B 18-27 / 47-57 / 38-47, 1 KiB 21-31 / 50-63 / 96-109, 64 KiB
/// (512 KiB whole) 312-505 / 289-310 / 525-644; np=4 64 KiB 58-66 / 52-73 /
/// 89-105.  With a core per process a block at a time was as fast or
/// faster (np=2, 8 B 0.26-0.38 against 0.32-0.48, 1 KiB 0.39-0.71 against
/// 0.46-1.10; 64 KiB 7.3-13.1 and 1 MiB 188-319 against 10.8-11.1 and
/// 200-233, the launches overlapping).  Every process knows the size, so
/// all decide alike.
const CROWDED_ASIDE_ALL_BYTES: usize = 256 << 10;

/// `send`: the send side (None: MPI_IN_PLACE, see `in_place`);
/// `uniform`: all blocks have the same size (MPI_Alltoall).
pub fn alltoall(sh: &mut Shared, send: Option<&RootSide>, recv: &RootSide, uniform: bool) -> bool {
    let p = sh.p;
    // The trace names the call.
    let called = if uniform {
        Coll::Alltoall
    } else {
        Coll::Alltoallv
    };
    let block_bytes = recv.block(sh.me).bytes();
    // Two processes: blocks that fit the pair buffer go through it,
    // whichever of the two exchanges is chosen.
    if let Some(side) = send.filter(|side| takes_pair(sh, side, recv)) {
        let alg = sh.choose(Coll::Alltoall, uniform.then_some(block_bytes));
        ran_exchange(sh, called, takes_linear(sh, alg, uniform, block_bytes));
        return through_pair(sh, side, recv);
    }
    // Blocks that travel with their headers go before anything else is set
    // up (`small`); the algorithm is chosen first, as for any call.
    let mut chosen = None;
    if uniform && block_bytes <= PREFETCH_MAX_BYTES {
        let alg = sh.choose(Coll::Alltoall, Some(block_bytes));
        chosen = Some(alg);
        if let (true, Some(side)) = (takes_linear(sh, alg, uniform, block_bytes), send) {
            if let Some(done) = small(sh, side, recv) {
                sh.ran(called, Algorithm::Linear);
                return done;
            }
        }
    } else if let (false, Some(side)) = (uniform, send) {
        // Alltoallv: pairwise whatever is chosen (`takes_linear`).
        chosen = Some(sh.choose(Coll::Alltoall, None));
        if let Some(done) = small_pairwise(sh, side, recv) {
            sh.ran(called, Algorithm::Pairwise);
            return done;
        }
    }
    if send.is_none() && !(sh.crowded() && uniform && block_bytes * p <= CROWDED_ASIDE_ALL_BYTES) {
        // MPI_IN_PLACE (given by every process: MPI requires it of all).
        if chosen.is_none() {
            sh.choose(Coll::Alltoall, uniform.then_some(block_bytes));
        }
        sh.ran(called, Algorithm::Pairwise);
        return in_place(sh, recv);
    }
    let mut sources = Sources::new(send, recv, p);
    let own_copy = SelfCopy::new(send.map(|side| side.block(sh.me)), recv.block(sh.me));
    // All we copy here, our own block included (`Shared::land_call`),
    // said once the call's operation numbers are taken; the blocks that go
    // by single copy are the kernel's.
    let me = sh.me;
    let landing: usize = (0..p)
        .map(|r| (r, recv.block(r).bytes()))
        .filter(|&(r, bytes)| {
            if r == me {
                send.is_some()
            } else {
                !by_single_copy(sh, bytes)
            }
        })
        .map(|(_, bytes)| bytes)
        .sum();
    if pulls_only(sh, &sources, recv) {
        sh.ran(called, Algorithm::Pairwise);
        return pull_any(sh, &mut sources, recv, own_copy);
    }
    let chosen =
        chosen.unwrap_or_else(|| sh.choose(Coll::Alltoall, uniform.then_some(block_bytes)));
    let linear = takes_linear(sh, chosen, uniform, block_bytes);
    ran_exchange(sh, called, linear);
    if linear {
        linear_exchange(sh, &mut sources, recv, block_bytes, own_copy, landing)
    } else {
        pairwise(sh, &mut sources, recv, own_copy, landing)
    }
}

/// Counts the call as the exchange it runs: linear or pairwise (what
/// `takes_linear` said; the pair buffer's calls too, whose one exchange
/// stands for either).
fn ran_exchange(sh: &mut Shared, called: Coll, linear: bool) {
    let alg = if linear {
        Algorithm::Linear
    } else {
        Algorithm::Pairwise
    };
    sh.ran(called, alg);
}

/// Whether a call with the algorithm `chosen` runs `linear_exchange`: equal
/// blocks that do not go by single copy (those take the pairwise rounds, an
/// offer per pair, the rounds not waiting for each other), and `linear`
/// asked for, or `auto` with blocks of at most one fragment, or on an
/// oversubscribed node with the p-1 blocks of each process taking
/// `OVERSUBSCRIBED_LINEAR_BYTES` together.
fn takes_linear(sh: &Shared, chosen: Algorithm, uniform: bool, block_bytes: usize) -> bool {
    let oversubscribed_linear = || {
        sh.crowding >= Crowding::Oversubscribed
            && OVERSUBSCRIBED_LINEAR_BYTES.contains(&(block_bytes * (sh.p - 1)))
    };
    uniform
        && !by_single_copy(sh, block_bytes)
        && match chosen {
            Algorithm::Linear => true,
            Algorithm::Auto => block_bytes <= sh.fragment() || oversubscribed_linear(),
            _ => false,
        }
}

/// Under `auto` with more processes than cores, Alltoall runs `linear`
/// when a process's p-1 blocks take this many bytes together (pairwise
/// beyond a fragment otherwise): its p-1 streams go out at once and each
/// process reads whenever it runs, where each pairwise round needs both of
/// its processes on a core.  np=4 and np=8 on 2 cores, medians of 5
/// launches (2026-11-26 evening), pairwise / linear / tuned in us: np=4 64
/// KiB 136 / 116 / 126, 128 KiB 259 / 208 / 233, 256 KiB 491 / 419 / 456,
/// but 16/32 KiB 35/58 / 41/65 and 512 KiB 971 / 1001; np=8 32 KiB 377 /
/// 315 / 344, 64 KiB 768 / 599 / 644, 128 KiB 1474 / 1385 / 1247, but 256
/// KiB 3359 / 3506 and 512 KiB 6697 / 7626 (16 KiB, 112 KiB together, 249 /
/// 169 / 258, is left to pairwise).  With this rule, 5 more launches each,
/// before / after / tuned: np=4 64 / 128 / 256 KiB 128 / 120 / 134, 257 /
/// 206 / 238, 481 / 422 / 454; np=8 32 / 64 / 128 KiB 473 / 402 / 337, 837
/// / 609 / 637, 1821 / 1654 / 1343 (tuned ahead at np=8 32 KiB in this
/// set but not in the first, and at 128 KiB in both).
const OVERSUBSCRIBED_LINEAR_BYTES: std::ops::RangeInclusive<usize> = (128 << 10)..=(1 << 20);

/// The largest Alltoall block that takes the pair buffer (`coll::pair`),
/// however large its halves: at 512 KiB a block took 1.03-1.11x the queues' time near
/// (np=2, two sets of 6 rounds in turns, where 1-256 KiB took 0.60-0.81x;
/// `docs/benchmark/2026-11-30-h-pair/ab/`).
const PAIR_MAX_BYTES: usize = 256 << 10;

/// Whether this process said (at verbose 100) that an Alltoall(v) went
/// through the pair buffer (`coll::pair`).
static PAIR_SAID: SayOnce = SayOnce::new();

/// Whether this process said (at verbose 100) that an Alltoall's blocks
/// travelled with their headers (`small`); once per process is enough for
/// the tests.
static SMALL_SAID: SayOnce = SayOnce::new();

/// `linear_exchange` for blocks that all travel with their slot headers
/// (`coll::small`), not in place: our p-1 blocks published one after the
/// other, our own copy, then our block from each writer.  None (and
/// nothing done) when a block does not fit, or when the ring cannot hold
/// our p-1 blocks at once.  The caller chose `linear_exchange`
/// (`takes_linear`).
///
/// The queue sees exactly what `linear_exchange` does for such blocks: the
/// block for (me+1+j) mod p at position j, read from writer w at position
/// (me-w) mod p - 1, and with p <= s that path too publishes all of them
/// before it reads (its lag is p-1).
fn small(sh: &mut Shared, send: &RootSide, recv: &RootSide) -> Option<bool> {
    let (me, p) = (sh.me, sh.p);
    if p > sh.queues.layout().s
        || !all_travel(sh, send, None, Kind::Exchange)
        || !all_travel(sh, recv, None, Kind::Exchange)
    {
        return None;
    }
    if SMALL_SAID.first() {
        trace!("MPI_Alltoall: blocks travel with their headers");
    }
    let op = sh.next_op();
    let cut = sh.cut(recv.block(me).bytes());
    for (j, to) in rotation(me, p).enumerate() {
        small::publish(sh, &send.block(to), cut.pos(op, j), Readers::One(to));
    }
    let copied = send.block(me).copy_to(&recv.block(me), sh.landing());
    for k in 1..p {
        let w = (me + p - k) % p;
        small::take(sh, w, cut.pos(op, k - 1), &recv.block(w));
    }
    Some(copied)
}

/// Whether this process said (at verbose 100) that an Alltoallv's blocks
/// travelled with their headers (`small_pairwise`).
static SMALL_PAIRWISE_SAID: SayOnce = SayOnce::new();

/// `pairwise` for an Alltoallv whose blocks, sent and received, all
/// travel with their slot headers (`coll::small`; our own block aside), not
/// in place: our block for each round's `to` published, our own copy, then
/// each round's block from `from` copied out; round by round instead (the
/// block for `to`, then the one from `from`) when the ring cannot hold our
/// p-1 blocks at once.  None (and nothing done) when a block does not fit.
///
/// The queue sees what `pairwise` does for such blocks: one fragment at
/// position 0 of each round's operation, ours written before the round's
/// read.  Both ends of a pair know its block's size, so each pair decides
/// alike, and a process on this path meets one on `pairwise` (whose other
/// blocks, say, are larger): that one waits in round k only for our
/// round-k block, published before any of our reads.  Publishing all
/// first matters on a crowded node, where a round that needs both of its
/// processes on a core waits for the scheduler (as `linear_exchange` for
/// Alltoall, `OVERSUBSCRIBED_LINEAR_BYTES`).
///
/// Why: at np=2 and 8 bytes an Alltoallv took 0.48 µs with the cores near
/// where coll/tuned took 0.39 and sharm's Alltoall, on `small`, 0.38
/// (2026-11-28, `docs/benchmark/2026-11-28-j-v/`): the stream machinery
/// (sources, payloads, landing, the call's self copy) was most of it.
fn small_pairwise(sh: &mut Shared, send: &RootSide, recv: &RootSide) -> Option<bool> {
    let (me, p) = (sh.me, sh.p);
    if !all_travel(sh, send, Some(me), Kind::Exchange)
        || !all_travel(sh, recv, Some(me), Kind::Exchange)
    {
        return None;
    }
    if SMALL_PAIRWISE_SAID.first() {
        trace!("MPI_Alltoallv: blocks travel with their headers");
    }
    let rounds = Rounds::take(sh);
    let round = |k: usize| (partners(me, k, p), rounds.op(k));
    let publish = |sh: &mut Shared, k: usize| {
        let ((to, _), op) = round(k);
        let out = send.block(to);
        small::publish(sh, &out, sh.cut(out.bytes()).pos(op, 0), Readers::One(to));
    };
    let take = |sh: &mut Shared, k: usize| {
        let ((_, from), op) = round(k);
        let inc = recv.block(from);
        small::take(sh, from, sh.cut(inc.bytes()).pos(op, 0), &inc);
    };
    if p - 1 <= sh.queues.layout().s {
        (1..p).for_each(|k| publish(sh, k));
        let copied = send.block(me).copy_to(&recv.block(me), sh.landing());
        (1..p).for_each(|k| take(sh, k));
        return Some(copied);
    }
    for k in 1..p {
        publish(sh, k);
        take(sh, k);
    }
    Some(send.block(me).copy_to(&recv.block(me), sh.landing()))
}

/// The express lane's Alltoall (`dispatch::express`, which settled that
/// `auto` or `linear` decides and no rule speaks): the pair buffer or
/// `small` where `alltoall` would run them.  None (and nothing done)
/// otherwise.
pub(crate) fn express(sh: &mut Shared, send: &RootSide, recv: &RootSide) -> Option<bool> {
    let block_bytes = recv.block(sh.me).bytes();
    if !takes_linear(sh, Algorithm::Auto, true, block_bytes) {
        return None;
    }
    if takes_pair(sh, send, recv) {
        return Some(through_pair(sh, send, recv));
    }
    small(sh, send, recv)
}

/// Whether the blocks of an Alltoall(v) on two processes go through the
/// pair buffer (`coll::pair`).  Asked first on every path (`alltoall`, and
/// `express` from the lane), from sizes both processes know (ours out is
/// the other's in), so that both take it or neither: the short paths also
/// look at our own send layout, which the other does not know.
fn takes_pair(sh: &Shared, send: &RootSide, recv: &RootSide) -> bool {
    if sh.p != 2 {
        return false;
    }
    let peer = 1 - sh.me;
    let (out, inc) = (send.block(peer).bytes(), recv.block(peer).bytes());
    out.max(inc) <= PAIR_MAX_BYTES && pair::takes(sh, out, inc, |bytes| by_single_copy(sh, bytes))
}

/// The exchange `takes_pair` found the pair buffer takes.
fn through_pair(sh: &mut Shared, send: &RootSide, recv: &RootSide) -> bool {
    let (me, peer) = (sh.me, 1 - sh.me);
    let (out, inc) = (send.block(peer), recv.block(peer));
    pair::exchange(
        sh,
        ("MPI_Alltoall(v)", &PAIR_SAID),
        (&mut out.source(), out.bytes()),
        (&mut inc.sink(), inc.bytes()),
        SelfCopy::new(Some(send.block(me)), recv.block(me)),
    )
}

/// The pairwise rounds.  Within a round the reads trail the writes by as
/// many fragments as both queues hold without a cycle of waits (the argument
/// of `allgather::exchange`, with (round, step) in place of the step: a
/// process in a later round has published and read all of the earlier ones).
/// `own_copy` runs once the first round's stream is out.  Each pair's block
/// goes by single copy when its size (known to both) is large enough: the
/// offer is made at the start of the round, the pull at its end, and the
/// offers are settled after all rounds.
fn pairwise(
    sh: &mut Shared,
    sources: &mut Sources,
    recv: &RootSide,
    own_copy: SelfCopy,
    landing: usize,
) -> bool {
    let (me, p) = (sh.me, sh.p);
    let rounds = Rounds::take(sh);
    let stores = sh.land_call(landing);
    let mut own_copy = own_copy.landing(stores);
    let mut offers = Offers::default();
    let mut outcome = Outcome::default();
    if publishes_first(sh, sources, rounds) {
        let op = |k: usize| rounds.op(k);
        for k in 1..p {
            let (to, _) = partners(me, k, p);
            let (mut src, out_bytes) = sources.block(to);
            if by_single_copy(sh, out_bytes) {
                offers.make(sh, &mut src, out_bytes, op(k), Readers::One(to));
            } else {
                sh.send_all(&mut src, sh.cut(out_bytes), op(k), Readers::One(to));
            }
        }
        own_copy.run();
        trace!("MPI_Alltoall(v) on {p} processes published every round's block first");
        for k in 1..p {
            let (_, from) = partners(me, k, p);
            let incoming = recv.block(from);
            let mut sink = incoming.sink();
            let in_bytes = incoming.bytes();
            if by_single_copy(sh, in_bytes) {
                outcome.note(sh.take(from, op(k), &mut sink, in_bytes));
            } else {
                let inc = sh.cut(in_bytes);
                for i in 0..inc.count() {
                    sh.recv(from, &mut sink, inc, op(k), i);
                }
            }
        }
        let copied = own_copy.finish();
        offers.settle(sh);
        return outcome.finish("MPI_Alltoall(v)") && copied;
    }
    for k in 1..p {
        let (to, from) = partners(me, k, p);
        let incoming = recv.block(from);
        let (mut src, out_bytes) = sources.block(to);
        let in_bytes = incoming.bytes();
        exchange_round(
            sh,
            rounds.op(k),
            (to, &mut src, out_bytes, by_single_copy(sh, out_bytes)),
            (
                from,
                &mut incoming.sink(),
                in_bytes,
                by_single_copy(sh, in_bytes),
            ),
            (&mut offers, &mut outcome),
            || own_copy.run(),
        );
    }
    let copied = own_copy.finish();
    offers.settle(sh);
    outcome.finish("MPI_Alltoall(v)") && copied
}

/// One round of the pairwise exchange on its own: our stream (`src`,
/// `out_bytes` bytes) to `to` and the stream from `from` into `sink`
/// (`in_bytes`), as operation `op`.  The reads trail the writes by as many
/// fragments as both queues hold (see `pairwise`).  Our block goes by
/// single copy instead when `offered`, offered first and left in `offers`
/// for the caller to settle, and theirs when `pulled`, pulled last; the two
/// ends of a block decide alike, from its size.  `sent` runs once our
/// stream is out.
fn exchange_round(
    sh: &mut Shared,
    op: u64,
    (to, src, out_bytes, offered): (usize, &mut Payload, usize, bool),
    (from, sink, in_bytes, pulled): (usize, &mut Payload, usize, bool),
    (offers, outcome): (&mut Offers, &mut Outcome),
    mut sent: impl FnMut(),
) {
    let out = if offered {
        offers.make(sh, src, out_bytes, op, Readers::One(to));
        sh.cut(0)
    } else {
        sh.cut(out_bytes)
    };
    let inc = sh.cut(if pulled { 0 } else { in_bytes });
    let most = out.count().max(inc.count());
    let slots = sh.queues.layout().s;
    let lag = out.lag(slots, most).min(inc.lag(slots, most));
    for step in 0..most + lag {
        if step < out.count() {
            sh.send(src, out, op, step, Readers::One(to));
        }
        if step + 1 >= out.count() {
            sent();
        }
        if let Some(i) = step.checked_sub(lag).filter(|&i| i < inc.count()) {
            sh.recv(from, sink, inc, op, i);
        }
    }
    if pulled {
        outcome.note(sh.take(from, op, sink, in_bytes));
    }
}

/// Alltoall(v) with MPI_IN_PLACE: block j of the receive buffer goes to
/// process j and is replaced by j's block for us, of the same size (MPI
/// asks the two ends of a pair for the same type signature, and every
/// process to pass MPI_IN_PLACE, so all come here).  The rounds swap: in
/// round k (0 <= k < p) a process pairs with (k - me) mod p, so each pair
/// meets once, in round (a + b) mod p, and a process paired with itself
/// sits the round out.
///
/// Through the queues a block needs no copy aside: the two streams of a
/// swap have the same datatype, count and place, so stream offset x is the
/// same bytes both ways, and `exchange_round` publishes fragment i (copies
/// it into our queue) before it writes incoming fragment i over it (its
/// reads trail its writes).  A block that goes by single copy is offered
/// for the peer to pull while we pull its block over ours, so it is copied
/// aside first and offered from there; the offer is settled before the
/// next round reuses the space.  Blocks beyond `IN_PLACE_ASIDE_MAX_BYTES`
/// take the queues whatever their size, so that the copy aside stays
/// bounded.
///
/// Why a block at a time: the memory.  Copying the whole receive buffer
/// aside first, as this did until 2026-11-29, doubled the call's footprint,
/// and a program passes MPI_IN_PLACE when memory is short: ompi-tests-public's
/// big-count Alltoall (8 GB of blocks per process at np=2, 23 GiB of RAM)
/// was killed by the kernel for it.  coll/tuned's in-place Alltoall keeps
/// one block aside.
fn in_place(sh: &mut Shared, recv: &RootSide) -> bool {
    let (me, p) = (sh.me, sh.p);
    let rounds = Rounds::take(sh);
    let others = || {
        (0..p)
            .filter(move |&r| r != me)
            .map(|r| recv.block(r).bytes())
    };
    let single =
        |sh: &Shared, bytes| bytes <= IN_PLACE_ASIDE_MAX_BYTES && by_single_copy(sh, bytes);
    // What we copy into the receive buffer (`Shared::land_call`): the
    // blocks that go by single copy land by the kernel's copies.
    sh.land_call(others().filter(|&bytes| !single(sh, bytes)).sum());
    let pulled = others().filter(|&bytes| single(sh, bytes));
    let mut aside = vec![0u8; pulled.max().unwrap_or(0)];
    let mut outcome = Outcome::default();
    for k in 0..p {
        let peer = (k + p - me) % p;
        if peer == me {
            continue;
        }
        let block = recv.block(peer);
        let bytes = block.bytes();
        let by_single_copy = single(sh, bytes);
        let mut src = if by_single_copy {
            // SAFETY: `aside` holds the largest such block; the stream
            // holds `bytes`.
            unsafe { block.source().read(0, aside.as_mut_ptr(), bytes) };
            Payload::Contiguous(aside.as_mut_ptr())
        } else {
            block.source()
        };
        let mut offers = Offers::default();
        exchange_round(
            sh,
            rounds.op(k),
            (peer, &mut src, bytes, by_single_copy),
            (peer, &mut block.sink(), bytes, by_single_copy),
            (&mut offers, &mut outcome),
            || {},
        );
        offers.settle(sh);
    }
    trace!("MPI_Alltoall(v) on {p} processes swapped its blocks in place");
    outcome.finish("MPI_Alltoall(v)")
}

/// The largest block an in-place Alltoall(v) moves by single copy, which
/// needs it copied aside (`in_place`); larger blocks take the queues, which
/// need nothing aside.  A bound on the memory a call takes beyond the
/// application's, well above the sizes from which single copy is chosen
/// (256 KiB to 4 MiB).
const IN_PLACE_ASIDE_MAX_BYTES: usize = 64 << 20;

/// Whether `pairwise` publishes every round's block before it reads any:
/// when each of our p-1 blocks is one offer or one fragment, or on a
/// crowded node any number of fragments, and the ring holds them all at
/// once.  Offers and fragments of one slot take p-1 distinct slots in p-1
/// rounds when p-1 <= s (`queue`, "Where an operation starts"; the rounds
/// are one operation or `Rounds::spacing` apart); wider fragments (blocks
/// from 16 KiB) and blocks of several fragments are placed by their width,
/// so their slots are checked (`Queues::apart`).  Then no publication waits
/// for a reader of this call: only, perhaps, for one still finishing an
/// earlier call, which needs nothing more from us.  The positions are the
/// rounds' own, so a partner going round by round (its blocks do not fit
/// at once) finds each block where it looks, and waits in round k only for
/// our round-k block, published before any of our reads.
///
/// Why: with more processes than cores a round that needs both of its
/// processes on a core waits for the scheduler, p-1 times in a call; this
/// way a process does all its writing whenever it runs (`small_pairwise`
/// does the same for blocks that travel with their headers).  Blocks of
/// several fragments wait for a crowded node's spaced rounds: without them
/// round k+1 starts on round k's second fragment, and where the cores are
/// a process's own, the rounds' reads trailing their writes (below) keep
/// the pipelining that publishing everything first would give up.
fn publishes_first(sh: &Shared, sources: &Sources, rounds: Rounds) -> bool {
    let (me, p) = (sh.me, sh.p);
    if p - 1 > sh.queues.layout().s {
        return false;
    }
    // Round k's block: one offer, or its fragments' cut.
    let block = |k: usize| {
        let bytes = sources.bytes(partners(me, k, p).0);
        (!by_single_copy(sh, bytes)).then(|| sh.cut(bytes))
    };
    let most_fragments = if rounds.spacing > 1 { usize::MAX } else { 1 };
    let (mut one_slot, mut one_fragment) = (true, true);
    for k in 1..p {
        if let Some(cut) = block(k) {
            if cut.count() > most_fragments {
                return false;
            }
            one_fragment &= cut.count() <= 1;
            one_slot &= cut.count() <= 1 && cut.width == 1;
        }
    }
    // One round's one fragment is apart from nothing (np=2: no allocation).
    if one_slot || (p == 2 && one_fragment) {
        return true;
    }
    let positions = (1..p).flat_map(|k| {
        let op = rounds.op(k);
        let fragments = block(k).map(|cut| (0..cut.count()).map(move |i| cut.pos(op, i)));
        let offer = fragments.is_none().then(|| Pos::new(op, 0));
        fragments.into_iter().flatten().chain(offer)
    });
    sh.queues.apart(positions)
}

/// The operation numbers of a call's p-1 pairwise rounds: round k (1 <= k
/// < p) is operation `first + k * spacing` (`Shared::round_spacing`).  The
/// processes of one Alltoallv may take different paths (`small_pairwise`,
/// `pull_any`, `pairwise`, by their own blocks' sizes), and every path
/// numbers its rounds so: the two ends of a block meet at the same
/// position, and all take the same operation numbers.
#[derive(Clone, Copy)]
struct Rounds {
    first: u64,
    spacing: u64,
}

impl Rounds {
    /// Takes the call's operation numbers.
    fn take(sh: &mut Shared) -> Rounds {
        let spacing = sh.round_spacing(sh.p - 1);
        Rounds {
            first: sh.next_ops(sh.p * spacing as usize),
            spacing,
        }
    }

    fn op(self, k: usize) -> u64 {
        self.first + k as u64 * self.spacing
    }
}

/// On a crowded node, blocks from this size go by single copy whatever the
/// calibration found.
///
/// First set at 1 MiB (2026-11-26: every block pulled as offered,
/// `pull_any`, took 1.13x the queues' rounds' time at 256 KiB, 0.83-0.95x
/// at 1 MiB).  Moved to 256 KiB on 2026-11-28, once the rounds had their
/// costs cut and an Alltoallv with blocks on both sides of the line (it then
/// goes round by round, offers and streams mixed) had been measured: np=4
/// and 8 on 2 cores, sharm_bench's counts (an Alltoallv's blocks 0.5-1.5x
/// the size), 10 alternated launches, thresholds 1 MiB / 512 KiB / 256 KiB
/// as a fraction of coll/tuned's time: np=8 Alltoall 256 KiB 1.07 / 1.13 /
/// 0.88, 512 KiB 1.16 / 0.96 / 0.93; Alltoallv 512 KiB 1.20 / 1.26 / 1.00,
/// 1 MiB 1.18 / 0.93 / 0.94; np=4 all 0.77-0.96 whichever (2 more sets of
/// 7 agreed at np=8).  The mixed band (an Alltoallv of 256 KiB here, 1.08 in
/// all three) moves down with the line; below it the rounds stay.
const CROWDED_PULL_MIN_BYTES: usize = 256 << 10;

/// Whether a block of `bytes` bytes goes by single copy: as any exchange
/// (`Shared::single_copy_exchange`), and on a crowded node also from
/// `CROWDED_PULL_MIN_BYTES`.  Both ends of a block know its size, and the
/// crowding is agreed, so they decide alike.
fn by_single_copy(sh: &Shared, bytes: usize) -> bool {
    sh.single_copy_exchange(bytes)
        || (sh.crowded() && bytes >= CROWDED_PULL_MIN_BYTES && sh.single_copy_scatter(bytes))
}

/// Whether this process moves all its blocks by single copy on a crowded
/// node, and so can leave the rounds (`pull_any`).  Each pair's method still
/// follows from the pair's size alone, so a process that stays in the
/// rounds (it has a small block) moves each block as its partner does.
fn pulls_only(sh: &Shared, sources: &Sources, recv: &RootSide) -> bool {
    let (me, p) = (sh.me, sh.p);
    sh.crowded()
        && p - 1 < sh.queues.layout().s
        && (1..p).all(|k| {
            let (to, from) = partners(me, k, p);
            by_single_copy(sh, sources.bytes(to)) && by_single_copy(sh, recv.block(from).bytes())
        })
}

/// Alltoall(v) on a crowded node when every block goes by single copy: all
/// offers first, then the pulls in whatever order the offers appear, so a
/// process does all the work it can whenever it runs, instead of waiting
/// round after round for one partner that is often not running (with more
/// processes than cores the two ends of a round rarely run at once).
/// Offers never wait here: each takes its own slot (p - 1 < s, checked by
/// `pulls_only`), and their positions are the rounds' own, so a partner still
/// in the rounds finds them where it looks.
///
/// The own block is copied last, after the pulls: a pull ends a peer's wait
/// (it may return once all its readers acknowledged), the own copy ends
/// nobody's, so pulling first lets the peers leave the cores sooner.
/// Measured np=8 on 2 cores, 4 MiB blocks, alternated launches with the
/// cores near (2026-11-29, `docs/benchmark/2026-11-29-g-alternated`), own
/// copy first against last in four sets of 5-12 launches each: 38.6 / 38.2
/// / 39.4 / 40.0 ms against 37.3 / 35.5 / 37.3 / 36.5, coll/tuned 36.0-37.4.
/// Copying it whenever no offer is ready instead (so a process never waits
/// while it has work) measured the same as last (36.2 ms).  np=8 at 256 KiB
/// and 1 MiB, and np=4 at 256 KiB to 4 MiB: no direction beyond the spread.
fn pull_any(sh: &mut Shared, sources: &mut Sources, recv: &RootSide, own_copy: SelfCopy) -> bool {
    let (me, p) = (sh.me, sh.p);
    let rounds = Rounds::take(sh);
    let op = |k: usize| rounds.op(k);
    let mut offers = Offers::default();
    let mut outcome = Outcome::default();
    for k in 1..p {
        let (to, _) = partners(me, k, p);
        let (mut src, bytes) = sources.block(to);
        offers.make(sh, &mut src, bytes, op(k), Readers::One(to));
    }
    // Rounds whose offer we have not taken yet.
    let mut waiting: Vec<usize> = (1..p).collect();
    while !waiting.is_empty() {
        {
            let sh = &*sh;
            sh.waiter.until(|| {
                waiting
                    .iter()
                    .any(|&k| sh.offered(partners(me, k, p).1, op(k)))
            });
        }
        let mut i = 0;
        while i < waiting.len() {
            let k = waiting[i];
            let from = partners(me, k, p).1;
            if !sh.offered(from, op(k)) {
                i += 1;
                continue;
            }
            waiting.swap_remove(i);
            let block = recv.block(from);
            outcome.note(sh.take(from, op(k), &mut block.sink(), block.bytes()));
        }
    }
    trace!("MPI_Alltoall(v) on {p} processes pulled every block as offered (crowded node)");
    let copied = own_copy.finish();
    offers.settle(sh);
    outcome.finish("MPI_Alltoall(v)") && copied
}

/// Whom a process sends to and receives from in round k (1 ≤ k < p) of the
/// pairwise exchange; over the p−1 rounds each peer once in each role.
/// With p a power of two the rounds pair processes off (me XOR k: each
/// round is p/2 independent swaps); otherwise round k sends k ranks up and
/// receives from k ranks down, which links the processes of a round into
/// cycles.  A fragment can then only move when its whole cycle has moved
/// the one before (up to the queue's fragments in flight), so with more
/// processes than cores, where any of them may be descheduled, the pairs
/// wait on one partner instead of a chain.  (Both ends of a stream use the
/// same round number, hence the same operation number.)
fn partners(me: usize, k: usize, p: usize) -> (usize, usize) {
    if p.is_power_of_two() {
        (me ^ k, me ^ k)
    } else {
        ((me + k) % p, (me + p - k) % p)
    }
}

fn linear_exchange(
    sh: &mut Shared,
    sources: &mut Sources,
    recv: &RootSide,
    block_bytes: usize,
    own_copy: SelfCopy,
    landing: usize,
) -> bool {
    let (me, p) = (sh.me, sh.p);
    let cut = sh.cut(block_bytes);
    let per_block = cut.count();
    let op = sh.next_op();
    let stores = sh.land_call(landing);
    let mut own_copy = own_copy.landing(stores);
    let total = (p - 1) * per_block;
    let lag = cut.lag(sh.queues.layout().s, total);
    let mut outgoing = sh.peer_streams();
    for to in rotation(me, p) {
        outgoing.push((to, sources.block(to).0, cut));
    }
    // From writer w, our block is its ((me - w) mod p)-th, at k-1 blocks in
    // (entry k-1 of `incoming`).
    let mut incoming = sh.peer_streams();
    for k in 1..p {
        let w = (me + p - k) % p;
        incoming.push((w, recv.block(w).sink(), cut));
    }
    for step in 0..total + lag {
        if step < total {
            // Fragment i of block j goes to position `step`.
            let (j, i) = (step / per_block, step % per_block);
            let (len, pos) = (cut.len(i), cut.pos(op, step));
            let dst = sh.writer.reserve(&sh.queues, &sh.waiter, pos, len);
            // SAFETY: `dst` is our reserved slot of >= len bytes.
            let (to, src, _) = &mut outgoing[j];
            unsafe { sh.fill_from(src, cut.bytes, i * cut.size, dst, len) };
            sh.writer.publish(&sh.queues, pos, len, Readers::One(*to));
        }
        if step + 1 >= total {
            own_copy.run();
        }
        if let Some(at) = step.checked_sub(lag) {
            // Position `at` of its queue is fragment i of our block from
            // the writer of entry k.
            let (k, i) = (at / per_block, at % per_block);
            let (w, sink, _) = &mut incoming[k];
            let frag = sh
                .queues
                .receive_expecting(&sh.waiter, *w, cut.pos(op, at), cut.len(i));
            // SAFETY: the fragment stays valid until released.
            unsafe { sink.write(i * cut.size, frag.data, frag.len) };
            sh.heard(*w, &frag);
            sh.queues.release(me, *w, frag);
        }
    }
    sh.recycle(outgoing);
    sh.recycle(incoming);
    own_copy.finish()
}

#[cfg(test)]
mod tests {
    use super::partners;

    /// Every round is a permutation, and over the rounds every process
    /// sends to and receives from every other exactly once, matched: if a
    /// sends to b in round k, b receives from a in round k.
    #[test]
    fn rounds_match_and_cover_every_pair() {
        for p in 2..=17 {
            let mut sent = vec![vec![false; p]; p];
            for k in 1..p {
                for (me, mine) in sent.iter_mut().enumerate() {
                    let (to, from) = partners(me, k, p);
                    assert_ne!(to, me);
                    assert_eq!(partners(to, k, p).1, me, "p={p} k={k} me={me}");
                    assert_eq!(partners(from, k, p).0, me);
                    assert!(!mine[to]);
                    mine[to] = true;
                }
            }
            assert!((0..p).all(|a| (0..p).all(|b| sent[a][b] == (a != b))));
        }
    }
}
