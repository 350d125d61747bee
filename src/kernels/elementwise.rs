//! Element-wise operations (everything but MINLOC/MAXLOC and `long double`)
//! and the loop that applies them, compiled once per instruction-set level.
//!
//! Operand order follows Open MPI's 2-buffer functions
//! (`op_base_functions.c`): `ompi_op_reduce(op, source, target, n, dt)` does
//! `target = target op source` element by element, with `current_func(target,
//! source)` for MIN/MAX.  Every [`Fold::fold`] here takes `(a, b)` =
//! `(source, target)` and returns the new target, so `out = a ⊕ b` leaves in
//! `out` exactly what `ompi_op_reduce(op, a, b, …)` leaves in `b`.
//!
//! * Integers wrap (two's complement), including 8-bit SUM, which Open MPI's
//!   op/avx saturates (Open MPI issue 8045).
//! * MAX is `b > a ? b : a`, MIN is `b < a ? b : a`: on equality (+0 vs -0)
//!   and whenever either operand is NaN the *source* `a` wins, as in Open MPI.
//!   That is exactly x86's `maxps/minps(b, a)`, so the vector code keeps it.
//! * LAND/LOR/LXOR yield 0 or 1 of the element type, non-zero meaning true.
//! * Floating point: one operation per element, never reassociated or
//!   contracted (Rust does not form FMAs), so every instruction-set level and
//!   every run gives the same bits; the only freedom left is which NaN payload
//!   survives when both operands are NaN.

use std::ptr;

use super::complex::{C32, C64};

/// One element of `out = a ⊕ b`; `a` is the source, `b` the target.
pub trait Fold<T: Copy> {
    fn fold(a: T, b: T) -> T;
}

pub struct Sum;
pub struct Prod;
pub struct Min;
pub struct Max;
pub struct Land;
pub struct Lor;
pub struct Lxor;
pub struct Band;
pub struct Bor;
pub struct Bxor;

