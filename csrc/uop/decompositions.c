/* tinygrad/uop/decompositions.py in C: SLEEF-style exp2/log2/sin built from integer and float ALUs,
 * pow through exp2/log2, division by a constant through multiply-and-shift (magicgu, fast_idiv),
 * threefry2x32, and get_late_rewrite_patterns, the rules that decompose what a renderer cannot emit.
 *
 * The builders make their graphs through UOp's own operators (tinyc's mixin/math.c, which is tinygrad's
 * MathMixin), with Python numbers where tinygrad's source has literals, so every node (and every constant's
 * Python type) is the one tinygrad makes. Every intermediate is borrowed from the rule pool (native.h). */
#include "native.h"
#include "decompositions.h"
#include <math.h>

/* ================================ building blocks ================================ */

/* an operand as Python sees it: a UOp, a float literal or an int literal */
static PyObject *num_u(UOp *u) { return (PyObject *)u; }
static PyObject *num_o(PyObject *o) { return o; }
static PyObject *num_f(double v) { return pool_keep(PyFloat_FromDouble(v)); }
static PyObject *num_i(long long v) { return n_int(v); }
#define V(x) _Generic((x), UOp *: num_u, PyObject *: num_o, float: num_f, double: num_f, default: num_i)(x)

/* 2**n as a Python int (n may exceed 63) */
static PyObject *pow2(int n) {
  PyObject *one = PyLong_FromLong(1), *sh = PyLong_FromLong(n), *r = one && sh ? PyNumber_Lshift(one, sh) : NULL;
  Py_XDECREF(one); Py_XDECREF(sh);
  return pool_keep(r);
}

static UOp *py2(PyObject *(*f)(PyObject *, PyObject *), PyObject *a, PyObject *b) {
  return a && b ? (UOp *)pool_keep(f(a, b)) : NULL;
}
static UOp *cmp2(PyObject *a, PyObject *b, int op) { return a && b ? (UOp *)pool_keep(PyObject_RichCompare(a, b, op)) : NULL; }
static UOp *meth2(const char *name, PyObject *a, PyObject *b) {
  return a && b ? (UOp *)pool_keep(PyObject_CallMethod(a, name, "O", b)) : NULL;
}
/* the Python operators: a + b, a - b, ... with Python's reflection when a is a number */
#define ADD(a, b) py2(PyNumber_Add, V(a), V(b))
#define SUB(a, b) py2(PyNumber_Subtract, V(a), V(b))
#define MUL(a, b) py2(PyNumber_Multiply, V(a), V(b))
#define TDIV(a, b) py2(PyNumber_TrueDivide, V(a), V(b))
#define IDIV(a, b) py2(PyNumber_FloorDivide, V(a), V(b))
#define BAND(a, b) py2(PyNumber_And, V(a), V(b))
#define BOR(a, b) py2(PyNumber_Or, V(a), V(b))
#define BXOR(a, b) py2(PyNumber_Xor, V(a), V(b))
#define LSH(a, b) py2(PyNumber_Lshift, V(a), V(b))
#define RSH(a, b) py2(PyNumber_Rshift, V(a), V(b))
#define LT(a, b) cmp2(V(a), V(b), Py_LT)
#define GE(a, b) cmp2(V(a), V(b), Py_GE)
#define NE(a, b) cmp2(V(a), V(b), Py_NE)        /* a.ne(b) and a != b are the same node */
#define EQ(a, b) meth2("eq", V(a), V(b))        /* a.eq(b) */
#define MODM(a, b) meth2("mod", V(a), V(b))     /* a.mod(b) */
#define NEG(a) u_neg(a)
#define CL(a, v) u_const_like((a), V(v))        /* a.const_like(v) */
#define CAST(a, dt) u_cast((a), (dt))

/* c.where(t, f), t/f UOps or numbers (the UOp among them fixes the const's dtype) */
static UOp *where_(UOp *c, PyObject *t, PyObject *f) {
  return c && t && f ? (UOp *)pool_keep(PyObject_CallMethod((PyObject *)c, "where", "OO", t, f)) : NULL;
}
#define WHERE(c, t, f) where_((c), V(t), V(f))
static UOp *bitcast(UOp *a, DType *dt) { return a && dt ? KEEP(uop_new1(OP_BITCAST, dt, a, NULL)) : NULL; }
static UOp *alu1(Op op, UOp *a) { return u_unary(op, a); }
static UOp *alu2(Op op, UOp *a, UOp *b) { return u_alu2(op, a, b); }

/* shr/shl of decompositions.py: x // 2**y and x * 2**y */
static UOp *shr(UOp *x, int y) { return IDIV(x, pow2(y)); }
static UOp *shl(UOp *x, int y) { return MUL(x, pow2(y)); }

/* ================================ dtype helpers ================================ */

static PyObject *transcendental_dtypes;   /* (float16, float32, float64) */

static bool is_transcendental(DType *dt) {
  DType *s = dtype_scalar(dt);
  return s == DTYPE(FLOAT16) || s == DTYPE(FLOAT32) || s == DTYPE(FLOAT64);
}
/* tinygrad's `assert d.dtype.scalar() in TRANSCENDENTAL_DTYPES` */
static int need_transcendental(UOp *d) {
  if (!d) return -1;
  if (is_transcendental(d->dtype)) return 0;
  PyErr_Format(PyExc_AssertionError, "%R is not one of TRANSCENDENTAL_DTYPES", (PyObject *)dtype_scalar(d->dtype));
  return -1;
}
/* a {float64: ..., float32: ..., float16: ...}[dt.scalar()] lookup: the index 0/1/2, -1 with KeyError */
static int fidx(DType *dt) {
  DType *s = dtype_scalar(dt);
  if (s == DTYPE(FLOAT64)) return 0;
  if (s == DTYPE(FLOAT32)) return 1;
  if (s == DTYPE(FLOAT16)) return 2;
  PyErr_SetObject(PyExc_KeyError, (PyObject *)s);
  return -1;
}
/* the same for {int64: ..., int32: ..., int16: ...} */
static int iidx(DType *dt) {
  DType *s = dtype_scalar(dt);
  if (s == DTYPE(INT64)) return 0;
  if (s == DTYPE(INT32)) return 1;
  if (s == DTYPE(INT16)) return 2;
  PyErr_SetObject(PyExc_KeyError, (PyObject *)s);
  return -1;
}
static DType *sint_of(int i) { return i == 0 ? DTYPE(INT64) : i == 1 ? DTYPE(INT32) : DTYPE(INT16); }
static DType *uint_of(int i) { return i == 0 ? DTYPE(UINT64) : i == 1 ? DTYPE(UINT32) : DTYPE(UINT16); }

/* dtypes.finfo(d.scalar())[1] */
static int mantissa_bits(DType *dt) {
  DType *s = dtype_scalar(dt);
  static const struct { DTypeId id; int bits; } finfo[] = {
    {DT_FLOAT16, 10}, {DT_BFLOAT16, 7}, {DT_FLOAT32, 23}, {DT_FLOAT64, 52}, {DT_FP8E5M2, 2}, {DT_FP8E4M3, 3}};
  if (!dtype_is_float(s)) { PyErr_Format(PyExc_ValueError, "%R is not a floating point type", (PyObject *)s); return -1; }
  for (size_t i = 0; i < sizeof(finfo) / sizeof(finfo[0]); i++) if (s == scalar_dtypes[finfo[i].id]) return finfo[i].bits;
  PyErr_SetObject(PyExc_KeyError, (PyObject *)s);
  return -1;
}
static int exponent_bias(DType *dt) { static const int v[] = {1023, 127, 15}; int i = fidx(dt); return i < 0 ? -1 : v[i]; }
static int exponent_mask(DType *dt) { static const int v[] = {2047, 255, 31}; int i = fidx(dt); return i < 0 ? -1 : v[i]; }

/* ================================ the builders ================================ */

