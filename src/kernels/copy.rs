//! Copies for the data path.
//!
//! * `copy`: the copy of every fragment and own block, with vector loads
//!   and stores instead of `rep movsb`.  glibc's `memcpy` moves anything
//!   from `glibc.cpu.x86_rep_movsb_threshold` (2,112 bytes here) with
//!   `rep movsb`, and on this VM's Zen 4 cores that string copy was the
//!   slower one wherever the lines travel between the cores (np=2, one
//!   launch against the other, see `copy`).
//! * `copy_streaming`: non-temporal stores, which skip the read for
//!   ownership of every destination line and leave the caches to the data
//!   still to come.  Used by a receiver for the last copy of a stream too
//!   large to stay in the last-level cache together with its source
//!   (`isa::stream_threshold`): an ordinary store first reads each
//!   destination line from memory, a third of the traffic of a copy that
//!   runs at memory speed anyway.

use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(target_arch = "x86_64")]
use super::isa;
use super::isa::Isa;

/// From this length `copy` runs its vector loop; below it `memcpy`, which
/// stays below its `rep movsb` threshold too.
const VECTOR_MIN: usize = 2048;

/// Copies `len` bytes from `src` to `dst` (not overlapping) with vector
/// loads and stores from [`VECTOR_MIN`] bytes, AVX-512 or AVX2 as the CPU
/// has (the stores aligned to the vector), `memcpy` below that or without
/// either.
///
/// Why not `memcpy`: measured with glibc's `rep movsb` switched off by its
/// tunable (`glibc.cpu.x86_rep_movsb_threshold=1000000000`), np=2, the 5
/// of 6 alternated launches each with the cores near (2026-11-26): Allgather 64
/// KiB / 256 KiB / 1 MiB 7.98 / 34.2 / 123 -> 5.91 / 20.4 / 105 us,
/// Alltoall 1 MiB 154 -> 88, Bcast 1 MiB 57.7 -> 39.5, Reduce 256 KiB 14.0
/// -> 9.9, every one of 16 cells of 16 KiB-1 MiB faster.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes, not overlapping.
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) {
    match vector_loop(len) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: forwarded contract; the CPU has the instructions and
        // `len` is at least one vector.
        Some(Isa::Avx512) => unsafe { x86::copy_avx512(dst, src, len) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Some(Isa::Avx2) => unsafe { x86::copy_avx2(dst, src, len) },
        // SAFETY: forwarded contract.
        _ => unsafe { std::ptr::copy_nonoverlapping(src, dst, len) },
    }
}

/// Copies `len` bytes from `src` into the pair buffer's ring at `dst`
/// (a stream's writer, `coll::pair`): with `rep movsb` where
/// `isa::string_fills` says it is Intel's fast string copy, else `copy`.
///
/// Why there alone: np=2 Bcasts through the ring, paired in one launch
/// (`bench/paired_ab.c`, fresh data, the Xeon VM, 2026-12-01), took
/// 0.89-0.96x the time at 64-192 KiB and 0.96-0.99x at 1 MiB with string
/// fills; a probe without MPI (a one-way stream through a 1 MiB ring)
/// 0.84-0.86x at 32-128 KiB.  As the fill of every queue slot the string
/// copy measured 1.02x on geometric mean over seven operations (`docs/
/// benchmark/JOURNAL.md`, 2026-11-30 evening), and on Zen 4 every copy
/// lost with it (`copy`).
///
/// # Safety
/// As `copy`.
#[inline]
pub unsafe fn fill_ring(dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    if isa::string_fills() {
        // SAFETY: forwarded contract: `rep movsb` copies `rcx` bytes from
        // `rsi` to `rdi` upwards (the direction flag is clear, as the ABI
        // requires at every call), touching nothing else.
        unsafe {
            std::arch::asm!(
                "rep movsb",
                inout("rdi") dst => _,
                inout("rsi") src => _,
                inout("rcx") len => _,
                options(nostack, preserves_flags)
            );
        }
        return;
    }
    // SAFETY: forwarded contract.
    unsafe { copy(dst, src, len) }
}

