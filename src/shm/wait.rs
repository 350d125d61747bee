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

/// How `Waiter::until_noting` found its condition true.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// At the first look: no wait.
    AtOnce,
    /// In the spin loop, one `pause` after a look that found it false: it
    /// turned true within about a spin of when it was seen.
    Spinning,
    /// Right after a call of the progress hook or a yield: it may have
    /// turned true at any time during either (opal_progress can take a
    /// large part of a µs).
    Late,
}

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
    pub fn until(&self, ready: impl FnMut() -> bool) {
        self.until_noting(ready);
    }

    /// `until`, saying how the condition was found true (`Arrival`).
    #[inline]
    pub fn until_noting(&self, mut ready: impl FnMut() -> bool) -> Arrival {
        if ready() {
            return Arrival::AtOnce;
        }
        self.until_slow(&mut ready)
    }

    #[cold]
    fn until_slow(&self, ready: &mut dyn FnMut() -> bool) -> Arrival {
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
                    return Arrival::Spinning;
                }
            }
            (self.progress)();
            if ready() {
                return Arrival::Late;
            }
            rounds = rounds.saturating_add(1);
            if self.yield_early || rounds >= ROUNDS_BEFORE_YIELD {
                // SAFETY: sched_yield has no preconditions.
                unsafe { libc::sched_yield() };
                // Looked at once more here, so that a change made while we
                // were away never reads as `Spinning`.
                if ready() {
                    return Arrival::Late;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which look finds the condition true decides the arrival: the first,
    /// one in the spin loop, or the one right after the progress hook.
    #[test]
    fn arrivals_say_which_look_saw_the_condition() {
        let waiter = Waiter::standalone(false);
        let true_at = |n: u32| {
            let mut looks = 0;
            waiter.until_noting(move || {
                looks += 1;
                looks >= n
            })
        };
        assert_eq!(true_at(1), Arrival::AtOnce);
        assert_eq!(true_at(2), Arrival::Spinning);
        assert_eq!(true_at(1 + SPINS_PER_PROGRESS), Arrival::Spinning);
        // The first look, the round's spins, then the look after progress.
        assert_eq!(true_at(2 + SPINS_PER_PROGRESS), Arrival::Late);
        assert_eq!(true_at(3 + SPINS_PER_PROGRESS), Arrival::Spinning);
    }
}
