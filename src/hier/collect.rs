//! Hierarchical Barrier and Allgather over the chain of groups (issue 10):
//! what every process holds climbs to rank 0, group by group (shared memory
//! inside a node, the PML between nodes), and the result comes back down
//! through the same groups with `chain::bcast_down`.
//!
//! * Barrier: a one-byte arrival climbs; rank 0 has then heard from every
//!   process, and a one-byte release descends.  Nobody leaves before all
//!   have arrived.
//! * Allgather: the blocks climb (each member sends its leader the blocks of
//!   the ranks it carries, ascending), rank 0 ends with all p blocks in rank
//!   order and the whole buffer descends.  Inside a node that is "gather to
//!   the node leader ... broadcast from it"; between the leaders it is a
//!   gather to rank 0 and a broadcast (flat, binomial or ring, as for Bcast).

use crate::hier::chain::{bcast_down, gather_group, walk_up, Chain};
use crate::ompi::ffi::Comm;
use crate::ompi::params::GroupAlgorithm;

/// Climbs the chain (`chain::walk_up`): at each of this process's groups it
/// sends `mine(level)` to the leader, or, leading, receives member j's
/// `sizes(level, j)` bytes and hands them to `place(level, j, bytes)`.
/// Returns false on a transfer error.
fn climb(
    comm: Comm,
    chain: &mut Chain,
    mut mine: impl FnMut(usize) -> Vec<u8>,
    mut sizes: impl FnMut(usize, usize) -> usize,
    mut place: impl FnMut(usize, usize, &[u8]),
) -> bool {
    let levels = chain.groups.len();
    walk_up(chain, levels, |level, group, me| {
        let out = mine(level);
        let mut into: Vec<Vec<u8>> = (0..group.members.len())
            .map(|j| {
                if j == 0 {
                    Vec::new()
                } else {
                    vec![0u8; sizes(level, j)]
                }
            })
            .collect();
        let leads = gather_group(comm, group, me, &out, &mut into)?;
        if leads {
            for (j, bytes) in into.iter().enumerate().skip(1) {
                place(level, j, bytes);
            }
        }
        Some(leads)
    })
    .is_some()
}

/// Hierarchical Barrier.
pub fn barrier(comm: Comm, chain: &mut Chain, alg: GroupAlgorithm) -> bool {
    let levels = chain.groups.len();
    climb(comm, chain, |_| vec![1u8], |_, _| 1, |_, _, _| {})
        && bcast_down(comm, chain, levels, alg, &mut [1u8])
}

/// Hierarchical Allgather of `block` bytes per process into `all` (p·block
/// bytes, rank order), this process's block already in place.
pub fn allgather(
    comm: Comm,
    chain: &mut Chain,
    alg: GroupAlgorithm,
    block: usize,
    all: &mut [u8],
) -> bool {
    let me = chain.me;
    // The ranks each member of each of our groups carries (from the plan).
    let carried: Vec<Vec<Vec<usize>>> = chain.groups.iter().map(|g| g.carried.clone()).collect();
    let levels = chain.groups.len();
    // What we carry at a level: the ranks of our own entry there.
    let ours = |level: usize| -> &[usize] {
        let members = &chain.groups[level].members;
        let j = members.iter().position(|&m| m == me).expect("a member");
        &carried[level][j]
    };
    let mine_at: Vec<Vec<usize>> = (0..levels).map(|l| ours(l).to_vec()).collect();
    // `climb` calls the two closures one after the other, never together:
    // a RefCell lets both reach the buffer.
    let buffer = std::cell::RefCell::new(&mut *all);
    let ok = climb(
        comm,
        chain,
        |level| {
            let all = buffer.borrow();
            let mut out = Vec::with_capacity(mine_at[level].len() * block);
            for &r in &mine_at[level] {
                out.extend_from_slice(&all[r * block..(r + 1) * block]);
            }
            out
        },
        |level, j| carried[level][j].len() * block,
        |level, j, bytes| {
            let mut all = buffer.borrow_mut();
            for (k, &r) in carried[level][j].iter().enumerate() {
                all[r * block..(r + 1) * block].copy_from_slice(&bytes[k * block..(k + 1) * block]);
            }
        },
    );
    ok && bcast_down(comm, chain, levels, alg, all)
}