/// Copies `len` bytes from `src` to both `dst` and `also` in one pass: each
/// vector is loaded once and stored twice (stores aligned on `dst`).  For a
/// sender whose block goes both to its queue and to its own place in its
/// receive buffer (Allgather): the second copy then costs its stores but
/// not a second read of the block.
///
/// # Safety
/// `src` readable and `dst` and `also` writable for `len` bytes, none of
/// the three overlapping.
#[inline]
pub unsafe fn copy_twice(dst: *mut u8, also: *mut u8, src: *const u8, len: usize) {
    match vector_loop(len) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: forwarded contract; the CPU has the instructions and
        // `len` is at least one vector.
        Some(Isa::Avx512) => unsafe { x86::copy_twice_avx512(dst, also, src, len) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Some(Isa::Avx2) => unsafe { x86::copy_twice_avx2(dst, also, src, len) },
        // SAFETY: forwarded contract.
        _ => unsafe {
            std::ptr::copy_nonoverlapping(src, dst, len);
            std::ptr::copy_nonoverlapping(src, also, len);
        },
    }
}

/// Which vector loop `copy` runs for `len` bytes (None: `memcpy`).
#[inline]
fn vector_loop(len: usize) -> Option<Isa> {
    #[cfg(target_arch = "x86_64")]
    if len >= VECTOR_MIN {
        return Some(isa::detect()).filter(|&i| i != Isa::Base);
    }
    let _ = len;
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Four vectors of `$v` bytes from `$src + $at` to `$dst + $at`:
    /// unaligned loads, then the stores `$store` (aligned or streaming).
    macro_rules! four_vectors {
        ($src:expr, $dst:expr, $at:expr, $v:expr, $load:ident, $store:ident) => {{
            let (s, d) = ($src.add($at), $dst.add($at));
            let a = $load(s.cast());
            let b = $load(s.add($v).cast());
            let c = $load(s.add(2 * $v).cast());
            let e = $load(s.add(3 * $v).cast());
            $store(d.cast(), a);
            $store(d.add($v).cast(), b);
            $store(d.add(2 * $v).cast(), c);
            $store(d.add(3 * $v).cast(), e);
        }};
    }

    /// A copy loop over vectors of `$v` bytes: one unaligned vector, then
    /// aligned stores of four vectors per step (two cache lines with AVX2,
    /// four with AVX-512, each store then one whole line), then the last
    /// vector unaligned (it may overlap bytes already stored, with the same
    /// values).
    macro_rules! copy_loop {
        ($name:ident, $feature:literal, $v:expr, $load:ident, $storeu:ident, $store:ident) => {
            /// # Safety
            /// As `super::copy`, with `len` at least one vector and the
            /// instructions present.
            #[target_feature(enable = $feature)]
            pub unsafe fn $name(dst: *mut u8, src: *const u8, len: usize) {
                const V: usize = $v;
                debug_assert!(len >= V);
                // SAFETY (whole body): every access lies within [0, len) of
                // the caller's ranges; `at` is a multiple of V past `dst`
                // once aligned.
                unsafe {
                    $storeu(dst.cast(), $load(src.cast()));
                    let mut at = V - dst as usize % V;
                    while at + 4 * V <= len {
                        four_vectors!(src, dst, at, V, $load, $store);
                        at += 4 * V;
                    }
                    while at + V <= len {
                        $store(dst.add(at).cast(), $load(src.add(at).cast()));
                        at += V;
                    }
                    if at < len {
                        let last = len - V;
                        $storeu(dst.add(last).cast(), $load(src.add(last).cast()));
                    }
                }
            }
        };
    }

    copy_loop!(
        copy_avx2,
        "avx2",
        32,
        _mm256_loadu_si256,
        _mm256_storeu_si256,
        _mm256_store_si256
    );
    copy_loop!(
        copy_avx512,
        "avx512f",
        64,
        _mm512_loadu_si512,
        _mm512_storeu_si512,
        _mm512_store_si512
    );

    /// `copy_loop` with a second destination: every vector loaded once and
    /// stored to both, aligned on `dst` and unaligned on `also`, two vectors
    /// per step (four would hold eight registers' worth of stores in
    /// flight for no gain in a loop that is bound by its stores).
    macro_rules! copy_twice_loop {
        ($name:ident, $feature:literal, $v:expr, $load:ident, $storeu:ident, $store:ident) => {
            /// # Safety
            /// As `super::copy_twice`, with `len` at least one vector and
            /// the instructions present.
            #[target_feature(enable = $feature)]
            pub unsafe fn $name(dst: *mut u8, also: *mut u8, src: *const u8, len: usize) {
                const V: usize = $v;
                debug_assert!(len >= V);
                // SAFETY (whole body): every access lies within [0, len) of
                // the caller's ranges; `at` is a multiple of V past `dst`
                // once aligned.
                unsafe {
                    let first = $load(src.cast());
                    $storeu(dst.cast(), first);
                    $storeu(also.cast(), first);
                    let mut at = V - dst as usize % V;
                    while at + 2 * V <= len {
                        let a = $load(src.add(at).cast());
                        let b = $load(src.add(at + V).cast());
                        $store(dst.add(at).cast(), a);
                        $store(dst.add(at + V).cast(), b);
                        $storeu(also.add(at).cast(), a);
                        $storeu(also.add(at + V).cast(), b);
                        at += 2 * V;
                    }
                    // Fewer than two vectors are left: one whole vector,
                    // then the last vector of the range (it may overlap
                    // bytes already stored, with the same values).
                    let tail = |at: usize| {
                        let v = $load(src.add(at).cast());
                        $storeu(dst.add(at).cast(), v);
                        $storeu(also.add(at).cast(), v);
                    };
                    if at + V <= len {
                        tail(at);
                    }
                    if at < len {
                        tail(len - V);
                    }
                }
            }
        };
    }

    copy_twice_loop!(
        copy_twice_avx2,
        "avx2",
        32,
        _mm256_loadu_si256,
        _mm256_storeu_si256,
        _mm256_store_si256
    );
    copy_twice_loop!(
        copy_twice_avx512,
        "avx512f",
        64,
        _mm512_loadu_si512,
        _mm512_storeu_si512,
        _mm512_store_si512
    );

    /// A streaming copy over vectors of `$v` bytes: the head up to the
    /// first cache-line boundary and the tail with ordinary stores, every
    /// line between with non-temporal stores of whole vectors (one per line
    /// with AVX-512, two with AVX2: either way each line is written whole,
    /// so the write-combining buffer leaves as one line without a read for
    /// ownership), then a store fence (see `super::copy_streaming`).
    macro_rules! stream_loop {
        ($name:ident, $feature:literal, $v:expr, $load:ident, $stream:ident) => {
            /// # Safety
            /// As `super::copy`, with the named CPU feature present.
            #[target_feature(enable = $feature)]
            pub unsafe fn $name(dst: *mut u8, src: *const u8, len: usize) {
                const V: usize = $v;
                const LINE: usize = 64;
                let head = ((LINE - dst as usize % LINE) % LINE).min(len);
                // SAFETY (whole body): every access lies within [0, len) of
                // the caller's ranges; stores from `head` on are line (so
                // vector) aligned.
                unsafe {
                    std::ptr::copy_nonoverlapping(src, dst, head);
                    let mut at = head;
                    while at + 4 * V <= len {
                        four_vectors!(src, dst, at, V, $load, $stream);
                        at += 4 * V;
                    }
                    while at + V <= len {
                        $stream(dst.add(at).cast(), $load(src.add(at).cast()));
                        at += V;
                    }
                    std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), len - at);
                    _mm_sfence();
                }
            }
        };
    }

    stream_loop!(
        stream_avx2,
        "avx2",
        32,
        _mm256_loadu_si256,
        _mm256_stream_si256
    );
    stream_loop!(
        stream_avx512,
        "avx512f",
        64,
        _mm512_loadu_si512,
        _mm512_stream_si512
    );

    /// Non-temporal stores of 16 bytes (SSE2, part of x86-64): the head up
    /// to a 16-byte boundary and the tail with ordinary stores, then a
    /// store fence.  For CPUs without AVX2, and lengths too short for the
    /// vector loops.
    ///
    /// # Safety
    /// As `super::copy`.
    pub unsafe fn stream_sse2(dst: *mut u8, src: *const u8, len: usize) {
        let head = ((16 - dst as usize % 16) % 16).min(len);
        // SAFETY (whole body): every access lies within [0, len) of the
        // caller's ranges; stores from `head` on are 16-byte aligned.
        unsafe {
            std::ptr::copy_nonoverlapping(src, dst, head);
            let mut at = head;
            while at + 16 <= len {
                _mm_stream_si128(dst.add(at).cast(), _mm_loadu_si128(src.add(at).cast()));
                at += 16;
            }
            std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), len - at);
            // Non-temporal stores are weakly ordered: the fence makes them
            // visible before any later store, e.g. the Release store of an
            // acknowledgement or of a publication that hands the buffer on.
            _mm_sfence();
        }
    }
}

