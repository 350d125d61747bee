//! Exchange patterns of the two Allgather algorithms of paper 003 over the
//! *logical* numbering 0..n (before any remapping), and their weighted graphs.
//!
//! A logical vertex v owns a local buffer of n block positions.  Each step is
//! described per vertex: at most one send (`peer`, positions `first..first +
//! count` of v's buffer) and at most one receive (from `peer` into positions
//! `first..first + count`).  All vertices run the same number of steps, so
//! step k of every vertex happens "at the same time"; a send at step k is
//! matched by the receive of its peer at step k.
//!
//! **Recursive doubling** (paper: only for n a power of two).  Buffer
//! positions are logical block numbers: vertex v starts with its block at
//! position v; at step k it exchanges with v ⊕ 2^k the 2^k blocks of its
//! aligned group.  For other n this module uses the usual *fold*: with
//! p' = 2^⌊log2 n⌋ and r = n − p', the odd vertices 1, 3, …, 2r − 1 are
//! "extra": in a first step each sends its block to its even left
//! neighbour; the p' remaining vertices (core index c = v / 2 for v < 2r,
//! v − r otherwise) run recursive doubling on core indices — the group of
//! core indices [g, g + 2^k) covers the contiguous logical blocks
//! [start(g), start(g + 2^k)) with start(c) = 2c for c < r, c + r otherwise;
//! a last step sends the whole buffer (n blocks) to the extra vertex.
//! That is ⌊log2 n⌋ + 2 steps and n − 1 + n blocks more on 2r links.
//!
//! **Bruck** (any n): ⌈log2 n⌉ steps; vertex v keeps the blocks of
//! v, v + 1, … (mod n) at positions 0, 1, …; at step k it sends positions
//! 0..c_k to v − 2^k and receives positions 2^k..2^k + c_k from v + 2^k,
//! c_k = min(2^k, n − 2^k).

use super::graph::Graph;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    RecursiveDoubling,
    Bruck,
}

/// One direction of a transfer: with whom, and which buffer positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Xfer {
    pub peer: u32,
    pub first: u32,
    pub count: u32,
}

/// What one vertex does at one step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LStep {
    pub send: Option<Xfer>,
    pub recv: Option<Xfer>,
}

fn floor_log2(n: u32) -> u32 {
    31 - n.leading_zeros()
}

fn ceil_log2(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        floor_log2(n - 1) + 1
    }
}

/// Number of steps of `alg` on n vertices.
pub fn steps(alg: Algorithm, n: u32) -> u32 {
    assert!(n >= 1);
    match alg {
        Algorithm::Bruck => ceil_log2(n),
        Algorithm::RecursiveDoubling => {
            let d = floor_log2(n);
            if n.is_power_of_two() {
                d
            } else {
                d + 2
            }
        }
    }
}

/// Recursive-doubling fold geometry.
struct Fold {
    n: u32,
    /// r = n − p': number of extra vertices.
    r: u32,
    /// log2 p'.
    d: u32,
}

impl Fold {
    fn new(n: u32) -> Fold {
        let d = floor_log2(n);
        Fold {
            n,
            r: n - (1 << d),
            d,
        }
    }
    /// Core index of v, or None for an extra vertex.
    fn core(&self, v: u32) -> Option<u32> {
        if v < 2 * self.r {
            v.is_multiple_of(2).then_some(v / 2)
        } else {
            Some(v - self.r)
        }
    }
    /// Logical vertex of core index c.
    fn vertex(&self, c: u32) -> u32 {
        if c < self.r {
            2 * c
        } else {
            c + self.r
        }
    }
    /// First logical block covered by core index c (c may equal p').
    fn start(&self, c: u32) -> u32 {
        if c < self.r {
            2 * c
        } else {
            (c + self.r).min(self.n)
        }
    }
    /// Blocks held by the aligned group of 2^k core indices containing c.
    fn group(&self, c: u32, k: u32) -> (u32, u32) {
        let g = c & !((1u32 << k) - 1);
        let first = self.start(g);
        (first, self.start(g + (1 << k)) - first)
    }
}

/// Step `k` of logical vertex `v` (0 ≤ k < `steps(alg, n)`).
pub fn logical_step(alg: Algorithm, n: u32, v: u32, k: u32) -> LStep {
    assert!(v < n && k < steps(alg, n));
    match alg {
        Algorithm::Bruck => {
            let dist = 1u32 << k;
            let count = dist.min(n - dist);
            LStep {
                send: Some(Xfer {
                    peer: (v + n - dist) % n,
                    first: 0,
                    count,
                }),
                recv: Some(Xfer {
                    peer: (v + dist) % n,
                    first: dist,
                    count,
                }),
            }
        }
        Algorithm::RecursiveDoubling => {
            let f = Fold::new(n);
            let folded = f.r > 0;
            // Core steps are numbered 0..d after the optional fold step.
            let core_k = if folded { k.checked_sub(1) } else { Some(k) };
            match (f.core(v), core_k) {
                // Fold step: extra vertex → even left neighbour.
                (None, None) => LStep {
                    send: Some(Xfer {
                        peer: v - 1,
                        first: v,
                        count: 1,
                    }),
                    recv: None,
                },
                (Some(_), None) => LStep {
                    send: None,
                    recv: (v < 2 * f.r).then_some(Xfer {
                        peer: v + 1,
                        first: v + 1,
                        count: 1,
                    }),
                },
                (None, Some(ck)) if ck == f.d => LStep {
                    send: None,
                    recv: Some(Xfer {
                        peer: v - 1,
                        first: 0,
                        count: n,
                    }),
                },
                (None, Some(_)) => LStep::default(),
                (Some(_), Some(ck)) if ck == f.d => LStep {
                    send: (v < 2 * f.r).then_some(Xfer {
                        peer: v + 1,
                        first: 0,
                        count: n,
                    }),
                    recv: None,
                },
                (Some(c), Some(ck)) => {
                    let partner = c ^ (1 << ck);
                    let (sf, sc) = f.group(c, ck);
                    let (rf, rc) = f.group(partner, ck);
                    let peer = f.vertex(partner);
                    LStep {
                        send: Some(Xfer {
                            peer,
                            first: sf,
                            count: sc,
                        }),
                        recv: Some(Xfer {
                            peer,
                            first: rf,
                            count: rc,
                        }),
                    }
                }
            }
        }
    }
}

