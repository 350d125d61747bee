//! The four remapped Allgather variants of paper 003 as schedules
//! (`hier::schedule`): one description that the executor runs over the PML
//! (`hier/network.rs`), so pieces and transfers exist once, and that the
//! schedule simulator checks (delivery complete and in order, up to
//! p = 65,536).
//!
//! The buffer holds n blocks of `block` elements (the plugin: bytes).  A
//! process starts with its own block where the variant wants it
//! ([`Collective::own_block`]) and ends with position t holding the block of
//! rank g((t + shift) mod n) ([`BlockOrder`]); `schedule::gather` makes both
//! local moves.  Per variant (i' = π(i), see `mapping`):
//!
//! | variant | own block at | first step | block order after the steps |
//! |---|---|---|---|
//! | rd-exch | i (its final place) | a_i to π⁻¹(i), a_{i'} from i' into i' | rank order |
//! | rd-reorder | i' | — | t → π⁻¹(t) |
//! | Bruck-exch | (i − i') mod n (its place after the rotation) | a_i to π⁻¹(i), a_{i'} from i' into 0 | t → (t + i') mod n |
//! | Bruck-reorder | 0 | — | t → π⁻¹((t + i') mod n) |
//!
//! The exch variants keep a_i where it finally belongs, so the first
//! exchange's send and receive never overlap (they are different positions
//! unless π(i) = i, and then the step is empty: nothing leaves the process).
//! Later steps are `pattern`'s logical steps with each logical peer v
//! replaced by π⁻¹(v); a process only looks π⁻¹ up at its O(log n) logical
//! neighbours ([`Mapping::neighbours`]), the reorder variants' final move
//! reads the whole π⁻¹ table.

use crate::hier::schedule::plan::{Action, BlockOrder, Collective, Into, Kind, Shape, Span};

use super::mapping::{Mapping, Variant};
use super::pattern;

/// Paper 003's Allgather over `mapping`'s numbering.
pub struct RemappedAllgather<'m> {
    pub variant: Variant,
    pub mapping: &'m Mapping,
    /// Elements per block.
    pub block: usize,
}

impl RemappedAllgather<'_> {
    fn n(&self) -> u32 {
        self.mapping.n()
    }

    /// Steps before the logical ones (the exch variants' first exchange).
    fn first(&self) -> usize {
        usize::from(self.variant.exch())
    }

    fn blocks(&self, first: u32, count: u32) -> Span {
        Span::new(first as usize * self.block, count as usize * self.block)
    }
}

impl Collective for RemappedAllgather<'_> {
    fn shape(&self) -> Shape {
        let n = self.n() as usize;
        Shape {
            size: n,
            count: n * self.block,
            kind: Kind::Allgather { block: self.block },
        }
    }
    fn steps(&self, _rank: usize) -> usize {
        self.first() + pattern::steps(self.variant.algorithm(), self.n()) as usize
    }

    fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>) {
        let (alg, n) = (self.variant.algorithm(), self.n());
        let me = self.mapping.pi[rank];
        let rank_of = |v: u32| self.mapping.pi_inv[v as usize] as usize;
        if s < self.first() {
            if me as usize != rank {
                out.push(Action::Send {
                    to: rank_of(rank as u32),
                    span: self.blocks(self.own_block(rank) as u32, 1),
                });
                out.push(Action::Recv {
                    from: me as usize,
                    span: self.blocks(pattern::own_position(alg, me), 1),
                    into: Into::Copy,
                });
            }
            return;
        }
        let l = pattern::logical_step(alg, n, me, (s - self.first()) as u32);
        if let Some(x) = l.send {
            out.push(Action::Send {
                to: rank_of(x.peer),
                span: self.blocks(x.first, x.count),
            });
        }
        if let Some(x) = l.recv {
            out.push(Action::Recv {
                from: rank_of(x.peer),
                span: self.blocks(x.first, x.count),
                into: Into::Copy,
            });
        }
    }

    fn own_block(&self, rank: usize) -> usize {
        let (n, me) = (self.n() as usize, self.mapping.pi[rank] as usize);
        match self.variant {
            Variant::RdExch => rank,
            Variant::RdReorder => me,
            Variant::BruckExch => (rank + n - me) % n,
            Variant::BruckReorder => 0,
        }
    }

    fn block_order(&self, rank: usize) -> BlockOrder<'_> {
        let me = self.mapping.pi[rank] as usize;
        let table = Some(&self.mapping.pi_inv[..]);
        match self.variant {
            Variant::RdExch => BlockOrder::IN_ORDER,
            Variant::RdReorder => BlockOrder { shift: 0, table },
            Variant::BruckExch => BlockOrder {
                shift: me,
                table: None,
            },
            Variant::BruckReorder => BlockOrder { shift: me, table },
        }
    }
}
