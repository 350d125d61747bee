//! The mapping π and the four remapped Allgather variants of paper 003.
//!
//! Notation (as in the paper): process (rank) i runs the algorithm's logical
//! vertex i' = π(i); the rank running logical vertex v is π⁻¹(v).  Step 3 of
//! the method assigns to the ranks of node q_u the logical vertices of part
//! V_u (here: ranks of node u in increasing order get the vertices of V_u in
//! increasing order).
//!
//! The paper writes the recursive-doubling partner as π⁻¹(i ⊕ 2^k); with π as
//! it is used in the Bruck variants (i' = π(i)) the partner of rank i is the
//! rank running logical vertex i' ⊕ 2^k, π⁻¹(π(i) ⊕ 2^k), the only reading
//! under which partners are mutual; this module uses it, and generally runs
//! the logical plan of `pattern` with every logical peer v replaced by
//! π⁻¹(v).  Variants:
//!
//! * **rd-exch** — 1. rank i sends a_i to π⁻¹(i) and receives a_{π(i)} from
//!   rank π(i), its starting block (position i' of the result);
//!   2. recursive doubling over the logical numbering.  Logical vertex v then
//!   starts with a_v, so the result is in rank order: no final permutation.
//! * **rd-reorder** — 1. rank i puts a_i at position π(i); 2. recursive
//!   doubling; 3. the block at position j moves to position π⁻¹(j).
//! * **Bruck-exch** — 1. as rd-exch (a_{i'} at position 0); 2. Bruck steps:
//!   send to π⁻¹((i' − 2^k + n) mod n), receive from π⁻¹((i' + 2^k) mod n);
//!   3. cyclic shift by i' (position t → (t + i') mod n).
//! * **Bruck-reorder** — 1. Bruck steps as above, own a_i at position 0;
//!   2. the block at position j moves to position π⁻¹((j + i') mod n).
//!
//! The variants run as schedules (`allgather`).  A process's steps need
//! only its neighbours' mapping ([`Neighbours`]: O(log n) pairs).  The
//! reorder variants' final permutation, however, reads π⁻¹ at every
//! position: that step needs the whole table (n entries, as large as the
//! result itself); the exch variants pay one extra exchange instead and need
//! no table.

use super::pattern::{self, Algorithm};

/// Processes per node: `node_of[rank]` (ranks of a node need not be
/// contiguous; nodes may differ in size).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub node_of: Vec<u32>,
    pub nodes: u32,
}

impl Placement {
    pub fn new(node_of: Vec<u32>) -> Placement {
        let nodes = node_of.iter().map(|&u| u + 1).max().unwrap_or(0);
        Placement { node_of, nodes }
    }
    /// Ranks 0..s_0 on node 0, the next s_1 on node 1, … (block placement).
    pub fn blocks(sizes: &[u32]) -> Placement {
        Placement::new(
            sizes
                .iter()
                .enumerate()
                .flat_map(|(u, &s)| std::iter::repeat_n(u as u32, s as usize))
                .collect(),
        )
    }
    pub fn n(&self) -> u32 {
        self.node_of.len() as u32
    }
    /// s_u: processes on each node.
    pub fn sizes(&self) -> Vec<u32> {
        let mut s = vec![0u32; self.nodes as usize];
        for &u in &self.node_of {
            s[u as usize] += 1;
        }
        s
    }
}

/// π (rank → logical vertex) and π⁻¹ (logical vertex → rank).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub pi: Vec<u32>,
    pub pi_inv: Vec<u32>,
}

impl Mapping {
    pub fn identity(n: u32) -> Mapping {
        Mapping {
            pi: (0..n).collect(),
            pi_inv: (0..n).collect(),
        }
    }

    /// Step 3 of the method: `node_of_vertex[v]` is the node (part) of
    /// logical vertex v, with exactly as many vertices per node as the
    /// placement has ranks there.
    pub fn from_parts(node_of_vertex: &[u32], placement: &Placement) -> Mapping {
        let n = placement.n();
        assert_eq!(node_of_vertex.len() as u32, n);
        let mut vertices: Vec<Vec<u32>> = vec![Vec::new(); placement.nodes as usize];
        for (v, &u) in node_of_vertex.iter().enumerate() {
            vertices[u as usize].push(v as u32);
        }
        let mut next = vec![0usize; placement.nodes as usize];
        let mut pi = vec![0u32; n as usize];
        let mut pi_inv = vec![0u32; n as usize];
        for (rank, &u) in placement.node_of.iter().enumerate() {
            let v = *vertices[u as usize]
                .get(next[u as usize])
                .expect("part size equals node size");
            next[u as usize] += 1;
            pi[rank] = v;
            pi_inv[v as usize] = rank as u32;
        }
        Mapping { pi, pi_inv }
    }

