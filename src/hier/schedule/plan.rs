//! The schedule type: per process, an ordered list of steps; the actions of a
//! step proceed concurrently, and a step starts when the previous one has
//! finished (a local dependency only).  Spans count elements of the process's
//! message buffer, so one schedule serves every datatype.

use std::fmt;

/// A range of elements `[start, start + len)` of a process's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: usize,
    pub len: usize,
}

impl Span {
    pub fn new(start: usize, len: usize) -> Span {
        Span { start, len }
    }

    pub fn end(&self) -> usize {
        self.start + self.len
    }

    /// Empty spans touch nothing, so they never overlap.
    pub fn overlaps(&self, other: &Span) -> bool {
        self.len > 0 && other.len > 0 && self.start < other.end() && other.start < self.end()
    }

    /// Part `i` of `parts` near-equal parts (sizes differ by at most one).
    pub fn part(&self, parts: usize, i: usize) -> Span {
        let lo = self.len * i / parts;
        let hi = self.len * (i + 1) / parts;
        Span::new(self.start + lo, hi - lo)
    }
}

/// Which operand comes first in a combination; explicit so that a
/// non-commutative or floating-point reduction order is part of the schedule
/// and can be checked by the simulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// `mine = incoming ⊕ mine` (MPI_Reduce_local(incoming, mine)).
    IncomingFirst,
    /// `mine = mine ⊕ incoming`.
    MineFirst,
}

/// What a receive does with the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Into {
    /// Overwrite the span.
    Copy,
    /// Combine with the span, in the given order.
    Combine(Order),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Send { to: usize, span: Span },
    Recv { from: usize, span: Span, into: Into },
}

impl Action {
    pub fn span(&self) -> Span {
        match *self {
            Action::Send { span, .. } | Action::Recv { span, .. } => span,
        }
    }

    pub fn peer(&self) -> usize {
        match *self {
            Action::Send { to, .. } => to,
            Action::Recv { from, .. } => from,
        }
    }
}

/// What the whole collective leaves where: the simulator checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The root's buffer ends up everywhere.
    Bcast { root: usize },
    /// The root ends with the reduction of all buffers.
    Reduce { root: usize },
    /// Every process ends with the reduction of all buffers.
    Allreduce,
    /// Every process ends with every process's block of `block` elements
    /// (the buffer holds `size` blocks).  Process r starts with its own
    /// block at block position `own_block(r)`; after the steps, position t
    /// holds the block of the process `block_order(r).rank_at(t)`, and the
    /// caller moves it there ([`super::gather`]: the local moves around the
    /// steps, which need no messages).
    Allgather { block: usize },
}

impl Kind {
    /// Bcast (`reduce` false) or Reduce rooted at group index 0, the form of
    /// every rooted builder.
    pub fn rooted(reduce: bool) -> Kind {
        if reduce {
            Kind::Reduce { root: 0 }
        } else {
            Kind::Bcast { root: 0 }
        }
    }
}

/// What every builder states about itself: processes (group indices
/// 0..size), elements in every process's buffer, and what the collective
/// leaves where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub size: usize,
    pub count: usize,
    pub kind: Kind,
}

/// Where an Allgather's blocks lie in one process's buffer after the steps:
/// block position t holds the block of process g((t + shift) mod n), g
/// being `table` (a permutation of 0..n, the same on every process) or the
/// identity.  One form covers the rotations (Bruck) and the table lookups
/// (paper 003's reorder variants), and lets the simulator label blocks so
/// that runs of consecutive blocks stay one piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockOrder<'a> {
    pub shift: usize,
    pub table: Option<&'a [u32]>,
}

impl BlockOrder<'_> {
    /// Rank order: position t holds block t.
    pub const IN_ORDER: BlockOrder<'static> = BlockOrder {
        shift: 0,
        table: None,
    };

    /// The process whose block position `t` of `n` holds.
    pub fn rank_at(&self, t: usize, n: usize) -> usize {
        let l = (t + self.shift) % n;
        self.table.map_or(l, |g| g[l] as usize)
    }

    pub fn is_in_order(&self) -> bool {
        self.shift == 0 && self.table.is_none()
    }
}

/// One process's schedule, materialised: `steps` as offsets into `actions`,
/// so the whole thing is two vectors (O(steps + actions)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    pub rank: usize,
    actions: Vec<Action>,
    ends: Vec<usize>,
}

impl Schedule {
    pub fn new(rank: usize) -> Schedule {
        Schedule {
            rank,
            ..Default::default()
        }
    }

    pub fn push_step(&mut self, step: &[Action]) {
        self.actions.extend_from_slice(step);
        self.ends.push(self.actions.len());
    }

    pub fn steps(&self) -> usize {
        self.ends.len()
    }

