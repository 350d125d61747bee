//! Which compiled copy of the element-wise loops this CPU runs, decided once.
//!
//! x86-64 has three copies: the SSE2 baseline every x86-64 CPU has, AVX2, and
//! AVX-512 (F+BW+DQ+VL, the set that gives 512-bit vectors for every element
//! width).  They differ only in vector width; results are bit-identical.
//! Other architectures have the baseline only (the portable loop, which the
//! compiler vectorises for the target's baseline, e.g. NEON on aarch64).

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Base = 1,
    Avx2 = 2,
    Avx512 = 3,
}

/// 0 = not yet detected.
static DETECTED: AtomicU8 = AtomicU8::new(0);

fn probe() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
        {
            return Isa::Avx512;
        }
        if is_x86_feature_detected!("avx2") {
            return Isa::Avx2;
        }
    }
    Isa::Base
}

/// The best level this CPU supports (cached after the first call; the race
/// of two first calls is harmless, both store the same value).
pub fn detect() -> Isa {
    match DETECTED.load(Ordering::Relaxed) {
        1 => Isa::Base,
        2 => Isa::Avx2,
        3 => Isa::Avx512,
        _ => {
            let isa = probe();
            DETECTED.store(isa as u8, Ordering::Relaxed);
            isa
        }
    }
}

/// Whether `rep movsb` is the fast string copy Intel documents for CPUs
/// with ERMS (CPUID leaf 7, EBX bit 9), on an Intel CPU: where the pair
/// buffer's ring is filled that way (`copy::fill_ring`).  Not on AMD: the
/// string copy lost to the vector loop on this project's Zen 4 VM
/// (`copy::copy`).  Cached as `detect` is.
pub fn string_fills() -> bool {
    match STRING_FILLS.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let fast = probe_string_fills();
            STRING_FILLS.store(1 + fast as u8, Ordering::Relaxed);
            fast
        }
    }
}

static STRING_FILLS: AtomicU8 = AtomicU8::new(0);

fn probe_string_fills() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__cpuid, __cpuid_count};
        // Leaf 7 is asked only when leaf 0 says it is there.
        let l0 = __cpuid(0);
        let vendor = [l0.ebx, l0.edx, l0.ecx];
        let leaf7 = (l0.eax >= 7).then(|| __cpuid_count(7, 0).ebx);
        // "GenuineIntel" as CPUID gives it, in EBX, EDX, ECX.
        let intel = vendor == [0x756e_6547, 0x4965_6e69, 0x6c65_746e];
        intel && leaf7.is_some_and(|ebx| ebx & (1 << 9) != 0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Every level this CPU can run, baseline first (the tests run all of them).
pub fn available() -> Vec<Isa> {
    let best = detect() as u8;
    [Isa::Base, Isa::Avx2, Isa::Avx512]
        .into_iter()
        .filter(|i| *i as u8 <= best)
        .collect()
}

/// Output size (bytes) from which a fused AVX2 or AVX-512 kernel call writes its
/// result with non-temporal stores; 0 = not yet decided.
static STREAM_FROM: AtomicUsize = AtomicUsize::new(0);

/// Bytes of the largest data or unified cache CPUID describes (the last
/// level), when it describes one.
#[cfg(target_arch = "x86_64")]
fn last_level_cache() -> Option<usize> {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // Intel's leaf 4 and AMD's leaf 0x8000_001D (with TOPOEXT) list the
    // caches in the same format; each leaf reads as all zeros on CPUs that
    // do not implement it, which ends the walk at once.
    // SAFETY (all calls): `cpuid` exists on every x86-64 CPU and only
    // reads identification registers; leaves past the maximum are skipped.
    #[allow(unused_unsafe)] // the intrinsics are safe functions in newer std
    let (max, ext_max) = unsafe { (__cpuid(0).eax, __cpuid(0x8000_0000).eax) };
    let mut best: Option<(u32, usize)> = None;
    for leaf in [4u32, 0x8000_001D] {
        if (leaf < 0x8000_0000 && leaf > max) || (leaf >= 0x8000_0000 && leaf > ext_max) {
            continue;
        }
        for sub in 0..16 {
            #[allow(unused_unsafe)]
            let r = unsafe { __cpuid_count(leaf, sub) };
            let kind = r.eax & 0x1f; // 0 none, 1 data, 2 instruction, 3 unified
            if kind == 0 {
                break;
            }
            if kind == 2 {
                continue;
            }
            let level = (r.eax >> 5) & 7;
            let ways = ((r.ebx >> 22) & 0x3ff) as usize + 1;
            let partitions = ((r.ebx >> 12) & 0x3ff) as usize + 1;
            let line = (r.ebx & 0xfff) as usize + 1;
            let sets = r.ecx as usize + 1;
            let bytes = ways * partitions * line * sets;
            if best.is_none_or(|(l, _)| level > l) {
                best = Some((level, bytes));
            }
        }
        if best.is_some() {
            break;
        }
    }
    best.map(|(_, bytes)| bytes)
}

/// The most last-level cache a process counts on under a hypervisor.
///
/// Why: a guest's CPUID describes the host's cache, not the guest's share
/// of it.  The Xeon VM of 2026-11-30 reports a 300 MiB L3 "shared by 2"
/// (its two vCPUs) while memcpy falls from 11 GB/s at 4 MiB to 5-6 GB/s at
/// 64 MiB: the other guests on the socket use the rest.  Counted whole, it
/// put the streaming thresholds at 100 MiB, where no call reaches.
///
/// Why 40 MiB: it puts a stream's threshold at 13.3 MiB and a call's at 10
/// MiB, between what lost and what gained there (np=2, alternated rounds
/// with an A/A control, docs/benchmark/2026-11-30-b-guest-cache).  Counted
/// as 32 MiB (a call's threshold at 8 MiB), the 4 MiB exchanges, which land
/// 8 MiB, took 1.07-1.14x their time and the 8 MiB ones 0.85-0.90x; counted
/// as 8 MiB, Gather and Alltoall of 4 MiB 1.12x.  At 40 MiB, 12 rounds:
/// 0.95x the time on geometric average over 28 cells of 2-16 MiB, Bcast 16
/// MiB 0.73x, Alltoall 0.82-0.96x, Allgather 0.83-0.96x, Scatter 16 MiB
/// 0.84x, the rest within the control's spread (up to 13 %).
pub const GUEST_CACHE_COUNTED: usize = 40 << 20;

/// Whether CPUID says the CPU is virtual (leaf 1, ECX bit 31, which
/// hypervisors set and real CPUs leave clear).
#[cfg(target_arch = "x86_64")]
fn under_hypervisor() -> bool {
    // SAFETY: leaf 1 exists on every x86-64 CPU; `cpuid` only reads.
    #[allow(unused_unsafe)]
    let ecx = unsafe { std::arch::x86_64::__cpuid(1).ecx };
    ecx >> 31 == 1
}

/// The last-level cache as CPUID describes it and as streaming counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheCounted {
    /// Bytes CPUID reports (None: it describes no cache).
    pub reported: Option<usize>,
    /// Whether CPUID says the CPU is virtual.
    pub guest: bool,
}

