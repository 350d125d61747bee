//! Runs one process's schedule over point-to-point messages.
//!
//! Per step: every action is posted (receives that combine land in a
//! temporary), all are waited for, then the temporaries are folded into the
//! buffer in action order.  Messages of one pair match in posting order, so
//! a single tag per collective suffices with MPI's non-overtaking rule; the
//! caller passes the collective's tag.  A span of more than `max_chunk`
//! bytes travels as several messages of at most `max_chunk` bytes (MPI
//! counts are `int`), cut alike on both sides since both know the span.
//!
//! The next step is posted before this one is waited for when it does not
//! depend on it (`independent`): paper 001's §5 form, where the receive of
//! packet q+1 is posted before packet q is added, so the network moves the
//! next packet while this one is combined (β̃ = 2β instead of 2β + γ).  In
//! a ring whose blocks take several packets every step is so: a round's
//! first step forwards packet 0 of the block the round before reduced, and
//! that packet was added packets ago.  Where each step sends what the step
//! before reduced or copied in (blocks of one packet, recursive doubling),
//! nothing goes early.  At most two steps are in flight, each with its own
//! set of temporaries.

use super::plan::{Action, Into, Order, Schedule, Span};

/// Element geometry of the buffer: element i starts at byte i·extent and
/// holds `size` bytes; a span moves the bytes from its first element's start
/// to its last element's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub size: usize,
    pub extent: usize,
}

impl Layout {
    pub fn bytes(&self, span: Span) -> std::ops::Range<usize> {
        let start = span.start * self.extent;
        let len = if span.len == 0 {
            0
        } else {
            (span.len - 1) * self.extent + self.size
        };
        start..start + len
    }
}

/// Largest message MPI can carry with an `int` count of bytes.
pub const MAX_CHUNK: usize = (1 << 31) - 1;

/// Nonblocking point-to-point messages among the processes of the
/// collective (group indices).  Over Open MPI: `MCA_PML_CALL(isend(buf, len,
/// MPI_BYTE, rank_of(to), tag, MCA_PML_BASE_SEND_STANDARD, comm, &req))`,
/// `irecv` alike, and `ompi_request_wait_all`.
pub trait Transport {
    type Req;

    /// Starts sending `len` bytes at `buf` to `to`.
    ///
    /// # Safety
    /// The bytes must stay valid and unchanged until the request has been
    /// completed by `wait_all`.
    unsafe fn isend(&mut self, to: usize, buf: *const u8, len: usize, tag: i32) -> Self::Req;

    /// Starts receiving exactly `len` bytes from `from` into `buf`.
    ///
    /// # Safety
    /// `buf` must stay valid, and be neither read nor written by anyone else,
    /// until the request has been completed by `wait_all`.
    unsafe fn irecv(&mut self, from: usize, buf: *mut u8, len: usize, tag: i32) -> Self::Req;

    /// Completes all requests (and empties the vector); Err on a failed
    /// message.
    fn wait_all(&mut self, reqs: &mut Vec<Self::Req>) -> Result<(), String>;
}

/// What a run did: its steps, and how many of them were posted before the
/// step ahead of them had completed (`Executor::run`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ran {
    pub steps: usize,
    pub early: usize,
}

/// How one process runs its schedule.
pub struct Executor {
    pub layout: Layout,
    pub tag: i32,
    pub max_chunk: usize,
}

impl Executor {
    pub fn new(layout: Layout, tag: i32) -> Executor {
        Executor {
            layout,
            tag,
            max_chunk: MAX_CHUNK,
        }
    }