/// Whether a stream of `bytes` bytes should land with `copy_streaming`.
pub fn streams(bytes: usize) -> bool {
    bytes >= super::isa::stream_threshold()
}

/// Which stores a call's copies into receive buffers use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LandingStores {
    /// Non-temporal stores from a size on ([`streams`]).
    #[default]
    BySize,
    /// Non-temporal stores whatever the size: the call lands too much to
    /// stay cached ([`call_streams`]), or its size class learned that this
    /// is faster (`shm::trials`).
    Stream,
    /// Ordinary stores whatever the size: the size class learned that this
    /// is faster (`shm::trials`).
    Cache,
}

impl LandingStores {
    /// Whether a copy of `bytes` bytes lands with `copy_streaming`.
    pub fn streams(self, bytes: usize) -> bool {
        match self {
            LandingStores::BySize => streams(bytes),
            LandingStores::Stream => true,
            LandingStores::Cache => false,
        }
    }
}

/// Whether every stream and own block of a call in which this process
/// lands `landing` bytes in all should land with `copy_streaming`: from a
/// quarter of the last-level cache (`streams` asks a third for one stream).
///
/// Why the whole landing, and only in exchanges and a gathering root (the
/// callers): there both cores write receive buffers and read sources at
/// once, the data of one call no longer fits the shared cache, and the
/// read for ownership of every destination line is a third of the memory
/// traffic.  np=2, `bench/paired_ab.c`, fresh data, 4 launches each, every
/// stream and own block streamed from 2 MiB over from 10.7 MiB: Alltoall
/// 4/8 MiB 0.90/0.79, Allgather 4/8 MiB 0.88/0.76, Gather 4 MiB 0.90
/// (8-16 MiB landed per process; every launch below 0.92); where 4 MiB
/// landed, Alltoall 2 MiB 1.30, Allgather 2 MiB 0.94, Gather 2 MiB 1.03.
/// Bcast lost at 4 and 8 MiB (1.36, 1.12: only one process writes a
/// receive buffer at a time), and is left out.
pub fn call_streams(landing: usize) -> bool {
    landing >= call_streams_from()
}

