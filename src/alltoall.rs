//! MPI_Alltoall(v): p-1 pairwise rounds; in round k a process streams its
//! block for (me+k) mod p and receives the block of (me-k) mod p, fragment by
//! fragment in alternation (so no round waits in a cycle).  Each round has its
//! own operation number, so a receiver needs only its own counts.

use crate::comm::Shared;
use crate::gather::RootSide;
use crate::payload::Payload;
use crate::queue::Readers;

/// `send`: the send side (None: MPI_IN_PLACE, data taken from `recv`).
pub fn alltoall(sh: &mut Shared, send: Option<&RootSide>, recv: &RootSide) -> bool {
    let (me, p) = (sh.me, sh.p);
    let first = sh.next_ops(p);
    // In place, a block may be overwritten before it is sent: send from a
    // packed copy of the receive buffer instead.
    let mut copy: Vec<u8> = Vec::new();
    let mut offsets = vec![0usize; p + 1];
    if send.is_none() {
        for r in 0..p {
            let end = offsets[r] + recv.block(r).bytes();
            offsets[r + 1] = end;
        }
        copy.resize(offsets[p], 0);
        for (r, &offset) in offsets[..p].iter().enumerate() {
            let block = recv.block(r);
            let Some(mut src) = block.source() else {
                return false;
            };
            // SAFETY: `copy` holds offsets[p] bytes.
            unsafe { src.read(0, copy.as_mut_ptr().add(offset), block.bytes()) };
        }
    }
    for k in 1..p {
        let (to, from) = ((me + k) % p, (me + p - k) % p);
        let op = first + k as u64;
        let (mut src, out_bytes) = match send {
            Some(side) => {
                let block = side.block(to);
                let Some(src) = block.source() else {
                    return false;
                };
                (src, block.bytes())
            }
            // SAFETY: offsets lie within `copy`.
            None => (
                Payload::Contiguous(unsafe { copy.as_mut_ptr().add(offsets[to]) }),
                offsets[to + 1] - offsets[to],
            ),
        };
        let incoming = recv.block(from);
        let Some(mut sink) = incoming.sink() else {
            return false;
        };
        let (out, inc) = (sh.cut(out_bytes), sh.cut(incoming.bytes()));
        for i in 0..out.count().max(inc.count()) {
            if i < out.count() {
                sh.send(&mut src, out, op, i, Readers::One(to));
            }
            if i < inc.count() {
                sh.recv(from, &mut sink, inc, op, i);
            }
        }
    }
    match send {
        Some(side) => side.block(me).copy_to(&recv.block(me)),
        None => true,
    }
}