    /// Runs `sched` on `buf` (the process's elements; its input, or for a
    /// Bcast the root's message at the root).  `combine(incoming, mine,
    /// order)` must leave `incoming ⊕ mine` or `mine ⊕ incoming` in `mine`
    /// as `order` says; both slices cover the same elements.
    pub fn run<T: Transport>(
        &self,
        sched: &Schedule,
        buf: &mut [u8],
        net: &mut T,
        mut combine: impl FnMut(&[u8], &mut [u8], Order),
    ) -> Result<Ran, String> {
        if let Some(bad) = sched
            .iter()
            .flatten()
            .find(|a| self.layout.bytes(a.span()).end > buf.len())
        {
            return Err(format!("{bad:?} exceeds the buffer of {} bytes", buf.len()));
        }
        // Two sets of temporaries: a step posted early lands in the set its
        // predecessor does not use, since that one is still to be folded;
        // any other step reuses its predecessor's set (no second set
        // allocated where nothing goes early).
        let mut temps: [Vec<Vec<u8>>; 2] = Default::default();
        let mut set = 0;
        let (mut current, mut next) = (Vec::new(), Vec::new());
        let mut posted = false;
        let mut ran = Ran {
            steps: sched.steps(),
            early: 0,
        };
        for k in 0..sched.steps() {
            let step = sched.step(k);
            if !posted {
                self.post(step, buf, &mut temps[set], net, &mut current);
            }
            // SAFETY (the early post): `independent` keeps every byte of
            // `buf` that the next step's messages read or write apart from
            // every byte this step's messages and folds touch, and its
            // temporaries are the other set, not touched until it is waited
            // for at the next turn of this loop.
            posted = match (k + 1 < sched.steps()).then(|| sched.step(k + 1)) {
                Some(after) if self.independent(step, after) => {
                    self.post(after, buf, &mut temps[1 - set], net, &mut next);
                    ran.early += 1;
                    true
                }
                _ => false,
            };
            if let Err(e) = net.wait_all(&mut current) {
                // Nothing posted may outlive the buffers it uses.
                let _ = net.wait_all(&mut next);
                return Err(e);
            }
            let mut t = 0;
            for a in step {
                if let Action::Recv {
                    span,
                    into: Into::Combine(order),
                    ..
                } = *a
                {
                    combine(&temps[set][t], &mut buf[self.layout.bytes(span)], order);
                    t += 1;
                }
            }
            std::mem::swap(&mut current, &mut next);
            if posted {
                set = 1 - set;
            }
        }
        Ok(ran)
    }

    /// Posts every action of `step`, in order, into `reqs`; receives that
    /// combine land in `temps` (one each, in action order).
    fn post<T: Transport>(
        &self,
        step: &[Action],
        buf: &mut [u8],
        temps: &mut Vec<Vec<u8>>,
        net: &mut T,
        reqs: &mut Vec<T::Req>,
    ) {
        let combines = step
            .iter()
            .filter(|a| {
                matches!(
                    a,
                    Action::Recv {
                        into: Into::Combine(_),
                        ..
                    }
                )
            })
            .count();
        temps.resize_with(combines.max(temps.len()), Vec::new);
        let mut t = 0;
        for a in step {
            let range = self.layout.bytes(a.span());
            let len = range.len();
            // SAFETY (all three): the buffers outlive the `wait_all` that
            // completes these requests (`run`); the step rules
            // (`plan::check_step`) keep copy-receives apart from every other
            // action of the step, `independent` keeps a step posted early
            // apart from the one before it, and temporaries are private to
            // one receive.
            match *a {
                Action::Send { to, .. } => {
                    let base = buf[range].as_ptr();
                    self.chunks(len, |off, n| unsafe {
                        reqs.push(net.isend(to, base.add(off), n, self.tag))
                    });
                }
                Action::Recv {
                    from,
                    into: Into::Copy,
                    ..
                } => {
                    let base = buf[range].as_mut_ptr();
                    self.chunks(len, |off, n| unsafe {
                        reqs.push(net.irecv(from, base.add(off), n, self.tag))
                    });
                }
                Action::Recv { from, .. } => {
                    let tmp = &mut temps[t];
                    t += 1;
                    tmp.clear();
                    tmp.resize(len, 0);
                    let base = tmp.as_mut_ptr();
                    self.chunks(len, |off, n| unsafe {
                        reqs.push(net.irecv(from, base.add(off), n, self.tag))
                    });
                }
            }
        }
    }

    /// Whether step `after` may be posted before step `step` is complete:
    /// no byte that `after` sends is written by `step` (a copy-receive, or
    /// the fold of a combining one), and no byte that `after` receives in
    /// place is touched by `step` at all.  Its combining receives land in
    /// temporaries and are folded only after it is waited for, so they
    /// never conflict.  All of `after` or nothing: posting part of it early
    /// could reorder its messages to one peer, and messages of one pair
    /// match in posting order.
    fn independent(&self, step: &[Action], after: &[Action]) -> bool {
        let bytes = |a: &Action| self.layout.bytes(a.span());
        let apart = |x: std::ops::Range<usize>, y: std::ops::Range<usize>| {
            x.is_empty() || y.is_empty() || x.end <= y.start || y.end <= x.start
        };
        after.iter().all(|later| match later {
            Action::Recv {
                into: Into::Combine(_),
                ..
            } => true,
            Action::Recv { .. } => step.iter().all(|a| apart(bytes(a), bytes(later))),
            Action::Send { .. } => step
                .iter()
                .filter(|a| matches!(a, Action::Recv { .. }))
                .all(|a| apart(bytes(a), bytes(later))),
        })
    }