/* inf -> inf, -inf -> _inf, nan -> nan, anything else -> ratio, without branching */
static UOp *lazy_map_numbers(UOp *x, UOp *inf, UOp *_inf, UOp *nan, UOp *ratio) {
  return WHERE(NE(x, INFINITY), WHERE(NE(x, x), nan, WHERE(NE(x, -INFINITY), ratio, _inf)), inf);
}

/* helpers.polyN: Horner from 0.0 (a Python float, so the first node is CONST(0.0) * x) */
static UOp *polyN_obj(PyObject *x, PyObject *const *coeffs, int n) {
  PyObject *acc = num_f(0.0);
  for (int i = 0; i < n && acc; i++) acc = (PyObject *)ADD(MUL(acc, x), coeffs[i]);
  return (UOp *)acc;
}
static UOp *polyN(UOp *x, const double *coeffs, int n) {
  PyObject *acc = num_f(0.0);
  for (int i = 0; i < n && acc && x; i++) acc = (PyObject *)ADD(MUL(acc, x), coeffs[i]);
  return x ? (UOp *)acc : NULL;
}
#define POLY(x, arr) polyN((x), (arr), (int)(sizeof(arr) / sizeof((arr)[0])))

/* round to int away from 0 */
static UOp *rintk(UOp *d) {
  int i = d ? fidx(d->dtype) : -1;
  if (i < 0) return NULL;
  DType *out = dtype_vec(sint_of(i), dtype_vcount(d->dtype));
  return CAST(ADD(d, WHERE(LT(d, 0.0), CL(d, -0.5), CL(d, 0.5))), out);
}

/* 2**q as float_dtype, by putting q into the exponent bits */
static UOp *pow2if(UOp *q, DType *float_dtype) {
  int i = q ? iidx(q->dtype) : -1;
  if (i < 0) return NULL;
  DType *out = dtype_vec(i == 0 ? DTYPE(FLOAT64) : i == 1 ? DTYPE(FLOAT32) : dtype_scalar(float_dtype), dtype_vcount(q->dtype));
  int bias = out ? exponent_bias(out) : -1, mb = bias < 0 ? -1 : mantissa_bits(out);
  return mb < 0 ? NULL : bitcast(shl(ADD(q, bias), mb), out);
}

/* the integer part of log2(d), from the exponent bits */
static UOp *ilogb2k(UOp *d) {
  if (need_transcendental(d) < 0) return NULL;
  int i = fidx(d->dtype), mb = mantissa_bits(d->dtype);
  UOp *dint = bitcast(d, dtype_vec(sint_of(i), dtype_vcount(d->dtype)));
  return SUB(BAND(shr(dint, mb), exponent_mask(d->dtype)), exponent_bias(d->dtype));
}

/* d * 2**e by adding e to the exponent bits; e a float holding an integer */
static UOp *ldexp3k(UOp *d, UOp *e) {
  if (need_transcendental(d) < 0 || need_transcendental(e) < 0) return NULL;
  DType *dt = dtype_vec(sint_of(fidx(d->dtype)), d->dtype->count);
  UOp *m1 = bitcast(d, dt), *m2 = shl(CAST(e, dt), mantissa_bits(d->dtype));
  return CAST(bitcast(ADD(m1, m2), d->dtype), d->dtype);
}

/* d * 2**e as two multiplications by powers of two; e an integer */
static UOp *ldexp2k(UOp *d, UOp *e) {
  if (need_transcendental(d) < 0 || !e) return NULL;
  DType *es = dtype_scalar(e->dtype);
  if (es != DTYPE(INT16) && es != DTYPE(INT32) && es != DTYPE(INT64)) {
    PyErr_Format(PyExc_AssertionError, "ldexp2k needs an int16/32/64 exponent, not %R", (PyObject *)es);
    return NULL;
  }
  UOp *lhs = MUL(d, pow2if(shr(e, 1), d->dtype));
  return MUL(lhs, pow2if(SUB(e, shr(e, 1)), d->dtype));
}

/* (mantissa in [0.5, 1), exponent) of v != 0 */
static int frexp_(UOp *v, UOp **mantissa, UOp **exp) {
  if (need_transcendental(v) < 0) return -1;
  static const long long m1[] = {0x000FFFFFFFFFFFFFLL, 0x807FFFFFLL, 0x83FFLL}, m2[] = {0x3FE0000000000000LL, 0x3F000000LL, 0x3800LL};
  int i = fidx(v->dtype), mb = mantissa_bits(v->dtype);
  UOp *bits = bitcast(v, dtype_vec(uint_of(i), v->dtype->count));
  UOp *exponent = BAND(shr(bits, mb), exponent_mask(v->dtype));
  *mantissa = bitcast(BOR(BAND(bits, m1[i]), m2[i]), v->dtype);
  *exp = ADD(SUB(exponent, exponent_bias(v->dtype)), 1);
  return *mantissa && *exp ? 0 : -1;
}

/* ---- sin's argument reduction ---- */

/* 190 bits of 2/pi, 32 at a time */
static const long long two_over_pi_f[] = {0x00000000, 0x28be60db, 0x9391054a, 0x7f09d5f4, 0x7d4d3770, 0x36d8a566, 0x4f10e410};
#define N_TWO_OVER_PI 7

/* two_over_pi_f[i + offset] chosen by i without indexing: nested wheres on i == count */
static UOp *ph_take(UOp *i, UOp *an, int offset, int count) {
  if (count + offset < N_TWO_OVER_PI - 1) {
    UOp *c = NE(i, count);
    an = WHERE(c, ph_take(i, an, offset, count + 1), CL(an, two_over_pi_f[count + offset]));
  }
  return an;
}
/* x << y and x >> y through uint64 multiply/divide by the float 2**y (y an int32 UOp) */
static UOp *ph_shl_lazy(UOp *x, UOp *y, DType *dt) {
  return CAST(MUL(CAST(x, DTYPE(UINT64)), CAST(pow2if(y, dt), DTYPE(UINT64))), DTYPE(UINT32));
}
static UOp *ph_shr_lazy(UOp *x, UOp *y, DType *dt) {
  return CAST(IDIV(CAST(x, DTYPE(UINT64)), CAST(pow2if(y, dt), DTYPE(UINT64))), DTYPE(UINT32));
}
static UOp *hp_mul(UOp *x, UOp *y) { return MUL(CAST(x, DTYPE(UINT64)), CAST(y, DTYPE(UINT64))); }

/* Payne-Hanek: d mod pi/2 for large d (39800 <= d <= inf), as (r, q) with q % 4 the quadrant */
static int payne_hanek_reduction(UOp *d, UOp **r_out, UOp **q_out) {
  if (need_transcendental(d) < 0) return -1;
  int count = d->dtype->count;
  DType *inter = dtype_scalar(dtype_base(d->dtype)) == DTYPE(FLOAT16) ? dtype_vec(DTYPE(FLOAT32), count) : d->dtype;
  UOp *f, *e;
  if (frexp_(d, &f, &e) < 0) return -1;
  UOp *ia = CAST(MUL(CAST(f, inter), 4.294967296e9), DTYPE(UINT64));
  /* the 96 bits of 2/pi that matter, picked by the exponent */
  UOp *i = shr(CAST(e, DTYPE(UINT64)), 5);
  e = BAND(CAST(e, DTYPE(INT32)), 31);
  UOp *offset = SUB(32, e);
  UOp *a[4];
  for (int k = 0; k < 4; k++) a[k] = ph_take(i, u_const(dtype_vec(DTYPE(UINT32), count), n_int(0)), k, 0);
  /* (two_over_pi_f[i+n] << e) | (two_over_pi_f[i+n+1] >> (32 - e)); e >= 1 for d >= 1 */
  UOp *hi = BOR(ph_shl_lazy(a[0], e, d->dtype), ph_shr_lazy(a[1], offset, d->dtype));
  UOp *mi = BOR(ph_shl_lazy(a[1], e, d->dtype), ph_shr_lazy(a[2], offset, d->dtype));
  UOp *lo = BOR(ph_shl_lazy(a[2], e, d->dtype), ph_shr_lazy(a[3], offset, d->dtype));
  /* x * 2/pi in fixed point */
  UOp *p = ADD(ADD(shl(hp_mul(ia, hi), 32), hp_mul(ia, mi)), shr(hp_mul(ia, lo), 32));
  /* the quotient, rounded to nearest */
  UOp *q = CAST(shr(p, 62), DTYPE(INT32));
  p = BAND(p, 0x3fffffffffffffffLL);
  UOp *r = CAST(MUL(CAST(p, inter), 3.4061215800865545e-19), d->dtype);
  /* a fraction >= 0.5 moves to the next quadrant */
  *r_out = WHERE(LT(f, 0.5), r, SUB(r, M_PI / 2));
  *q_out = WHERE(LT(f, 0.5), q, ADD(q, 1));
  return *r_out && *q_out ? 0 : -1;
}

