//! The single-copy protocol over the queues: instead of streaming a buffer
//! through its queue, a writer publishes where the buffer is (an *offer*: pid,
//! address, length — 24 bytes, inline in the slot header), every reader pulls
//! what it needs straight into its own buffer with CMA, in parallel, and then
//! acknowledges the offer like any fragment.  The writer *settles* (waits for
//! those acknowledgements) before its buffer goes back to the application.
//!
//! Ordering: the writer's buffer is complete before the Release store that
//! publishes the offer; a reader's Acquire load of it precedes its system
//! call in program order, and the kernel's copy runs inside that call (on
//! the cache-coherent machines this runs on, what the writer stored before
//! its Release store is what the kernel reads).  The reader acknowledges with
//! a Release store after the call returned, and the writer's settle is an
//! Acquire load of that acknowledgement: its later writes to the buffer come
//! after the pull.
//!
//! Which streams go this way is decided per stream from its byte count,
//! which both ends of the stream know (`Shared::single_copy`); a
//! non-contiguous source is packed into a private buffer first, a
//! non-contiguous sink is filled through a staging buffer, so both ends need
//! not agree on their datatypes' layout.

use crate::ompi::payload::Payload;
use crate::shm::channel::Shared;
use crate::shm::cma::{self, Remote};
use crate::shm::queue::{Incoming, Pos, Readers};
use crate::shm::trials::{StreamPath, SINGLE_FLOOR};

pub use crate::shm::single_state::{Exposed, Landing, SingleCopy, CHUNK};

impl Shared {
    /// Whether a stream of `bytes` bytes goes by single copy.  Both ends of a
    /// stream know its size, so they decide alike.
    #[inline]
    pub fn single_copy(&self, bytes: usize) -> bool {
        self.single_from(bytes, |s| s.min_size)
    }

    /// Whether a Scatter(v) block (or on a crowded node an Alltoall(v)
    /// block) of `bytes` bytes goes by single copy: as `single_copy`, but
    /// from a lower size on a crowded node, where readers that pull
    /// whenever they run beat hand-offs that need both ends running
    /// (`SingleCopy::crowded`), or where the root's own copy beside the
    /// pull made single copy faster (`SingleCopy::with_scatter`).  Both
    /// ends of a block know its size, and the floors are agreed, so they
    /// decide alike.
    #[inline]
    pub fn single_copy_scatter(&self, bytes: usize) -> bool {
        self.single_from(bytes, |s| s.scatter_min_size)
    }

    /// Whether an Allgather(v) or Alltoall(v) block of `bytes` bytes goes by
    /// single copy (`SingleCopy::with_exchanges`).  Both ends of a block
    /// know its size, and the threshold is agreed, so they decide alike.
    #[inline]
    pub fn single_copy_exchange(&self, bytes: usize) -> bool {
        self.single_from(bytes, |s| s.exchange_min_size)
    }

    /// Whether a Gather(v) block of `bytes` bytes is written by its sender
    /// (`SingleCopy::with_push`; in a call that goes by single copy, when
    /// CMA writes are permitted and wanted).  Both ends of a block know its
    /// size, and the floor is agreed, so they decide alike.
    #[inline]
    pub fn single_copy_push(&self, bytes: usize) -> bool {
        self.single_from(bytes, |s| s.push_min_size)
            && (self.call_path.is_none() || self.single.as_ref().is_some_and(|s| s.push_permitted))
    }

    /// Whether a non-empty stream of `bytes` bytes goes by single copy: as
    /// the current call's path says, when its size class is tried or
    /// decided (`Shared::call_path`, from `SINGLE_FLOOR`), else when it
    /// reaches the floor that `floor` picks from the channel's single-copy
    /// state (none: never).  The path is the same on every process for the
    /// same call (`trials`), so both ends of a stream still decide alike.
    #[inline]
    fn single_from(&self, bytes: usize, floor: impl Fn(&SingleCopy) -> usize) -> bool {
        bytes > 0
            && self.single.as_ref().is_some_and(|s| match self.call_path {
                Some(StreamPath::Single) => bytes >= SINGLE_FLOOR,
                Some(StreamPath::Queues) => false,
                None => bytes >= floor(s),
            })
    }

    /// Publishes an offer of `len` bytes at `addr` as position (`op`, 0) of
    /// our queue; returns the position to `settle` on.
    pub fn offer(&mut self, addr: *const u8, len: usize, op: u64, readers: Readers<'_>) -> Pos {
        self.single_used = true;
        let pos = Pos::new(op, 0);
        let remote = Remote {
            pid: cma::pid(),
            addr: addr as usize,
            len,
        }
        .encode();
        let dst = self
            .writer
            .reserve(&self.queues, &self.waiter, pos, remote.len());
        // SAFETY: `dst` is our reserved slot (inline) of >= 24 bytes.
        unsafe { std::ptr::copy_nonoverlapping(remote.as_ptr(), dst, remote.len()) };
        self.writer
            .publish_carrying(&self.queues, pos, remote.len(), readers, len);
        pos
    }

    /// Waits until the readers of the offer at `pos` finished pulling.
    pub fn settle(&mut self, pos: Pos) {
        self.writer.settle(&self.queues, &self.waiter, pos);
    }

    /// Waits for `from`'s offer at (`op`, 0).  Release it with `done`.
    pub fn accept(&mut self, from: usize, op: u64) -> Result<(Remote, Incoming), String> {
        let frag = self.queues.receive(&self.waiter, from, Pos::new(op, 0));
        self.decode_offer(from, frag)
    }