    fn chunks(&self, len: usize, mut post: impl FnMut(usize, usize)) {
        if len == 0 {
            // An empty message still matches an empty receive.
            post(0, 0);
        }
        let mut off = 0;
        while off < len {
            let n = self.max_chunk.min(len - off);
            post(off, n);
            off += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hier::schedule::lattice::Lattice;
    use crate::hier::schedule::plan::Collective;

    /// One process alone: sends go nowhere, receives are filled with zeros
    /// when waited for; it records how many receives were posted before
    /// each wait.
    #[derive(Default)]
    struct Recorder {
        posted_recvs: usize,
        posted_before_wait: Vec<usize>,
    }

    impl Transport for Recorder {
        type Req = Option<(*mut u8, usize)>;
        unsafe fn isend(&mut self, _: usize, _: *const u8, _: usize, _: i32) -> Self::Req {
            None
        }
        unsafe fn irecv(&mut self, _: usize, buf: *mut u8, len: usize, _: i32) -> Self::Req {
            self.posted_recvs += 1;
            Some((buf, len))
        }
        fn wait_all(&mut self, reqs: &mut Vec<Self::Req>) -> Result<(), String> {
            self.posted_before_wait.push(self.posted_recvs);
            for (buf, len) in reqs.drain(..).flatten() {
                // SAFETY: the executor keeps the buffer valid until here.
                unsafe { std::ptr::write_bytes(buf, 0, len) };
            }
            Ok(())
        }
    }

    fn span(start: usize, len: usize) -> Span {
        Span::new(start, len)
    }

    fn executor() -> Executor {
        Executor::new(Layout { size: 4, extent: 4 }, 1)
    }

    /// The step rules of the early post, one conflict at a time.
    #[test]
    fn a_step_is_posted_early_only_when_it_touches_nothing_of_the_one_before() {
        let ex = executor();
        let fold = |s| Action::Recv {
            from: 1,
            span: s,
            into: Into::Combine(Order::MineFirst),
        };
        let copy = |s| Action::Recv {
            from: 1,
            span: s,
            into: Into::Copy,
        };
        let send = |s| Action::Send { to: 1, span: s };
        // Sending what the step before folds or copies in: must wait.
        assert!(!ex.independent(&[fold(span(0, 4))], &[send(span(3, 2))]));
        assert!(!ex.independent(&[copy(span(0, 4))], &[send(span(0, 1))]));
        // Receiving in place what the step before sends or writes: must wait.
        assert!(!ex.independent(&[send(span(0, 4))], &[copy(span(2, 4))]));
        assert!(!ex.independent(&[fold(span(0, 4))], &[copy(span(0, 4))]));
        // All or nothing: one conflicting action holds back the whole step.
        assert!(!ex.independent(&[fold(span(0, 4))], &[fold(span(4, 4)), send(span(0, 4))]));
        // Apart, reading the same bytes, into temporaries, or empty: early.
        assert!(ex.independent(&[fold(span(0, 4))], &[send(span(4, 4)), fold(span(0, 4))]));
        assert!(ex.independent(&[send(span(0, 4))], &[send(span(0, 4))]));
        assert!(ex.independent(&[send(span(0, 4))], &[fold(span(0, 4))]));
        assert!(ex.independent(&[fold(span(0, 4))], &[send(span(2, 0))]));
    }

    /// Paper 001's §5 form: in a pipelined ring the receive of the next
    /// packet is posted before this packet is waited for and added.  With
    /// blocks of several packets every step can go early (a ring step
    /// forwards packet 0 of the block it reduced, whose addition finished
    /// packets ago); with blocks of one packet none can (each step sends
    /// the block the step before reduced or copied in).
    #[test]
    fn pipelined_ring_receives_the_next_packet_while_adding_this_one() {
        let (p, count) = (3, 3 * 4);
        for (packet, all_early) in [(1, true), (4, false)] {
            let ring = Lattice::new(vec![p], count, packet);
            let sched = ring.schedule_of(0);
            let ex = executor();
            let mut net = Recorder::default();
            let mut buf = vec![0u8; count * 4];
            let ran = ex.run(&sched, &mut buf, &mut net, |_, _, _| {}).unwrap();
            let steps: Vec<&[Action]> = sched.iter().collect();
            let recvs = |s: &[Action]| {
                s.iter()
                    .filter(|a| matches!(a, Action::Recv { .. }))
                    .count()
            };
            let (mut due, mut early) = (0, 0);
            for (k, step) in steps.iter().enumerate() {
                due += recvs(step);
                let ahead = net.posted_before_wait[k] - due;
                match steps.get(k + 1) {
                    Some(after) if ex.independent(step, after) => {
                        assert_eq!(ahead, recvs(after), "packet {packet} step {k}: not early");
                        early += 1;
                    }
                    _ => assert_eq!(ahead, 0, "packet {packet} step {k}: posted early"),
                }
            }
            let want = if all_early { steps.len() - 1 } else { 0 };
            assert_eq!(early, want, "packet {packet}: steps posted early");
            let expected = Ran {
                steps: steps.len(),
                early,
            };
            assert_eq!(ran, expected, "packet {packet}: what the run reports");
        }
    }
}
