//! Builders for the network algorithms of `hier.rs` (group index 0 is the
//! leader and root): flat, binomial, ring Bcast/Reduce, recursive-doubling
//! and ring Allreduce.  Each computes any step of any process directly, in
//! O(actions of the step).

use super::plan::{Action, Collective, Into, Kind, Order, Shape, Span};

fn whole(count: usize) -> Span {
    Span::new(0, count)
}

fn send(to: usize, span: Span) -> Action {
    Action::Send { to, span }
}

fn recv(from: usize, span: Span, into: Into) -> Action {
    Action::Recv { from, span, into }
}

/// Lowest set bit of `idx` (idx > 0), or the first power of two >= p for 0.
fn lowbit(idx: usize, p: usize) -> usize {
    if idx == 0 {
        p.next_power_of_two()
    } else {
        idx & idx.wrapping_neg()
    }
}

/// Flat: the leader sends to / receives from every member.  The leader's
/// receives are one step each, in member order, so a reduction is
/// 0 ⊕ 1 ⊕ … ⊕ p−1 (canonical, fit for non-commutative operations).
pub struct Flat {
    pub p: usize,
    pub count: usize,
    pub reduce: bool,
}

impl Collective for Flat {
    fn shape(&self) -> Shape {
        Shape {
            size: self.p,
            count: self.count,
            kind: Kind::rooted(self.reduce),
        }
    }
    fn steps(&self, rank: usize) -> usize {
        match (rank, self.reduce) {
            _ if self.p == 1 => 0,
            (0, true) => self.p - 1,
            _ => 1,
        }
    }
    fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>) {
        let all = whole(self.count);
        match (rank, self.reduce) {
            (0, true) => out.push(recv(s + 1, all, Into::Combine(Order::MineFirst))),
            (0, false) => out.extend((1..self.p).map(|m| send(m, all))),
            (_, true) => out.push(send(0, all)),
            (_, false) => out.push(recv(0, all, Into::Copy)),
        }
    }
}

/// Binomial tree over the member indices, as `hier.rs`: member i receives
/// from i − lowbit(i) and serves i + 2^k for 2^k < lowbit(i), one child per
/// step (largest subtree first in a Bcast, smallest first in a Reduce).
/// A Reduce folds `mine ⊕ incoming` with incoming from higher indices: the
/// canonical order.
pub struct Binomial {
    pub p: usize,
    pub count: usize,
    pub reduce: bool,
}

impl Binomial {
    /// Child masks of `idx`, ascending.
    fn masks(&self, idx: usize) -> Vec<usize> {
        let low = lowbit(idx, self.p);
        (0..usize::BITS)
            .map(|b| 1usize << b)
            .take_while(|&m| m < low)
            .filter(|&m| idx + m < self.p)
            .collect()
    }
}

impl Collective for Binomial {
    fn shape(&self) -> Shape {
        Shape {
            size: self.p,
            count: self.count,
            kind: Kind::rooted(self.reduce),
        }
    }
    fn steps(&self, rank: usize) -> usize {
        self.masks(rank).len() + usize::from(rank != 0)
    }
    fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>) {
        let all = whole(self.count);
        let parent = rank.wrapping_sub(lowbit(rank, self.p));
        let masks = self.masks(rank);
        if self.reduce {
            if s < masks.len() {
                let m = masks[s];
                out.push(recv(rank + m, all, Into::Combine(Order::MineFirst)));
            } else {
                out.push(send(parent, all));
            }
        } else if rank != 0 && s == 0 {
            out.push(recv(parent, all, Into::Copy));
        } else {
            let k = s - usize::from(rank != 0);
            let m = masks[masks.len() - 1 - k];
            out.push(send(rank + m, all));
        }
    }
}

/// One ring: `g` members (`member(i)` is the rank of ring index i) over a
/// region of the buffer cut into g chunks, each chunk cut into `packets`
/// packets; `packet` selects one.
#[derive(Clone, Copy)]
pub(super) struct Ring<F: Fn(usize) -> usize> {
    pub region: Span,
    pub g: usize,
    pub idx: usize,
    pub member: F,
    pub packets: usize,
}

impl<F: Fn(usize) -> usize> Ring<F> {
    fn chunk(&self, c: usize, packet: usize) -> Span {
        self.region
            .part(self.g, c % self.g)
            .part(self.packets, packet)
    }

    /// Reduce-scatter step k: send chunk idx−k, combine chunk idx−k−1
    /// arriving from the previous member (`incoming ⊕ mine`, so chunk c is
    /// reduced in ring order c, c+1, …).  Afterwards `idx` holds the reduced
    /// chunk idx+1.
    pub fn reduce_scatter(&self, k: usize, packet: usize, out: &mut Vec<Action>) {
        let (g, idx) = (self.g, self.idx);
        let (next, prev) = (
            (self.member)((idx + 1) % g),
            (self.member)((idx + g - 1) % g),
        );
        out.push(send(next, self.chunk(idx + g - k, packet)));
        let into = Into::Combine(Order::IncomingFirst);
        out.push(recv(prev, self.chunk(idx + 2 * g - k - 1, packet), into));
    }

