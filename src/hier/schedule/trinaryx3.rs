//! Paper 002: Trinaryx3 Allreduce — edge-disjoint spanning trees of a 2-D or
//! 3-D torus (dims X×Y[×Z], every dim >= 3, members row-major: the last
//! coordinate varies fastest), the message split in d parts, one per tree,
//! reduced up the trees to the root (rank 0, the origin) and broadcast down,
//! pipelined in segments.
//!
//! Tree t takes the axes in the cyclic order t, t+1, … (x,y,z / y,z,x /
//! z,x,y; in 2-D x,y / y,x).  With a0, a1, a2 that order (§4.1, Fig. 5-6):
//! the root extends a branch along +a0; every node off the root on it
//! extends along +a1; every node with a0 ≠ 0 in that plane extends along
//! +a2; the nodes left out (a0 = 0) are attached from their a0 neighbour
//! across the wrap-around link (a0 = L0−1 → 0).  Only "+" links are used and
//! each tree takes the wrap-around links of its own first axis only, which
//! makes the d trees pairwise edge-disjoint; the height is X+Y+Z−2 (3-D) as
//! in §6.2, X+Y−1 in 2-D.
//!
//! Combination order (§4.2): a node folds its children in increasing order
//! of their subtree height (ties: axis order, the wrap-around child last),
//! `mine ⊕ incoming`; children of equal height arrive in the same step and
//! are folded in action order, whatever the arrival order (the paper's
//! "wait for the message to combine first").  The order is static and the
//! result bit-identical everywhere (it is broadcast from the root).
//! The Bcast serves children in the reverse order (farthest leaves first).
//!
//! Shapes with a dimension below 3 (the "+" and wrap-around links coincide)
//! or no torus factorisation are not built here; see `cost::allreduce_for`
//! for the documented fallback.

use super::plan::{Action, Collective, Into, Kind, Order, Schedule, Shape, Span};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trinaryx3 {
    pub dims: Vec<usize>,
    pub count: usize,
    /// Segments per tree part (>= 1): the pipeline depth.
    pub segments: usize,
}

/// A node's place in one tree.
struct Place {
    parent: Option<usize>,
    /// Children in combination order (increasing subtree height) with
    /// their subtree heights.
    children: Vec<(usize, usize)>,
    /// This node's subtree height and depth.
    height: usize,
    depth: usize,
}

impl Trinaryx3 {
    pub fn new(dims: Vec<usize>, count: usize, segments: usize) -> Option<Trinaryx3> {
        let ok = (2..=3).contains(&dims.len()) && dims.iter().all(|&l| l >= 3);
        ok.then_some(Trinaryx3 {
            dims,
            count,
            segments: segments.max(1),
        })
    }

    pub fn trees(&self) -> usize {
        self.dims.len()
    }

    /// Height of every tree: Σ(L_i − 1) + 1.
    pub fn height(&self) -> usize {
        self.dims.iter().map(|l| l - 1).sum::<usize>() + 1
    }

    fn coords(&self, rank: usize) -> Vec<usize> {
        let mut c = vec![0; self.dims.len()];
        let mut r = rank;
        for i in (0..self.dims.len()).rev() {
            c[i] = r % self.dims[i];
            r /= self.dims[i];
        }
        c
    }

    fn rank_of(&self, c: &[usize]) -> usize {
        c.iter().zip(&self.dims).fold(0, |r, (&x, &l)| r * l + x)
    }

    /// Coordinates of `rank` in tree t's axis order, with the axis lengths.
    fn rotated(&self, t: usize, rank: usize) -> (Vec<usize>, Vec<usize>) {
        let (c, d) = (self.coords(rank), self.dims.len());
        let rc = (0..d).map(|i| c[(t + i) % d]).collect();
        let rl = (0..d).map(|i| self.dims[(t + i) % d]).collect();
        (rc, rl)
    }

    fn unrotated(&self, t: usize, rc: &[usize]) -> usize {
        let d = self.dims.len();
        let mut c = vec![0; d];
        for i in 0..d {
            c[(t + i) % d] = rc[i];
        }
        self.rank_of(&c)
    }

