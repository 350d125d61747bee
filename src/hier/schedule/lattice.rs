//! Paper 001: pipelined ring Allreduce on a d-dimensional lattice
//! r1 × … × rd (N = r1⋯rd processes).
//!
//! Process coordinates: c1 = rank mod r1 varies fastest, so with
//! r1 = processes per node the first dimension stays inside a node, as in the
//! paper's two-level model (r1 = 14 cores on Lomonosov-2).  The paper's
//! Algorithm 3.1 (reduce-scatter) runs along dimension 1 over the whole
//! vector; the process then owns block c1+1 of it (in the paper's indexing
//! the block after its own), and dimension 2 runs the same ring over that
//! block only, and so on: after d dimensions each process owns 1/N of the
//! sum.  Algorithm 3.2 (distribution, copy instead of add) then runs over
//! the dimensions in reverse order.
//!
//! Pipelining (§5): every ring step moves its block in packets; each packet
//! is one schedule step (send packet q of one block, receive packet q of the
//! next), so a receive and its combination proceed packet by packet.  The
//! paper found 64–256 KiB packets best and ran its comparison with 256 KiB.
//!
//! Block sizes: the paper cuts n−1 blocks of ⌈m/n⌉ and one of
//! m − ⌈m/n⌉(n−1), which goes negative for some sizes (m = 9, n = 6: five
//! blocks of 2 leave −1).  Near-equal blocks (sizes differ by at most one
//! element) keep the same step structure for every m, also m < N, where
//! some blocks are empty (and still sent, as empty messages).
//!
//! Sizes that do not factor: the multi-dimensional algorithm needs
//! N = r1⋯rd exactly; the paper's 1-D algorithm works for any n, so a prime
//! N (or any N the cost model does not want to split) is the 1-D ring
//! (`dims = [N]`).

use super::basic::Ring;
use super::plan::{Action, Collective, Kind, Shape, Span};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lattice {
    /// r1, …, rd; each >= 1, product = number of processes.
    pub dims: Vec<usize>,
    pub count: usize,
    /// Elements per packet (>= 1).
    pub packet: usize,
}

impl Lattice {
    pub fn new(dims: Vec<usize>, count: usize, packet: usize) -> Lattice {
        assert!(dims.iter().all(|&r| r >= 1) && !dims.is_empty());
        Lattice {
            dims,
            count,
            packet: packet.max(1),
        }
    }

    /// Parses explicit dimensions such as `4x4x2`.
    pub fn parse_dims(text: &str) -> Option<Vec<usize>> {
        let dims: Option<Vec<usize>> = text.split('x').map(|t| t.trim().parse().ok()).collect();
        dims.filter(|d| !d.is_empty() && d.iter().all(|&r| r >= 1))
    }

    fn coord(&self, rank: usize, i: usize) -> usize {
        let stride: usize = self.dims[..i].iter().product();
        rank / stride % self.dims[i]
    }

    /// The rank at coordinate `c` of dimension `i`, other coordinates as in `rank`.
    fn along(&self, rank: usize, i: usize, c: usize) -> usize {
        let stride: usize = self.dims[..i].iter().product();
        rank - self.coord(rank, i) * stride + c * stride
    }

    /// S_{i}: the region dimension i works on (S_0 = whole buffer).
    fn region(&self, rank: usize, i: usize) -> Span {
        let mut s = Span::new(0, self.count);
        for (k, &r) in self.dims[..i].iter().enumerate() {
            s = s.part(r, (self.coord(rank, k) + 1) % r);
        }
        s
    }

    /// Packets per ring step of dimension i (alike for all ring members:
    /// they share the region).
    fn packets(&self, rank: usize, i: usize) -> usize {
        let r = self.dims[i];
        let block = self.region(rank, i).len.div_ceil(r);
        block.div_ceil(self.packet).max(1)
    }

    fn phase_steps(&self, rank: usize, i: usize) -> usize {
        (self.dims[i] - 1) * self.packets(rank, i)
    }
}

impl Collective for Lattice {
    fn shape(&self) -> Shape {
        Shape {
            size: self.dims.iter().product(),
            count: self.count,
            kind: Kind::Allreduce,
        }
    }
    fn steps(&self, rank: usize) -> usize {
        2 * (0..self.dims.len())
            .map(|i| self.phase_steps(rank, i))
            .sum::<usize>()
    }
    fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>) {
        let d = self.dims.len();
        // Phases: reduce-scatter along 0..d, then allgather along d-1..0.
        let mut s = s;
        for phase in 0..2 * d {
            let i = if phase < d { phase } else { 2 * d - 1 - phase };
            let n = self.phase_steps(rank, i);
            if s >= n {
                s -= n;
                continue;
            }
            let packets = self.packets(rank, i);
            let ring = Ring {
                region: self.region(rank, i),
                g: self.dims[i],
                idx: self.coord(rank, i),
                member: |c| self.along(rank, i, c),
                packets,
            };
            let (k, q) = (s / packets, s % packets);
            if phase < d {
                ring.reduce_scatter(k, q, out);
            } else {
                ring.allgather(1, k, q, out);
            }
            return;
        }
        unreachable!("step {s} beyond the schedule");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_parse() {
        assert_eq!(Lattice::parse_dims("4x4x2"), Some(vec![4, 4, 2]));
        assert_eq!(Lattice::parse_dims("7"), Some(vec![7]));
        assert_eq!(Lattice::parse_dims("4x0"), None);
        assert_eq!(Lattice::parse_dims("4xa"), None);
    }

    #[test]
    fn steps_follow_the_paper() {
        // 2 Σ (r_i − 1) ring steps, times the packets per block.
        let l = Lattice::new(vec![4, 4, 2], 32 * 1000, 1 << 30);
        assert_eq!(l.steps(5), 2 * (3 + 3 + 1));
        let l = Lattice::new(vec![4, 3], 24, 2);
        // Dim 1: blocks of 6 → 3 packets; dim 2: 6 elements in 3 blocks of 2 → 1.
        assert_eq!(l.steps(0), 2 * (3 * 3 + 2));
    }
}