/// Where vertex v's own block starts in its buffer.
pub fn own_position(alg: Algorithm, v: u32) -> u32 {
    match alg {
        Algorithm::RecursiveDoubling => v,
        Algorithm::Bruck => 0,
    }
}

/// Every transfer of the algorithm: (step, from, to, blocks).
pub fn transfers(alg: Algorithm, n: u32) -> impl Iterator<Item = (u32, u32, u32, u32)> {
    let s = steps(alg, n);
    (0..s).flat_map(move |k| {
        (0..n).filter_map(move |v| {
            logical_step(alg, n, v, k)
                .send
                .map(|x| (k, v, x.peer, x.count))
        })
    })
}

/// The paper's information graph: vertex per logical process, edge weight
/// d_ij = blocks carried between i and j (both directions, all steps) at
/// m = 1.
pub fn graph(alg: Algorithm, n: u32) -> Graph {
    Graph::from_edges(
        n as usize,
        transfers(alg, n).map(|(_, a, b, c)| (a, b, c as u64)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every send is matched by the peer's receive at the same step with the
    /// same count (the receive position is where the sender's blocks belong).
    #[test]
    fn sends_and_receives_match() {
        for alg in [Algorithm::RecursiveDoubling, Algorithm::Bruck] {
            for n in 1..=70 {
                for k in 0..steps(alg, n) {
                    for v in 0..n {
                        let s = logical_step(alg, n, v, k);
                        if let Some(x) = s.send {
                            let r = logical_step(alg, n, x.peer, k).recv.unwrap();
                            assert_eq!(
                                (r.peer, r.count),
                                (v, x.count),
                                "{alg:?} n={n} k={k} v={v}"
                            );
                            if alg == Algorithm::RecursiveDoubling {
                                assert_eq!(r.first, x.first);
                            }
                        }
                        if let Some(x) = s.recv {
                            let t = logical_step(alg, n, x.peer, k).send.unwrap();
                            assert_eq!(t.peer, v);
                        }
                    }
                }
            }
        }
    }

    /// The graphs of the paper's figure (n = 8, m = 1): recursive doubling is
    /// the 3-cube with weights 2, 4, 8 (both directions) along dimensions
    /// 0, 1, 2; Bruck links v with v ± 1 (1 block each way), v ± 2 (2) and
    /// v + 4 (4 blocks each way).
    #[test]
    fn paper_graphs_n8() {
        let rd = graph(Algorithm::RecursiveDoubling, 8);
        for v in 0..8u32 {
            let mut nb: Vec<_> = rd.neighbours(v).collect();
            nb.sort();
            let mut want: Vec<_> = (0..3).map(|k| (v ^ (1 << k), 2u64 << k)).collect();
            want.sort();
            assert_eq!(nb, want);
        }
        assert_eq!(rd.total_weight(), 8 * 7);
        let br = graph(Algorithm::Bruck, 8);
        for v in 0..8u32 {
            let mut nb: Vec<_> = br.neighbours(v).collect();
            nb.sort();
            let mut want = vec![
                ((v + 1) % 8, 1),
                ((v + 7) % 8, 1),
                ((v + 2) % 8, 2),
                ((v + 6) % 8, 2),
                ((v + 4) % 8, 8),
            ];
            want.sort();
            assert_eq!(nb, want);
        }
        assert_eq!(br.total_weight(), 8 * 7);
    }

    /// Each vertex receives exactly n − 1 blocks other than its own in Bruck;
    /// in folded recursive doubling extra vertices receive n and their even
    /// partners one block more.
    #[test]
    fn received_block_totals() {
        for n in 1..=40u32 {
            let mut got = vec![0u32; n as usize];
            for (_, _, to, c) in transfers(Algorithm::Bruck, n) {
                got[to as usize] += c;
            }
            assert!(got.iter().all(|&g| g == n - 1), "bruck n={n}");
            let mut got = vec![0u32; n as usize];
            for (_, _, to, c) in transfers(Algorithm::RecursiveDoubling, n) {
                got[to as usize] += c;
            }
            let r = n - (1 << floor_log2(n));
            for v in 0..n {
                let want = if v < 2 * r && v % 2 == 1 { n } else { n - 1 };
                assert_eq!(got[v as usize], want, "rd n={n} v={v}");
            }
        }
    }
}