/// The least landing from which [`call_streams`] says yes: three quarters
/// of the per-stream threshold (`isa::stream_threshold`: a third of the
/// last-level cache counted, plus one, or the parameter), so a quarter of
/// that cache; `usize::MAX`: never.
pub fn call_streams_from() -> usize {
    match super::isa::stream_threshold() {
        usize::MAX => usize::MAX,
        per_stream => (per_stream - 1) / 4 * 3,
    }
}

/// Bytes this process copied into receive buffers with non-temporal stores
/// ([`land_streaming`]; MPI_T `coll_sharm_nontemporal_bytes`, read by
/// `ompi::stats`).  One process-wide counter, not one per thread as
/// `ompi::stats` keeps: it is bumped once per copy of a fragment or a
/// whole block, after the copy's store fence has drained the stores a
/// locked add would otherwise wait for.
static LANDED_NONTEMPORAL: AtomicU64 = AtomicU64::new(0);

/// [`LANDED_NONTEMPORAL`]'s count.
pub fn landed_nontemporal() -> u64 {
    LANDED_NONTEMPORAL.load(Ordering::Relaxed)
}

/// `copy_streaming` of a copy into a receive buffer, counted in
/// [`LANDED_NONTEMPORAL`].
///
/// # Safety
/// As `copy_streaming`.
pub unsafe fn land_streaming(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: forwarded contract.
    unsafe { copy_streaming(dst, src, len) };
    // Relaxed: a count, which orders nothing.
    LANDED_NONTEMPORAL.fetch_add(len as u64, Ordering::Relaxed);
}