    /// Whether `from`'s offer at (`op`, 0) has been made (no wait).
    pub fn offered(&self, from: usize, op: u64) -> bool {
        self.queues.try_receive(from, Pos::new(op, 0)).is_some()
    }

    fn decode_offer(&mut self, from: usize, frag: Incoming) -> Result<(Remote, Incoming), String> {
        self.single_used = true;
        // SAFETY: the fragment stays valid until released.
        match Remote::decode(unsafe { frag.bytes() }) {
            Some(r) => Ok((r, frag)),
            None => {
                self.done(from, frag);
                Err(format!(
                    "rank {from} published {} bytes where an offer was expected",
                    frag.len
                ))
            }
        }
    }

    /// Acknowledges an accepted offer: we no longer read its buffer.
    pub fn done(&mut self, from: usize, frag: Incoming) {
        self.queues.release(self.me, from, frag);
    }

    /// Receives `from`'s offer at (`op`, 0) of exactly `bytes` bytes into the
    /// stream `sink`, and acknowledges it.
    pub fn take(
        &mut self,
        from: usize,
        op: u64,
        sink: &mut Payload,
        bytes: usize,
    ) -> Result<(), String> {
        self.on_offer(from, op, bytes, |sh, remote| sh.pull_into(remote, sink))
    }

    /// Accepts `from`'s offer at (`op`, 0), runs `work` on it if it is of
    /// exactly `bytes` bytes, and acknowledges it either way.
    fn on_offer(
        &mut self,
        from: usize,
        op: u64,
        bytes: usize,
        work: impl FnOnce(&mut Shared, &Remote) -> Result<(), String>,
    ) -> Result<(), String> {
        let (remote, frag) = self.accept(from, op)?;
        let result = if remote.len != bytes {
            Err(format!(
                "rank {from} offered {} bytes, {bytes} expected",
                remote.len
            ))
        } else {
            work(self, &remote)
        };
        self.done(from, frag);
        result
    }

    /// Writes the `bytes` bytes of the stream `src` into `to`'s offer at
    /// (`op`, 0) (an offer for writing: `Landing`), and acknowledges it.
    ///
    /// Ordering: the kernel's stores into the offering process's pages are
    /// done when `process_vm_writev` returns; the acknowledgement's Release
    /// store follows in program order (and on x86 stores are seen in order),
    /// so the offerer's Acquire load of it precedes its reads of the data.
    pub fn give(
        &mut self,
        to: usize,
        op: u64,
        src: &mut Payload,
        bytes: usize,
    ) -> Result<(), String> {
        self.on_offer(to, op, bytes, |sh, remote| sh.push_from(remote, src))
    }

    /// Copies all of the stream `src` into `remote`.
    fn push_from(&mut self, remote: &Remote, src: &mut Payload) -> Result<(), String> {
        match src {
            // SAFETY: the application's buffer holds the stream's bytes; the
            // offerer does not touch its range until we acknowledge.
            Payload::Contiguous(base) => unsafe { remote.push(0, *base, remote.len) },
            // SAFETY: the stage holds CHUNK bytes; packing takes the stream's
            // pieces in order.
            _ => self.staged(remote.len, |at, stage, n| unsafe {
                src.read(at, stage, n);
                remote.push(at, stage, n)
            }),
        }
    }

    /// Publishes a one-byte outcome (a write's, `give`) at `pos` of our
    /// queue for `reader`, who cannot tell a failed write from a good one
    /// by the acknowledgement alone.
    pub fn report(&mut self, ok: bool, pos: Pos, reader: usize) {
        let dst = self.writer.reserve(&self.queues, &self.waiter, pos, 1);
        // SAFETY: `dst` is our reserved slot of >= 1 byte (inline).
        unsafe { dst.write(ok as u8) };
        self.writer
            .publish(&self.queues, pos, 1, Readers::One(reader));
    }

    /// Waits for `from`'s outcome at `pos` (`report`).
    pub fn outcome(&mut self, from: usize, pos: Pos) -> bool {
        let frag = self.queues.receive(&self.waiter, from, pos);
        // SAFETY: the fragment stays valid until released.
        let ok = unsafe { frag.bytes() } == [1];
        self.queues.release(self.me, from, frag);
        ok
    }

    /// Copies all of `remote` into the stream `sink`.
    fn pull_into(&mut self, remote: &Remote, sink: &mut Payload) -> Result<(), String> {
        match sink {
            // SAFETY: the application's buffer holds the stream's bytes.
            Payload::Contiguous(base) => unsafe { remote.pull(0, *base, remote.len) },
            // SAFETY: the stage holds CHUNK bytes; unpacking takes the
            // stream's pieces in order.
            _ => self.staged(remote.len, |at, stage, n| unsafe {
                remote.pull(at, stage, n)?;
                sink.write(at, stage, n);
                Ok(())
            }),
        }
    }

    /// Runs `step(at, stage, n)` over `len` bytes in pieces of at most
    /// `CHUNK` through the staging buffer, stopping at the first error.
    fn staged(
        &self,
        len: usize,
        mut step: impl FnMut(usize, *mut u8, usize) -> Result<(), String>,
    ) -> Result<(), String> {
        let stage = self.single.as_ref().expect("single copy is on").stage();
        let mut at = 0;
        while at < len {
            let n = CHUNK.min(len - at);
            step(at, stage, n)?;
            at += n;
        }
        Ok(())
    }
}
