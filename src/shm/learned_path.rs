//! Runs a large call on the path its size class learned (`trials`): tried,
//! decided, or left to the set-up floors; and the one collective step the
//! trials add, sharing every process's times.  Methods of the channel, kept
//! apart from the trials' state that the channel owns (`trials`).

use std::time::Instant;

use tracing::debug;

use crate::ompi::call::Coll;
use crate::ompi::params::SingleCopyMode;
use crate::shm::channel::Shared;
use crate::shm::queue::{Pos, Readers};
use crate::shm::trials::{Plan, SINGLE_FLOOR};

impl Shared {
    /// Whether this channel's large calls learn their path at all: under
    /// `coll_sharm_single_copy auto` with trials wanted, on a node with a
    /// core per process (agreed at set-up, so alike on every process).
    pub fn trials_apply(&self) -> bool {
        self.params.single_copy == SingleCopyMode::Auto
            && self.params.single_copy_trials > 0
            && !self.crowded()
    }

    /// Runs `call` on the path its size class takes: tried, decided, or
    /// left to the floors (`trials`).  `coll` and `bytes` (its bytes in
    /// all, `Args::shared_bytes`) must be what every process of the channel
    /// passes for the same call.  Only with single copy set up under
    /// `auto`, on a node with a core per process, from the single-copy
    /// floor `coll_sharm_single_copy_min_size`.
    pub fn on_learned_path(
        &mut self,
        coll: Coll,
        bytes: u64,
        call: impl FnOnce(&mut Shared) -> bool,
    ) -> bool {
        let tried = self.trials_apply()
            && self.single.is_some()
            && bytes >= self.params.single_copy_min_size.max(SINGLE_FLOOR) as u64;
        if !tried {
            return call(self);
        }
        let path = match self.trials.plan(coll, bytes) {
            Plan::Floors => return call(self),
            Plan::Use(path) => path,
            Plan::Try(path) => {
                self.call_path = Some(path);
                let started = Instant::now();
                let ok = call(self);
                let ns = started.elapsed().as_nanos() as u64;
                self.call_path = None;
                self.trials.took(coll, bytes, path, ns);
                return ok;
            }
            Plan::Decide => {
                let mine = self.trials.medians(coll, bytes);
                let all = self.share_medians(mine);
                let (path, line) = self.trials.decide(coll, bytes, &all);
                debug!("{line}");
                path
            }
        };
        self.call_path = Some(path);
        let ok = call(self);
        self.call_path = None;
        ok
    }

    /// Every process's [queues, single copy] medians, in rank order
    /// (collective: each publishes its own as one inline fragment for all
    /// the others and reads theirs, at one operation number).
    fn share_medians(&mut self, mine: [u64; 2]) -> Vec<[u64; 2]> {
        let pos = Pos::new(self.next_op(), 0);
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&mine[0].to_le_bytes());
        bytes[8..].copy_from_slice(&mine[1].to_le_bytes());
        let dst = self
            .writer
            .reserve(&self.queues, &self.waiter, pos, bytes.len());
        // SAFETY: `dst` is our reserved slot (inline) of >= 16 bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
        self.writer
            .publish(&self.queues, pos, bytes.len(), Readers::AllOthers);
        (0..self.p)
            .map(|r| {
                if r == self.me {
                    return mine;
                }
                let frag = self.queues.receive_expecting(&self.waiter, r, pos, 16);
                // SAFETY: the fragment stays valid until released.
                let got = unsafe { frag.bytes() };
                let word = |i: usize| {
                    got.get(i..i + 8)
                        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                };
                let theirs = [word(0), word(8)];
                self.queues.release(self.me, r, frag);
                theirs
            })
            .collect()
    }
}