/// Copies `len` bytes from `src` to `dst` within one process, as
/// `ptr::copy` (the ranges may overlap), with non-temporal stores when they
/// do not overlap and the copy is too large to stay cached with its source
/// (`streams`): a process's own block in Gather, Scatter, Allgather and
/// Alltoall, which nothing reads before the call returns.  Returns whether
/// it streamed.
///
/// np=2, 16 MiB, 10 alternated launches each (2026-11-26, medians with the
/// cores near / far): the own block so copied made Allgather 5889/5704 ->
/// 5298/4949 us, Alltoall 5912/5592 -> 5668/5003, Gather 3008/3230 ->
/// 2888/2787 and Scatter 3045/3076 -> 2477/2511.  Streaming from 1 MiB
/// instead lost up to 2x at 1-4 MiB, where the block stays in the cache.
/// `landing`: the call's choice ([`LandingStores`]; `Stream` when
/// `call_streams` said so for the whole call).
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes.
pub unsafe fn copy_local(dst: *mut u8, src: *const u8, len: usize, landing: LandingStores) -> bool {
    let apart = src as usize + len <= dst as usize || dst as usize + len <= src as usize;
    if apart && landing.streams(len) {
        // SAFETY: forwarded contract; the ranges do not overlap.
        unsafe { land_streaming(dst, src, len) };
        true
    } else if apart {
        // SAFETY: forwarded contract; the ranges do not overlap.
        unsafe { copy(dst, src, len) };
        false
    } else {
        // SAFETY: forwarded contract; `copy` allows overlapping ranges.
        unsafe { std::ptr::copy(src, dst, len) };
        false
    }
}

/// Copies `len` bytes from `src` to `dst` with non-temporal stores where
/// the destination is aligned to them (the head before that and the tail
/// with an ordinary copy), then orders them like ordinary stores (`sfence`).
/// With AVX-512 each store writes one whole cache line, with AVX2 half of
/// one (two stores per line, the line aligned), else 16 bytes.  Why whole
/// vectors: on the Zen 4 VM (AVX-512), np=2, 16 MiB, one launch against
/// the other on two communicators taking turns (3 launches, fresh data
/// before every call), 16-byte stores instead of 64-byte ones took 1.12x
/// the time in Allgather and Gather, 1.13x in Alltoall, 1.07x in Scatter;
/// queue fills under `coll_sharm_nontemporal always` at 64 KiB-1 MiB the
/// same (0.97-1.02x).  On a Zen 3 VM (AVX2, no AVX-512; 2026-11-27, the
/// cores far: line round trip 300-1100 ns), the same method (5 launches,
/// 12 blocks of 6 calls; A/A runs of it spread 0.68-1.26), 16-byte stores
/// against 32-byte ones: medians Gather 4 / 16 MiB 1.77 / 1.11x the time,
/// Allgather 1.14 / 1.38x, Alltoall 1.32 / 1.43x, Scatter 1.26 / 1.42x,
/// Bcast 1.05 / 1.54x.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes, not overlapping.
pub unsafe fn copy_streaming(dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY (all three): forwarded contract; the CPU has the feature.
    match isa::detect() {
        Isa::Avx512 if len >= 128 => unsafe { x86::stream_avx512(dst, src, len) },
        Isa::Avx2 if len >= 128 => unsafe { x86::stream_avx2(dst, src, len) },
        _ => unsafe { x86::stream_sse2(dst, src, len) },
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: forwarded contract.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, len)
    };
}

