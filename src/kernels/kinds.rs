//! The operations and element types sharm's kernels know, their numeric codes
//! (shared with `ompi-glue/kernel_ids.c` through `sharm_glue.h`), their C
//! layouts, and which (operation, element) pairs the MPI standard allows.

/// A predefined MPI reduction operation.  The discriminants are the codes of
/// `enum sharm_kernel_op` in `ompi-glue/sharm_glue.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum OpKind {
    Sum = 0,
    Prod = 1,
    Min = 2,
    Max = 3,
    Land = 4,
    Lor = 5,
    Lxor = 6,
    Band = 7,
    Bor = 8,
    Bxor = 9,
    MinLoc = 10,
    MaxLoc = 11,
}

/// A predefined MPI element type, by storage and by the MPI type class that
/// decides which operations apply.  The discriminants are the codes of
/// `enum sharm_kernel_elem` in `ompi-glue/sharm_glue.h`.
///
/// Fortran INTEGER kinds share their storage (and kernels) with the C
/// fixed-width integers but are separate kinds because the standard does not
/// allow the logical operations on them (and Open MPI defines none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ElemKind {
    I8 = 0,
    U8 = 1,
    I16 = 2,
    U16 = 3,
    I32 = 4,
    U32 = 5,
    I64 = 6,
    U64 = 7,
    /// Fortran INTEGER*1 (and INTEGER when it has 1 byte).
    FortranInt1 = 8,
    FortranInt2 = 9,
    FortranInt4 = 10,
    FortranInt8 = 11,
    /// C float, Fortran REAL*4.
    F32 = 12,
    /// C double, Fortran REAL*8 / DOUBLE PRECISION.
    F64 = 13,
    /// C `long double`: on x86-64 the x87 80-bit extended format stored in 16
    /// bytes (10 significant, 6 padding).
    LongDouble = 14,
    /// C `float _Complex`, Fortran COMPLEX: `[re, im]` of f32.
    ComplexF32 = 15,
    /// C `double _Complex`, Fortran DOUBLE COMPLEX.
    ComplexF64 = 16,
    /// C `long double _Complex`: two 16-byte long doubles.
    ComplexLongDouble = 17,
    /// C `_Bool` / C++ `bool`: one byte, any non-zero byte is true.
    Bool = 18,
    /// Fortran LOGICAL (4 bytes, as `ompi_fortran_logical_t` is an `int`):
    /// Open MPI treats it as a C int, non-zero is true, results are 0 or 1.
    FortranLogical = 19,
    /// MPI_BYTE: bitwise operations only.
    Byte = 20,
    /// `struct { float v; int k; }` (MPI_FLOAT_INT), 8 bytes.
    FloatInt = 21,
    /// `struct { double v; int k; }` (MPI_DOUBLE_INT), 16 bytes, k at 8.
    DoubleInt = 22,
    /// `struct { long v; int k; }` (MPI_LONG_INT), 16 bytes, k at 8.
    LongInt = 23,
    /// `struct { int v; int k; }` (MPI_2INT), 8 bytes.
    TwoInt = 24,
    /// `struct { short v; int k; }` (MPI_SHORT_INT), 8 bytes, k at 4.
    ShortInt = 25,
    /// `struct { long double v; int k; }` (MPI_LONG_DOUBLE_INT), 32 bytes, k at 16.
    LongDoubleInt = 26,
    /// Fortran `REAL v, k` (MPI_2REAL): the index is a REAL too.
    TwoReal = 27,
    /// Fortran `DOUBLE PRECISION v, k` (MPI_2DOUBLE_PRECISION).
    TwoDoublePrecision = 28,
    /// Fortran `INTEGER v, k` (MPI_2INTEGER, INTEGER of 4 bytes).
    TwoInteger = 29,
}

/// Number of [`OpKind`] codes (`SHARM_KERNEL_OP_COUNT`).
pub const OP_KIND_COUNT: i32 = 12;
/// Number of [`ElemKind`] codes (`SHARM_KERNEL_ELEM_COUNT`).
pub const ELEM_KIND_COUNT: i32 = 30;

const OPS: [OpKind; OP_KIND_COUNT as usize] = [
    OpKind::Sum,
    OpKind::Prod,
    OpKind::Min,
    OpKind::Max,
    OpKind::Land,
    OpKind::Lor,
    OpKind::Lxor,
    OpKind::Band,
    OpKind::Bor,
    OpKind::Bxor,
    OpKind::MinLoc,
    OpKind::MaxLoc,
];

const ELEMS: [ElemKind; ELEM_KIND_COUNT as usize] = [
    ElemKind::I8,
    ElemKind::U8,
    ElemKind::I16,
    ElemKind::U16,
    ElemKind::I32,
    ElemKind::U32,
    ElemKind::I64,
    ElemKind::U64,
    ElemKind::FortranInt1,
    ElemKind::FortranInt2,
    ElemKind::FortranInt4,
    ElemKind::FortranInt8,
    ElemKind::F32,
    ElemKind::F64,
    ElemKind::LongDouble,
    ElemKind::ComplexF32,
    ElemKind::ComplexF64,
    ElemKind::ComplexLongDouble,
    ElemKind::Bool,
    ElemKind::FortranLogical,
    ElemKind::Byte,
    ElemKind::FloatInt,
    ElemKind::DoubleInt,
    ElemKind::LongInt,
    ElemKind::TwoInt,
    ElemKind::ShortInt,
    ElemKind::LongDoubleInt,
    ElemKind::TwoReal,
    ElemKind::TwoDoublePrecision,
    ElemKind::TwoInteger,
];