/* x - q*pi in extended precision (SLEEF's constants); float16 reduces in float32 */
static UOp *cw_reduce_d(UOp *x, UOp *q, UOp *qdh) {
  if (!x || !q) return NULL;
  DType *s = dtype_scalar(x->dtype);
  if (s == DTYPE(FLOAT64)) {
    const double PI_A = 3.1415926218032836914, PI_B = 3.1786509424591713469e-08, PI_C = 1.2246467864107188502e-16,
                 PI_D = 1.2736634327021899816e-24;
    UOp *d = ADD(MUL(qdh, -PI_A), x);
    d = ADD(MUL(q, -PI_A), d);
    d = ADD(MUL(qdh, -PI_B), d);
    d = ADD(MUL(q, -PI_B), d);
    d = ADD(MUL(qdh, -PI_C), d);
    d = ADD(MUL(q, -PI_C), d);
    return ADD(MUL(ADD(qdh, q), -PI_D), d);
  }
  if (s == DTYPE(FLOAT16)) return CAST(cw_reduce_d(CAST(x, DTYPE(FLOAT32)), CAST(q, DTYPE(FLOAT32)), qdh), DTYPE(FLOAT16));
  UOp *d = ADD(MUL(q, -3.1414794921875), x);
  d = ADD(MUL(q, -0.00011315941810607910156), d);
  d = ADD(MUL(q, -1.9841872589410058936e-09), d);
  return ADD(MUL(q, -1.2154201256553420762e-10), d);
}

/* Cody-Waite: d mod pi/2 for 0 <= |d| <= 39800, as (r, q) like payne_hanek_reduction */
static int cody_waite_reduction(UOp *d, UOp **r_out, UOp **q_out) {
  if (!d) return -1;
  const double m_1_pi = 0.318309886183790671537767526745028724;
  UOp *qdh = MUL(CAST(CAST(MUL(d, m_1_pi / 16777216.0), DTYPE(INT64)), d->dtype), 16777216.0);
  UOp *quadrant = dtype_scalar(dtype_base(d->dtype)) == DTYPE(FLOAT64) ? rintk(SUB(MUL(d, m_1_pi), qdh)) : rintk(MUL(d, m_1_pi));
  *r_out = quadrant ? cw_reduce_d(d, CAST(quadrant, d->dtype), qdh) : NULL;
  *q_out = CAST(quadrant, DTYPE(INT32));
  return *r_out && *q_out ? 0 : -1;
}

/* ---- sin on a small angle ---- */

static const double sin_coeff32[] = {2.6083159809786593541503e-06, -0.0001981069071916863322258, 0.00833307858556509017944336,
                                     -0.166666597127914428710938, 1.0};
static const double sin_coeff64[] = {-7.97255955009037868891952e-18, 2.81009972710863200091251e-15, -7.64712219118158833288484e-13,
                                     1.60590430605664501629054e-10, -2.50521083763502045810755e-08, 2.75573192239198747630416e-06,
                                     -0.000198412698412696162806809, 0.00833333333333332974823815, -0.166666666666666657414808, 1.0};

/* d * poly(d*d), float64 coefficients for float64 */
static UOp *trig_poly_obj(UOp *d, PyObject *c32, PyObject *c64) {
  if (!d) return NULL;
  PyObject *c = dtype_scalar(d->dtype) == DTYPE(FLOAT64) ? c64 : c32;
  PyObject *seq = PySequence_Fast(c, "polynomial coefficients must be a sequence");
  if (!seq) return NULL;
  UOp *dd = MUL(d, d), *ret = dd ? MUL(d, polyN_obj((PyObject *)dd, PySequence_Fast_ITEMS(seq), (int)PySequence_Fast_GET_SIZE(seq))) : NULL;
  Py_DECREF(seq);
  return ret;
}
/* sin on [-pi/2, pi/2] */
static UOp *sin_poly(UOp *d) {
  if (!d) return NULL;
  UOp *dd = MUL(d, d);
  return MUL(d, dtype_scalar(d->dtype) == DTYPE(FLOAT64) ? POLY(dd, sin_coeff64) : POLY(dd, sin_coeff32));
}
static UOp *ifand(UOp *q, int n) { return NE(BAND(q, n), 0); }
static UOp *sin_poly_small(UOp *d, UOp *q) {
  UOp *r = sin_poly(d);
  return MUL(r, WHERE(ifand(q, 1), CL(r, -1), CL(r, 1)));
}
static UOp *sin_poly_large(UOp *d, UOp *q) {
  UOp *r = sin_poly(ADD(d, WHERE(ifand(q, 1), CL(d, M_PI / 2), CL(d, 0))));
  return MUL(r, WHERE(ifand(q, 2), CL(r, -1), CL(r, 1)));
}

/* ---- exp2, log2, sin, pow ---- */

/* sin, 1.0 ULP. fast: |x| <= switch_over is assumed (Cody-Waite only); else Payne-Hanek above switch_over. */
UOp *xsin(UOp *d, bool fast, PyObject *switch_over) {
  if (need_transcendental(d) < 0) return NULL;
  /* +-inf and nan become 0 for the arithmetic */
  UOp *x = lazy_map_numbers(d, CL(d, 0.0), CL(d, 0.0), CL(d, 0.0), d);
  UOp *x_sign = WHERE(NE(x, 0), WHERE(LT(x, 0), CL(x, -1), CL(x, 1)), CL(x, 0));
  UOp *x_abs = MUL(x, x_sign), *r, *q, *result;
  if (fast) {
    if (cody_waite_reduction(x_abs, &r, &q) < 0) return NULL;
    result = sin_poly_small(r, q);
  } else {
    if (payne_hanek_reduction(x_abs, &r, &q) < 0) return NULL;
    /* Payne-Hanek needs |x| >= pi/4: small values take Cody-Waite */
    UOp *r_small, *q_small;
    if (cody_waite_reduction(x_abs, &r_small, &q_small) < 0) return NULL;
    UOp *small = LT(x_abs, switch_over), *s = sin_poly_small(r_small, q_small);
    result = WHERE(small, s, sin_poly_large(r, q));
  }
  result = MUL(result, x_sign);
  /* sin(+-inf) and sin(nan) are nan */
  return lazy_map_numbers(d, CL(d, NAN), CL(d, NAN), CL(d, NAN), result);
}

static const double exp2_coeff64[] = {0.4434359082926529454e-9, 0.7073164598085707425e-8, 0.1017819260921760451e-6,
  0.1321543872511327615e-5, 0.1525273353517584730e-4, 0.1540353045101147808e-3, 0.1333355814670499073e-2,
  0.9618129107597600536e-2, 0.5550410866482046596e-1, 0.2402265069591012214e+0, 0.6931471805599452862e+0, 0.1000000000000000000e+1};
static const double exp2_coeff32[] = {0.1535920892e-3, 0.1339262701e-2, 0.9618384764e-2, 0.5550347269e-1, 0.2402264476e+0,
  0.6931471825e+0, 1.0};

