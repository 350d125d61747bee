//! MPI_Allgather(v): every process publishes its block once, to all others,
//! and copies every other block out; fragment i of all blocks moves before
//! fragment i+1 of any, so all processes stream at once.

use crate::comm::Shared;
use crate::ffi;
use crate::gather::RootSide;
use crate::payload::TypedBuf;
use crate::queue::Readers;

/// `own`: this process's send block (None: MPI_IN_PLACE, the block is already
/// in `all` at this process's place).  `all`: the receive side.
pub fn allgather(sh: &mut Shared, own: Option<TypedBuf>, all: &RootSide) -> bool {
    let op = sh.next_op();
    let (me, p) = (sh.me, sh.p);
    let mine = own.unwrap_or_else(|| all.block(me));
    let Some(mut src) = mine.source() else {
        return false;
    };
    let my_bytes = mine.bytes();
    let peers: Vec<usize> = (1..p).map(|k| (me + k) % p).collect();
    let mut sinks = Vec::with_capacity(peers.len());
    for &r in &peers {
        let block = all.block(r);
        let Some(sink) = block.sink() else {
            return false;
        };
        sinks.push((sink, block.bytes()));
    }
    let most = sinks
        .iter()
        .map(|(_, b)| sh.fragments(*b))
        .max()
        .unwrap_or(0)
        .max(sh.fragments(my_bytes));
    for i in 0..most {
        if i < sh.fragments(my_bytes) {
            sh.send(&mut src, my_bytes, op, i, Readers::AllOthers);
        }
        for (k, &r) in peers.iter().enumerate() {
            let (sink, bytes) = &mut sinks[k];
            if i < sh.fragments(*bytes) {
                sh.recv(r, sink, op, i);
            }
        }
    }
    match own {
        Some(src) => {
            let dst = all.block(me);
            // SAFETY: the application's buffers, valid for the call.
            unsafe { ffi::copy_typed(src.buf, src.count, src.dtype, dst.buf, dst.count, dst.dtype) }
        }
        None => true,
    }
}