    pub fn n(&self) -> u32 {
        self.pi.len() as u32
    }

    /// What rank `rank` must know of the mapping to run `variant`: its own
    /// logical vertex and π⁻¹ of every logical vertex it talks to (O(log n)).
    pub fn neighbours(&self, variant: Variant, rank: u32) -> Neighbours {
        let n = self.n();
        let me = self.pi[rank as usize];
        let mut logical: Vec<u32> = Vec::new();
        if variant.exch() {
            logical.push(rank); // recipient of a_rank is π⁻¹(rank)
        }
        for k in 0..pattern::steps(variant.algorithm(), n) {
            let s = pattern::logical_step(variant.algorithm(), n, me, k);
            logical.extend(s.send.map(|x| x.peer));
            logical.extend(s.recv.map(|x| x.peer));
        }
        logical.sort_unstable();
        logical.dedup();
        Neighbours {
            me,
            known: logical
                .into_iter()
                .map(|v| (v, self.pi_inv[v as usize]))
                .collect(),
        }
    }
}

/// A process's share of the mapping: its logical vertex π(i) and the pairs
/// (v, π⁻¹(v)) of the logical vertices it exchanges with, sorted by v.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighbours {
    pub me: u32,
    pub known: Vec<(u32, u32)>,
}

impl Neighbours {
    /// π⁻¹(v); panics when v is not a neighbour (a plan bug).
    pub fn rank_of(&self, v: u32) -> u32 {
        let i = self
            .known
            .binary_search_by_key(&v, |&(l, _)| l)
            .unwrap_or_else(|_| panic!("logical vertex {v} is not a neighbour"));
        self.known[i].1
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    RdExch,
    RdReorder,
    BruckExch,
    BruckReorder,
}

impl Variant {
    pub const ALL: [Variant; 4] = [
        Variant::RdExch,
        Variant::RdReorder,
        Variant::BruckExch,
        Variant::BruckReorder,
    ];
    pub fn algorithm(self) -> Algorithm {
        match self {
            Variant::RdExch | Variant::RdReorder => Algorithm::RecursiveDoubling,
            Variant::BruckExch | Variant::BruckReorder => Algorithm::Bruck,
        }
    }
    pub fn exch(self) -> bool {
        matches!(self, Variant::RdExch | Variant::BruckExch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_from_parts_is_a_bijection_respecting_nodes() {
        let placement = Placement::new(vec![1, 0, 1, 0, 2]);
        let parts = [0, 2, 1, 1, 0];
        let m = Mapping::from_parts(&parts, &placement);
        for r in 0..5u32 {
            assert_eq!(m.pi_inv[m.pi[r as usize] as usize], r);
            assert_eq!(
                parts[m.pi[r as usize] as usize],
                placement.node_of[r as usize]
            );
        }
        // Node 0 (ranks 1, 3) gets vertices 0, 4 in order.
        assert_eq!((m.pi[1], m.pi[3]), (0, 4));
    }

    /// O(log n) neighbour information, and the schedules use only it.
    #[test]
    fn neighbour_mapping_is_logarithmic() {
        use super::super::allgather::RemappedAllgather;
        use crate::hier::schedule::plan::Collective;
        let n = 1000;
        let pi: Vec<u32> = (0..n).map(|r| (r * 7 + 3) % n).collect();
        let mut pi_inv = vec![0; n as usize];
        for (r, &v) in pi.iter().enumerate() {
            pi_inv[v as usize] = r as u32;
        }
        let m = Mapping { pi, pi_inv };
        for v in Variant::ALL {
            let coll = RemappedAllgather {
                variant: v,
                mapping: &m,
                block: 1,
            };
            for r in [0, 1, 499, 999] {
                let nb = m.neighbours(v, r);
                assert!(nb.known.len() <= 2 * 12 + 1, "{v:?}: {}", nb.known.len());
                // Every peer of the schedule is a known neighbour's rank, or
                // rank π(r) itself (the exch variants' first receive).
                let mut known: Vec<u32> = nb.known.iter().map(|&(_, rank)| rank).collect();
                known.push(nb.me);
                for a in coll.schedule_of(r as usize).iter().flatten() {
                    assert!(known.contains(&(a.peer() as u32)), "{v:?} rank {r}");
                }
            }
        }
    }
}