macro_rules! int_folds {
    ($($t:ty),*) => {$(
        impl Fold<$t> for Sum { #[inline(always)] fn fold(a: $t, b: $t) -> $t { b.wrapping_add(a) } }
        impl Fold<$t> for Prod { #[inline(always)] fn fold(a: $t, b: $t) -> $t { b.wrapping_mul(a) } }
        impl Fold<$t> for Min { #[inline(always)] fn fold(a: $t, b: $t) -> $t { if b < a { b } else { a } } }
        impl Fold<$t> for Max { #[inline(always)] fn fold(a: $t, b: $t) -> $t { if b > a { b } else { a } } }
        impl Fold<$t> for Land { #[inline(always)] fn fold(a: $t, b: $t) -> $t { (b != 0 && a != 0) as $t } }
        impl Fold<$t> for Lor { #[inline(always)] fn fold(a: $t, b: $t) -> $t { (b != 0 || a != 0) as $t } }
        impl Fold<$t> for Lxor { #[inline(always)] fn fold(a: $t, b: $t) -> $t { ((b != 0) ^ (a != 0)) as $t } }
        impl Fold<$t> for Band { #[inline(always)] fn fold(a: $t, b: $t) -> $t { b & a } }
        impl Fold<$t> for Bor { #[inline(always)] fn fold(a: $t, b: $t) -> $t { b | a } }
        impl Fold<$t> for Bxor { #[inline(always)] fn fold(a: $t, b: $t) -> $t { b ^ a } }
    )*};
}
int_folds!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! float_folds {
    ($($t:ty),*) => {$(
        impl Fold<$t> for Sum { #[inline(always)] fn fold(a: $t, b: $t) -> $t { b + a } }
        impl Fold<$t> for Prod { #[inline(always)] fn fold(a: $t, b: $t) -> $t { b * a } }
        impl Fold<$t> for Min { #[inline(always)] fn fold(a: $t, b: $t) -> $t { if b < a { b } else { a } } }
        impl Fold<$t> for Max { #[inline(always)] fn fold(a: $t, b: $t) -> $t { if b > a { b } else { a } } }
    )*};
}
float_folds!(f32, f64);

macro_rules! complex_folds {
    ($($t:ty),*) => {$(
        impl Fold<$t> for Sum {
            #[inline(always)]
            fn fold(a: $t, b: $t) -> $t { <$t>::new(b.re + a.re, b.im + a.im) }
        }
        impl Fold<$t> for Prod {
            #[inline(always)]
            fn fold(a: $t, b: $t) -> $t { b.c_mul(a) }
        }
    )*};
}
complex_folds!(C32, C64);

/// Elements per inner block: 256 bytes, four 512-bit registers per operand.
/// Each block is loaded whole before any of it is stored, which is what makes
/// `out == a` and `out == b` safe, and what lets the compiler vectorise
/// without run-time overlap checks (the blocks live in locals).
pub const BLOCK_BYTES: usize = 256;

/// Ends one block of [`apply`]'s loop with an empty inline-assembly
/// statement, which LLVM's loop vectoriser cannot widen, so it leaves the
/// block loop alone and the block itself is vectorised straight-line (one
/// contiguous load per operand and register, one store).
///
/// Why: once the `for l in 0..L` loop is fully unrolled, the block loop is
/// the innermost loop, and for 64-bit elements at AVX-512 the vectoriser
/// used to vectorise *across* blocks: lane j of a vector took element l of
/// block i + j, i.e. a gather of stride 256 bytes per operand and a scatter
/// for the result (16 kernels: every 64-bit SUM/PROD/MIN/MAX/… at AVX-512,
/// 64 `vgatherqpd`/`vpgatherqq` and 32 scatters each).  That version ran
/// whenever `out` overlapped neither operand, i.e. for every fused call, at
/// a tenth of the speed of the contiguous version (issue 12, docs/kernels.md).
/// The statement emits no instruction and declares no memory, stack or
/// flag effects, so the block's loads, arithmetic and stores are scheduled
/// as before; `tests/kernels.rs` checks the compiled kernels for gathers.
#[inline(always)]
fn block_boundary() {
    // SAFETY: an empty assembly string: no instruction is emitted, and the
    // options promise (truthfully) no memory access, no stack use and no
    // flag change, so nothing the compiler knows is invalidated.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    unsafe {
        std::arch::asm!("", options(nomem, nostack, preserves_flags))
    };
}

/// `out[i] = F::fold(a[i], b[i])` for `i < n`.
///
/// # Safety
/// `a`, `b` readable and `out` writable for `n` elements of `T` (any
/// alignment); `out` may equal `a` or `b` but must not partially overlap them.
#[inline(always)]
pub unsafe fn apply<T: Copy, F: Fold<T>, const L: usize>(
    a: *const u8,
    b: *const u8,
    out: *mut u8,
    n: usize,
) {
    let (a, b, out) = (a.cast::<T>(), b.cast::<T>(), out.cast::<T>());
    let mut i = 0;
    while i + L <= n {
        // SAFETY: i + L <= n, so the block lies inside all three buffers;
        // unaligned accesses are explicit; both loads precede the store.
        unsafe {
            let xa = ptr::read_unaligned(a.add(i).cast::<[T; L]>());
            let mut xb = ptr::read_unaligned(b.add(i).cast::<[T; L]>());
            for l in 0..L {
                xb[l] = F::fold(xa[l], xb[l]);
            }
            ptr::write_unaligned(out.add(i).cast::<[T; L]>(), xb);
        }
        block_boundary();
        i += L;
    }
    while i < n {
        // SAFETY: i < n; element by element for the tail.
        unsafe {
            let r = F::fold(ptr::read_unaligned(a.add(i)), ptr::read_unaligned(b.add(i)));
            ptr::write_unaligned(out.add(i), r);
        }
        i += 1;
    }
}

/// The loop compiled for the baseline (SSE2 on x86-64, NEON on aarch64).
///
/// # Safety
/// As [`apply`].
pub unsafe fn run_base<T: Copy, F: Fold<T>, const L: usize>(
    a: *const u8,
    b: *const u8,
    out: *mut u8,
    n: usize,
) {
    // SAFETY: forwarded contract.
    unsafe { apply::<T, F, L>(a, b, out, n) }
}

/// The loop compiled with AVX2 (256-bit integer and float vectors); a
/// large fused call streams as with AVX-512 ([`run_avx512`]).
///
/// # Safety
/// As [`apply`]; the CPU must support AVX2 (checked by `isa::detect`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub unsafe fn run_avx2<T: Copy, F: Fold<T>, const L: usize>(
    a: *const u8,
    b: *const u8,
    out: *mut u8,
    n: usize,
) {
    // SAFETY (both): forwarded contract.
    if large_fused::<T>(a, b, out, n) {
        unsafe { apply_streaming_avx2::<T, F, L>(a, b, out, n) }
    } else {
        unsafe { apply::<T, F, L>(a, b, out, n) }
    }
}

/// The loop compiled with AVX-512 F+BW+DQ+VL: 512-bit vectors for every
/// element width (BW gives the 8/16-bit lanes, DQ the 64-bit multiply).
/// A fused call (`out` distinct from both operands) whose output reaches
/// [`super::isa::stream_threshold`] stores with non-temporal stores when
/// its three buffers share their offset within a cache line.
///
/// # Safety
/// As [`apply`]; the CPU must support these extensions (`isa::detect`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
pub unsafe fn run_avx512<T: Copy, F: Fold<T>, const L: usize>(
    a: *const u8,
    b: *const u8,
    out: *mut u8,
    n: usize,
) {
    // SAFETY (both): forwarded contract.
    if large_fused::<T>(a, b, out, n) {
        unsafe { apply_streaming_avx512::<T, F, L>(a, b, out, n) }
    } else {
        unsafe { apply::<T, F, L>(a, b, out, n) }
    }
}

/// Whether a call of `n` elements is fused (`out` distinct from both
/// operands) and its output reaches [`super::isa::stream_threshold`]: the
/// calls the vector loops hand to their streaming variant.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn large_fused<T>(a: *const u8, b: *const u8, out: *mut u8, n: usize) -> bool {
    let fused = out.cast_const() != a && out.cast_const() != b;
    fused && n * std::mem::size_of::<T>() >= super::isa::stream_threshold()
}

/// [`apply`] for a large fused call: the blocks are written with
/// non-temporal stores (`vmovntdq`), which skip the read for ownership of
/// each output line and leave the caches to the operands.  One function
/// per vector width (`$vec`, `$per_block` of them in a block of
/// `BLOCK_BYTES`), each inlined into the loop compiled for its ISA.
///
/// # Safety
/// As [`apply`], with `out` overlapping neither operand; the ISA's
/// features present (the caller is compiled for them).
macro_rules! apply_streaming {
    ($name:ident, $vec:ident, $per_block:expr, $stream:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[inline(always)]
        unsafe fn $name<T: Copy, F: Fold<T>, const L: usize>(
            a: *const u8,
            b: *const u8,
            out: *mut u8,
            n: usize,
        ) {
            use std::arch::x86_64::{_mm_sfence, $stream, $vec};
            const { assert!(L * std::mem::size_of::<T>() == BLOCK_BYTES) };
            const { assert!($per_block * std::mem::size_of::<$vec>() == BLOCK_BYTES) };
            let w = std::mem::size_of::<T>();
            // Streaming stores need aligned addresses (and write whole
            // lines from 64-byte aligned ones): the elements before the
            // first aligned one go through the ordinary loop; an `out` not
            // aligned to its element size never reaches alignment, so all
            // of it does.  So does a call whose operands sit at another
            // offset within a cache line than `out`: every 64-byte load
            // then spans two lines, and with streaming stores that measured
            // 20 % *slower* than the ordinary loop (docs/kernels.md, AVX-512),
            // against 25 % faster with all three aligned.
            let line = |p: usize| p % 64;
            if !(out as usize).is_multiple_of(w)
                || line(a as usize) != line(out as usize)
                || line(b as usize) != line(out as usize)
            {
                // SAFETY: forwarded contract.
                return unsafe { apply::<T, F, L>(a, b, out, n) };
            }
            let head = (((64 - out as usize % 64) % 64) / w).min(n);
            // SAFETY: head <= n elements, forwarded contract; the offsets
            // below stay inside the buffers (head + i + L <= n).
            unsafe {
                apply::<T, F, L>(a, b, out, head);
                let (a, b, out, n) = (
                    a.add(head * w),
                    b.add(head * w),
                    out.add(head * w),
                    n - head,
                );
                let mut i = 0;
                while i + L <= n {
                    let xa = ptr::read_unaligned(a.add(i * w).cast::<[T; L]>());
                    let mut xb = ptr::read_unaligned(b.add(i * w).cast::<[T; L]>());
                    for l in 0..L {
                        xb[l] = F::fold(xa[l], xb[l]);
                    }
                    // The block's bytes as vectors (a bit copy the compiler
                    // folds away: they are in registers already).
                    let v = ptr::read_unaligned(xb.as_ptr().cast::<[$vec; $per_block]>());
                    let dst = out.add(i * w).cast::<$vec>();
                    for (j, x) in v.into_iter().enumerate() {
                        // `dst` is 64-byte aligned: out + head elements
                        // is, and every block is BLOCK_BYTES.
                        $stream(dst.add(j), x);
                    }
                    block_boundary();
                    i += L;
                }
                // Non-temporal stores are weakly ordered, even on x86:
                // without this fence the release store that publishes the
                // result (a queue flag) could become visible before the
                // data.
                _mm_sfence();
                apply::<T, F, L>(a.add(i * w), b.add(i * w), out.add(i * w), n - i);
            }
        }
    };
}

apply_streaming!(apply_streaming_avx512, __m512i, 4, _mm512_stream_si512);
apply_streaming!(apply_streaming_avx2, __m256i, 8, _mm256_stream_si256);
