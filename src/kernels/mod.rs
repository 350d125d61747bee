//! sharm's own reduction kernels (issue 12): every predefined MPI operation
//! on every predefined element type the standard allows, in pure Rust, so
//! that reductions neither depend on Open MPI's op components (op/avx
//! saturates 8-bit SUM, Open MPI issue 8045) nor need a copy before a fold.
//!
//! Two forms, one convention (Open MPI's: `ompi_op_reduce(op, source,
//! target, n, dt)` computes `target = source op target`, i.e. the operator's
//! left operand is the source):
//! * fused, [`reduce_into`]: `out = a op b` with `a` in the source role and
//!   `b` in the target role; `out` may be `a` or `b` exactly;
//! * in place, [`reduce`]: `inout = in op inout`, i.e. `reduce_into(in, inout,
//!   inout)`, the drop-in for `ompi_op_reduce(op, in, inout, …)`.
//!
//! The predefined operations are commutative, so the order shows only in
//! which operand MIN/MAX/MINLOC/MAXLOC keep on ties and NaNs; those rules are
//! Open MPI's exactly (see [`elementwise`] and [`pairs`]).
//!
//! Map: [`kinds`] (codes shared with `ompi-glue/kernel_ids.c`, layouts,
//! [`supported`]), [`elementwise`] (arithmetic, logical, bitwise ops and the
//! vectorised loop), [`complex`], [`pairs`] (MINLOC/MAXLOC), `x87` (`long
//! double`), [`isa`] (run-time CPU feature selection).

pub mod complex;
pub mod copy;
pub mod elementwise;
pub mod isa;
pub mod kinds;
pub mod pairs;
#[cfg(target_arch = "x86_64")]
mod x87;

#[cfg(test)]
mod tests;

pub use isa::Isa;
pub use kinds::{supported, ElemKind, OpKind, ELEM_KIND_COUNT, OP_KIND_COUNT};

use complex::{C32, C64};
use elementwise::{Band, Bor, Bxor, Land, Lor, Lxor, Max, Min, Prod, Sum, BLOCK_BYTES};

/// `out[i] = a[i] op b[i]` for `n` elements (`a` source, `b` target).
///
/// # Safety
/// `a`, `b` readable and `out` writable for `n * elem.extent()` bytes, any
/// alignment; `out` may equal `a` or `b` but must not partially overlap
/// either.
pub type Kernel = unsafe fn(a: *const u8, b: *const u8, out: *mut u8, n: usize);

/// One element-wise kernel for storage type `$t`, operation `$f`, at `$isa`.
macro_rules! ew {
    ($isa:expr, $t:ty, $f:ty) => {{
        const L: usize = BLOCK_BYTES / std::mem::size_of::<$t>();
        let k: Kernel = match $isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => elementwise::run_avx512::<$t, $f, L>,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => elementwise::run_avx2::<$t, $f, L>,
            _ => elementwise::run_base::<$t, $f, L>,
        };
        Some(k)
    }};
}

/// Integer storage: every element-wise operation.
macro_rules! int_kernels {
    ($isa:expr, $op:expr, $t:ty) => {
        match $op {
            OpKind::Sum => ew!($isa, $t, Sum),
            OpKind::Prod => ew!($isa, $t, Prod),
            OpKind::Min => ew!($isa, $t, Min),
            OpKind::Max => ew!($isa, $t, Max),
            OpKind::Land => ew!($isa, $t, Land),
            OpKind::Lor => ew!($isa, $t, Lor),
            OpKind::Lxor => ew!($isa, $t, Lxor),
            OpKind::Band => ew!($isa, $t, Band),
            OpKind::Bor => ew!($isa, $t, Bor),
            OpKind::Bxor => ew!($isa, $t, Bxor),
            OpKind::MinLoc | OpKind::MaxLoc => None,
        }
    };
}

macro_rules! float_kernels {
    ($isa:expr, $op:expr, $t:ty) => {
        match $op {
            OpKind::Sum => ew!($isa, $t, Sum),
            OpKind::Prod => ew!($isa, $t, Prod),
            OpKind::Min => ew!($isa, $t, Min),
            OpKind::Max => ew!($isa, $t, Max),
            _ => None,
        }
    };
}

macro_rules! complex_kernels {
    ($isa:expr, $op:expr, $t:ty) => {
        match $op {
            OpKind::Sum => ew!($isa, $t, Sum),
            OpKind::Prod => ew!($isa, $t, Prod),
            _ => None,
        }
    };
}

macro_rules! loc_kernels {
    ($op:expr, $v:ty, $k:ty, $koff:expr, $stride:expr) => {
        match $op {
            OpKind::MinLoc => Some(pairs::run::<$v, $k, pairs::MinLoc, $koff, $stride> as Kernel),
            OpKind::MaxLoc => Some(pairs::run::<$v, $k, pairs::MaxLoc, $koff, $stride> as Kernel),
            _ => None,
        }
    };
}

