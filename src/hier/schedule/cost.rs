//! Closed-form α-β-γ costs of the top-group Allreduce algorithms, the
//! papers' parameter choices (lattice dimensions of 001 §3.3-3.4, Trinaryx3
//! torus shape and segment count of 002), and the `auto` rule.
//!
//! m is the message in bytes; α seconds per message, β and γ seconds per
//! byte moved and combined.  The formulas are those of the schedules built
//! here (the simulator checks them): a step's sends and receives overlap,
//! its combinations follow (no overlap of γ with transfers, i.e. the
//! paper-001 β̃ = 2β + γ of §4, not the 2β of §5).

use super::basic::{RecursiveDoubling, RingAllreduce};
use super::lattice::Lattice;
use super::plan::Collective;
use super::trinaryx3::Trinaryx3;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Net {
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
    /// Messages a process moves at once in each direction (links or RDMA
    /// engines; 1 for a single NIC).
    pub ports: usize,
}

impl Net {
    /// Paper 001's FDR InfiniBand latency (2 µs), paper 002's Tofu link
    /// (5 GB/s) and measured combination throughput (6.57 GB/s), one port.
    pub const PAPERS: Net = Net {
        alpha: 2e-6,
        beta: 1.0 / 5e9,
        gamma: 1.0 / 6.57e9,
        ports: 1,
    };
}

/// ⌊log2 p⌋ rounds on whole buffers, plus fold-in and fold-out when p is not
/// a power of two.
pub fn recursive_doubling(p: usize, m: f64, n: &Net) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let rounds = (usize::BITS - 1 - p.leading_zeros()) as f64;
    let msg = n.alpha + n.beta * m;
    let mut t = rounds * (msg + n.gamma * m);
    if !p.is_power_of_two() {
        t += 2.0 * msg + n.gamma * m;
    }
    t
}

/// 2(p−1) steps of m/p bytes, half of them combining (paper 001's T1).
pub fn ring(p: usize, m: f64, n: &Net) -> f64 {
    let (g, b) = (p as f64, m / p as f64);
    2.0 * (g - 1.0) * (n.alpha + n.beta * b) + (g - 1.0) * n.gamma * b
}

/// One ring dimension of r over a region of `m` bytes, in packets.
fn lattice_dim(r: usize, m: f64, packet: f64, n: &Net) -> f64 {
    if r <= 1 {
        return 0.0;
    }
    let b = m / r as f64;
    let packets = (b / packet).ceil().max(1.0);
    let rf = (r - 1) as f64;
    2.0 * rf * (n.alpha * packets + n.beta * b) + rf * n.gamma * b
}

/// Paper 001's T_d (§3.3) with packets: Σ_i T1(r_i, m / r_1⋯r_{i−1}).
pub fn lattice(dims: &[usize], m: f64, packet: f64, n: &Net) -> f64 {
    let mut region = m;
    let mut t = 0.0;
    for &r in dims {
        t += lattice_dim(r, region, packet, n);
        region /= r as f64;
    }
    t
}

/// The lattice dimensions the model prefers for `levels` (bottom-up: a
/// level's fan-out and its network costs; the product of fan-outs is p).
/// Per level the dimensions are an ordered factorisation of its fan-out;
/// the region a dimension works on depends only on the product before it,
/// so a minimum over divisors (a small dynamic programme) is exact.  With
/// equal costs this reproduces the paper's conclusion that Σ r_i − d is
/// what matters (small factors); a prime fan-out stays one ring.
pub fn lattice_dims(levels: &[(usize, Net)], m: f64, packet: f64) -> Vec<usize> {
    let mut dims = Vec::new();
    let mut below = 1.0;
    for &(fan, net) in levels {
        let divs: Vec<usize> = (1..=fan).filter(|d| fan.is_multiple_of(*d)).collect();
        // best[i]: cost and first factor for the remaining fan-out divs[i],
        // the product before it being fan / divs[i].
        let mut best: Vec<(f64, usize)> = vec![(0.0, 1); divs.len()];
        for (i, &rem) in divs.iter().enumerate().skip(1) {
            let region = m / below / (fan / rem) as f64;
            let mut top = (f64::INFINITY, rem);
            for (j, &rest) in divs[..i].iter().enumerate() {
                if rem.is_multiple_of(rest) {
                    let r = rem / rest;
                    let c = lattice_dim(r, region, packet, &net) + best[j].0;
                    if c < top.0 {
                        top = (c, r);
                    }
                }
            }
            best[i] = top;
        }
        let mut rem = fan;
        while rem > 1 {
            let i = divs.binary_search(&rem).expect("a divisor");
            dims.push(best[i].1);
            rem /= best[i].1;
        }
        below *= fan as f64;
    }
    if dims.is_empty() {
        dims.push(1);
    }
    dims
}

