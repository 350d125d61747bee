//! The local moves around an Allgather schedule (`Kind::Allgather`): before
//! the steps, the own block goes from its rank-order place to the position
//! the algorithm starts from; after them, every block goes to its rank's
//! place as the block order says.  No messages, so they stay out of the
//! schedule (the executor only sends and receives); every runner — the
//! plugin (`hier/network.rs`) and the thread tests — calls these two.
//!
//! Buffers are `n` blocks of `block` bytes, in rank order for the caller.

use super::plan::Collective;

/// Moves this process's block (at position `rank`, where MPI puts it) to
/// `coll.own_block(rank)`.  The other positions hold nothing yet.
pub fn place_own(coll: &dyn Collective, rank: usize, buf: &mut [u8], block: usize) {
    let to = coll.own_block(rank);
    if to != rank && block > 0 {
        buf.copy_within(rank * block..(rank + 1) * block, to * block);
    }
}

/// After the steps: block position t moves to `block_order(rank).rank_at(t)`
/// (a rotation or a table lookup; nothing when already in rank order).
pub fn arrange(coll: &dyn Collective, rank: usize, buf: &mut [u8], block: usize) {
    let order = coll.block_order(rank);
    let n = coll.size();
    if order.is_in_order() || block == 0 {
        return;
    }
    let moved = buf[..n * block].to_vec();
    for (t, b) in moved.chunks_exact(block).enumerate() {
        let to = order.rank_at(t, n);
        buf[to * block..(to + 1) * block].copy_from_slice(b);
    }
}