    /// Allgather step k of member `idx` holding chunk idx+shift: send chunk
    /// idx+shift−k, receive chunk idx+shift−k−1.
    pub fn allgather(&self, shift: usize, k: usize, packet: usize, out: &mut Vec<Action>) {
        let (g, idx) = (self.g, self.idx);
        let (next, prev) = (
            (self.member)((idx + 1) % g),
            (self.member)((idx + g - 1) % g),
        );
        out.push(send(next, self.chunk(idx + shift + g - k, packet)));
        let c = idx + shift + 2 * g - k - 1;
        out.push(recv(prev, self.chunk(c, packet), Into::Copy));
    }
}

fn plain_ring(count: usize, g: usize, idx: usize) -> Ring<fn(usize) -> usize> {
    Ring {
        region: whole(count),
        g,
        idx,
        member: |i| i,
        packets: 1,
    }
}

/// Ring Bcast (the leader scatters chunk j to member j, then a ring
/// allgather) or ring Reduce (ring reduce-scatter, then every member sends
/// its reduced chunk to the leader).  `hier.rs` takes these only when every
/// member gets at least one element; the builder is uniform and sends empty
/// chunks otherwise.
pub struct RingRooted {
    pub p: usize,
    pub count: usize,
    pub reduce: bool,
}

impl Collective for RingRooted {
    fn shape(&self) -> Shape {
        Shape {
            size: self.p,
            count: self.count,
            kind: Kind::rooted(self.reduce),
        }
    }
    fn steps(&self, _rank: usize) -> usize {
        if self.p == 1 {
            0
        } else {
            self.p
        }
    }
    fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>) {
        let (g, all) = (self.p, whole(self.count));
        if self.reduce {
            if s < g - 1 {
                plain_ring(self.count, g, rank).reduce_scatter(s, 0, out);
            } else if rank == 0 {
                out.extend((1..g).map(|j| recv(j, all.part(g, (j + 1) % g), Into::Copy)));
            } else {
                out.push(send(0, all.part(g, (rank + 1) % g)));
            }
        } else if s == 0 {
            if rank == 0 {
                out.extend((1..g).map(|j| send(j, all.part(g, j))));
            } else {
                out.push(recv(0, all.part(g, rank), Into::Copy));
            }
        } else {
            plain_ring(self.count, g, rank).allgather(0, s - 1, 0, out);
        }
    }
}

/// Ring Allreduce: reduce-scatter then allgather, 2(p−1) steps.
pub struct RingAllreduce {
    pub p: usize,
    pub count: usize,
}

impl Collective for RingAllreduce {
    fn shape(&self) -> Shape {
        Shape {
            size: self.p,
            count: self.count,
            kind: Kind::Allreduce,
        }
    }
    fn steps(&self, _rank: usize) -> usize {
        2 * (self.p - 1)
    }
    fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>) {
        let ring = plain_ring(self.count, self.p, rank);
        if s < self.p - 1 {
            ring.reduce_scatter(s, 0, out);
        } else {
            ring.allgather(1, s - (self.p - 1), 0, out);
        }
    }
}

/// Recursive doubling for any p: with q the largest power of two <= p and
/// e = p − q, members 2i+1 < 2e first hand their buffer to 2i (fold-in),
/// the q survivors exchange whole buffers in log q rounds, and 2i hands the
/// result back to 2i+1 (fold-out).  Survivors keep rank order, and each
/// pair combines lower ⊕ higher, so the result is the canonical
/// 0 ⊕ … ⊕ p−1 with one bracketing on every process.
pub struct RecursiveDoubling {
    pub p: usize,
    pub count: usize,
}

impl RecursiveDoubling {
    fn q(&self) -> usize {
        1 << (usize::BITS - 1 - self.p.leading_zeros())
    }
    fn extra(&self) -> usize {
        self.p - self.q()
    }
    fn real(&self, v: usize) -> usize {
        if v < self.extra() {
            2 * v
        } else {
            v + self.extra()
        }
    }
}

impl Collective for RecursiveDoubling {
    fn shape(&self) -> Shape {
        Shape {
            size: self.p,
            count: self.count,
            kind: Kind::Allreduce,
        }
    }
    fn steps(&self, rank: usize) -> usize {
        let rounds = self.q().trailing_zeros() as usize;
        if rank < 2 * self.extra() {
            if rank % 2 == 1 {
                2
            } else {
                rounds + 2
            }
        } else {
            rounds
        }
    }
    fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>) {
        let all = whole(self.count);
        let e = self.extra();
        if rank < 2 * e && rank % 2 == 1 {
            out.push(if s == 0 {
                send(rank - 1, all)
            } else {
                recv(rank - 1, all, Into::Copy)
            });
            return;
        }
        let folded = rank < 2 * e;
        let rounds = self.q().trailing_zeros() as usize;
        if folded && s == 0 {
            out.push(recv(rank + 1, all, Into::Combine(Order::MineFirst)));
            return;
        }
        let r = s - usize::from(folded);
        if r == rounds {
            out.push(send(rank + 1, all));
            return;
        }
        let virt = if folded { rank / 2 } else { rank - e };
        let pv = virt ^ (1 << r);
        let order = if virt < pv {
            Order::MineFirst
        } else {
            Order::IncomingFirst
        };
        let peer = self.real(pv);
        out.push(send(peer, all));
        out.push(recv(peer, all, Into::Combine(order)));
    }
}
