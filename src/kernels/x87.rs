//! C `long double` on x86-64: the x87 80-bit extended format, 10 significant
//! bytes in a 16-byte slot.  Rust has no such type, so the four operations
//! the kernels need (add, multiply, compare greater, compare equal) are x87
//! instructions in inline assembly.  Each loads its operands from memory,
//! computes at the x87's default 64-bit-mantissa precision (what GCC's
//! `long double` code runs at on Linux) and stores the 10 bytes back, so each
//! result is rounded exactly once, as in Open MPI's C loops; the 6 padding
//! bytes of a slot are never written.
//!
//! Loops: SUM, PROD, MIN, MAX on `long double`, SUM on `long double
//! _Complex`; MINLOC/MAXLOC on `struct { long double v; int k; }` go through
//! [`super::pairs`] with [`F80`] as the value field.

use std::arch::asm;
use std::ptr;

use super::pairs::Field;

/// The 10 significant bytes of a `long double`.
#[derive(Clone, Copy, Debug)]
pub struct F80(pub [u8; 10]);

/// `b + a`, rounded to extended precision.
#[inline]
fn add(a: F80, b: F80) -> F80 {
    let mut r = F80([0; 10]);
    // SAFETY: reads 10 bytes from each operand and writes 10 to `r`; pushes
    // two x87 registers and pops both, so the x87 stack is empty again as the
    // ABI requires; st(0..1) are declared clobbered.
    unsafe {
        asm!(
            "fld tbyte ptr [{b}]",
            "fld tbyte ptr [{a}]",
            "faddp st(1), st",
            "fstp tbyte ptr [{r}]",
            a = in(reg) a.0.as_ptr(),
            b = in(reg) b.0.as_ptr(),
            r = in(reg) r.0.as_mut_ptr(),
            out("st(0)") _,
            out("st(1)") _,
            options(nostack),
        );
    }
    r
}

/// `b * a`, rounded to extended precision.
#[inline]
fn mul(a: F80, b: F80) -> F80 {
    let mut r = F80([0; 10]);
    // SAFETY: as in `add`.
    unsafe {
        asm!(
            "fld tbyte ptr [{b}]",
            "fld tbyte ptr [{a}]",
            "fmulp st(1), st",
            "fstp tbyte ptr [{r}]",
            a = in(reg) a.0.as_ptr(),
            b = in(reg) b.0.as_ptr(),
            r = in(reg) r.0.as_mut_ptr(),
            out("st(0)") _,
            out("st(1)") _,
            options(nostack),
        );
    }
    r
}

/// `(x > y, x == y)` as C evaluates them: both false when either is NaN.
#[inline]
fn compare(x: F80, y: F80) -> (bool, bool) {
    let (above, zero, not_parity): (u8, u8, u8);
    // SAFETY: reads 10 bytes from each operand; FUCOMIP pops one register and
    // FSTP the other, leaving the x87 stack empty.  FUCOMIP sets ZF=PF=CF=1
    // for unordered operands, so "above" (CF=0, ZF=0) is x > y and "equal"
    // is ZF=1 with PF=0.
    unsafe {
        asm!(
            "fld tbyte ptr [{y}]",
            "fld tbyte ptr [{x}]",
            "fucomip st, st(1)",
            "fstp st(0)",
            "seta {ab}",
            "sete {z}",
            "setnp {np}",
            x = in(reg) x.0.as_ptr(),
            y = in(reg) y.0.as_ptr(),
            ab = out(reg_byte) above,
            z = out(reg_byte) zero,
            np = out(reg_byte) not_parity,
            out("st(0)") _,
            out("st(1)") _,
            options(nostack, readonly),
        );
    }
    (above != 0, zero != 0 && not_parity != 0)
}

impl Field for F80 {
    #[inline(always)]
    unsafe fn load(p: *const u8) -> Self {
        // SAFETY: caller guarantees 10 readable bytes.
        F80(unsafe { ptr::read_unaligned(p.cast::<[u8; 10]>()) })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u8) {
        // SAFETY: caller guarantees 10 writable bytes.
        unsafe { ptr::write_unaligned(p.cast::<[u8; 10]>(), self.0) }
    }
    fn lt(self, other: Self) -> bool {
        compare(other, self).0
    }
    fn gt(self, other: Self) -> bool {
        compare(self, other).0
    }
    fn eq(self, other: Self) -> bool {
        compare(self, other).1
    }
}

/// Slot size of a `long double`.
const SLOT: usize = 16;

/// Which `long double` operation a loop applies.
pub trait LdOp {
    fn fold(a: F80, b: F80) -> F80;
}
pub struct LdSum;
pub struct LdProd;
pub struct LdMin;
pub struct LdMax;
impl LdOp for LdSum {
    fn fold(a: F80, b: F80) -> F80 {
        add(a, b)
    }
}
impl LdOp for LdProd {
    fn fold(a: F80, b: F80) -> F80 {
        mul(a, b)
    }
}
impl LdOp for LdMin {
    // Open MPI: b < a ? b : a.
    fn fold(a: F80, b: F80) -> F80 {
        if b.lt(a) {
            b
        } else {
            a
        }
    }
}
impl LdOp for LdMax {
    // Open MPI: b > a ? b : a.
    fn fold(a: F80, b: F80) -> F80 {
        if b.gt(a) {
            b
        } else {
            a
        }
    }
}

/// `out[i] = a[i] ⊕ b[i]` over `n * PARTS` long doubles (PARTS = 2 treats a
/// complex number as two independent sums, which is what complex SUM is).
///
/// # Safety
/// `a`, `b` readable, `out` writable for `n * PARTS * 16` bytes; `out` may
/// equal `a` or `b` but must not partially overlap them.
pub unsafe fn run<O: LdOp, const PARTS: usize>(a: *const u8, b: *const u8, out: *mut u8, n: usize) {
    for i in 0..n * PARTS {
        let off = i * SLOT;
        // SAFETY: off + 10 <= n * PARTS * 16; operands are read before `out`
        // is written.
        unsafe {
            let r = O::fold(F80::load(a.add(off)), F80::load(b.add(off)));
            r.store(out.add(off));
        }
    }
}