impl OpKind {
    /// Every operation, in code order.
    pub const ALL: [OpKind; OP_KIND_COUNT as usize] = OPS;

    /// The kind with this code (`sharm_glue_op_kind`'s result), if any.
    pub fn from_code(code: i32) -> Option<OpKind> {
        usize::try_from(code).ok().and_then(|i| OPS.get(i).copied())
    }
}

/// The MPI type classes of MPI-4.0 section 6.9.2 (plus the pair types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    CInteger,
    FortranInteger,
    Floating,
    Complex,
    Logical,
    Byte,
    Pair,
}

impl ElemKind {
    /// Every element kind, in code order.
    pub const ALL: [ElemKind; ELEM_KIND_COUNT as usize] = ELEMS;

    /// The kind with this code (`sharm_glue_dtype_kind`'s result), if any.
    pub fn from_code(code: i32) -> Option<ElemKind> {
        usize::try_from(code)
            .ok()
            .and_then(|i| ELEMS.get(i).copied())
    }

    /// Bytes from one element to the next: the C `sizeof` (= the MPI extent
    /// of the predefined datatype), padding included.
    pub fn extent(self) -> usize {
        use ElemKind::*;
        match self {
            I8 | U8 | FortranInt1 | Bool | Byte => 1,
            I16 | U16 | FortranInt2 => 2,
            I32 | U32 | FortranInt4 | F32 | FortranLogical => 4,
            I64 | U64 | FortranInt8 | F64 | ComplexF32 => 8,
            FloatInt | TwoInt | ShortInt | TwoReal | TwoInteger => 8,
            LongDouble | ComplexF64 | DoubleInt | LongInt | TwoDoublePrecision => 16,
            ComplexLongDouble | LongDoubleInt => 32,
        }
    }

    fn class(self) -> Class {
        use ElemKind::*;
        match self {
            I8 | U8 | I16 | U16 | I32 | U32 | I64 | U64 => Class::CInteger,
            FortranInt1 | FortranInt2 | FortranInt4 | FortranInt8 => Class::FortranInteger,
            F32 | F64 | LongDouble => Class::Floating,
            ComplexF32 | ComplexF64 | ComplexLongDouble => Class::Complex,
            Bool | FortranLogical => Class::Logical,
            Byte => Class::Byte,
            FloatInt | DoubleInt | LongInt | TwoInt | ShortInt | LongDoubleInt | TwoReal
            | TwoDoublePrecision | TwoInteger => Class::Pair,
        }
    }

    /// Whether the kind involves the x87 extended format, which only the
    /// x86-64 build implements (elsewhere `long double` is another format:
    /// those calls stay with Open MPI).
    fn needs_x87(self) -> bool {
        matches!(
            self,
            ElemKind::LongDouble | ElemKind::ComplexLongDouble | ElemKind::LongDoubleInt
        )
    }
}

/// Whether the MPI standard defines `op` on `elem` (MPI-4.0 section 6.9.2)
/// *and* these kernels implement it on this architecture.  A pair outside
/// this set must go to Open MPI (which reports the error for invalid pairs).
///
/// * MIN, MAX: C integer, Fortran integer, floating point.
/// * SUM, PROD: C integer, Fortran integer, floating point, complex —
///   except PROD on `long double _Complex` (see below).
/// * LAND, LOR, LXOR: C integer, logical.
/// * BAND, BOR, BXOR: C integer, Fortran integer, byte.
/// * MINLOC, MAXLOC: the pair types.
///
/// PROD on `long double _Complex` is left to Open MPI: C's complex multiply
/// recovers infinities from NaN results (C11 Annex G, libgcc's `__mulxc3`),
/// which needs x87 classification and `copysign` beyond the four x87
/// instructions this module uses; `float`/`double` complex PROD implement it.
pub fn supported(op: OpKind, elem: ElemKind) -> bool {
    if elem.needs_x87() && !cfg!(target_arch = "x86_64") {
        return false;
    }
    let class = elem.class();
    use Class::*;
    match op {
        OpKind::Min | OpKind::Max => matches!(class, CInteger | FortranInteger | Floating),
        OpKind::Sum => matches!(class, CInteger | FortranInteger | Floating | Complex),
        OpKind::Prod => {
            matches!(class, CInteger | FortranInteger | Floating | Complex)
                && elem != ElemKind::ComplexLongDouble
        }
        OpKind::Land | OpKind::Lor | OpKind::Lxor => matches!(class, CInteger | Logical),
        OpKind::Band | OpKind::Bor | OpKind::Bxor => {
            matches!(class, CInteger | FortranInteger | Byte)
        }
        OpKind::MinLoc | OpKind::MaxLoc => class == Pair,
    }
}