/* exp2, 1.0 ULP (https://arxiv.org/pdf/2001.09258) */
UOp *xexp2(UOp *d) {
  if (need_transcendental(d) < 0) return NULL;
  int fi = fidx(d->dtype);
  UOp *x = lazy_map_numbers(d, CL(d, 0.0), CL(d, 0.0), CL(d, 0.0), d);
  UOp *q = rintk(x);
  UOp *s = q ? SUB(x, CAST(q, x->dtype)) : NULL;   /* s = d - round(d) */
  UOp *u = fi == 0 ? POLY(s, exp2_coeff64) : POLY(s, exp2_coeff32);
  u = ldexp2k(u, q);
  static const int upper[] = {1024, 128, 23}, lower[] = {-2000, -150, -22};
  u = WHERE(GE(d, upper[fi]), CL(d, INFINITY), u);   /* overflow to +inf */
  u = WHERE(LT(d, lower[fi]), CL(d, 0.0), u);        /* underflow to 0 */
  return WHERE(NE(d, d), CL(d, NAN), u);
}

static const double log2_coeff64[] = {0.2211941750456081490e+0, 0.2200768693152277689e+0, 0.2623708057488514656e+0,
  0.3205977477944495502e+0, 0.4121985945485324709e+0, 0.5770780162997058982e+0, 0.96179669392608091449};
static const double log2_coeff32[] = {0.4374550283e+0, 0.5764790177e+0, 0.9618012905120};

/* log2, 1.0 ULP (https://arxiv.org/pdf/2001.09258 5.5) */
UOp *xlog2(UOp *d) {
  if (need_transcendental(d) < 0) return NULL;
  int fi = fidx(d->dtype);
  /* denormals are scaled up first: by 2**10 for float16 (2**64 would overflow), 2**64 otherwise */
  int denormal_exp = fi == 2 ? 10 : 64;
  static const double flt_min[] = {1e-4, 1e-4, 6.1e-5};
  UOp *FLT_MIN = CL(d, flt_min[fi]);
  UOp *is_denormal = LT(d, FLT_MIN);
  UOp *a = WHERE(is_denormal, MUL(d, pow2(denormal_exp)), d);
  UOp *e = ilogb2k(MUL(a, 1.0 / 0.75));
  e = a ? CAST(e, a->dtype) : NULL;
  UOp *m = ldexp3k(a, NEG(e));
  e = WHERE(is_denormal, SUB(e, denormal_exp), e);
  UOp *num = SUB(m, 1.0), *den = ADD(m, 1.0);
  UOp *x = TDIV(num, den), *x2 = MUL(x, x), *r;
  if (fi == 0) {
    UOp *t = POLY(x2, log2_coeff64);
    r = ADD(ADD(MUL(t, MUL(x, x2)), e), MUL(x, 2.885390081777926774));
  } else {
    UOp *t = POLY(x2, log2_coeff32);
    r = ADD(ADD(MUL(t, MUL(x, x2)), e), MUL(x, 2.8853900432586669922));
    /* the s_lo term only for float32: it underflows in float16 (where tinygrad adds a literal 0) */
    r = fi == 1 ? ADD(r, MUL(x, 3.2734474483568488616e-08)) : ADD(r, 0);
  }
  r = WHERE(NE(d, INFINITY), r, CL(r, INFINITY));    /* log2(inf) = inf */
  r = WHERE(NE(d, 0.0), r, CL(r, -INFINITY));        /* log2(+-0) = -inf */
  r = WHERE(LT(d, -0.0), CL(r, NAN), r);             /* log2(x < 0) = nan */
  r = WHERE(NE(d, d), CL(r, NAN), r);                /* log2(nan) = nan */
  /* log2(-0.0) = -inf through the reciprocal, since some devices (PTX) don't see x == -0.0 */
  return WHERE(NE(alu1(OP_RECIPROCAL, d), -INFINITY), r, CL(r, -INFINITY));
}

/* base ** exponent = exp2(exponent * log2(|base|)), with the sign and 0**0 fixed up */
UOp *xpow(UOp *base, UOp *exponent) {
  if (!base || !exponent) return NULL;
  UOp *ret = alu1(OP_EXP2, MUL(alu1(OP_LOG2, WHERE(LT(base, 0), NEG(base), base)), exponent));
  /* a negative base: nan for a non-integer exponent, -1 for an odd one */
  UOp *non_int = NE(exponent, CAST(CAST(exponent, DTYPE(INT32)), exponent->dtype));
  UOp *odd = CAST(MODM(CAST(WHERE(LT(exponent, 0), NEG(exponent), exponent), DTYPE(INT32)), 2), DTYPE(BOOL));
  UOp *adj = WHERE(non_int, CL(ret, NAN), WHERE(odd, CL(ret, -1), CL(ret, 1)));
  /* 0 ** 0 = 1 */
  UOp *zz = BAND(EQ(base, 0), EQ(exponent, 0));
  return WHERE(zz, CL(ret, 1), MUL(ret, WHERE(LT(base, 0), adj, CL(ret, 1))));
}

/* ================================ integer division ================================ */

static PyObject *magicgu_cache;   /* {(vmax, d): (m, s)}: tinygrad's lru_cache */

/* (m, s) with x//d == (x*m) >> s for 0 <= x <= vmax, d > 0 (Hacker's Delight, chapter 10). New reference. */
static PyObject *magicgu(PyObject *vmax, PyObject *d) {
  PyObject *key = PyTuple_Pack(2, vmax, d), *ret = NULL;
  if (!key) return NULL;
  if ((ret = PyDict_GetItemWithError(magicgu_cache, key))) { Py_DECREF(key); return Py_NewRef(ret); }
  if (PyErr_Occurred()) { Py_DECREF(key); return NULL; }
  Py_ssize_t mark = pool_mark();
  PyObject *one = n_int(1), *nc = n_sub(n_mul(n_floordiv(n_add(vmax, one), d), d), one);
  PyObject *nb = pool_keep(PyObject_CallMethod(vmax, "bit_length", NULL));
  long nbits = nb ? PyLong_AsLong(nb) : -1;
  if (nc && nbits >= 0 && !PyErr_Occurred()) {
    PyObject *dm1 = n_sub(d, one);
    for (long s = 0; s <= 2 * nbits; s++) {
      PyObject *p = pow2((int)s), *rem = n_mod(n_sub(p, one), d);
      int gt = n_lt(n_mul(nc, n_sub(dm1, rem)), p);   /* 2**s > nc*(d - 1 - (2**s - 1) % d) */
      if (gt < 0) break;
      if (gt) {
        PyObject *m = n_floordiv(n_sub(n_add(p, dm1), rem), d);
        ret = m ? Py_BuildValue("(Ol)", m, s) : NULL;
        break;
      }
    }
    if (!ret && !PyErr_Occurred()) PyErr_SetString(PyExc_AssertionError, "magicgu found no (m, s)");
  }
  pool_release(mark);
  if (ret && PyDict_SetItem(magicgu_cache, key, ret) < 0) Py_CLEAR(ret);
  Py_DECREF(key);
  return ret;
}

/* promo_lattice[dt.scalar()][-1]; NULL with KeyError for dtypes not in the lattice */
static DType *promo_last(DType *dt) {
  DType *s = dtype_scalar(dt);
  static const DTypeId from[] = {DT_BOOL, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64,
                                 DT_FP8E5M2, DT_FP8E4M3, DT_FLOAT16, DT_BFLOAT16, DT_FLOAT32};
  static const DTypeId to[] = {DT_UINT8, DT_INT16, DT_INT32, DT_INT64, DT_FP8E5M2, DT_UINT16, DT_UINT32, DT_UINT64, DT_FP8E5M2,
                               DT_BFLOAT16, DT_BFLOAT16, DT_FLOAT32, DT_FLOAT32, DT_FLOAT64};
  for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++) if (s == scalar_dtypes[from[i]]) return scalar_dtypes[to[i]];
  PyErr_SetObject(PyExc_KeyError, (PyObject *)s);
  return NULL;
}

