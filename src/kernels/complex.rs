//! C `float _Complex` / `double _Complex` values and their product.
//!
//! Open MPI's PROD is C's `*=` on these types.  GCC compiles it to the
//! textbook formula and, only when both parts come out NaN, calls libgcc's
//! `__mulsc3`/`__muldc3`, which recover infinities as C11 Annex G (G.5.1)
//! specifies.  [`C32::c_mul`]/[`C64::c_mul`] do the same, product by product in
//! the same precision and without fused multiply-adds, so finite results are
//! bit-identical to Open MPI's and infinite operands give the same infinities.

macro_rules! complex_type {
    ($name:ident, $f:ty) => {
        /// `[re, im]`, the C layout of the complex type.
        #[derive(Clone, Copy, Debug, PartialEq)]
        #[repr(C)]
        pub struct $name {
            pub re: $f,
            pub im: $f,
        }

        impl $name {
            #[inline(always)]
            pub fn new(re: $f, im: $f) -> Self {
                Self { re, im }
            }

            /// `self * w`.
            #[inline(always)]
            pub fn c_mul(self, w: Self) -> Self {
                let (a, b, c, d) = (self.re, self.im, w.re, w.im);
                let (ac, bd, ad, bc) = (a * c, b * d, a * d, b * c);
                let x = ac - bd;
                let y = ad + bc;
                if x.is_nan() && y.is_nan() {
                    return Self::recover(a, b, c, d, ac, bd, ad, bc, x, y);
                }
                Self::new(x, y)
            }

            /// Annex G's infinity recovery: an infinite operand makes an
            /// infinite product even when the formula gave NaN.
            #[cold]
            #[inline(never)]
            #[allow(clippy::too_many_arguments)]
            fn recover(
                mut a: $f,
                mut b: $f,
                mut c: $f,
                mut d: $f,
                ac: $f,
                bd: $f,
                ad: $f,
                bc: $f,
                x: $f,
                y: $f,
            ) -> Self {
                // 1 with the sign of v when v is infinite, else 0 with its sign.
                let box_inf = |v: $f| (if v.is_infinite() { 1.0 } else { 0.0 } as $f).copysign(v);
                let zero_nan = |v: $f| {
                    if v.is_nan() {
                        (0.0 as $f).copysign(v)
                    } else {
                        v
                    }
                };
                let mut recalc = false;
                if a.is_infinite() || b.is_infinite() {
                    a = box_inf(a);
                    b = box_inf(b);
                    c = zero_nan(c);
                    d = zero_nan(d);
                    recalc = true;
                }
                if c.is_infinite() || d.is_infinite() {
                    c = box_inf(c);
                    d = box_inf(d);
                    a = zero_nan(a);
                    b = zero_nan(b);
                    recalc = true;
                }
                if !recalc
                    && (ac.is_infinite()
                        || bd.is_infinite()
                        || ad.is_infinite()
                        || bc.is_infinite())
                {
                    a = zero_nan(a);
                    b = zero_nan(b);
                    c = zero_nan(c);
                    d = zero_nan(d);
                    recalc = true;
                }
                if recalc {
                    Self::new(
                        <$f>::INFINITY * (a * c - b * d),
                        <$f>::INFINITY * (a * d + b * c),
                    )
                } else {
                    Self::new(x, y)
                }
            }
        }
    };
}

complex_type!(C32, f32);
complex_type!(C64, f64);