impl CacheCounted {
    /// This CPU's.
    pub fn detect() -> CacheCounted {
        #[cfg(target_arch = "x86_64")]
        return CacheCounted {
            reported: last_level_cache(),
            guest: under_hypervisor(),
        };
        #[cfg(not(target_arch = "x86_64"))]
        CacheCounted {
            reported: None,
            guest: false,
        }
    }

    /// Bytes counted on: the reported size, under a hypervisor at most
    /// [`GUEST_CACHE_COUNTED`].
    pub fn bytes(&self) -> Option<usize> {
        let cap = if self.guest {
            GUEST_CACHE_COUNTED
        } else {
            usize::MAX
        };
        self.reported.map(|c| c.min(cap))
    }

    /// The per-stream threshold it gives: a third of the bytes counted,
    /// plus one; `usize::MAX` (never) when the size is unknown.
    pub fn stream_threshold(&self) -> usize {
        self.bytes().map_or(usize::MAX, |c| c / 3 + 1)
    }
}

/// From which output size (bytes) fused calls (`out` distinct from both
/// operands) at AVX-512 use non-temporal stores, and from which a receiver's
/// last copy of a stream does (`copy::streams`): when the buffers together
/// exceed the last-level cache counted on ([`CacheCounted`]), i.e. when the
/// result cannot stay cached for its reader anyway.  Then a streaming store
/// saves the read for ownership of every output line (a third of the
/// traffic of a fused pass: +35 % at 16 MiB on the Zen 5 of
/// docs/kernels.md), and it does not evict the operands.  Below that size
/// the result stays in the cache for the rank that reads it next, and
/// streaming would send it to memory instead.  Unknown cache size: never.
/// `coll_sharm_nontemporal_landing_min_size` replaces it
/// ([`set_stream_threshold`]).
pub fn stream_threshold() -> usize {
    match STREAM_FROM.load(Ordering::Relaxed) {
        0 => {
            let from = CacheCounted::detect().stream_threshold();
            STREAM_FROM.store(from, Ordering::Relaxed);
            from
        }
        from => from,
    }
}

/// Overrides [`stream_threshold`] (the parameter; tests: `usize::MAX` never
/// streams, 1 always does); the results are the same either way.
pub fn set_stream_threshold(bytes: usize) {
    STREAM_FROM.store(bytes.max(1), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_counts_at_most_its_share_of_the_cache() {
        let host = |reported, guest| CacheCounted { reported, guest };
        let big = 300 << 20;
        assert_eq!(host(Some(big), false).bytes(), Some(big));
        assert_eq!(host(Some(big), true).bytes(), Some(GUEST_CACHE_COUNTED));
        assert_eq!(host(Some(8 << 20), true).bytes(), Some(8 << 20));
        assert_eq!(
            host(Some(big), true).stream_threshold(),
            GUEST_CACHE_COUNTED / 3 + 1
        );
        assert_eq!(host(None, true).stream_threshold(), usize::MAX);
    }
}
