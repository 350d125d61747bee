//! Copies into a destination that will not stay cached: non-temporal
//! stores, which skip the read for ownership of every destination line and
//! leave the caches to the data still to come.
//!
//! Used by a receiver for the last copy of a stream too large to stay in
//! the last-level cache together with its source (`isa::stream_threshold`):
//! an ordinary store first reads each destination line from memory, a
//! third of the traffic of a copy that runs at memory speed anyway.

/// Whether a stream of `bytes` bytes should land with `copy_streaming`.
pub fn streams(bytes: usize) -> bool {
    bytes >= super::isa::stream_threshold()
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
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes.
pub unsafe fn copy_local(dst: *mut u8, src: *const u8, len: usize) -> bool {
    let apart = src as usize + len <= dst as usize || dst as usize + len <= src as usize;
    if apart && streams(len) {
        // SAFETY: forwarded contract; the ranges do not overlap.
        unsafe { copy_streaming(dst, src, len) };
        true
    } else {
        // SAFETY: forwarded contract; `copy` allows overlapping ranges.
        unsafe { std::ptr::copy(src, dst, len) };
        false
    }
}

/// Copies `len` bytes from `src` to `dst` with non-temporal stores where
/// the destination is 16-byte aligned (the head before that with an
/// ordinary copy), then orders them like ordinary stores (`sfence`).
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes, not overlapping.
pub unsafe fn copy_streaming(dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        let head = ((16 - dst as usize % 16) % 16).min(len);
        // SAFETY: within the caller's ranges.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, head) };
        let blocks = (len - head) / 16;
        for i in 0..blocks {
            let at = head + 16 * i;
            // SAFETY: `at + 16 <= len`; the store address is 16-byte aligned
            // (`head` aligned it); SSE2 is part of x86-64.
            unsafe {
                let v = _mm_loadu_si128(src.add(at).cast::<__m128i>());
                _mm_stream_si128(dst.add(at).cast::<__m128i>(), v);
            }
        }
        let done = head + 16 * blocks;
        // SAFETY: the tail within the caller's ranges.
        unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), len - done) };
        // Non-temporal stores are weakly ordered: the fence makes them
        // visible before any later store, e.g. the Release store of an
        // acknowledgement or of a publication that hands the buffer on.
        // SAFETY: SSE is part of x86-64.
        unsafe { _mm_sfence() };
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: forwarded contract.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, len)
    };
}

#[cfg(test)]
mod tests {
    use super::{copy_local, copy_streaming};

    /// A local copy as large as the streaming threshold streams when the
    /// ranges are apart, and stays a `memmove` (no streaming, overlap
    /// honoured) when they overlap.  Unknown cache size: it never streams.
    #[test]
    fn local_copies_stream_only_apart_and_large() {
        let n = crate::kernels::isa::stream_threshold();
        if n == usize::MAX {
            let (src, mut dst) = (vec![7u8; 4096], vec![0u8; 4096]);
            // SAFETY: both vectors hold 4096 bytes.
            assert!(!unsafe { copy_local(dst.as_mut_ptr(), src.as_ptr(), 4096) });
            assert_eq!(src, dst);
            return;
        }
        let src: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        let mut dst = vec![0u8; n];
        // SAFETY: both vectors hold n bytes.
        assert!(unsafe { copy_local(dst.as_mut_ptr(), src.as_ptr(), n) });
        assert_eq!(src, dst);
        // Overlapping by a few bytes, both ways: memmove's result.
        let mut both: Vec<u8> = (0..n + 64).map(|i| (i % 253) as u8).collect();
        let expect: Vec<u8> = both[..n].to_vec();
        let p = both.as_mut_ptr();
        // SAFETY: [p, p + n) and [p + 64, p + 64 + n) lie within `both`.
        assert!(!unsafe { copy_local(p.add(64), p, n) });
        assert_eq!(&both[64..], &expect[..]);
        let expect: Vec<u8> = both[64..].to_vec();
        // SAFETY: as above.
        assert!(!unsafe { copy_local(p, p.add(64), n) });
        assert_eq!(&both[..n], &expect[..]);
    }

    /// Every head (destination offset within 16 bytes), every tail, and
    /// lengths around the block size: the bytes arrive, and nothing
    /// around the destination range is touched.
    #[test]
    fn streaming_copy_is_a_copy() {
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
        for dst_off in 0..16 {
            for src_off in [0, 1, 5, 16] {
                for len in [0, 1, 15, 16, 17, 31, 33, 100, 1000, 4000] {
                    let mut dst = vec![0xAAu8; 4200];
                    // SAFETY: both ranges lie within their vectors.
                    unsafe {
                        copy_streaming(
                            dst.as_mut_ptr().add(64 + dst_off),
                            src.as_ptr().add(src_off),
                            len,
                        )
                    };
                    let at = 64 + dst_off;
                    assert_eq!(&dst[at..at + len], &src[src_off..src_off + len]);
                    assert!(dst[..at].iter().all(|&b| b == 0xAA));
                    assert!(dst[at + len..].iter().all(|&b| b == 0xAA));
                }
            }
        }
    }
}