/// The torus the top group is laid out on: 3-D with every dimension >= 3
/// and the least height X+Y+Z−2, else 2-D, else none.
pub fn torus_shape(p: usize) -> Option<Vec<usize>> {
    let divs: Vec<usize> = (3..=p).filter(|d| p.is_multiple_of(*d)).collect();
    let mut best: Option<Vec<usize>> = None;
    for &x in &divs {
        for &y in divs
            .iter()
            .filter(|&&y| y <= x && (p / x).is_multiple_of(y))
        {
            let z = p / x / y;
            if z >= 3 && z <= y {
                let shape = vec![x, y, z];
                if best.as_ref().is_none_or(|b| x + y + z < b.iter().sum()) {
                    best = Some(shape);
                }
            }
        }
    }
    if best.is_some() {
        return best;
    }
    let x = divs
        .iter()
        .copied()
        .filter(|&x| x * x >= p && p / x >= 3)
        .min()?;
    Some(vec![x, p / x])
}

/// Trinaryx3 with `segments` per tree: each phase is a pipeline of depth
/// h = Σ(L_i − 1) + 1 over segments of s = m/(d·S) bytes; in the Reduce a
/// node folds its (up to d) children one step each.  With fewer ports than
/// trees the trees' messages share them.
pub fn trinaryx3(dims: &[usize], m: f64, segments: usize, n: &Net) -> f64 {
    let d = dims.len();
    let h = dims.iter().map(|l| l - 1).sum::<usize>() as f64 + 1.0;
    let sg = segments as f64;
    let s = m / (d as f64 * sg);
    let share = (d as f64 / n.ports as f64).ceil().max(1.0);
    let stage = share * (n.alpha + n.beta * s);
    let reduce = (h - 1.0 + sg * d as f64) * stage + sg * d as f64 * n.gamma * s;
    let bcast = (h + sg - 1.0) * stage;
    reduce + bcast
}

/// Segments per tree minimising the model (the paper tunes this by
/// measurement, Fig. 14: constant up to tens of KiB, then growing).
pub fn trinaryx3_segments(dims: &[usize], m: f64, elems: usize, n: &Net) -> usize {
    let most = (elems / dims.len()).clamp(1, 4096);
    (1..=most)
        .min_by(|&a, &b| trinaryx3(dims, m, a, n).total_cmp(&trinaryx3(dims, m, b, n)))
        .unwrap_or(1)
}

/// `coll_sharm_hierarchy_top_allreduce_algorithm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopAllreduce {
    RecursiveDoubling,
    Ring,
    LatticeRing,
    Trinaryx3,
}

impl TopAllreduce {
    pub fn parse(text: &str) -> Option<Option<TopAllreduce>> {
        Some(match text {
            "auto" => None,
            "recursive_doubling" => Some(TopAllreduce::RecursiveDoubling),
            "ring" => Some(TopAllreduce::Ring),
            "lattice_ring" => Some(TopAllreduce::LatticeRing),
            "trinaryx3" => Some(TopAllreduce::Trinaryx3),
            _ => return None,
        })
    }
}

/// Default packet of the lattice ring: 256 KiB, the paper's measured setting.
pub const PACKET_BYTES: usize = 256 << 10;

/// Model time of every algorithm for p processes and m bytes (`None` where
/// an algorithm has no shape: Trinaryx3 without a torus).
pub fn model(alg: TopAllreduce, p: usize, m: f64, elem: usize, n: &Net) -> Option<f64> {
    let packet = PACKET_BYTES as f64;
    Some(match alg {
        TopAllreduce::RecursiveDoubling => recursive_doubling(p, m, n),
        TopAllreduce::Ring => ring(p, m, n),
        TopAllreduce::LatticeRing => lattice(&lattice_dims(&[(p, *n)], m, packet), m, packet, n),
        TopAllreduce::Trinaryx3 => {
            let dims = torus_shape(p)?;
            let segs = trinaryx3_segments(&dims, m, (m as usize / elem).max(1), n);
            trinaryx3(&dims, m, segs, n)
        }
    })
}