static bool is_uint_scalar(DType *dt) {
  return dt == DTYPE(UINT8) || dt == DTYPE(UINT16) || dt == DTYPE(UINT32) || dt == DTYPE(UINT64);
}
/* max(a, b) and min(a, b) as Python's builtins: the first of equals wins */
static PyObject *py_max2(PyObject *a, PyObject *b) { int gt = n_lt(a, b); return gt < 0 ? NULL : gt ? b : a; }
static PyObject *py_min2(PyObject *a, PyObject *b) { int lt = n_lt(b, a); return lt < 0 ? NULL : lt ? b : a; }

/* m*vmin >= lo and m*vmax <= hi: 1/0, -1 on error */
static int fits(PyObject *m, PyObject *vmin_, PyObject *vmax_, DType *dt) {
  PyObject *lo = pool_keep(dtype_min(dt)), *hi = pool_keep(dtype_max(dt));
  int a = n_le(lo, n_mul(m, vmin_));
  if (a <= 0) return a;
  return n_le(n_mul(m, vmax_), hi);
}

/* x // d for a constant d > 0 as a multiply and a shift, widening x one step when the product would overflow
 * (if the device has the wider int); NULL without an exception when there is no such form (tinygrad's None). */
UOp *fast_idiv(PyObject *device, UOp *x, PyObject *d, bool dont_cast) {
  if (!x || !d) return NULL;
  PyObject *xmin = vmin(x), *xmax = vmax(x);
  if (!xmin || !xmax) return NULL;
  int nonneg = n_le(n_int(0), xmin);
  if (nonneg < 0) return NULL;
  /* if d is a power of two, this is not valid for signed ints */
  bool is_unsigned = nonneg || is_uint_scalar(x->dtype);
  int pos = n_gti(d, 0);
  if (pos <= 0) {
    if (pos == 0) PyErr_SetString(PyExc_AssertionError, "Sign should have been taken out of divisor");
    return NULL;
  }
  PyObject *lo = py_max2(xmin, pool_keep(dtype_min(x->dtype))), *hi = py_min2(xmax, pool_keep(dtype_max(x->dtype)));
  PyObject *absmin = lo ? pool_keep(PyNumber_Absolute(lo)) : NULL, *big = hi && absmin ? py_max2(hi, absmin) : NULL;
  PyObject *ms = big ? pool_keep(magicgu(big, d)) : NULL;
  if (!ms) return NULL;
  PyObject *m = PyTuple_GET_ITEM(ms, 0), *s = PyTuple_GET_ITEM(ms, 1);
  int ok = fits(m, lo, hi, x->dtype);
  if (ok < 0) return NULL;
  if (ok) {
    UOp *q = RSH(MUL(x, m), s);
    return is_unsigned ? q : ADD(q, WHERE(LT(x, 0), u_const_like(x, n_int(1)), 0));
  }
  /* before widening (slow), shift the powers of two out of d to make x smaller */
  PyObject *low = pool_keep(PyNumber_And(d, n_neg(d)));   /* d & -d */
  int gt1 = n_gti(low, 1);
  if (gt1 < 0) return NULL;
  if (gt1) {
    UOp *ret = fast_idiv(device, IDIV(x, low), n_floordiv(d, low), true);
    if (ret || PyErr_Occurred()) return ret;
  }
  if (dont_cast) return NULL;
  /* promo_lattice would need to give an unsigned type for an unsigned one */
  DType *next = promo_last(x->dtype);
  if (!next) return NULL;
  if (dtype_is_int(next)) {
    int sup = uop_is_dtype_supported(next, device);
    if (sup < 0) return NULL;
    if (sup) {
      ok = fits(m, lo, hi, next);
      if (ok < 0) return NULL;
      if (ok) {
        UOp *q = CAST(RSH(MUL(CAST(x, next), m), s), x->dtype);
        return is_unsigned ? q : ADD(q, WHERE(LT(x, 0), u_const_like(x, n_int(1)), 0));
      }
    }
  }
  return NULL;
}

/* ================================ threefry ================================ */

/* a <op> b inside threefry2x32. With uint64 inputs every operand is a uint UOp or an int, and Python's operator gives
 * a.alu(op, a.ufix(b)): that is built directly. Other inputs go through Python's operators (their promotions). */
static UOp *tf_op(bool direct, Op op, UOp *a, PyObject *b) {
  if (!a || !b) return NULL;
  if (direct) return UOp_Check(b) ? u_alu2(op, a, (UOp *)b) : u_binop(op, a, b);
  switch (op) {
  case OP_ADD: return ADD(a, b);
  case OP_MUL: return MUL(a, b);
  case OP_IDIV: return IDIV(a, b);
  case OP_AND: return BAND(a, b);
  case OP_OR: return BOR(a, b);
  default: return BXOR(a, b);
  }
}

UOp *threefry2x32(UOp *x, UOp *key) {
  DType *u32 = DTYPE(UINT32), *u64 = DTYPE(UINT64);
  bool direct = x->dtype == u64 && key->dtype == u64;
#define T(op, a, b) tf_op(direct, OP_##op, (a), V(b))
  /* split x and key into two uint32 halves */
  UOp *x0 = CAST(T(AND, x, 0xffffffffLL), u32), *x1 = CAST(T(AND, T(IDIV, x, pow2(32)), 0xffffffffLL), u32);
  UOp *key0 = CAST(T(AND, key, 0xffffffffLL), u32), *key1 = CAST(T(AND, T(IDIV, key, pow2(32)), 0xffffffffLL), u32);
  static const int rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  UOp *ks[3] = {key1, T(XOR, T(XOR, key0, key1), 0x1BD11BDA), key0};
  UOp *xr0 = T(ADD, x0, ks[2]), *xr1 = T(ADD, x1, ks[0]);
  for (int i = 0; i < 5; i++) {
    for (int k = 0; k < 4; k++) {
      int r = rotations[i % 2][k];
      UOp *nx0 = T(ADD, xr0, xr1);
      UOp *rot = T(ADD, T(MUL, xr1, pow2(r)), T(IDIV, xr1, pow2(32 - r)));   /* rotate left by r */
      xr1 = T(XOR, nx0, rot);
      xr0 = nx0;
    }
    UOp *n0 = T(ADD, xr0, ks[i % 3]);
    xr1 = T(ADD, T(ADD, T(ADD, xr1, ks[(i + 1) % 3]), i), 1);
    xr0 = n0;
  }
  return T(OR, T(MUL, CAST(xr1, u64), pow2(32)), CAST(xr0, u64));
#undef T
}

/* ================================ is_dtype_supported (the device layer's) ================================ */

static int no_dtype_support(DType *dt, PyObject *device) { UNUSED(dt); UNUSED(device); return 0; }
int (*uop_is_dtype_supported)(DType *dt, PyObject *device) = no_dtype_support;

/* ================================ get_late_rewrite_patterns ================================ */

static bool env_DISABLE_FAST_IDIV;   /* tinygrad's ContextVar; read when a rule set is built (cached, as tinygrad's is) */

static PyObject *powers_of_two;   /* {2**i: i for i in range(64)} */

/* powers_of_two.get(arg, 0) as a C int; -1 on error */
static int pow2_index(PyObject *arg) {
  PyObject *v = PyDict_GetItemWithError(powers_of_two, arg);
  if (!v) return PyErr_Occurred() ? -1 : 0;
  return (int)PyLong_AsLong(v);
}

/* ---- transcendentals: EXP2, LOG2, SIN when the renderer lacks them (or they are forced) ---- */

RULE(rule_xexp2, d) { return xexp2(d); }
RULE(rule_xlog2, d) { return xlog2(d); }
RULE(rule_xsin, d) { return xsin(d, false, num_f(30.0)); }
/* the other float dtypes (fp8s, bfloat16) compute in float32 and cast back */
RULE(via_float32, x, d) {
  return CAST(alu1((Op)x->op, CAST(d, DTYPE(FLOAT32))), x->dtype);
}