    pub fn step(&self, s: usize) -> &[Action] {
        let start = if s == 0 { 0 } else { self.ends[s - 1] };
        &self.actions[start..self.ends[s]]
    }

    pub fn iter(&self) -> impl Iterator<Item = &[Action]> {
        (0..self.steps()).map(|s| self.step(s))
    }

    pub fn messages(&self) -> usize {
        self.actions
            .iter()
            .filter(|a| matches!(a, Action::Send { .. }))
            .count()
    }
}

/// An algorithm description.  Every process's steps are computed on demand
/// (`step` is random access), so neither an executor nor the simulator ever
/// holds more than the steps it is working on: at p = 65,536 a simulation
/// keeps O(p) state, not O(p · steps).
pub trait Collective: Sync {
    fn shape(&self) -> Shape;
    /// Processes (group indices 0..size).
    fn size(&self) -> usize {
        self.shape().size
    }
    /// Elements in every process's buffer.
    fn count(&self) -> usize {
        self.shape().count
    }
    fn kind(&self) -> Kind {
        self.shape().kind
    }
    /// Steps of process `rank`.
    fn steps(&self, rank: usize) -> usize;
    /// Appends the actions of step `s` of process `rank` to `out`.
    fn step(&self, rank: usize, s: usize, out: &mut Vec<Action>);

    /// Allgather: the block position where `rank` puts its own block before
    /// step 0 (see [`Kind::Allgather`]).
    fn own_block(&self, rank: usize) -> usize {
        rank
    }
    /// Allgather: what the block positions of `rank` hold after the steps.
    fn block_order(&self, _rank: usize) -> BlockOrder<'_> {
        BlockOrder::IN_ORDER
    }

    /// The process's whole schedule, for the executor.
    fn schedule_of(&self, rank: usize) -> Schedule {
        let mut sched = Schedule::new(rank);
        let mut buf = Vec::new();
        for s in 0..self.steps(rank) {
            buf.clear();
            self.step(rank, s, &mut buf);
            sched.push_step(&buf);
        }
        sched
    }
}

/// Why a schedule is malformed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invalid {
    OutOfBuffer {
        rank: usize,
        step: usize,
    },
    BadPeer {
        rank: usize,
        step: usize,
    },
    /// A copy-receive overlaps another action of its step.
    Overlap {
        rank: usize,
        step: usize,
    },
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// Local rules of one step.  A Combine receive lands in a temporary and is
/// folded in after the whole step has finished, in action order (the
/// executor does exactly this), so it may overlap the step's sends
/// (recursive doubling sends and combines the same span) and other
/// combines (folded in the listed order whatever the arrival order); a Copy
/// receive writes the buffer while sends may still read it, so it must not
/// overlap anything.
pub fn check_step(
    p: usize,
    count: usize,
    rank: usize,
    s: usize,
    step: &[Action],
) -> Result<(), Invalid> {
    for (i, a) in step.iter().enumerate() {
        if a.span().end() > count {
            return Err(Invalid::OutOfBuffer { rank, step: s });
        }
        if a.peer() >= p || a.peer() == rank {
            return Err(Invalid::BadPeer { rank, step: s });
        }
        for b in &step[..i] {
            let clash = match (a, b) {
                (Action::Send { .. }, Action::Send { .. }) => false,
                (Action::Recv { into, .. }, Action::Send { .. })
                | (Action::Send { .. }, Action::Recv { into, .. }) => *into == Into::Copy,
                (Action::Recv { into: x, .. }, Action::Recv { into: y, .. }) => {
                    *x == Into::Copy || *y == Into::Copy
                }
            };
            if clash && a.span().overlaps(&b.span()) {
                return Err(Invalid::Overlap { rank, step: s });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_tile_the_span() {
        let s = Span::new(5, 17);
        let mut next = 5;
        for i in 0..4 {
            let q = s.part(4, i);
            assert_eq!(q.start, next);
            assert!(q.len == 4 || q.len == 5);
            next = q.end();
        }
        assert_eq!(next, 22);
    }

    #[test]
    fn step_rules() {
        let send = Action::Send {
            to: 1,
            span: Span::new(0, 4),
        };
        let copy = Action::Recv {
            from: 1,
            span: Span::new(2, 4),
            into: Into::Copy,
        };
        let comb = Action::Recv {
            from: 1,
            span: Span::new(0, 4),
            into: Into::Combine(Order::MineFirst),
        };
        assert!(check_step(2, 8, 0, 0, &[send, comb]).is_ok());
        assert!(check_step(2, 8, 0, 0, &[send, copy]).is_err());
        assert!(check_step(2, 8, 0, 0, &[comb, copy]).is_err());
        assert!(check_step(2, 8, 0, 0, &[comb, comb]).is_ok());
        assert!(check_step(2, 5, 0, 0, &[copy]).is_err());
        assert!(check_step(2, 8, 1, 0, &[send]).is_err());
    }
}
