//! Runs one process's schedule over point-to-point messages.
//!
//! Per step: every action is posted (receives that combine land in a
//! temporary), all are waited for, then the temporaries are folded into the
//! buffer in action order.  Messages of one pair match in posting order, so
//! a single tag per collective suffices with MPI's non-overtaking rule; the
//! caller passes the collective's tag.  A span of more than `max_chunk`
//! bytes travels as several messages of at most `max_chunk` bytes (MPI
//! counts are `int`), cut alike on both sides since both know the span.

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
    ) -> Result<(), String> {
        let mut reqs = Vec::new();
        let mut temps: Vec<Vec<u8>> = Vec::new();
        for step in sched.iter() {
            if let Some(bad) = step
                .iter()
                .find(|a| self.layout.bytes(a.span()).end > buf.len())
            {
                return Err(format!("{bad:?} exceeds the buffer of {} bytes", buf.len()));
            }
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
                // SAFETY (all three): the buffers outlive `wait_all` below;
                // the step rules (`plan::check_step`) keep copy-receives
                // apart from every other action of the step, and temporaries
                // are private to one receive.
                match *a {
                    Action::Send { to, .. } => {
                        let base = buf[range].as_ptr();
                        self.chunks(range_len(&a.span(), &self.layout), |off, n| unsafe {
                            reqs.push(net.isend(to, base.add(off), n, self.tag))
                        });
                    }
                    Action::Recv {
                        from,
                        into: Into::Copy,
                        ..
                    } => {
                        let base = buf[range].as_mut_ptr();
                        self.chunks(range_len(&a.span(), &self.layout), |off, n| unsafe {
                            reqs.push(net.irecv(from, base.add(off), n, self.tag))
                        });
                    }
                    Action::Recv { from, .. } => {
                        let tmp = &mut temps[t];
                        t += 1;
                        tmp.clear();
                        tmp.resize(range.len(), 0);
                        let base = tmp.as_mut_ptr();
                        self.chunks(range.len(), |off, n| unsafe {
                            reqs.push(net.irecv(from, base.add(off), n, self.tag))
                        });
                    }
                }
            }
            net.wait_all(&mut reqs)?;
            let mut t = 0;
            for a in step {
                if let Action::Recv {
                    span,
                    into: Into::Combine(order),
                    ..
                } = *a
                {
                    combine(&temps[t], &mut buf[self.layout.bytes(span)], order);
                    t += 1;
                }
            }
        }
        Ok(())
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

fn range_len(span: &Span, layout: &Layout) -> usize {
    layout.bytes(*span).len()
}
