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

use crate::comm::Shared;
use crate::ffi::{self, Dtype};
use crate::payload::{Payload, TypedBuf};
use crate::queue::Readers;

/// What the root receives from (gather) or sends to (scatter) each process.
pub struct RootSide<'a> {
    pub buf: *const u8,
    /// Elements per block (Gather/Scatter) ...
    pub count: i32,
    /// ... or per process with displacements (the v-variants).
    pub counts: Option<(&'a [i32], &'a [i32])>,
    pub dtype: Dtype,
}

impl RootSide<'_> {
    pub fn block(&self, r: usize) -> TypedBuf {
        match self.counts {
            Some((counts, displs)) => {
                TypedBuf::block(self.buf, r, counts[r], Some(displs[r]), self.dtype)
            }
            None => TypedBuf::block(self.buf, r, self.count, None, self.dtype),
        }
    }
}

/// The root's own block: copied locally unless MPI_IN_PLACE.
fn copy_own(own: Option<TypedBuf>, dst: TypedBuf) -> bool {
    match own {
        // SAFETY: the application's buffers, valid for the call.
        Some(src) => unsafe {
            ffi::copy_typed(src.buf, src.count, src.dtype, dst.buf, dst.count, dst.dtype)
        },
        None => true,
    }
}

fn streams(blocks: impl Iterator<Item = TypedBuf>, sink: bool) -> Option<Vec<(Payload, usize)>> {
    blocks
        .map(|b| Some((if sink { b.sink()? } else { b.source()? }, b.bytes())))
        .collect()
}

/// `own` is this process's send block (None: MPI_IN_PLACE at the root).
pub fn gather(sh: &mut Shared, own: Option<TypedBuf>, root_side: &RootSide, root: usize) -> bool {
    let op = sh.next_op();
    let (me, p) = (sh.me, sh.p);
    if me != root {
        let own = own.expect("only the root may pass MPI_IN_PLACE");
        let Some(mut src) = own.source() else {
            return false;
        };
        let bytes = own.bytes();
        for i in 0..sh.fragments(bytes) {
            sh.send(&mut src, bytes, op, i, Readers::One(root));
        }
        return true;
    }
    let peers: Vec<usize> = (1..p).map(|k| (me + k) % p).collect();
    let Some(mut sinks) = streams(peers.iter().map(|&r| root_side.block(r)), true) else {
        return false;
    };
    let most = sinks
        .iter()
        .map(|(_, b)| sh.fragments(*b))
        .max()
        .unwrap_or(0);
    for i in 0..most {
        for (k, &r) in peers.iter().enumerate() {
            let (sink, bytes) = &mut sinks[k];
            if i < sh.fragments(*bytes) {
                sh.recv(r, sink, op, i);
            }
        }
    }
    copy_own(own, root_side.block(me))
}

/// `own` is this process's receive block (None: MPI_IN_PLACE at the root).
pub fn scatter(sh: &mut Shared, own: Option<TypedBuf>, root_side: &RootSide, root: usize) -> bool {
    let (me, p) = (sh.me, sh.p);
    let first = sh.next_ops(p);
    let round = |r: usize| first + r as u64;
    if me != root {
        let own = own.expect("only the root may pass MPI_IN_PLACE");
        let Some(mut sink) = own.sink() else {
            return false;
        };
        for i in 0..sh.fragments(own.bytes()) {
            sh.recv(root, &mut sink, round(me), i);
        }
        return true;
    }
    for k in 1..p {
        let r = (me + k) % p;
        let block = root_side.block(r);
        let Some(mut src) = block.source() else {
            return false;
        };
        let bytes = block.bytes();
        for i in 0..sh.fragments(bytes) {
            sh.send(&mut src, bytes, round(r), i, Readers::One(r));
        }
    }
    match own {
        // SAFETY: the application's buffers, valid for the call.
        Some(dst) => {
            let src = root_side.block(me);
            unsafe { ffi::copy_typed(src.buf, src.count, src.dtype, dst.buf, dst.count, dst.dtype) }
        }
        None => true,
    }
}