/// The proposed `auto`: the cheapest algorithm under the model (ties to the
/// earlier one in the order RD, ring, lattice, Trinaryx3).  With the
/// default parameters this reduces to the size/p table in docs/schedules.md.
pub fn auto(p: usize, m: f64, elem: usize, n: &Net) -> TopAllreduce {
    use TopAllreduce::*;
    [RecursiveDoubling, Ring, LatticeRing, Trinaryx3]
        .into_iter()
        .filter_map(|a| model(a, p, m, elem, n).map(|t| (a, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(RecursiveDoubling, |x| x.0)
}

/// The schedule for `alg` on p processes and `count` elements of `elem`
/// bytes.  Trinaryx3 without a torus shape (p prime or with no factor
/// pair >= 3, e.g. 2·prime) falls back to the lattice ring with the model's
/// dimensions: like Trinaryx3 it is bandwidth-optimal for large messages.
pub fn allreduce_for(
    alg: TopAllreduce,
    p: usize,
    count: usize,
    elem: usize,
    n: &Net,
) -> Box<dyn Collective> {
    let m = (count * elem) as f64;
    let lattice_ring = || {
        let dims = lattice_dims(&[(p, *n)], m, PACKET_BYTES as f64);
        Box::new(Lattice::new(dims, count, (PACKET_BYTES / elem).max(1)))
    };
    match alg {
        TopAllreduce::RecursiveDoubling => Box::new(RecursiveDoubling { p, count }),
        TopAllreduce::Ring => Box::new(RingAllreduce { p, count }),
        TopAllreduce::LatticeRing => lattice_ring(),
        TopAllreduce::Trinaryx3 => match torus_shape(p) {
            Some(dims) => {
                let segs = trinaryx3_segments(&dims, m, count.max(1), n);
                Box::new(Trinaryx3::new(dims, count, segs).expect("dims >= 3"))
            }
            None => lattice_ring(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(
            torus_shape(9216).map(|d| d.iter().sum::<usize>()),
            Some(24 + 24 + 16)
        );
        assert_eq!(torus_shape(27), Some(vec![3, 3, 3]));
        assert_eq!(torus_shape(15), Some(vec![5, 3]));
        assert_eq!(torus_shape(13), None);
        assert_eq!(torus_shape(14), None);
        assert_eq!(
            torus_shape(65536).map(|d| d.iter().product::<usize>()),
            Some(65536)
        );
    }

    #[test]
    fn lattice_dims_follow_the_model() {
        let n = Net::PAPERS;
        // Equal costs: small factors (Σ r_i − d least).
        let dims = lattice_dims(&[(64, n)], 1e6, 1e9);
        assert_eq!(dims.iter().product::<usize>(), 64);
        assert!(dims.iter().all(|&r| r == 2), "{dims:?}");
        // A prime stays one ring.
        assert_eq!(lattice_dims(&[(13, n)], 1e6, 1e9), vec![13]);
        // Two levels: the node level's dims come first and multiply to it.
        let dims = lattice_dims(&[(14, n), (15, n)], 1e6, 1e9);
        let mut sorted = dims.clone();
        sorted[..2].sort_unstable();
        sorted[2..].sort_unstable();
        assert_eq!(sorted, vec![2, 7, 3, 5]);
    }

    #[test]
    fn paper_001_two_level_choice() {
        // §3.4: B2(r1) = β̃1 + (β̃2 − β̃1)/r1 − β̃2/n grows with r1 when the
        // node is slower than the network: then r1 should be small.
        let fast = Net {
            beta: 1e-11,
            gamma: 0.0,
            ..Net::PAPERS
        };
        let slow = Net {
            beta: 1e-9,
            gamma: 0.0,
            ..Net::PAPERS
        };
        let m = 1e9;
        let t = |r1: usize, n1: &Net, n2: &Net| {
            lattice_dim(r1, m, 1e12, n1) + lattice_dim(210 / r1, m / r1 as f64, 1e12, n2)
        };
        assert!(t(14, &fast, &slow) < t(2, &fast, &slow));
        assert!(t(14, &slow, &fast) > t(2, &slow, &fast));
    }
}