#[cfg(test)]
mod tests {
    use super::{copy, copy_local, copy_streaming, fill_ring, Isa, LandingStores};

    /// `fill_ring` (the string copy where `isa::string_fills`, else `copy`):
    /// short and long lengths, destinations and sources at odd offsets:
    /// the bytes arrive and nothing around them is touched.
    #[test]
    fn ring_fills_are_copies() {
        let src: Vec<u8> = (0..70_000u32).map(|i| (i * 13 + 7) as u8).collect();
        for len in [0, 1, 63, 64, 65, 2047, 2048, 4097, 32_768, 65_537] {
            for (dst_off, src_off) in [(0, 0), (1, 3), (63, 1), (17, 40)] {
                let mut dst = vec![0xAAu8; 66_000 + 128];
                // SAFETY: both ranges lie within their vectors.
                unsafe {
                    fill_ring(
                        dst.as_mut_ptr().add(dst_off),
                        src.as_ptr().add(src_off),
                        len,
                    )
                };
                assert_eq!(
                    &dst[dst_off..dst_off + len],
                    &src[src_off..src_off + len],
                    "{len}"
                );
                assert!(dst[..dst_off]
                    .iter()
                    .chain(&dst[dst_off + len..])
                    .all(|&b| b == 0xAA));
            }
        }
    }

    /// `copy_twice` and its vector loops: lengths around the loops' edges
    /// (one, two and three vectors and their neighbours), destinations
    /// aligned and not, each differently: both copies arrive, and nothing
    /// around either destination is touched.
    #[test]
    fn copies_to_two_places_are_copies() {
        type Twice = unsafe fn(*mut u8, *mut u8, *const u8, usize);
        let src: Vec<u8> = (0..20_000u32).map(|i| (i * 11 + 5) as u8).collect();
        let mut ways: Vec<(&str, Twice)> = vec![("copy_twice", super::copy_twice)];
        #[cfg(target_arch = "x86_64")]
        {
            use crate::kernels::isa::detect;
            if detect() as u8 >= Isa::Avx2 as u8 {
                ways.push(("avx2", super::x86::copy_twice_avx2));
            }
            if detect() == Isa::Avx512 {
                ways.push(("avx512", super::x86::copy_twice_avx512));
            }
        }
        for (name, way) in ways {
            let shortest = if name == "copy_twice" { 0 } else { 64 };
            let lens = [
                0, 1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255, 300, 2048, 4097, 16_385,
            ];
            for len in lens.into_iter().filter(|&l| l >= shortest) {
                for (dst_off, also_off) in [(0, 0), (1, 5), (31, 63), (33, 0), (63, 17)] {
                    let (mut dst, mut also) = (vec![0xAAu8; 17_000], vec![0x55u8; 17_000]);
                    let (at, at2) = (128 + dst_off, 256 + also_off);
                    // SAFETY: all three ranges lie within their vectors.
                    unsafe {
                        way(
                            dst.as_mut_ptr().add(at),
                            also.as_mut_ptr().add(at2),
                            src.as_ptr().add(3),
                            len,
                        )
                    };
                    let want = &src[3..3 + len];
                    assert_eq!(&dst[at..at + len], want, "{name} {len}");
                    assert_eq!(&also[at2..at2 + len], want, "{name} {len}");
                    assert!(dst[..at].iter().chain(&dst[at + len..]).all(|&b| b == 0xAA));
                    assert!(also[..at2]
                        .iter()
                        .chain(&also[at2 + len..])
                        .all(|&b| b == 0x55));
                }
            }
        }
    }

