//! Exchanges of two processes through the pair buffer (`shm::pair`): on a
//! channel of two, Allgather(v) blocks of 513 bytes to one half, Alltoall
//! blocks of 513 bytes to 256 KiB (`alltoall::PAIR_MAX_BYTES`), and the
//! `allgather` Allreduce of dense vectors of 513 bytes to 12 KiB.  Each
//! process fills its half straight from its send block, makes its own copy
//! while the other fills, then copies the other's block out; an Allreduce
//! combines its vector with the other's half into its result instead, in
//! rank order on both processes.
//!
//! np=2, fresh send data, in turns with `coll_sharm_pair_buffer_size 0`
//! (the queues) and Intel MPI (6 rounds, cores near,
//! `docs/benchmark/2026-11-30-h-pair/`): Allgather 1 KiB-512 KiB in
//! 0.51-0.70x the queues' time, Alltoall 1 KiB-256 KiB in 0.60-0.81x,
//! Allreduce 1 / 8 KiB 0.61 / 0.87x; against Intel MPI 0.61-0.98x, except
//! Allgather 512 KiB (1.06x) and Alltoall 256 KiB (1.06x).

use crate::coll::reduction::Reduction;
use crate::coll::small::SayOnce;
use crate::kernels::copy;
use crate::ompi::payload::{Payload, SelfCopy};
use crate::shm::channel::Shared;
use crate::shm::queue::PREFETCH_MAX_BYTES;
use tracing::trace;

/// Whether a call whose blocks are `out` bytes (ours to the other) and
/// `inc` bytes (the other's to us) goes through the pair buffer, the
/// two-copy route on two processes:
/// * both fit a half;
/// * one is larger than `PREFETCH_MAX_BYTES`: smaller blocks keep the short
///   paths of `coll::small`, which decide partly from a process's own send
///   layout (unknown to the other) and meet the queue paths, not this one;
/// * `single(bytes)` (forced single copy, or its size class's trials) says
///   that neither goes by single copy; the trials thus weigh the pair
///   buffer where they weighed the queues.
///
/// Both processes know both sizes, so they decide alike.
pub(crate) fn takes(sh: &Shared, out: usize, inc: usize, single: impl Fn(usize) -> bool) -> bool {
    sh.pair
        .as_ref()
        .is_some_and(|pair| out.max(inc) <= pair.half())
        && out.max(inc) > PREFETCH_MAX_BYTES
        && !single(out)
        && !single(inc)
}

/// Sends `out_bytes` of `src` to the other process and receives its
/// `in_bytes` into `sink`, running `own_copy` while the other fills; the
/// caller checked `takes`.  False when the own copy failed (reported).
/// `said`: whether this process said (at verbose 100) that a call of
/// `name` went through the pair buffer, once per process and operation.
pub(crate) fn exchange(
    sh: &mut Shared,
    (name, said): (&str, &SayOnce),
    (src, out_bytes): (&mut Payload, usize),
    (sink, in_bytes): (&mut Payload, usize),
    own_copy: SelfCopy,
) -> bool {
    if said.first() {
        trace!("{name}: blocks exchanged through the pair buffer");
    }
    let me = sh.me;
    let waiter = sh.waiter;
    let pair = sh.pair.as_mut().expect("`takes` found a pair buffer");
    let mut copied = true;
    // SAFETY: `takes` checked that both blocks fit a half; the payloads
    // hold the bytes they are asked for.
    unsafe {
        pair.exchange(
            me,
            &waiter,
            |ours| {
                if out_bytes > 0 {
                    src.read(0, ours, out_bytes)
                }
            },
            || copied = own_copy.finish(),
            |theirs| {
                if in_bytes > 0 {
                    sink.write(0, theirs, in_bytes)
                }
            },
        )
    };
    copied
}

/// Whether this process said (at verbose 100) that an Allreduce went
/// through the pair buffer.
static ALLREDUCE_SAID: SayOnce = SayOnce::new();

/// Whether an Allreduce of `red` goes through the pair buffer: a dense
/// vector of `bytes` bytes that fits a half (the caller has ruled out
/// single copy and a forced algorithm).  Every process knows the size and
/// the layout, so all decide alike.
pub(crate) fn takes_allreduce(sh: &Shared, red: &Reduction, bytes: usize) -> bool {
    bytes > 0 && red.layout.dense() && takes(sh, bytes, bytes, |_| false)
}

/// The Allreduce of two processes: each fills its half with its vector,
/// then combines its vector with the other's half into its receive buffer,
/// x0 op x1 on both
/// (the same operands in the same order, so both results are
/// bit-identical, for non-commutative operations too).  Our operand is our
/// input, not our half, which the other may already be filling again
/// (`Pair::exchange`); in place the result overwrites it exactly, which
/// `Reduction::fused` allows.  The caller checked `takes_allreduce`.
pub(crate) fn allreduce(sh: &mut Shared, red: &Reduction) -> bool {
    if ALLREDUCE_SAID.first() {
        trace!("MPI_Allreduce: contributions exchanged through the pair buffer");
    }
    let me = sh.me;
    let bytes = red.layout.span(red.layout.count);
    let waiter = sh.waiter;
    let pair = sh
        .pair
        .as_mut()
        .expect("`takes_allreduce` found a pair buffer");
    // SAFETY: `takes_allreduce` checked that the vector fits a half and is
    // dense: `bytes` bytes hold its `count` elements in our input, in each
    // half and in the receive buffer, which overlaps neither half and is
    // our input exactly or not at all.
    unsafe {
        pair.exchange(
            me,
            &waiter,
            |ours| copy::copy(ours, red.own, bytes),
            || {},
            |theirs| {
                let ours = red.own;
                let (x0, x1) = if me == 0 {
                    (ours, theirs)
                } else {
                    (theirs, ours)
                };
                red.fused(x0, x1, red.rbuf, red.layout.count, bytes);
            },
        )
    };
    true
}
