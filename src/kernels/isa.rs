//! Which compiled copy of the element-wise loops this CPU runs, decided once.
//!
//! x86-64 has three copies: the SSE2 baseline every x86-64 CPU has, AVX2, and
//! AVX-512 (F+BW+DQ+VL, the set that gives 512-bit vectors for every element
//! width).  They differ only in vector width; results are bit-identical.
//! Other architectures have the baseline only (the portable loop, which the
//! compiler vectorises for the target's baseline, e.g. NEON on aarch64).

use std::sync::atomic::{AtomicU8, Ordering};

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

/// Every level this CPU can run, baseline first (the tests run all of them).
pub fn available() -> Vec<Isa> {
    let best = detect() as u8;
    [Isa::Base, Isa::Avx2, Isa::Avx512]
        .into_iter()
        .filter(|i| *i as u8 <= best)
        .collect()
}
