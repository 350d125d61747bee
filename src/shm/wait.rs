//! Spin-waiting that stays fast on dedicated cores and polite when
//! oversubscribed.
//!
//! A waiter spins on a condition with `spin_loop` hints.  Every few spins it
//! drives Open MPI's progress engine: MPI requires that a process blocked in a
//! collective still progresses its pending point-to-point requests, or a peer
//! waiting on them could deadlock with us.  When Open MPI says processes
//! outnumber cores (`mpi_yield_when_idle`), it yields the CPU almost at once:
//! the peer we wait for may be runnable on our core, and pure spinning would
//! make every wait last a scheduler time slice.  Even on dedicated cores it
//! yields after a long wait, as cheap insurance against undetected
//! oversubscription.

/// How a wait behaves; one per communicator.
#[derive(Clone, Copy, Debug)]
pub struct Waiter {
    /// Called periodically while waiting (opal_progress in the plugin).
    pub progress: fn(),
    /// Yield the CPU early (more processes than cores).
    pub yield_early: bool,
}

/// Spins between calls to the progress hook.
const SPINS_PER_PROGRESS: u32 = 64;
/// Progress rounds before yielding when not oversubscribed (about 100 µs).
const ROUNDS_BEFORE_YIELD: u32 = 256;

fn no_progress() {}

impl Waiter {
    /// A waiter without progress hook (unit tests, threads).
    pub fn standalone(yield_early: bool) -> Waiter {
        Waiter {
            progress: no_progress,
            yield_early,
        }
    }

    /// Returns once `ready()` is true.
    #[inline]
    pub fn until(&self, mut ready: impl FnMut() -> bool) {
        if ready() {
            return;
        }
        self.until_slow(&mut ready)
    }

    #[cold]
    fn until_slow(&self, ready: &mut dyn FnMut() -> bool) {
        let spins = if self.yield_early {
            8
        } else {
            SPINS_PER_PROGRESS
        };
        let mut rounds: u32 = 0;
        loop {
            for _ in 0..spins {
                std::hint::spin_loop();
                if ready() {
                    return;
                }
            }
            (self.progress)();
            if ready() {
                return;
            }
            rounds = rounds.saturating_add(1);
            if self.yield_early || rounds >= ROUNDS_BEFORE_YIELD {
                // SAFETY: sched_yield has no preconditions.
                unsafe { libc::sched_yield() };
            }
        }
    }
}