#define TD "(dtypes.float16, dtypes.float32, dtypes.float64)"
#define NTD "tuple(dt for dt in dtypes.floats if dt not in " TD ")"
static const RuleDef exp2_defs[] = {
  R("UPat(Ops.EXP2, dtype=" TD ", src=(UPat.var('d'),))", rule_xexp2),
  R("UPat(Ops.EXP2, dtype=" NTD ", src=(UPat.var('d'),), name='x')", via_float32),
};
static const RuleDef log2_defs[] = {
  R("UPat(Ops.LOG2, dtype=" TD ", src=(UPat.var('d'),))", rule_xlog2),
  R("UPat(Ops.LOG2, dtype=" NTD ", src=(UPat.var('d'),), name='x')", via_float32),
};
static const RuleDef sin_defs[] = {
  R("UPat(Ops.SIN, dtype=" TD ", src=(UPat.var('d'),))", rule_xsin),
  R("UPat(Ops.SIN, dtype=" NTD ", src=(UPat.var('d'),), name='x')", via_float32),
};

/* ---- THREEFRY: no real hardware has it ---- */
RULE(rule_threefry, key, x) { return threefry2x32(x, key); }
static const RuleDef threefry_defs[] = {
  R("UPat(Ops.THREEFRY, dtype=dtypes.uint64, src=(UPat.var('x'), UPat.var('key')))", rule_threefry),
};

/* ---- MAX as CMPLT + WHERE (a max function is awkward on many C-style backends) ---- */
RULE(max_to_where, m) {
  UOp *mx = m;
  if (mx->nsrc < 2) return NULL;
  return WHERE(LT(mx->src[0], mx->src[1]), mx->src[1], mx->src[0]);
}
static const RuleDef max_defs[] = {R("UPat(Ops.MAX, name='m')", max_to_where)};

/* ---- SQRT as pow 0.5 ---- */
RULE_MAYBE(sqrt_to_pow, (), d) { return xpow(d, CL(d, 0.5)); }
static const RuleDef sqrt_defs[] = {R("UPat(Ops.SQRT, src=UPat.var('d'))", sqrt_to_pow)};

/* ---- AND: x % 2**y -> x & (2**y - 1) ---- */
RULE(mod_pow2_to_and, c, x) {
  int has = PyDict_Contains(powers_of_two, c->arg);
  return has <= 0 ? NULL : BAND(x, n_sub(c->arg, n_int(1)));
}
static const RuleDef and_defs[] = {R("UPat.var('x', dtypes.ints) % UPat.cvar('c')", mod_pow2_to_and)};

/* ---- OR: !x & !y -> !(x | y) ---- */
RULE(de_morgan, x, y) { return u_not(BOR(x, y)); }
static const RuleDef or_defs[] = {R("UPat.var('x', dtypes.bool).logical_not() & UPat.var('y', dtypes.bool).logical_not()", de_morgan)};

/* ---- SHL: x * 2**y -> x << y ---- */
RULE(mul_pow2_to_shl, c, x) {
  int v = pow2_index(c->arg);
  return v <= 0 ? NULL : LSH(x, v);
}
static const RuleDef shl_defs[] = {R("UPat.var('x', dtypes.ints) * UPat.cvar('c')", mul_pow2_to_shl)};

/* ---- SHR: x // 2**y -> x >> y, rounding toward zero for signed x ---- */
RULE(uidiv_pow2_to_shr, c, x) {   /* no x < 0 to care about for uints */
  int v = pow2_index(c->arg);
  return v <= 0 ? NULL : RSH(x, v);
}
/* (x + (x<0).where(c-1, 0)) >> y; a comparison known from x's range becomes a const */
RULE(idiv_pow2_to_shr, c, x) {
  int v = pow2_index(c->arg);
  if (v <= 0) return NULL;
  UOp *l = LT(x, 0);
  PyObject *lo = vmin(l), *hi = vmax(l);
  if (!lo || !hi) return NULL;
  int same = n_eq(lo, hi);
  if (same < 0) return NULL;
  UOp *cond = same ? CL(l, lo) : l;
  return RSH(ADD(x, WHERE(cond, SUB(c, 1), 0)), v);
}
static const RuleDef shr_defs[] = {
  R("UPat.var('x', dtypes.uints) // UPat.cvar('c')", uidiv_pow2_to_shr),
  R("UPat.var('x', dtypes.ints) // UPat.cvar('c')", idiv_pow2_to_shr),
};

/* ---- SHR, unless DISABLE_FAST_IDIV: division by other constants as multiply-and-shift, MOD through IDIV ---- */
RULE(idiv_const, x, d) { return fast_idiv(ctx, x, d->arg, false); }
RULE(mod_via_idiv, x, d) { return SUB(x, MUL(d, IDIV(x, d))); }
static const RuleDef fast_idiv_defs[] = {
  R("UPat.var('x', dtypes.ints) // UPat.cvar('d', vec=False)", idiv_const),
  R("UPat.var('x', dtypes.ints) % UPat.var('d')", mod_via_idiv),
};

/* ---- NEG (and SUB) ---- */
RULE(mul_m1_to_neg, x) { return alu1(OP_NEG, x); }
RULE(add_neg_to_sub, x, y) { return alu2(OP_SUB, x, y); }
static const RuleDef neg_defs[] = {R("UPat.var('x') * -1", mul_m1_to_neg)};
static const RuleDef sub_defs[] = {R("UPat.var('x') + UPat.var('y').alu(Ops.NEG)", add_neg_to_sub)};

/* ---- CMPLT: late, because simplex wants its inequalities in one form ---- */
RULE(not_lt_c, c, x) { return LT(SUB(c, 1), x); }          /* !(x<c) -> c-1<x */
RULE(not_c_lt, x, c) { return LT(x, ADD(c, 1)); }          /* !(c<x) -> x<c+1 */
RULE(neg_lt_mul, y, c, x) { return LT(MUL(y, NEG(c)), x); } /* -x<y*c -> y*-c<x */
RULE(neg_lt_c, c, x) { return LT(NEG(c), x); }             /* -x<c -> -c<x */
/* (c-1)<x & x<(c+1) -> x==c */
RULE(between_to_eq, c1, c2, x) {
  int same = n_eq(n_add(c1->arg, n_int(1)), n_sub(c2->arg, n_int(1)));
  return same <= 0 ? NULL : EQ(x, ADD(c1, 1));
}
static const RuleDef cmplt_defs[] = {
  R("(UPat.var('x', dtypes.sints) < UPat.cvar('c', dtypes.sints)).logical_not()", not_lt_c),
  R("(UPat.cvar('c', dtypes.sints) < UPat.var('x', dtypes.sints)).logical_not()", not_c_lt),
  R("UPat.var('x', dtypes.sints)*-1 < UPat.var('y', dtypes.sints)*UPat.cvar('c')", neg_lt_mul),
  R("UPat.var('x', dtypes.sints)*-1 < UPat.cvar('c')", neg_lt_c),
  R("(UPat.cvar('c1', vec=False) < UPat.var('x', dtypes.sints)) & (UPat.var('x', dtypes.sints) < UPat.cvar('c2', vec=False))", between_to_eq),
};

/* ---- CMPEQ: !(x != y) -> x == y ---- */
RULE(not_ne_to_eq, x, y) { return alu2(OP_CMPEQ, x, y); }
static const RuleDef cmpeq_defs[] = {R("UPat.var('x').ne(UPat.var('y')).logical_not()", not_ne_to_eq)};

/* ---- MULACC: a*b+c ---- */
RULE(to_mulacc, a, b, c) {
  UOp *src[3] = {a, b, c};
  return KEEP(uop_alu(OP_MULACC, src, 3));
}
static const RuleDef mulacc_defs[] = {R("UPat.var('a')*UPat.var('b')+UPat.var('c')", to_mulacc)};