    /// Subtree height at rotated coordinates `rc` (closed form of the
    /// construction; checked against a search in the tests).
    fn subtree_height(rc: &[usize], rl: &[usize]) -> usize {
        if rc[0] == 0 && rc.iter().any(|&x| x != 0) {
            return 0;
        }
        let i = rc.iter().rposition(|&x| x != 0).unwrap_or(0);
        let rest: usize = rl[i + 1..].iter().map(|l| l - 1).sum();
        let wrap = if i == 0 {
            1
        } else {
            usize::from(rc[0] == rl[0] - 1)
        };
        (rl[i] - 1 - rc[i]) + rest + wrap
    }

    /// Parent and ordered children of `rank` in tree t.
    fn place(&self, t: usize, rank: usize) -> Place {
        let (rc, rl) = self.rotated(t, rank);
        let d = rc.len();
        let root = rc.iter().all(|&x| x == 0);
        let parent = if root {
            None
        } else if rc[0] == 0 {
            let mut pc = rc.clone();
            pc[0] = rl[0] - 1;
            Some(self.unrotated(t, &pc))
        } else {
            let i = rc.iter().rposition(|&x| x != 0).expect("not the root");
            let mut pc = rc.clone();
            pc[i] -= 1;
            Some(self.unrotated(t, &pc))
        };
        // (height, tie-break, rank)
        let mut kids: Vec<(usize, usize, usize)> = Vec::new();
        let mut add = |c: Vec<usize>, tie: usize| {
            kids.push((Self::subtree_height(&c, &rl), tie, self.unrotated(t, &c)));
        };
        if root {
            let mut c = rc.clone();
            c[0] = 1;
            add(c, 0);
        } else if rc[0] != 0 {
            let i = rc.iter().rposition(|&x| x != 0).expect("a0 != 0");
            for j in i..d {
                if rc[j] + 1 < rl[j] {
                    let mut c = rc.clone();
                    c[j] += 1;
                    add(c, j);
                }
            }
            if rc[0] == rl[0] - 1 && rc[1..].iter().any(|&x| x != 0) {
                let mut c = rc.clone();
                c[0] = 0;
                add(c, d);
            }
        }
        kids.sort_unstable();
        let depth = if root {
            0
        } else if rc[0] == 0 {
            rl[0] + rc.iter().sum::<usize>()
        } else {
            rc.iter().sum()
        };
        Place {
            parent,
            children: kids.into_iter().map(|k| (k.2, k.0)).collect(),
            height: Self::subtree_height(&rc, &rl),
            depth,
        }
    }

    /// Parent of `rank` in tree t (None for the root): for the link checks.
    pub fn parent(&self, t: usize, rank: usize) -> Option<usize> {
        self.place(t, rank).parent
    }

    fn segment(&self, t: usize, j: usize) -> Span {
        Span::new(0, self.count)
            .part(self.trees(), t)
            .part(self.segments, j)
    }

    /// Slots of each phase: h + S − 1.  Every process runs the same slots
    /// (idle where it has nothing to do), and every message is sent and
    /// received in the same slot: the trees are coupled inside a process
    /// (a step waits for all its actions), and slot alignment is what keeps
    /// that coupling free of cycles (a process's progress in one tree never
    /// waits for a later slot of another).
    fn slots(&self) -> usize {
        self.height() + self.segments - 1
    }

    fn places(&self, rank: usize) -> Vec<Place> {
        (0..self.trees()).map(|t| self.place(t, rank)).collect()
    }
}

impl Collective for Trinaryx3 {
    fn shape(&self) -> Shape {
        Shape {
            size: self.dims.iter().product(),
            count: self.count,
            kind: Kind::Allreduce,
        }
    }
    fn steps(&self, rank: usize) -> usize {
        self.active_slots(&self.places(rank)).len()
    }
    fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>) {
        let pls = self.places(rank);
        self.slot(&pls, self.active_slots(&pls)[s], out);
    }
    fn schedule_of(&self, rank: usize) -> Schedule {
        let pls = self.places(rank);
        let mut sched = Schedule::new(rank);
        let mut buf = Vec::new();
        for k in self.active_slots(&pls) {
            buf.clear();
            self.slot(&pls, k, &mut buf);
            sched.push_step(&buf);
        }
        sched
    }
}