    /// Lengths around the vector loop's edges, every destination offset
    /// within a vector and a few source offsets, through `copy` and through
    /// each vector loop this CPU can run: the bytes arrive, and nothing
    /// around the destination range is touched.
    #[test]
    fn vector_copies_are_copies() {
        let src: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + 3) as u8).collect();
        #[allow(clippy::type_complexity)]
        let mut ways: Vec<(&str, unsafe fn(*mut u8, *const u8, usize))> = vec![("copy", copy)];
        #[cfg(target_arch = "x86_64")]
        {
            use crate::kernels::isa::detect;
            if detect() as u8 >= Isa::Avx2 as u8 {
                ways.push(("avx2", super::x86::copy_avx2));
            }
            if detect() == Isa::Avx512 {
                ways.push(("avx512", super::x86::copy_avx512));
            }
        }
        // Large copies take the vector loop wherever the CPU has one.
        let best = Some(crate::kernels::isa::detect()).filter(|&i| i != Isa::Base);
        assert_eq!(super::vector_loop(super::VECTOR_MIN), best);
        assert_eq!(super::vector_loop(super::VECTOR_MIN - 1), None);
        for (name, way) in ways {
            let lens: Vec<usize> = if name == "copy" {
                vec![0, 1, 100, 2047, 2048, 2049, 2111, 2113, 4096, 8191, 16_385]
            } else {
                vec![
                    64, 65, 127, 128, 129, 255, 256, 257, 300, 511, 1000, 4097, 16_385,
                ]
            };
            for len in lens {
                for dst_off in [0, 1, 31, 32, 33, 63] {
                    for src_off in [0, 1, 17] {
                        let mut dst = vec![0xAAu8; 17_000];
                        let at = 128 + dst_off;
                        // SAFETY: both ranges lie within their vectors.
                        unsafe { way(dst.as_mut_ptr().add(at), src.as_ptr().add(src_off), len) };
                        assert_eq!(
                            &dst[at..at + len],
                            &src[src_off..src_off + len],
                            "{name} {len}"
                        );
                        assert!(dst[..at].iter().all(|&b| b == 0xAA), "{name} {len}");
                        assert!(dst[at + len..].iter().all(|&b| b == 0xAA), "{name} {len}");
                    }
                }
            }
        }
    }

    /// A local copy as large as the streaming threshold streams when the
    /// ranges are apart, and stays a `memmove` (no streaming, overlap
    /// honoured) when they overlap.  Unknown cache size: it never streams.
    #[test]
    fn local_copies_stream_only_apart_and_large() {
        let n = crate::kernels::isa::stream_threshold();
        if n == usize::MAX {
            let (src, mut dst) = (vec![7u8; 4096], vec![0u8; 4096]);
            // SAFETY: both vectors hold 4096 bytes.
            assert!(!unsafe {
                copy_local(dst.as_mut_ptr(), src.as_ptr(), 4096, LandingStores::BySize)
            });
            assert_eq!(src, dst);
            return;
        }
        let src: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        let mut dst = vec![0u8; n];
        let landed = super::landed_nontemporal();
        // SAFETY: both vectors hold n bytes.
        assert!(unsafe { copy_local(dst.as_mut_ptr(), src.as_ptr(), n, LandingStores::BySize) });
        assert_eq!(src, dst);
        // Counted (other tests may count concurrently: at least these).
        assert!(super::landed_nontemporal() - landed >= n as u64);
        // Overlapping by a few bytes, both ways: memmove's result.
        let mut both: Vec<u8> = (0..n + 64).map(|i| (i % 253) as u8).collect();
        let expect: Vec<u8> = both[..n].to_vec();
        let p = both.as_mut_ptr();
        // SAFETY: [p, p + n) and [p + 64, p + 64 + n) lie within `both`.
        assert!(!unsafe { copy_local(p.add(64), p, n, LandingStores::Stream) });
        assert_eq!(&both[64..], &expect[..]);
        let expect: Vec<u8> = both[64..].to_vec();
        // SAFETY: as above.
        assert!(!unsafe { copy_local(p, p.add(64), n, LandingStores::Stream) });
        assert_eq!(&both[..n], &expect[..]);
        // A short copy streams when its call asks (`call_streams`), and a
        // long one stays cached when its call asks that (`shm::trials`).
        let (src, mut dst) = (vec![9u8; 4096], vec![0u8; 4096]);
        // SAFETY: both vectors hold 4096 bytes.
        assert!(unsafe { copy_local(dst.as_mut_ptr(), src.as_ptr(), 4096, LandingStores::Stream) });
        assert_eq!(src, dst);
        let src: Vec<u8> = (0..n).map(|i| (i % 241) as u8).collect();
        let mut dst = vec![0u8; n];
        // SAFETY: both vectors hold n bytes.
        assert!(!unsafe { copy_local(dst.as_mut_ptr(), src.as_ptr(), n, LandingStores::Cache) });
        assert_eq!(src, dst);
    }

    /// A call streams from a quarter of the last-level cache landed; one
    /// stream alone from a third.  Unknown cache size: never.
    #[test]
    fn calls_stream_from_a_quarter_of_the_last_level_cache() {
        let per_stream = crate::kernels::isa::stream_threshold();
        if per_stream == usize::MAX {
            assert!(!super::call_streams(usize::MAX - 1));
            return;
        }
        let llc = (per_stream - 1) * 3;
        let quarter = (per_stream - 1) / 4 * 3;
        assert!(quarter <= llc / 4 && quarter + 3 > llc / 4);
        assert!(super::call_streams(quarter) && !super::call_streams(quarter - 1));
        assert!(super::streams(per_stream) && !super::streams(quarter));
    }

    /// Every head (destination offset within 16 bytes), every tail, and
    /// lengths around the block size: the bytes arrive, and nothing
    /// around the destination range is touched.
    #[test]
    fn streaming_copy_is_a_copy() {
        type Stream = unsafe fn(*mut u8, *const u8, usize);
        let mut ways: Vec<(&str, Stream)> = vec![("copy_streaming", copy_streaming)];
        #[cfg(target_arch = "x86_64")]
        {
            use crate::kernels::isa::detect;
            ways.push(("sse2", super::x86::stream_sse2));
            if detect() as u8 >= Isa::Avx2 as u8 {
                ways.push(("avx2", super::x86::stream_avx2));
            }
            if detect() == Isa::Avx512 {
                ways.push(("avx512", super::x86::stream_avx512));
            }
        }
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        for (name, way) in ways {
            for dst_off in [0, 1, 7, 15, 16, 17, 31, 32, 48, 63] {
                for src_off in [0, 1, 5, 16] {
                    for len in [
                        0, 1, 15, 16, 17, 31, 33, 63, 64, 65, 100, 127, 128, 129, 191, 192, 193,
                        255, 256, 257, 1000, 4000,
                    ] {
                        let mut dst = vec![0xAAu8; 4200];
                        // SAFETY: both ranges lie within their vectors; the
                        // CPU has the kernel's feature (checked above).
                        unsafe {
                            way(
                                dst.as_mut_ptr().add(64 + dst_off),
                                src.as_ptr().add(src_off),
                                len,
                            )
                        };
                        let at = 64 + dst_off;
                        let case = format!("{name} dst+{dst_off} src+{src_off} len {len}");
                        assert_eq!(&dst[at..at + len], &src[src_off..src_off + len], "{case}");
                        assert!(dst[..at].iter().all(|&b| b == 0xAA), "{case}: before");
                        assert!(dst[at + len..].iter().all(|&b| b == 0xAA), "{case}: after");
                    }
                }
            }
        }
    }
}