/* ---- FDIV: backends that emit a division for RECIP: 1/x, and a*(1/b) -> a/b ---- */
RULE(recip_to_fdiv, x) { return alu2(OP_FDIV, CL(x, 1), x); }
RULE(mul_fdiv_to_fdiv, a, b) { return alu2(OP_FDIV, a, b); }
static const RuleDef fdiv_defs[] = {
  R("UPat.var('x').reciprocal()", recip_to_fdiv),
  R("UPat.var('a', dtypes.floats) * UPat.const(dtypes.floats, 1).alu(Ops.FDIV, UPat.var('b'))", mul_fdiv_to_fdiv),
};

/* the conditional groups, each made once at import */
typedef enum { G_EXP2, G_LOG2, G_SIN, G_THREEFRY, G_MAX, G_SQRT, G_AND, G_OR, G_SHL, G_SHR, G_FAST_IDIV, G_NEG, G_SUB, G_CMPLT,
               G_CMPEQ, G_MULACC, G_FDIV, G_COUNT } Group;
static PatternMatcher *groups[G_COUNT];
static PyObject *late_cache;   /* {(ops, force_transcendental): PatternMatcher} */

#define DEFS(d) {d, N(d)}
static const struct { const RuleDef *defs; int n; } group_defs[G_COUNT] = {
  DEFS(exp2_defs), DEFS(log2_defs), DEFS(sin_defs), DEFS(threefry_defs), DEFS(max_defs), DEFS(sqrt_defs), DEFS(and_defs),
  DEFS(or_defs), DEFS(shl_defs), DEFS(shr_defs), DEFS(fast_idiv_defs), DEFS(neg_defs), DEFS(sub_defs), DEFS(cmplt_defs),
  DEFS(cmpeq_defs), DEFS(mulacc_defs), DEFS(fdiv_defs)};

PatternMatcher *get_late_rewrite_patterns(PyObject *ops_tuple, bool force) {
  PyObject *ops = PySequence_Tuple(ops_tuple);
  if (!ops) return NULL;
  PyObject *key = Py_BuildValue("(OO)", ops, force ? Py_True : Py_False);
  PatternMatcher *pm = NULL;
  if (!key) goto end;
  if ((pm = (PatternMatcher *)PyDict_GetItemWithError(late_cache, key)) || PyErr_Occurred()) goto end;
  OpSet have = {{0, 0}};
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ops); i++) {
    int op = op_from_object(PyTuple_GET_ITEM(ops, i));
    if (op < 0) goto end;
    opset_add(&have, op);
  }
#define HAS(o) opset_has(have, OP_##o)
  bool on[G_COUNT] = {
    [G_EXP2] = !HAS(EXP2) || force, [G_LOG2] = !HAS(LOG2) || force, [G_SIN] = !HAS(SIN) || force,
    [G_THREEFRY] = !HAS(THREEFRY), [G_MAX] = !HAS(MAX) && HAS(CMPLT), [G_SQRT] = !HAS(SQRT), [G_AND] = HAS(AND), [G_OR] = HAS(OR),
    [G_SHL] = HAS(SHL), [G_SHR] = HAS(SHR), [G_FAST_IDIV] = HAS(SHR) && !env_DISABLE_FAST_IDIV, [G_NEG] = HAS(NEG),
    [G_SUB] = HAS(NEG) && HAS(SUB), [G_CMPLT] = HAS(CMPLT), [G_CMPEQ] = HAS(CMPEQ), [G_MULACC] = HAS(MULACC), [G_FDIV] = HAS(FDIV)};
#undef HAS
  PatternMatcher *acc = pm_new_native(NULL, NULL, 0);
  for (int g = 0; acc && g < G_COUNT; g++) {
    if (!on[g]) continue;
    PatternMatcher *next = pm_concat(acc, groups[g]);
    Py_DECREF(acc);
    acc = next;
  }
  if (acc && PyDict_SetItem(late_cache, key, (PyObject *)acc) == 0) pm = acc;
  Py_XDECREF(acc);   /* the cache holds it */
end:
  Py_XDECREF(key);
  Py_DECREF(ops);
  return pm;
}

/* ================================ Python entry points ================================ */

/* run a builder with its own pool mark: the result is a new reference, the intermediates are freed */
#define BUILD(expr)                                   \
  do {                                                \
    Py_ssize_t mark_ = pool_mark();                   \
    PyObject *r_ = (PyObject *)(expr);                \
    Py_XINCREF(r_);                                   \
    pool_release(mark_);                              \
    if (!r_ && !PyErr_Occurred()) Py_RETURN_NONE;     \
    return r_;                                        \
  } while (0)
#define BUILD2(call, a, b)                                                   \
  do {                                                                       \
    Py_ssize_t mark_ = pool_mark();                                          \
    PyObject *r_ = (call) < 0 ? NULL : PyTuple_Pack(2, (PyObject *)(a), (PyObject *)(b)); \
    pool_release(mark_);                                                     \
    return r_;                                                               \
  } while (0)

static int as_uop(PyObject *o, void *out) {
  if (!UOp_Check(o)) { PyErr_Format(PyExc_TypeError, "expected a UOp, not %.100s", Py_TYPE(o)->tp_name); return 0; }
  *(UOp **)out = (UOp *)o;
  return 1;
}
static int as_dtype(PyObject *o, void *out) {
  if (!DType_Check(o)) { PyErr_Format(PyExc_TypeError, "expected a DType, not %.100s", Py_TYPE(o)->tp_name); return 0; }
  *(DType **)out = (DType *)o;
  return 1;
}

#define UNARY_ENTRY(name, expr)                                            \
  static PyObject *py_##name(PyObject *mod, PyObject *arg) {               \
    UNUSED(mod);                                                           \
    UOp *d;                                                                \
    if (!as_uop(arg, &d)) return NULL;                                     \
    BUILD(expr);                                                           \
  }
UNARY_ENTRY(xexp2, xexp2(d))
UNARY_ENTRY(xlog2, xlog2(d))
UNARY_ENTRY(rintk, rintk(d))
UNARY_ENTRY(ilogb2k, ilogb2k(d))
UNARY_ENTRY(sin_poly, sin_poly(d))

static PyObject *py_frexp(PyObject *mod, PyObject *arg) {
  UNUSED(mod);
  UOp *v, *a = NULL, *b = NULL;
  if (!as_uop(arg, &v)) return NULL;
  BUILD2(frexp_(v, &a, &b), a, b);
}
static PyObject *py_payne_hanek_reduction(PyObject *mod, PyObject *arg) {
  UNUSED(mod);
  UOp *d, *a = NULL, *b = NULL;
  if (!as_uop(arg, &d)) return NULL;
  BUILD2(payne_hanek_reduction(d, &a, &b), a, b);
}
static PyObject *py_cody_waite_reduction(PyObject *mod, PyObject *arg) {
  UNUSED(mod);
  UOp *d, *a = NULL, *b = NULL;
  if (!as_uop(arg, &d)) return NULL;
  BUILD2(cody_waite_reduction(d, &a, &b), a, b);
}

#define BINARY_ENTRY(name, T1, T2, conv2, expr)                                    \
  static PyObject *py_##name(PyObject *mod, PyObject *args) {                           \
    UNUSED(mod);                                                                        \
    T1 a; T2 b;                                                                         \
    if (!PyArg_ParseTuple(args, "O&O&:" #name, as_uop, &a, conv2, &b)) return NULL;     \
    BUILD(expr);                                                                        \
  }
BINARY_ENTRY(pow2if, UOp *, DType *, as_dtype, pow2if(a, b))
BINARY_ENTRY(ldexp3k, UOp *, UOp *, as_uop, ldexp3k(a, b))
BINARY_ENTRY(ldexp2k, UOp *, UOp *, as_uop, ldexp2k(a, b))
BINARY_ENTRY(sin_poly_small, UOp *, UOp *, as_uop, sin_poly_small(a, b))
BINARY_ENTRY(sin_poly_large, UOp *, UOp *, as_uop, sin_poly_large(a, b))
BINARY_ENTRY(xpow, UOp *, UOp *, as_uop, xpow(a, b))
BINARY_ENTRY(threefry2x32, UOp *, UOp *, as_uop, threefry2x32(a, b))

static PyObject *py_xsin(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"d", "fast", "switch_over", NULL};
  UOp *d;
  int fast = 0;
  PyObject *switch_over = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|pO:xsin", kwlist, as_uop, &d, &fast, &switch_over)) return NULL;
  BUILD(xsin(d, fast, switch_over ? switch_over : num_f(30.0)));
}

