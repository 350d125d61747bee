//! Runs a large call on the route its size class learned (`trials`): its
//! path and its landing, tried, decided, or left to the set-up floors and
//! the size rules; and the one collective step the trials add, sharing
//! every process's times.  Methods of the channel, kept
//! apart from the trials' state that the channel owns (`trials`).

use std::time::Instant;

use tracing::{debug, trace};

use crate::kernels::copy::LandingStores;
use crate::ompi::call::Coll;
use crate::ompi::params::SingleCopyMode;
use crate::shm::channel::Shared;
use crate::shm::queue::{Pos, Readers, INLINE_BYTES};
use crate::shm::trials::{
    class_floor, Asks, Plan, Route, LANDING_TRIALS_FROM, MOST_ROUTES, SINGLE_FLOOR,
};

impl Shared {
    /// Whether this channel's large calls learn their path at all: under
    /// `coll_sharm_single_copy auto` with trials wanted, on a node with a
    /// core per process (agreed at set-up, so alike on every process).
    pub fn trials_apply(&self) -> bool {
        self.params.single_copy == SingleCopyMode::Auto
            && self.params.single_copy_trials > 0
            && !self.crowded()
    }

    /// What the call `coll` of `bytes` bytes in all asks to be tried: its
    /// path, with single copy set up under `auto` from the single-copy
    /// floor; its landing, for the collectives whose copies into receive
    /// buffers are plain copies (a reduction's result is its fold's, read
    /// again within the call) from [`LANDING_TRIALS_FROM`], unless the
    /// parameters fix the landing.  Both only with a core per process.
    fn asks(&self, coll: Coll, bytes: u64) -> Asks {
        // The size class's least call, not this one, meets the floor: a
        // class keeps the routes its first call asked for, so a floor that
        // splits a class (a `coll_sharm_single_copy_min_size` that is not a
        // power of two) would let its calls below the floor take single
        // copy on a trial route.
        let path = self.trials_apply()
            && self.single.is_some()
            && class_floor(bytes) >= self.params.single_copy_min_size.max(SINGLE_FLOOR) as u64;
        let copies = matches!(
            coll,
            Coll::Bcast
                | Coll::Gather
                | Coll::Scatter
                | Coll::Allgather
                | Coll::Allgatherv
                | Coll::Alltoall
        );
        let landing = copies
            && class_floor(bytes) >= LANDING_TRIALS_FROM
            && self.params.single_copy_trials > 0
            && self.params.nontemporal_landing_trials
            && self.params.nontemporal_landing_min_size.is_none()
            && !self.crowded();
        Asks { path, landing }
    }

    /// Runs `call` on the route its size class takes: tried, decided, or
    /// left to the floors and size rules (`trials`).  `coll` and `bytes`
    /// (its bytes in all, `Args::shared_bytes`) must be what every process
    /// of the channel passes for the same call.
    pub fn on_learned_path(
        &mut self,
        coll: Coll,
        bytes: u64,
        call: impl FnOnce(&mut Shared) -> bool,
    ) -> bool {
        let route = match self.trials.plan(coll, bytes, self.asks(coll, bytes)) {
            Plan::Floors => return call(self),
            Plan::Use(route) => route,
            Plan::Try(route) => {
                let started = Instant::now();
                let ok = self.on_route(route, call);
                let ns = started.elapsed().as_nanos() as u64;
                trace!(
                    "{} of {bytes} bytes in all: trial on {} took {:.1} us",
                    coll.name(),
                    route.name(),
                    ns as f64 / 1e3
                );
                self.trials.took(coll, bytes, ns);
                return ok;
            }
            Plan::Decide => {
                let mine = self.trials.medians(coll, bytes);
                let all = self.share_medians(mine);
                let (route, line) = self.trials.decide(coll, bytes, &all);
                debug!("{line}");
                route
            }
        };
        self.on_route(route, call)
    }

    /// Runs `call` with its streams on `route` (`call_path`,
    /// `call_landing`), and clears the route after it.
    fn on_route(&mut self, route: Route, call: impl FnOnce(&mut Shared) -> bool) -> bool {
        self.call_path = route.path;
        self.call_landing = route.landing;
        let ok = call(self);
        self.call_path = None;
        self.call_landing = LandingStores::BySize;
        ok
    }

    /// Every process's medians of the round's routes (`Trials::medians`),
    /// in rank order (collective: each publishes its own as one inline
    /// fragment of 32 bytes for all the others and reads theirs, at one
    /// operation number).
    fn share_medians(&mut self, mine: [u64; MOST_ROUTES]) -> Vec<[u64; MOST_ROUTES]> {
        const BYTES: usize = 8 * MOST_ROUTES;
        const _: () = assert!(BYTES <= INLINE_BYTES);
        let pos = Pos::new(self.next_op(), 0);
        let mut bytes = [0u8; BYTES];
        for (word, m) in bytes.chunks_exact_mut(8).zip(mine) {
            word.copy_from_slice(&m.to_le_bytes());
        }
        let dst = self.writer.reserve(&self.queues, &self.waiter, pos, BYTES);
        // SAFETY: `dst` is our reserved slot (inline) of >= BYTES bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, BYTES) };
        self.writer
            .publish(&self.queues, pos, BYTES, Readers::AllOthers);
        (0..self.p)
            .map(|r| {
                if r == self.me {
                    return mine;
                }
                let frag = self.queues.receive_expecting(&self.waiter, r, pos, BYTES);
                // SAFETY: the fragment stays valid until released.
                let got = unsafe { frag.bytes() };
                let mut theirs = [0u64; MOST_ROUTES];
                for (i, m) in theirs.iter_mut().enumerate() {
                    *m = got
                        .get(8 * i..8 * i + 8)
                        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
                }
                self.queues.release(self.me, r, frag);
                theirs
            })
            .collect()
    }
}