#[cfg(target_arch = "x86_64")]
fn x87_kernel(op: OpKind, elem: ElemKind) -> Option<Kernel> {
    use x87::{LdMax, LdMin, LdProd, LdSum, F80};
    match (elem, op) {
        (ElemKind::LongDouble, OpKind::Sum) => Some(x87::run::<LdSum, 1>),
        (ElemKind::LongDouble, OpKind::Prod) => Some(x87::run::<LdProd, 1>),
        (ElemKind::LongDouble, OpKind::Min) => Some(x87::run::<LdMin, 1>),
        (ElemKind::LongDouble, OpKind::Max) => Some(x87::run::<LdMax, 1>),
        (ElemKind::ComplexLongDouble, OpKind::Sum) => Some(x87::run::<LdSum, 2>),
        (ElemKind::LongDoubleInt, _) => loc_kernels!(op, F80, i32, 16, 32),
        _ => None,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn x87_kernel(_op: OpKind, _elem: ElemKind) -> Option<Kernel> {
    None
}

/// The kernel for `op` on `elem` compiled for `isa` (which the caller must
/// have checked this CPU runs: use [`kernel`] unless testing), or `None`
/// when [`supported`] says the pair is not sharm's to compute.
pub fn kernel_at(op: OpKind, elem: ElemKind, isa: Isa) -> Option<Kernel> {
    if !supported(op, elem) {
        return None;
    }
    use ElemKind::*;
    match elem {
        I8 | FortranInt1 => int_kernels!(isa, op, i8),
        // C bool and MPI_BYTE are bytes; `supported` keeps them to the
        // logical and bitwise operations respectively.
        U8 | Bool | Byte => int_kernels!(isa, op, u8),
        I16 | FortranInt2 => int_kernels!(isa, op, i16),
        U16 => int_kernels!(isa, op, u16),
        I32 | FortranInt4 | FortranLogical => int_kernels!(isa, op, i32),
        U32 => int_kernels!(isa, op, u32),
        I64 | FortranInt8 => int_kernels!(isa, op, i64),
        U64 => int_kernels!(isa, op, u64),
        F32 => float_kernels!(isa, op, f32),
        F64 => float_kernels!(isa, op, f64),
        ComplexF32 => complex_kernels!(isa, op, C32),
        ComplexF64 => complex_kernels!(isa, op, C64),
        FloatInt => loc_kernels!(op, f32, i32, 4, 8),
        DoubleInt => loc_kernels!(op, f64, i32, 8, 16),
        LongInt => loc_kernels!(op, i64, i32, 8, 16),
        TwoInt | TwoInteger => loc_kernels!(op, i32, i32, 4, 8),
        ShortInt => loc_kernels!(op, i16, i32, 4, 8),
        TwoReal => loc_kernels!(op, f32, f32, 4, 8),
        TwoDoublePrecision => loc_kernels!(op, f64, f64, 8, 16),
        LongDouble | ComplexLongDouble | LongDoubleInt => x87_kernel(op, elem),
    }
}

/// The kernel for `op` on `elem` at the best level this CPU runs.
pub fn kernel(op: OpKind, elem: ElemKind) -> Option<Kernel> {
    kernel_at(op, elem, isa::detect())
}

/// Fused: `out = a op b` over `n` elements; `false` (nothing written) when
/// the pair is not supported.
///
/// # Safety
/// As [`Kernel`].
pub unsafe fn reduce_into(
    op: OpKind,
    elem: ElemKind,
    a: *const u8,
    b: *const u8,
    out: *mut u8,
    n: usize,
) -> bool {
    match kernel(op, elem) {
        // SAFETY: forwarded contract.
        Some(k) => unsafe {
            k(a, b, out, n);
            true
        },
        None => false,
    }
}

/// In place, Open MPI's order: `inout = input op inout` (the drop-in for
/// `ompi_op_reduce(op, input, inout, n, dt)`); `false` when unsupported.
///
/// # Safety
/// `input` readable and `inout` readable and writable for `n *
/// elem.extent()` bytes, not overlapping.
pub unsafe fn reduce(
    op: OpKind,
    elem: ElemKind,
    input: *const u8,
    inout: *mut u8,
    n: usize,
) -> bool {
    // SAFETY: forwarded contract; out == b is allowed.
    unsafe { reduce_into(op, elem, input, inout, inout, n) }
}

/// Checks the C side's copy of the kind table (`ompi-glue/kernel_ids.c`)
/// against this one: same counts, and for every element kind the same C
/// `sizeof` (`c_extent(code)`).  Call once at load; on `Err` use Open MPI's
/// operations only.
pub fn check_c_table(
    c_op_count: i32,
    c_elem_count: i32,
    c_extent: impl Fn(i32) -> i64,
) -> Result<(), String> {
    if c_op_count != OP_KIND_COUNT || c_elem_count != ELEM_KIND_COUNT {
        return Err(format!(
            "kernel kind tables differ: C has {c_op_count} ops / {c_elem_count} types, Rust {OP_KIND_COUNT} / {ELEM_KIND_COUNT}"
        ));
    }
    for elem in ElemKind::ALL {
        let c = c_extent(elem as i32);
        if c != elem.extent() as i64 {
            return Err(format!(
                "kernel element {elem:?}: C sizeof {c}, Rust expects {}",
                elem.extent()
            ));
        }
    }
    Ok(())
}