static PyObject *py_trig_poly(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  UOp *d;
  PyObject *c32, *c64;
  if (!PyArg_ParseTuple(args, "O&OO:trig_poly", as_uop, &d, &c32, &c64)) return NULL;
  BUILD(trig_poly_obj(d, c32, c64));
}

static PyObject *py_polyN(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *x, *p;
  if (!PyArg_ParseTuple(args, "OO:polyN", &x, &p)) return NULL;
  PyObject *seq = PySequence_Fast(p, "polyN coefficients must be a sequence");
  if (!seq) return NULL;
  Py_ssize_t mark = pool_mark();
  PyObject *r = (PyObject *)polyN_obj(x, PySequence_Fast_ITEMS(seq), (int)PySequence_Fast_GET_SIZE(seq));
  Py_XINCREF(r);
  pool_release(mark);
  Py_DECREF(seq);
  return r;
}

static PyObject *py_lazy_map_numbers(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  UOp *x, *inf, *ninf, *nan, *ratio;
  if (!PyArg_ParseTuple(args, "O&O&O&O&O&:_lazy_map_numbers", as_uop, &x, as_uop, &inf, as_uop, &ninf, as_uop, &nan, as_uop, &ratio))
    return NULL;
  BUILD(lazy_map_numbers(x, inf, ninf, nan, ratio));
}

#define DTYPE_INT_ENTRY(name)                                           \
  static PyObject *py_##name(PyObject *mod, PyObject *arg) {            \
    UNUSED(mod);                                                        \
    DType *dt;                                                          \
    if (!as_dtype(arg, &dt)) return NULL;                               \
    int v = name(dt);                                                   \
    return v < 0 ? NULL : PyLong_FromLong(v);                           \
  }
DTYPE_INT_ENTRY(mantissa_bits)
DTYPE_INT_ENTRY(exponent_bias)
DTYPE_INT_ENTRY(exponent_mask)

static PyObject *py_magicgu(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *vmax_, *d;
  if (!PyArg_ParseTuple(args, "OO:magicgu", &vmax_, &d)) return NULL;
  return magicgu(vmax_, d);
}

static PyObject *py_fast_idiv(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"device", "x", "d", "dont_cast", NULL};
  PyObject *device, *d;
  UOp *x;
  int dont_cast = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO&O|p:fast_idiv", kwlist, &device, as_uop, &x, &d, &dont_cast)) return NULL;
  BUILD(fast_idiv(device, x, d, dont_cast));
}

static PyObject *py_get_late_rewrite_patterns(PyObject *mod, PyObject *args, PyObject *kw) {
  UNUSED(mod);
  static char *kwlist[] = {"ops", "force_transcendental", NULL};
  PyObject *ops;
  int force = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "Op:get_late_rewrite_patterns", kwlist, &ops, &force)) return NULL;
  PatternMatcher *pm = get_late_rewrite_patterns(ops, force);
  return pm ? Py_NewRef((PyObject *)pm) : NULL;
}

#define KWF(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
static PyMethodDef decompositions_functions[] = {
  {"xexp2", py_xexp2, METH_O, "xexp2(d): tinygrad's EXP2 decomposition of d"},
  {"xlog2", py_xlog2, METH_O, "xlog2(d): tinygrad's LOG2 decomposition of d"},
  {"xsin", KWF(py_xsin), "xsin(d, fast=False, switch_over=30.0): tinygrad's SIN decomposition of d"},
  {"xpow", py_xpow, METH_VARARGS, "xpow(base, exponent): base ** exponent through exp2 and log2"},
  {"rintk", py_rintk, METH_O, "rintk(d): d rounded to an int, away from 0"},
  {"pow2if", py_pow2if, METH_VARARGS, "pow2if(q, float_dtype): 2**q as a float"},
  {"ilogb2k", py_ilogb2k, METH_O, "ilogb2k(d): the integer part of log2(d)"},
  {"ldexp3k", py_ldexp3k, METH_VARARGS, "ldexp3k(d, e): d * 2**e, e a float"},
  {"ldexp2k", py_ldexp2k, METH_VARARGS, "ldexp2k(d, e): d * 2**e, e an int"},
  {"frexp", py_frexp, METH_O, "frexp(v): (mantissa, exponent)"},
  {"payne_hanek_reduction", py_payne_hanek_reduction, METH_O, "payne_hanek_reduction(d): (r, q)"},
  {"cody_waite_reduction", py_cody_waite_reduction, METH_O, "cody_waite_reduction(d): (r, q)"},
  {"trig_poly", py_trig_poly, METH_VARARGS, "trig_poly(d, coeff32, coeff64)"},
  {"sin_poly", py_sin_poly, METH_O, "sin_poly(d): sin on [-pi/2, pi/2]"},
  {"sin_poly_small", py_sin_poly_small, METH_VARARGS, "sin_poly_small(d, q)"},
  {"sin_poly_large", py_sin_poly_large, METH_VARARGS, "sin_poly_large(d, q)"},
  {"_lazy_map_numbers", py_lazy_map_numbers, METH_VARARGS, "_lazy_map_numbers(x, inf, _inf, nan, ratio)"},
  {"polyN", py_polyN, METH_VARARGS, "polyN(x, p): Horner's polynomial of x with coefficients p"},
  {"mantissa_bits", py_mantissa_bits, METH_O, "mantissa_bits(dtype)"},
  {"exponent_bias", py_exponent_bias, METH_O, "exponent_bias(dtype)"},
  {"exponent_mask", py_exponent_mask, METH_O, "exponent_mask(dtype)"},
  {"magicgu", py_magicgu, METH_VARARGS, "magicgu(vmax, d): (m, s) with x//d == (x*m) >> s for 0 <= x <= vmax"},
  {"fast_idiv", KWF(py_fast_idiv), "fast_idiv(device, x, d, dont_cast=False): x // d as multiply and shift, or None"},
  {"threefry2x32", py_threefry2x32, METH_VARARGS, "threefry2x32(x, key)"},
  {"get_late_rewrite_patterns", KWF(py_get_late_rewrite_patterns),
   "get_late_rewrite_patterns(ops, force_transcendental): the decomposition rules for a renderer's ops (cached)"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_decompositions(PyObject *m) {
  if (ctxvar_flag("DISABLE_FAST_IDIV", &env_DISABLE_FAST_IDIV) < 0) return -1;
  if (!(magicgu_cache = PyDict_New()) || !(late_cache = PyDict_New()) || !(powers_of_two = PyDict_New())) return -1;
  for (int i = 0; i < 64; i++) {
    PyObject *k = PyLong_FromUnsignedLongLong(1ULL << i), *v = PyLong_FromLong(i);
    int rc = k && v ? PyDict_SetItem(powers_of_two, k, v) : -1;
    Py_XDECREF(k); Py_XDECREF(v);
    if (rc < 0) return -1;
  }
  transcendental_dtypes = PyTuple_Pack(3, (PyObject *)DTYPE(FLOAT16), (PyObject *)DTYPE(FLOAT32), (PyObject *)DTYPE(FLOAT64));
  if (!transcendental_dtypes || tinyc_add(m, "TRANSCENDENTAL_DTYPES", transcendental_dtypes) < 0) return -1;
  for (int g = 0; g < G_COUNT; g++) if (!(groups[g] = pm_from_defs(group_defs[g].defs, group_defs[g].n))) return -1;
  return PyModule_AddFunctions(m, decompositions_functions);
}
