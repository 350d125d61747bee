//! Runs all p schedules of a collective without MPI.
//!
//! * Matching: messages of one ordered pair match in posting order; a send
//!   completes only when its receive is posted and vice versa (rendezvous,
//!   the strictest MPI progress model), so a schedule that would deadlock
//!   under MPI's rendezvous protocol deadlocks here and is reported.
//! * Symbolic values: every process's buffer is a list of pieces (element
//!   ranges with one symbolic value).  Process r's input at element e is
//!   a_r + b_r·e with random 64-bit a_r, b_r, so a lost, doubled or
//!   misplaced contribution changes the sum.  A value also carries the
//!   combination bracketing (a non-commutative, non-associative hash: equal
//!   on two processes means bit-identical floating-point results) and the
//!   rank sequence (a polynomial hash: equal to the canonical one means the
//!   result is valid for non-commutative operations).
//! * Cost: every action of a step starts with the step; a message takes
//!   α + β·bytes from the later of its two postings; a step ends with its
//!   last action plus γ·bytes for its combinations.  `ports` bounds the
//!   messages a process sends (and receives) at once (0: unbounded, the
//!   multi-port model of a torus node; 1: the single-port α-β model);
//!   with bounded ports the order of service follows the simulation's event
//!   order, an approximation.  Link contention is not modelled: the torus
//!   algorithms only use neighbour links, edge-disjoint per tree (tested).
//!   `depth` is the longest chain of messages (hops), the paper 002 latency
//!   measure.

use super::plan::{check_step, Action, Collective, Into, Invalid, Kind, Order, Span};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// α in seconds, β and γ in seconds per byte.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
    pub elem_bytes: usize,
    pub ports: usize,
}