impl Trinaryx3 {
    /// The slots in which this process has something to do; idle slots are
    /// left out of its schedule.  That keeps deadlock freedom: every message
    /// still has one slot number at both ends and each process takes its
    /// actions in slot order, so by induction on the slot all complete.
    fn active_slots(&self, pls: &[Place]) -> Vec<usize> {
        let (r, segs) = (self.slots(), self.segments);
        let mut starts: Vec<usize> = Vec::new();
        for pl in pls {
            starts.extend(pl.children.iter().map(|&(_, h)| h));
            if pl.parent.is_some() {
                starts.push(pl.height);
                starts.push(r + pl.depth - 1);
            }
            if !pl.children.is_empty() {
                starts.push(r + pl.depth);
            }
        }
        let mut slots: Vec<usize> = starts.iter().flat_map(|&a| a..a + segs).collect();
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    fn slot(&self, pls: &[Place], k: usize, out: &mut Vec<Action>) {
        let (r, segs) = (self.slots(), self.segments);
        let seg = |base: usize, slot: usize| slot.checked_sub(base).filter(|&j| j < segs);
        for (t, pl) in pls.iter().enumerate() {
            if k < r {
                // Reduce: a node of height η sends segment j in slot η + j,
                // so its parent folds children in increasing height.
                for &(c, h) in &pl.children {
                    if let Some(j) = seg(h, k) {
                        let into = Into::Combine(Order::MineFirst);
                        out.push(Action::Recv {
                            from: c,
                            span: self.segment(t, j),
                            into,
                        });
                    }
                }
                if let (Some(to), Some(j)) = (pl.parent, seg(pl.height, k)) {
                    out.push(Action::Send {
                        to,
                        span: self.segment(t, j),
                    });
                }
            } else {
                // Bcast: a node at depth δ receives segment j in slot δ−1+j
                // and forwards it in slot δ+j, farthest leaves first.
                let k = k - r;
                if let (Some(from), Some(j)) = (pl.parent, seg(pl.depth.saturating_sub(1), k)) {
                    out.push(Action::Recv {
                        from,
                        span: self.segment(t, j),
                        into: Into::Copy,
                    });
                }
                if let Some(j) = seg(pl.depth, k) {
                    for &(to, _) in pl.children.iter().rev() {
                        out.push(Action::Send {
                            to,
                            span: self.segment(t, j),
                        });
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Subtree heights by walking the children, against the closed form.
    #[test]
    fn heights_match_a_search() {
        for dims in [vec![3, 4], vec![5, 3], vec![3, 4, 5], vec![4, 3, 3]] {
            let tx = Trinaryx3::new(dims, 1, 1).unwrap();
            let p = tx.size();
            for t in 0..tx.trees() {
                fn walk(tx: &Trinaryx3, t: usize, r: usize) -> usize {
                    let pl = tx.place(t, r);
                    pl.children
                        .iter()
                        .map(|&(c, _)| walk(tx, t, c) + 1)
                        .max()
                        .unwrap_or(0)
                }
                assert_eq!(walk(&tx, t, 0), tx.height());
                for r in 0..p {
                    let (rc, rl) = tx.rotated(t, r);
                    assert_eq!(Trinaryx3::subtree_height(&rc, &rl), walk(&tx, t, r));
                    let pl = tx.place(t, r);
                    for &(c, h) in &pl.children {
                        assert_eq!(tx.parent(t, c), Some(r));
                        assert_eq!(tx.place(t, c).depth, pl.depth + 1);
                        assert_eq!(h, walk(&tx, t, c));
                    }
                }
            }
        }
    }

    #[test]
    fn small_dims_are_refused() {
        assert!(Trinaryx3::new(vec![2, 4], 8, 1).is_none());
        assert!(Trinaryx3::new(vec![12], 8, 1).is_none());
        assert!(Trinaryx3::new(vec![3, 3, 3, 3], 8, 1).is_none());
    }
}
