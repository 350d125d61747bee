//! The data-movement collectives by single copy (CMA): a writer offers its
//! buffer (`Shared::offer`), readers pull their part straight into their own
//! buffers, all at once, and acknowledge; the writer settles before
//! returning.  Used per stream when the stream's size — known to both of its
//! ends — reaches the channel's single-copy threshold (`Shared::single_copy`);
//! the other streams of the same call keep the queues.
//!
//! Why no cycle of waits: offers never wait for a reader (only, like any
//! publication, for the slot's previous readers, who are behind us in
//! earlier work that does not depend on us); every process makes its offers
//! and its queue streams first, pulls next, and settles last.

use crate::ompi::payload::Payload;
use crate::shm::channel::Shared;
use crate::shm::queue::{Pos, Readers};
use crate::shm::single::Exposed;

/// Offers that must be settled before the call returns, with the buffers
/// they expose.
#[derive(Default)]
pub(crate) struct Offers {
    made: Vec<(Pos, Exposed)>,
}

impl Offers {
    /// Offers the `bytes` bytes of `src` to `readers` at (`op`, 0).
    pub fn make(
        &mut self,
        sh: &mut Shared,
        src: &mut Payload,
        bytes: usize,
        op: u64,
        readers: Readers<'_>,
    ) {
        let exposed = Exposed::new(src, bytes);
        let pos = sh.offer(exposed.addr, bytes, op, readers);
        self.made.push((pos, exposed));
    }

    /// Waits until every reader finished pulling.
    pub fn settle(self, sh: &mut Shared) {
        for (pos, _exposed) in &self.made {
            sh.settle(*pos);
        }
    }
}

/// Keeps the first failure of a call while the protocol runs to its end
/// (every offer accepted is acknowledged, every offer made is settled, so
/// no peer is left waiting).
#[derive(Default)]
pub(crate) struct Outcome {
    first_error: Option<String>,
}

impl Outcome {
    pub fn note(&mut self, r: Result<(), String>) {
        if let (Err(e), None) = (r, &self.first_error) {
            self.first_error = Some(e);
        }
    }

    /// True when everything worked; a failure is reported once.
    pub fn finish(self, what: &str) -> bool {
        match self.first_error {
            None => true,
            Some(e) => {
                tracing::error!("{what}: single copy failed: {e}");
                false
            }
        }
    }
}

/// Bcast by single copy: the root offers its buffer to all, every reader
/// pulls all of it (no tree: the readers pull in parallel).
pub fn bcast(sh: &mut Shared, payload: &mut Payload, bytes: usize, root: usize) -> bool {
    let op = sh.next_op();
    let mut outcome = Outcome::default();
    if sh.me == root {
        let mut offers = Offers::default();
        offers.make(sh, payload, bytes, op, Readers::AllOthers);
        offers.settle(sh);
    } else {
        outcome.note(sh.take(root, op, payload, bytes));
    }
    outcome.finish("MPI_Bcast")
}
