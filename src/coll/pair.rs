//! Exchanges of two processes through the pair buffer (`shm::pair`): an
//! Allgather(v) or Alltoall on a channel of two whose blocks each fit one
//! half.  Each process fills its half straight from its send block, makes
//! its own copy while the other fills, then copies the other's block out.
//!
//! np=2, fresh send data, in turns with `coll_sharm_pair_buffer_size 0`
//! (the queues) and Intel MPI (6 rounds, cores near,
//! `docs/benchmark/2026-11-30-h-pair/`): Allgather 1 KiB-512 KiB in
//! 0.51-0.70x the queues' time, Alltoall 1 KiB-256 KiB in 0.60-0.81x but
//! 512 KiB 1.03x; against Intel MPI 0.61-0.95x, except Allgather 512 KiB
//! (1.06x) and Alltoall 256 KiB (1.06x).

use crate::coll::small::SayOnce;
use crate::ompi::payload::{Payload, SelfCopy};
use crate::shm::channel::Shared;
use tracing::trace;

/// Whether a call whose blocks are `out` bytes (ours to the other) and
/// `inc` bytes (the other's to us) goes through the pair buffer: when both
/// fit a half and `single(bytes)` (whether a block of that size goes by
/// single copy: forced, or its size class's trials) says neither does.
/// The pair buffer is the two-copy route on two processes; the trials then
/// weigh it against single copy where they weighed the queues.  Both
/// processes know both sizes, so they decide alike.
pub(crate) fn takes(sh: &Shared, out: usize, inc: usize, single: impl Fn(usize) -> bool) -> bool {
    sh.pair
        .as_ref()
        .is_some_and(|pair| out.max(inc) <= pair.half())
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