impl Costs {
    /// Counts hops: α = 1, nothing else.
    pub fn hops() -> Costs {
        Costs {
            alpha: 1.0,
            beta: 0.0,
            gamma: 0.0,
            elem_bytes: 1,
            ports: 0,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub messages: u64,
    pub elements_sent: u64,
    pub max_steps: usize,
    pub total_steps: u64,
    pub time: f64,
    pub depth: u64,
    /// Every result holds the reduction in rank order 0, 1, …, p−1
    /// (symbolic runs of reductions only).
    pub canonical: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    Invalid(Invalid),
    /// Some process cannot finish this step (a cycle of waits or a message
    /// without its partner).
    Deadlock {
        rank: usize,
        step: usize,
    },
    /// The k-th send of a pair and the k-th receive differ in length.
    Mismatch {
        from: usize,
        to: usize,
    },
    /// The final buffer of `rank` is not what the collective promises.
    WrongResult {
        rank: usize,
        what: &'static str,
    },
}

const M61: u64 = (1 << 61) - 1;
const BASE: u64 = 1_000_003;

fn mulmod(a: u64, b: u64) -> u64 {
    let x = (a as u128) * (b as u128);
    let r = ((x & M61 as u128) + (x >> 61)) as u64;
    if r >= M61 {
        r - M61
    } else {
        r
    }
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One symbolic value: a + b·e at element e; `tree` the bracketing hash,
/// `seq`/`pow` the rank-sequence hash and BASE^(number of ranks); pow = 0
/// marks an undefined value (a buffer never written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Val {
    a: u64,
    b: u64,
    tree: u64,
    seq: u64,
    pow: u64,
}

impl Val {
    const UNDEFINED: Val = Val {
        a: 0,
        b: 0,
        tree: 0,
        seq: 0,
        pow: 0,
    };

    fn leaf(rank: usize) -> Val {
        let r = rank as u64;
        Val {
            a: mix(3 * r),
            b: mix(3 * r + 1),
            tree: mix(3 * r + 2),
            seq: r + 1,
            pow: BASE,
        }
    }

    fn combine(x: Val, y: Val) -> Val {
        if x.pow == 0 || y.pow == 0 {
            return Val::UNDEFINED;
        }
        Val {
            a: x.a.wrapping_add(y.a),
            b: x.b.wrapping_add(y.b),
            tree: mix(x.tree.rotate_left(17) ^ mix(y.tree ^ 0x5bd1_e995)),
            seq: (mulmod(x.seq, y.pow) + y.seq) % M61,
            pow: mulmod(x.pow, y.pow),
        }
    }

    /// The value seen `shift` elements further on: a + b·(e + shift).
    fn shifted(mut self, shift: i64) -> Val {
        self.a = self.a.wrapping_add(self.b.wrapping_mul(shift as u64));
        self
    }

    /// An Allgather block: the value at element e is the element's index in
    /// the block sequence of labels (label·block + offset in the block), so
    /// consecutive labels at consecutive positions are one linear piece and
    /// a block misplaced by any number of elements changes the value.  `at`
    /// is the element where the block starts in the buffer.
    fn block(label: usize, block: usize, at: usize) -> Val {
        Val {
            a: ((label * block) as u64).wrapping_sub(at as u64),
            b: 1,
            tree: 0,
            seq: 0,
            pow: 1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    start: usize,
    v: Val,
}

/// A buffer: pieces sorted by start, covering [0, count).
#[derive(Clone, Debug, Default)]
struct Buffer {
    pieces: Vec<Piece>,
}

impl Buffer {
    fn end_of(&self, i: usize, count: usize) -> usize {
        self.pieces.get(i + 1).map_or(count, |p| p.start)
    }

    /// Index of the piece holding element `e`.
    fn find(&self, e: usize) -> usize {
        self.pieces.partition_point(|p| p.start <= e) - 1
    }

    /// Pieces of `span` as (offset in span, length, value at offset 0 of the
    /// span's element numbering relative to the span start).
    fn read(&self, span: Span, count: usize, out: &mut Vec<(usize, usize, Val)>) {
        out.clear();
        if span.len == 0 {
            return;
        }
        let mut i = self.find(span.start);
        let mut at = span.start;
        while at < span.end() {
            let end = self.end_of(i, count).min(span.end());
            // Rebase: the value at element e becomes relative to span start.
            let v = self.pieces[i].v.shifted(span.start as i64);
            out.push((at - span.start, end - at, v));
            at = end;
            i += 1;
        }
    }

    /// Splits so that a piece starts at `e` (e < count).
    fn split_at(&mut self, e: usize) -> usize {
        let i = self.find(e);
        if self.pieces[i].start == e {
            return i;
        }
        let v = self.pieces[i].v;
        self.pieces.insert(i + 1, Piece { start: e, v });
        i + 1
    }

    /// Writes `data` (from `read`) into `span`, copying or combining.
    fn write(&mut self, span: Span, count: usize, data: &[(usize, usize, Val)], into: Into) {
        if span.len == 0 {
            return;
        }
        if into == Into::Copy {
            self.overwrite(span, count, data);
            return;
        }
        // Fast path: one piece in, exactly one piece there.
        if let &[(0, len, v)] = data {
            let i = self.find(span.start);
            if self.pieces[i].start == span.start && self.end_of(i, count) == span.end() {
                let here = self.pieces[i].v;
                let v = v.shifted(-(span.start as i64));
                self.pieces[i].v = apply(here, v, into);
                debug_assert_eq!(len, span.len);
                return;
            }
        }
        for &(off, len, v) in data {
            let (s, e) = (span.start + off, span.start + off + len);
            let first = self.split_at(s);
            let last = if e < count {
                self.split_at(e)
            } else {
                self.pieces.len()
            };
            let v = v.shifted(-(span.start as i64));
            for p in &mut self.pieces[first..last] {
                p.v = apply(p.v, v, into);
            }
        }
    }

    /// A copy: the pieces of `span` are replaced by `data`'s, and equal
    /// neighbours merged, so that a buffer filled by many copies of
    /// consecutive blocks (an Allgather) stays a few pieces.
    fn overwrite(&mut self, span: Span, count: usize, data: &[(usize, usize, Val)]) {
        let first = self.split_at(span.start);
        let last = if span.end() < count {
            self.split_at(span.end())
        } else {
            self.pieces.len()
        };
        let new = data.iter().map(|&(off, _, v)| Piece {
            start: span.start + off,
            v: v.shifted(-(span.start as i64)),
        });
        self.pieces.splice(first..last, new);
        let mut i = first.max(1);
        let mut end = (first + data.len() + 1).min(self.pieces.len());
        while i < end {
            if self.pieces[i].v == self.pieces[i - 1].v {
                self.pieces.remove(i);
                end -= 1;
            } else {
                i += 1;
            }
        }
    }

    /// Adjacent equal values merged: the canonical form for comparisons.
    fn normalised(&self) -> Vec<Piece> {
        let mut out: Vec<Piece> = Vec::with_capacity(self.pieces.len());
        for p in &self.pieces {
            if out.last().is_some_and(|q| q.v == p.v) {
                continue;
            }
            out.push(*p);
        }
        out
    }
}

fn apply(mine: Val, incoming: Val, into: Into) -> Val {
    match into {
        Into::Copy => incoming,
        Into::Combine(Order::IncomingFirst) => Val::combine(incoming, mine),
        Into::Combine(Order::MineFirst) => Val::combine(mine, incoming),
    }
}

#[derive(Default)]
struct FastHash(u64);

impl Hasher for FastHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = mix(x);
    }
}

type Map<K, V> = HashMap<K, V, BuildHasherDefault<FastHash>>;

/// A posted action waiting for its partner: (process, action index, time, depth).
type Posted = (usize, usize, f64, u64);

#[derive(Default)]
struct Channel {
    sends: VecDeque<Posted>,
    recvs: VecDeque<Posted>,
}

#[derive(Default)]
struct Proc {
    step: usize,
    steps: usize,
    actions: Vec<Action>,
    pending: usize,
    t_start: f64,
    d_start: u64,
    t_done: f64,
    d_done: u64,
    combined: usize,
    /// Data received in this step, applied when it ends: (action, offset,
    /// length, value) per piece, flat to spare an allocation per message.
    staged: Vec<(usize, usize, usize, Val)>,
    send_ports: Vec<f64>,
    recv_ports: Vec<f64>,
    buf: Buffer,
}

fn port(ports: &mut [f64]) -> Option<&mut f64> {
    ports.iter_mut().min_by(|a, b| a.total_cmp(b))
}

/// Simulates `coll`; with `symbolic` the buffers are tracked and the result
/// checked, otherwise only counts and costs are computed.
pub fn simulate(coll: &dyn Collective, costs: &Costs, symbolic: bool) -> Result<Report, SimError> {
    let p = coll.size();
    let count = coll.count();
    let kind = coll.kind();
    let mut procs: Vec<Proc> = Vec::with_capacity(p);
    for r in 0..p {
        let pieces = match kind {
            _ if !symbolic => Vec::new(),
            Kind::Bcast { root } if root != r => vec![Piece {
                start: 0,
                v: Val::UNDEFINED,
            }],
            Kind::Allgather { block } => own_block_pieces(coll, r, block)?,
            _ => vec![Piece {
                start: 0,
                v: Val::leaf(r),
            }],
        };
        procs.push(Proc {
            steps: coll.steps(r),
            send_ports: vec![0.0; costs.ports],
            recv_ports: vec![0.0; costs.ports],
            buf: Buffer { pieces },
            ..Default::default()
        });
    }
    let mut report = Report {
        max_steps: procs.iter().map(|q| q.steps).max().unwrap_or(0),
        total_steps: procs.iter().map(|q| q.steps as u64).sum(),
        ..Default::default()
    };
    let mut chans: Map<u64, Channel> = Map::default();
    let mut ready: Vec<usize> = Vec::new();
    let mut scratch = Vec::new();
    // Every process starts its step 0.
    for r in 0..p {
        start_step(
            coll,
            &mut procs,
            r,
            &mut chans,
            &mut ready,
            costs,
            &mut report,
            symbolic,
            &mut scratch,
        )?;
    }
    while let Some(r) = ready.pop() {
        // Finish the step: apply what arrived, in action order.
        let q = &mut procs[r];
        apply_staged(q, count, &mut scratch);
        q.t_start = q.t_done + costs.gamma * (q.combined * costs.elem_bytes) as f64;
        q.d_start = q.d_done;
        q.step += 1;
        start_step(
            coll,
            &mut procs,
            r,
            &mut chans,
            &mut ready,
            costs,
            &mut report,
            symbolic,
            &mut scratch,
        )?;
    }
    if let Some((rank, q)) = procs.iter().enumerate().find(|(_, q)| q.step < q.steps) {
        return Err(SimError::Deadlock { rank, step: q.step });
    }
    report.time = procs.iter().map(|q| q.t_start).fold(0.0, f64::max);
    report.depth = procs.iter().map(|q| q.d_start).max().unwrap_or(0);
    if symbolic {
        report.canonical = match kind {
            Kind::Allgather { block } => check_allgather(coll, &procs, block)?,
            _ => check(&procs, kind, p, count)?,
        };
    }
    Ok(report)
}

/// An Allgather process's starting buffer: its own block, labelled so that
/// [`check_allgather`] can tell every position's block from its value (the
/// label of the block at position t is (t + shift) mod n, and label l
/// stands for the block of process g(l), g the collective's one table), the
/// rest undefined.
fn own_block_pieces(coll: &dyn Collective, r: usize, block: usize) -> Result<Vec<Piece>, SimError> {
    let n = coll.size();
    let own = coll.own_block(r);
    let order = coll.block_order(r);
    if own >= n || order.rank_at(own, n) != r {
        return Err(SimError::WrongResult {
            rank: r,
            what: "own block not where the block order expects it",
        });
    }
    let (start, end) = (own * block, (own + 1) * block);
    let mut pieces = Vec::with_capacity(3);
    if start > 0 || block == 0 {
        pieces.push(Piece {
            start: 0,
            v: Val::UNDEFINED,
        });
    }
    if block > 0 {
        let label = (own + order.shift) % n;
        pieces.push(Piece {
            start,
            v: Val::block(label, block, start),
        });
        if end < n * block {
            pieces.push(Piece {
                start: end,
                v: Val::UNDEFINED,
            });
        }
    }
    Ok(pieces)
}

/// Every Allgather process ends with every block, each at the position its
/// block order names (complete and in order after the local moves).  With
/// the labels of [`own_block_pieces`], position t must hold label
/// (t + shift) mod n: one linear piece before the wrap at t = n − shift and
/// one after.  All processes must share one table (labels mean the same
/// block everywhere).  Returns true (there is no combination order).
fn check_allgather(coll: &dyn Collective, procs: &[Proc], block: usize) -> Result<bool, SimError> {
    let n = coll.size();
    let count = coll.count();
    let table0 = coll.block_order(0).table;
    for (r, q) in procs.iter().enumerate() {
        let order = coll.block_order(r);
        let same = match (order.table, table0) {
            (None, None) => true,
            (Some(a), Some(b)) => std::ptr::eq(a, b) || a == b,
            _ => false,
        };
        if !same {
            return Err(SimError::WrongResult {
                rank: r,
                what: "block orders of different tables",
            });
        }
        if block == 0 {
            continue;
        }
        let wrap = (n - order.shift % n) % n * block;
        let want = |e: usize| -> u64 {
            let s = (order.shift % n) as u64 * block as u64;
            if e < wrap || wrap == 0 {
                s
            } else {
                s.wrapping_sub((n * block) as u64)
            }
        };
        let pieces = q.buf.normalised();
        for (i, piece) in pieces.iter().enumerate() {
            let end = pieces.get(i + 1).map_or(count, |x| x.start);
            if piece.start >= count {
                continue;
            }
            let v = piece.v;
            if v.pow == 0 {
                return Err(SimError::WrongResult {
                    rank: r,
                    what: "undefined elements",
                });
            }
            let wraps_inside = piece.start < wrap && wrap < end;
            if v.b != 1 || v.a != want(piece.start) || wraps_inside {
                return Err(SimError::WrongResult {
                    rank: r,
                    what: "a block at the wrong position",
                });
            }
        }
    }
    Ok(true)
}

/// Posts the actions of `r`'s current step (if any) and matches them.
#[allow(clippy::too_many_arguments)]
fn start_step(
    coll: &dyn Collective,
    procs: &mut [Proc],
    r: usize,
    chans: &mut Map<u64, Channel>,
    ready: &mut Vec<usize>,
    costs: &Costs,
    report: &mut Report,
    symbolic: bool,
    scratch: &mut Vec<(usize, usize, Val)>,
) -> Result<(), SimError> {
    let p = procs.len();
    let count = coll.count();
    loop {
        let q = &mut procs[r];
        if q.step >= q.steps {
            return Ok(());
        }
        let mut actions = std::mem::take(&mut q.actions);
        actions.clear();
        coll.step(r, q.step, &mut actions);
        check_step(p, count, r, q.step, &actions).map_err(SimError::Invalid)?;
        q.pending = actions.len();
        q.t_done = q.t_start;
        q.d_done = q.d_start;
        q.combined = 0;
        let (t0, d0) = (q.t_start, q.d_start);
        q.actions = actions;
        for i in 0..procs[r].actions.len() {
            let a = procs[r].actions[i];
            let (key, mine) = match a {
                Action::Send { to, .. } => ((r as u64) << 32 | to as u64, true),
                Action::Recv { from, .. } => ((from as u64) << 32 | r as u64, false),
            };
            let ch = chans.entry(key).or_default();
            let me: Posted = (r, i, t0, d0);
            let pair = if mine {
                match ch.recvs.pop_front() {
                    Some(other) => Some((me, other)),
                    None => {
                        ch.sends.push_back(me);
                        None
                    }
                }
            } else {
                match ch.sends.pop_front() {
                    Some(other) => Some((other, me)),
                    None => {
                        ch.recvs.push_back(me);
                        None
                    }
                }
            };
            if let Some((s, v)) = pair {
                deliver(procs, s, v, costs, report, symbolic, count, scratch)?;
                for x in [s.0, v.0] {
                    if x != r && procs[x].pending == 0 {
                        ready.push(x);
                    }
                }
            }
        }
        if procs[r].pending > 0 {
            return Ok(());
        }
        // Everything matched at once (or an empty step): finish right here
        // (r is not in `ready`: only partners are queued above).
        let q = &mut procs[r];
        apply_staged(q, count, scratch);
        q.t_start = q.t_done + costs.gamma * (q.combined * costs.elem_bytes) as f64;
        q.d_start = q.d_done;
        q.step += 1;
    }
}

/// Applies what arrived in the finished step, in action order.
fn apply_staged(q: &mut Proc, count: usize, scratch: &mut Vec<(usize, usize, Val)>) {
    let mut staged = std::mem::take(&mut q.staged);
    // Stable: the pieces of one message stay in order.
    staged.sort_by_key(|s| s.0);
    let mut i = 0;
    while i < staged.len() {
        let a = staged[i].0;
        scratch.clear();
        while i < staged.len() && staged[i].0 == a {
            scratch.push((staged[i].1, staged[i].2, staged[i].3));
            i += 1;
        }
        if let Action::Recv { span, into, .. } = q.actions[a] {
            q.buf.write(span, count, scratch, into);
        }
    }
    staged.clear();
    q.staged = staged;
}

/// Completes a matched send/receive pair.
#[allow(clippy::too_many_arguments)]
fn deliver(
    procs: &mut [Proc],
    s: Posted,
    v: Posted,
    costs: &Costs,
    report: &mut Report,
    symbolic: bool,
    count: usize,
    scratch: &mut Vec<(usize, usize, Val)>,
) -> Result<(), SimError> {
    let (Action::Send { span: ss, .. }, Action::Recv { span: rs, into, .. }) =
        (procs[s.0].actions[s.1], procs[v.0].actions[v.1])
    else {
        unreachable!("channels pair a send with a receive");
    };
    if ss.len != rs.len {
        return Err(SimError::Mismatch { from: s.0, to: v.0 });
    }
    let bytes = (ss.len * costs.elem_bytes) as f64;
    let mut start = s.2.max(v.2);
    if costs.ports > 0 {
        let sp = *port(&mut procs[s.0].send_ports).expect("ports > 0");
        let rp = *port(&mut procs[v.0].recv_ports).expect("ports > 0");
        start = start.max(sp).max(rp);
    }
    let end = start + costs.alpha + costs.beta * bytes;
    if costs.ports > 0 {
        *port(&mut procs[s.0].send_ports).expect("ports > 0") = end;
        *port(&mut procs[v.0].recv_ports).expect("ports > 0") = end;
    }
    let depth = s.3.max(v.3) + 1;
    report.messages += 1;
    report.elements_sent += ss.len as u64;
    if symbolic {
        procs[s.0].buf.read(ss, count, scratch);
        let st = &mut procs[v.0].staged;
        st.extend(scratch.iter().map(|&(o, n, val)| (v.1, o, n, val)));
    }
    for (x, combined) in [(s.0, 0), (v.0, if into == Into::Copy { 0 } else { rs.len })] {
        let q = &mut procs[x];
        q.pending -= 1;
        q.t_done = q.t_done.max(end);
        q.d_done = q.d_done.max(depth);
        q.combined += combined;
    }
    Ok(())
}

/// Checks the final buffers; returns whether every reduction result is in
/// canonical rank order.
fn check(procs: &[Proc], kind: Kind, p: usize, count: usize) -> Result<bool, SimError> {
    let total = (1..p).fold(Val::leaf(0), |acc, r| Val::combine(acc, Val::leaf(r)));
    let holders: Vec<usize> = match kind {
        Kind::Bcast { .. } | Kind::Allreduce => (0..p).collect(),
        Kind::Reduce { root } => vec![root],
        Kind::Allgather { .. } => unreachable!("checked by check_allgather"),
    };
    let mut canonical = true;
    // An empty buffer still has its one (empty) piece: leave it out.
    let live = |r: usize| -> Vec<Piece> {
        let mut v = procs[r].buf.normalised();
        v.retain(|q| q.start < count);
        v
    };
    let reference = live(holders[0]);
    for &r in &holders {
        let pieces = live(r);
        for piece in &pieces {
            let v = piece.v;
            let want = match kind {
                Kind::Bcast { root } => Val::leaf(root),
                _ => total,
            };
            if v.pow == 0 {
                return Err(SimError::WrongResult {
                    rank: r,
                    what: "undefined elements",
                });
            }
            if (v.a, v.b, v.pow) != (want.a, want.b, want.pow) {
                return Err(SimError::WrongResult {
                    rank: r,
                    what: "not the reduction of all inputs",
                });
            }
            canonical &= v.seq == want.seq;
        }
        if pieces != reference {
            return Err(SimError::WrongResult {
                rank: r,
                what: "combination order differs from the first process",
            });
        }
    }
    Ok(canonical)
}
