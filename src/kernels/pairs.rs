//! MINLOC and MAXLOC on the MPI pair types `struct { V v; K k; }`.
//!
//! Open MPI's rule (`LOC_FUNC` in `op_base_functions.c`), with `a` the source
//! and `b` the target: if `a.v op b.v` (`<` for MINLOC, `>` for MAXLOC) the
//! result is `a`; else if `a.v == b.v` it is `b.v` with the lower of the two
//! indices; else it is `b`.  So ties take the lowest index, a NaN value in
//! either operand keeps the target, and +0/-0 count as equal (keeping the
//! target's sign).  Only the two fields are written, never the padding, as in
//! the C code.  The loop is scalar: these types are rare and branchy.

use std::ptr;

/// A field of a pair type: loaded and stored at a byte address (pair arrays
/// need not be aligned), compared as C compares it.
pub trait Field: Copy {
    /// # Safety
    /// `p` readable for the field's bytes.
    unsafe fn load(p: *const u8) -> Self;
    /// # Safety
    /// `p` writable for the field's bytes.
    unsafe fn store(self, p: *mut u8);
    fn lt(self, other: Self) -> bool;
    fn gt(self, other: Self) -> bool;
    fn eq(self, other: Self) -> bool;
}

macro_rules! native_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            #[inline(always)]
            unsafe fn load(p: *const u8) -> Self {
                // SAFETY: caller guarantees p is readable; any alignment.
                unsafe { ptr::read_unaligned(p.cast::<$t>()) }
            }
            #[inline(always)]
            unsafe fn store(self, p: *mut u8) {
                // SAFETY: caller guarantees p is writable; any alignment.
                unsafe { ptr::write_unaligned(p.cast::<$t>(), self) }
            }
            #[inline(always)]
            fn lt(self, other: Self) -> bool { self < other }
            #[inline(always)]
            fn gt(self, other: Self) -> bool { self > other }
            #[inline(always)]
            #[allow(clippy::float_cmp)] // C's `==`, exactly.
            fn eq(self, other: Self) -> bool { self == other }
        }
    )*};
}
native_field!(i16, i32, i64, f32, f64);

/// Which comparison makes the source win.
pub trait Loc {
    fn wins<V: Field>(a: V, b: V) -> bool;
}
pub struct MinLoc;
pub struct MaxLoc;
impl Loc for MinLoc {
    #[inline(always)]
    fn wins<V: Field>(a: V, b: V) -> bool {
        a.lt(b)
    }
}
impl Loc for MaxLoc {
    #[inline(always)]
    fn wins<V: Field>(a: V, b: V) -> bool {
        a.gt(b)
    }
}

/// `out[i] = a[i] LOC b[i]` over pairs of `STRIDE` bytes with the value at
/// offset 0 and the index at `KOFF`.
///
/// # Safety
/// `a`, `b` readable, `out` writable for `n * STRIDE` bytes; `out` may equal
/// `a` or `b` but must not partially overlap them.
pub unsafe fn run<V: Field, K: Field, O: Loc, const KOFF: usize, const STRIDE: usize>(
    a: *const u8,
    b: *const u8,
    out: *mut u8,
    n: usize,
) {
    for i in 0..n {
        let off = i * STRIDE;
        // SAFETY: off + STRIDE <= n * STRIDE; every field is read before
        // either field of `out` (which may be `a` or `b`) is written.
        unsafe {
            let (pa, pb, po) = (a.add(off), b.add(off), out.add(off));
            let (av, ak) = (V::load(pa), K::load(pa.add(KOFF)));
            let (bv, bk) = (V::load(pb), K::load(pb.add(KOFF)));
            let (v, k) = if O::wins(av, bv) {
                (av, ak)
            } else if av.eq(bv) {
                (bv, if bk.lt(ak) { bk } else { ak })
            } else {
                (bv, bk)
            };
            v.store(po);
            k.store(po.add(KOFF));
        }
    }
}
