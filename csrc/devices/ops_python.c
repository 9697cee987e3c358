/* tinygrad/runtime/ops_python.py in C: the PYTHON device, a row of the device table.
 *
 * As in tinygrad, the renderer does not write source code: PythonRenderer.render(uops) serialises the linear uops as
 * base64(pickle([(op, dtype, [src indices], arg), ...])) (SPECIAL keeps no sources: its value comes from the launch
 * dims), PythonCompiler.compile decodes the base64, and PythonProgram(name, lib) unpickles the list. Here the program
 * checks the list once and turns it into an instruction array; a launch interprets it over raw buffer memory.
 *
 * The interpreter keeps tinygrad's model: for every global index the whole warp of local threads runs each op in
 * lockstep (so BARRIER is a no-op), a value is [count][warp] lanes, RANGE/END jump, stores and loads honour the
 * INDEX's gate, DEFINE_LOCAL is shared by the warp and DEFINE_REG is per thread (both zeroed for each global index),
 * and WMMA is emulated with the lane layouts of the tensor cores tinygrad emulates (EMULATE=METAL, AMD, AMD_RDNA4,
 * AMD_MFMA, CUDA, CUDA_SM75, CUDA_SM89, INTEL, AMX). Numbers follow tinygrad's Python semantics: floats are computed
 * in double and rounded to their dtype after each op (truncate), ints wrap to their width, division truncates toward
 * zero (cdiv/cmod), comparisons give bools. Every memory access is checked against the buffer: out of range is
 * tinygrad's IndexError, never a wild read or write. The GIL is held while it runs: errors are Python exceptions. */
#include "ops_python.h"
#include "../renderers/renderer.h"
#include "../uop/uop.h"
#include <math.h>
#include <string.h>

/* ================================================================================================
 * Allocator: zeroed host memory behind a header that remembers its size (a launch bounds-checks against it)
 * ================================================================================================ */

typedef struct { size_t nbytes; size_t pad[7]; char data[]; } PyBuf;   /* 64-byte header: data stays aligned */

static void *python_alloc(void *dev, size_t nbytes) {
  UNUSED(dev);
  PyBuf *b = nbytes > SIZE_MAX - sizeof(PyBuf) ? NULL : PyMem_RawCalloc(1, sizeof(PyBuf) + nbytes);
  if (!b) { PyErr_Format(PyExc_MemoryError, "could not allocate %zu bytes on PYTHON", nbytes); return NULL; }
  b->nbytes = nbytes;
  return b;
}
static void python_free(void *dev, void *buf, size_t nbytes) { UNUSED(dev); UNUSED(nbytes); PyMem_RawFree(buf); }
static int python_copyin(void *dev, void *buf, const void *src, size_t nbytes) {
  UNUSED(dev);
  PyBuf *b = buf;
  if (nbytes > b->nbytes) { PyErr_Format(PyExc_ValueError, "copyin of %zu bytes into a %zu-byte buffer", nbytes, b->nbytes); return -1; }
  memmove(b->data, src, nbytes);
  return 0;
}
static int python_copyout(void *dev, void *dst, void *buf, size_t nbytes) {
  UNUSED(dev);
  PyBuf *b = buf;
  if (nbytes > b->nbytes) { PyErr_Format(PyExc_ValueError, "copyout of %zu bytes from a %zu-byte buffer", nbytes, b->nbytes); return -1; }
  memmove(dst, b->data, nbytes);
  return 0;
}
static void *python_host_view(void *dev, void *buf) { UNUSED(dev); return ((PyBuf *)buf)->data; }

/* ================================================================================================
 * Numbers as tinygrad's Python emulator holds them
 * ================================================================================================ */

typedef union { int64_t i; uint64_t u; double f; } Val;
/* how a dtype's values are held: Python floats, signed ints, unsigned ints, bools (0/1) */
typedef enum { K_F, K_I, K_U, K_B, K_NONE } Kind;

static Kind kind_of(DTypeId id) {
  switch (id) {
  case DT_BOOL: return K_B;
  case DT_INT8: case DT_INT16: case DT_INT32: case DT_INT64: case DT_INDEX: return K_I;
  case DT_UINT8: case DT_UINT16: case DT_UINT32: case DT_UINT64: return K_U;
  case DT_FP8E4M3: case DT_FP8E5M2: case DT_FLOAT16: case DT_BFLOAT16: case DT_FLOAT32: case DT_FLOAT64: return K_F;
  default: return K_NONE;
  }
}

/* the storage size of a dtype's element (tinygrad's storage_fmt_for_dtype): bf16 as 'H', fp8 as 'B' */
static int storage_size(DTypeId id) {
  switch (id) {
  case DT_BOOL: case DT_INT8: case DT_UINT8: case DT_FP8E4M3: case DT_FP8E5M2: return 1;
  case DT_INT16: case DT_UINT16: case DT_FLOAT16: case DT_BFLOAT16: return 2;
  case DT_INT32: case DT_UINT32: case DT_FLOAT32: return 4;
  case DT_INT64: case DT_UINT64: case DT_FLOAT64: return 8;
  default: return 0;
  }
}

/* an int's bits wrapped to the dtype's width (ctypes c_int8(x).value, ...); index is not truncated (Python int) */
static uint64_t wrap_int(DTypeId id, uint64_t x) {
  switch (id) {
  case DT_BOOL: return x != 0;
  case DT_INT8: return (uint64_t)(int64_t)(int8_t)(uint8_t)x;
  case DT_INT16: return (uint64_t)(int64_t)(int16_t)(uint16_t)x;
  case DT_INT32: return (uint64_t)(int64_t)(int32_t)(uint32_t)x;
  case DT_UINT8: return x & 0xFF;
  case DT_UINT16: return x & 0xFFFF;
  case DT_UINT32: return x & 0xFFFFFFFFu;
  default: return x;
  }
}

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* struct.pack('f', x): OverflowError where a finite x rounds past float's range */
static int pack_f32(double x, float *out) {
  *out = (float)x;
  if (isinf(*out) && isfinite(x)) { PyErr_SetString(PyExc_OverflowError, "float too large to pack with f format"); return -1; }
  return 0;
}

/* float_to_fp16: struct's half rounding, overflow to inf */
static double round_f16(double x) {
  unsigned char b[2];
  if (PyFloat_Pack2(x, (char *)b, 1) < 0) { PyErr_Clear(); return copysign(INFINITY, x); }
  return PyFloat_Unpack2((const char *)b, 1);
}

/* float_to_bf16: round to nearest even on the float32 bits */
static int round_bf16(double x, double *out) {
  float f;
  if (!isfinite(x)) { *out = x; return 0; }
  if (pack_f32(x, &f) < 0) return -1;
  uint32_t u = f32_bits(f);
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  *out = bits_f32(u);
  return 0;
}

/* float_to_fp8 (NVIDIA's cuda_fp8.hpp rounding, as tinygrad ports it) */
typedef struct { int bias, sig_bits; uint64_t mant_mask, min_denorm_o2, overflow, maxnorm, minnorm; } FP8Cfg;
static const FP8Cfg fp8_e4m3 = {7, 4, 0x7, 0x3F50000000000000ull, 0x407D000000000000ull, 0x7E, 0x3F90000000000000ull};
static const FP8Cfg fp8_e5m2 = {15, 3, 0x3, 0x3EE0000000000000ull, 0x40EE000000000000ull - 1, 0x7B, 0x3F10000000000000ull};

static uint8_t float_to_fp8(double x, DTypeId id) {
  bool e4m3 = id == DT_FP8E4M3;
  if (e4m3 && !isfinite(x)) return copysign(1, x) > 0 ? 0x7f : 0xff;
  if (!e4m3 && isinf(x)) return x > 0 ? 0x7c : 0xfc;
  const FP8Cfg *c = e4m3 ? &fp8_e4m3 : &fp8_e5m2;
  uint64_t xb;
  memcpy(&xb, &x, 8);
  uint64_t half_ulp = (uint64_t)1 << (53 - c->sig_bits - 1), sign = ((xb >> 63) & 1) << 7, absx = xb & 0x7FFFFFFFFFFFFFFFull;
  int64_t exp = (int64_t)((xb >> 52) & 0x7FF) - 1023 + c->bias;
  uint64_t mant = (xb >> (53 - c->sig_bits)) & c->mant_mask, res;
  if (absx <= c->min_denorm_o2) res = 0;
  else if (absx > 0x7FF0000000000000ull) res = e4m3 ? 0x7F : (0x7E | mant);
  else if (absx > c->overflow) res = c->maxnorm;
  else if (absx >= c->minnorm) {
    res = ((uint64_t)exp << (c->sig_bits - 1)) | mant;
    uint64_t rb = xb & ((half_ulp << 1) - 1);
    if (rb > half_ulp || (rb == half_ulp && (mant & 1))) res++;
  } else {
    int shift = (int)(1 - exp);   /* 1..5: absx > min_denorm_o2 bounds the exponent */
    mant |= (uint64_t)1 << (c->sig_bits - 1);
    res = mant >> shift;
    uint64_t rb = (xb | ((uint64_t)1 << 52)) & ((half_ulp << (shift + 1)) - 1);
    if (rb > (half_ulp << shift) || (rb == (half_ulp << shift) && (res & 1))) res++;
  }
  return (uint8_t)(res | sign);
}

static double fp8_to_float(uint8_t x, DTypeId id) {
  uint32_t ur = (uint32_t)x << 8;
  if (id == DT_FP8E5M2 && (ur & 0x7FFF) > 0x7C00) ur = 0x7FFF;
  else if (id == DT_FP8E4M3) {
    uint32_t sign = ur & 0x8000, exponent = ((ur & 0x7800) >> 1) + 0x2000, mant = (ur & 0x0700) >> 1;
    if ((x & 0x7F) == 0x7F) ur = 0x7FFF;
    else {
      if (exponent == 0x2000) {
        if (mant) {
          mant <<= 1;
          while (!(mant & 0x0400)) mant <<= 1, exponent -= 0x0400;
          mant &= 0x03FF;
        } else exponent = 0;
      }
      ur = sign | exponent | mant;
    }
  }
  unsigned char b[2] = {(unsigned char)(ur & 0xFF), (unsigned char)(ur >> 8)};
  return PyFloat_Unpack2((const char *)b, 1);
}

/* tinygrad's truncate[dtype] on a float: the value rounded to the dtype; -1 with an exception (bf16 overflow) */
static int round_float(DTypeId id, double *x) {
  switch (id) {
  case DT_FLOAT32: *x = (double)(float)*x; return 0;
  case DT_FLOAT16: *x = round_f16(*x); return 0;
  case DT_BFLOAT16: return round_bf16(*x, x);
  case DT_FP8E4M3: case DT_FP8E5M2: *x = fp8_to_float(float_to_fp8(*x, id), id); return 0;
  default: return 0;
  }
}

/* int(x) of a float (dtypes.as_const to an int dtype), wrapped to the dtype: Python's errors for nan and inf */
static int float_to_int(double x, DTypeId id, Val *out) {
  if (isnan(x)) { PyErr_SetString(PyExc_ValueError, "cannot convert float NaN to integer"); return -1; }
  if (isinf(x)) { PyErr_SetString(PyExc_OverflowError, "cannot convert float infinity to integer"); return -1; }
  double t = trunc(x);
  uint64_t bits;
  if (fabs(t) < 9.2e18) bits = (uint64_t)(int64_t)t;
  else {   /* the exact int modulo 2**64: fmod is exact */
    double r = fmod(t, 18446744073709551616.0);
    if (r < 0) r += 18446744073709551616.0;
    bits = r >= 18446744073709551616.0 ? 0 : (uint64_t)r;
  }
  out->u = wrap_int(id, bits);
  return 0;
}

/* a value of kind k as a double (float(x)) and as truth (bool(x)) */
static double as_double(Val v, Kind k) { return k == K_F ? v.f : k == K_U ? (double)v.u : (double)v.i; }
static bool truth(Val v, Kind k) { return k == K_F ? v.f != 0 : v.u != 0; }

/* dtypes.as_const then truncate: v of kind k to the dtype `id` */
static int convert(Val v, Kind k, DTypeId id, Val *out) {
  if (k == K_F && isnan(v.f)) v.f = NAN;   /* as_const canonicalises nan to math.nan (a NaN's sign bit is dropped) */
  switch (kind_of(id)) {
  case K_B: out->i = truth(v, k); return 0;
  case K_F: out->f = as_double(v, k); return round_float(id, &out->f);
  case K_I: case K_U:
    if (k == K_F) return float_to_int(v.f, id, out);
    out->u = wrap_int(id, v.u);
    return 0;
  default: PyErr_SetString(PyExc_TypeError, "no conversion to this dtype"); return -1;
  }
}

/* a value as a Python number (for messages) */
static PyObject *val_object(Val v, Kind k) {
  return k == K_F ? PyFloat_FromDouble(v.f) : k == K_U ? PyLong_FromUnsignedLongLong(v.u) : k == K_B ? PyBool_FromLong((long)v.i)
                  : PyLong_FromLongLong(v.i);
}

/* ---- memory in a dtype's storage format ---- */

typedef struct { char *data; int64_t n; DTypeId id; } Mem;       /* n elements of dtype id */
typedef struct { Mem *m; int64_t off; bool gate; } Ptr;          /* one lane of a pointer (tinygrad's (m, o, g)) */

static Val mem_read(const Mem *m, int64_t i) {
  const char *p = m->data + i * storage_size(m->id);
  Val v;
  v.u = 0;
  switch (m->id) {
  case DT_BOOL: v.i = *(const uint8_t *)p != 0; break;
  case DT_INT8: v.i = *(const int8_t *)p; break;
  case DT_UINT8: v.u = *(const uint8_t *)p; break;
  case DT_INT16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
  case DT_UINT16: { uint16_t x; memcpy(&x, p, 2); v.u = x; break; }
  case DT_INT32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
  case DT_UINT32: { uint32_t x; memcpy(&x, p, 4); v.u = x; break; }
  case DT_INT64: case DT_UINT64: memcpy(&v.u, p, 8); break;
  case DT_FLOAT16: v.f = PyFloat_Unpack2(p, 1); break;
  case DT_BFLOAT16: { uint16_t x; memcpy(&x, p, 2); v.f = bits_f32((uint32_t)x << 16); break; }
  case DT_FP8E4M3: case DT_FP8E5M2: v.f = fp8_to_float(*(const uint8_t *)p, m->id); break;
  case DT_FLOAT32: { float x; memcpy(&x, p, 4); v.f = x; break; }
  case DT_FLOAT64: memcpy(&v.f, p, 8); break;
  default: break;
  }
  return v;
}

/* m[i] = to_storage_scalar(v): -1 with an exception (bf16 of a float past float's range) */
static int mem_write(const Mem *m, int64_t i, Val v) {
  char *p = m->data + i * storage_size(m->id);
  switch (m->id) {
  case DT_BOOL: *(uint8_t *)p = v.u != 0; return 0;
  case DT_INT8: case DT_UINT8: *(uint8_t *)p = (uint8_t)v.u; return 0;
  case DT_INT16: case DT_UINT16: { uint16_t x = (uint16_t)v.u; memcpy(p, &x, 2); return 0; }
  case DT_INT32: case DT_UINT32: { uint32_t x = (uint32_t)v.u; memcpy(p, &x, 4); return 0; }
  case DT_INT64: case DT_UINT64: memcpy(p, &v.u, 8); return 0;
  case DT_FLOAT16: return PyFloat_Pack2(round_f16(v.f), p, 1);
  case DT_BFLOAT16: {
    double r;
    float f;
    if (round_bf16(v.f, &r) < 0 || pack_f32(r, &f) < 0) return -1;
    uint16_t x = (uint16_t)(f32_bits(f) >> 16);
    memcpy(p, &x, 2);
    return 0;
  }
  case DT_FP8E4M3: case DT_FP8E5M2: *(uint8_t *)p = float_to_fp8(v.f, m->id); return 0;
  case DT_FLOAT32: { float x = (float)v.f; memcpy(p, &x, 4); return 0; }
  case DT_FLOAT64: memcpy(p, &v.f, 8); return 0;
  default: PyErr_SetString(PyExc_RuntimeError, "memory of an unsupported dtype"); return -1;
  }
}

/* ================================================================================================
 * ALU: python_alu on one lane, then truncate to the result's dtype
 * ================================================================================================ */

/* cdiv on ints: |x| // |y| with the sign of x*y; 0 when y == 0 */
static uint64_t cdiv_i(int64_t x, int64_t y) {
  if (y == 0) return 0;
  uint64_t ax = x < 0 ? -(uint64_t)x : (uint64_t)x, ay = y < 0 ? -(uint64_t)y : (uint64_t)y, q = ax / ay;
  return (x < 0) != (y < 0) ? -q : q;
}

/* Python's float floor division of two non-negative floats (float_floor_div) */
static double floordiv_pos(double x, double y) {
  double mod = fmod(x, y), div = (x - mod) / y, fl;
  if (div) { fl = floor(div); if (div - fl > 0.5) fl += 1.0; }
  else fl = copysign(0.0, x / y);
  return fl;
}
static double cdiv_f(double x, double y) {
  if (y == 0) return 0;
  double q = floordiv_pos(fabs(x), fabs(y));
  return x * y < 0 ? -q : q;
}

/* x ** y of ints, y >= 0, modulo 2**64 */
static uint64_t ipow(uint64_t x, uint64_t y) {
  uint64_t r = 1;
  for (; y; y >>= 1, x *= x) if (y & 1) r *= x;
  return r;
}

/* safe_pow on floats, with Python's float pow: 0 ** -y is inf, a complex result nan, a finite overflow OverflowError */
static int pow_f(double x, double y, double *out) {
  if (x == 0 && y < 0) { *out = INFINITY; return 0; }
  *out = pow(x, y);
  if (isinf(*out) && isfinite(x) && isfinite(y)) { PyErr_SetString(PyExc_OverflowError, "(34, 'Numerical result out of range')"); return -1; }
  return 0;
}

static int negative_shift(void) { PyErr_SetString(PyExc_ValueError, "negative shift count"); return -1; }

/* one op on floats */
static int alu_f(Op op, double a, double b, double c, Val *out) {
  double r;
  switch (op) {
  case OP_ADD: r = a + b; break;
  case OP_SUB: r = a - b; break;
  case OP_MUL: r = a * b; break;
  case OP_NEG: r = -a; break;
  case OP_MULACC: r = a * b + c; break;   /* two roundings in double, as (x*y)+z in Python */
  case OP_MAX: r = b > a ? b : a; break;
  case OP_WHERE: r = a != 0 ? b : c; break;
  case OP_CMPLT: out->i = a < b; return 0;
  case OP_CMPNE: out->i = a != b; return 0;
  case OP_CMPEQ: out->i = a == b; return 0;
  case OP_IDIV: r = cdiv_f(a, b); break;
  case OP_MOD: r = a - cdiv_f(a, b) * b; break;
  case OP_LOG2: r = a > 0 ? log2(a) : a == 0 ? -INFINITY : NAN; break;
  case OP_EXP2: r = pow(2.0, a); break;     /* 2 ** x: inf on overflow */
  case OP_SQRT: r = a >= 0 ? sqrt(a) : NAN; break;
  case OP_RECIPROCAL: r = a != 0 ? 1 / a : copysign(INFINITY, a); break;
  case OP_SIN: r = isinf(a) ? NAN : sin(a); break;
  case OP_POW: if (pow_f(a, b, &r) < 0) return -1; break;
  case OP_TRUNC:
    if (isnan(a)) { PyErr_SetString(PyExc_ValueError, "cannot convert float NaN to integer"); return -1; }
    if (isinf(a)) { PyErr_SetString(PyExc_OverflowError, "cannot convert float infinity to integer"); return -1; }
    r = trunc(a);
    break;
  default: PyErr_Format(PyExc_TypeError, "unsupported operand type(s) for %s: 'float'", op_names[op]); return -1;
  }
  out->f = r;
  return 0;
}

/* one op on ints (k: K_I, K_U or K_B); results are bits, wrapped by the caller */
static int alu_int(Op op, Kind k, Val a, Val b, Val c, Val *out) {
  bool s = k != K_U;   /* signed (bools compute as the ints 0 and 1) */
  switch (op) {
  case OP_ADD: out->u = a.u + b.u; return 0;
  case OP_SUB: out->u = a.u - b.u; return 0;
  case OP_MUL: out->u = a.u * b.u; return 0;
  case OP_NEG: out->u = -a.u; return 0;
  case OP_MULACC: out->u = a.u * b.u + c.u; return 0;
  case OP_XOR: out->u = a.u ^ b.u; return 0;
  case OP_OR: out->u = a.u | b.u; return 0;
  case OP_AND: out->u = a.u & b.u; return 0;
  case OP_WHERE: *out = a.u ? b : c; return 0;
  case OP_CMPNE: out->i = a.u != b.u; return 0;
  case OP_CMPEQ: out->i = a.u == b.u; return 0;
  case OP_CMPLT: out->i = s ? a.i < b.i : a.u < b.u; return 0;
  case OP_MAX: *out = (s ? b.i > a.i : b.u > a.u) ? b : a; return 0;
  case OP_IDIV: out->u = s ? cdiv_i(a.i, b.i) : b.u ? a.u / b.u : 0; return 0;
  case OP_MOD: out->u = a.u - (s ? cdiv_i(a.i, b.i) : b.u ? a.u / b.u : 0) * b.u; return 0;
  case OP_SHL:
    if (s && b.i < 0) return negative_shift();
    out->u = b.u >= 64 ? 0 : a.u << b.u;
    return 0;
  case OP_SHR:
    if (s && b.i < 0) return negative_shift();
    if (!s) out->u = b.u >= 64 ? 0 : a.u >> b.u;
    else out->i = b.u >= 64 ? (a.i < 0 ? -1 : 0) : a.i < 0 ? ~(~a.i >> b.u) : a.i >> b.u;
    return 0;
  case OP_TRUNC: *out = a; return 0;
  case OP_POW: case OP_EXP2: {
    Val base = op == OP_EXP2 ? (Val){.i = 2} : a, e = op == OP_EXP2 ? a : b;
    if (s && e.i < 0) { PyErr_SetString(PyExc_TypeError, "an int raised to a negative power is a float, which an int dtype can't hold"); return -1; }
    out->u = ipow(base.u, e.u);
    return 0;
  }
  default: PyErr_Format(PyExc_TypeError, "%s has no int form in python_alu", op_names[op]); return -1;
  }
}

/* ================================================================================================
 * The program: the unpickled uop list checked once into instructions
 * ================================================================================================ */

/* the ops that hold no value (tinygrad's void_ops): their sources are dropped from src_values */
static bool is_void_op(Op op) {
  return op == OP_END || op == OP_BARRIER || op == OP_IF || op == OP_ENDIF || op == OP_SINK || op == OP_NOOP || op == OP_GROUP ||
         op == OP_STORE;
}

typedef enum { WM_METAL, WM_AMD_CDNA, WM_AMD_RDNA4, WM_AMD_RDNA3, WM_CUDA_81616, WM_CUDA_81632, WM_CUDA_8168_F16, WM_CUDA_8168_TF32,
               WM_INTEL, WM_AMX } WmmaKind;

typedef struct {
  Op op;
  DType *dtype;
  DTypeId id;          /* the scalar dtype of the value (of the pointee for pointers) */
  Kind kind;
  int count;           /* lanes per thread: the vector width (1 for pointers) */
  bool is_ptr;         /* holds a Ptr per thread, not Vals */
  int nsrc, nv;        /* sources, and the ones that hold values */
  int32_t *src, *vsrc;
  size_t slot;         /* its storage: Vals at vals + slot ([count][warp]) or Ptrs at ptrs + slot ([warp]) */
  int64_t aux;         /* CONST: first of count values in consts; SPECIAL: dim; GEP: element; DEFINE_*: ordinal; RANGE: its END
                          (-1: none); WMMA: K (the CDNA layouts read dims[2]) */
  char special;        /* SPECIAL: 'g' or 'l' */
  int64_t size;        /* DEFINE_LOCAL / DEFINE_REG: elements */
  WmmaKind wmma;
} Inst;

typedef struct {
  PyObject *name;
  Py_ssize_t n;
  Inst *ins;
  int32_t *srcs;        /* all the src and vsrc lists */
  Val *consts;
  int nglobals, nvars, nlocals, nregs;
} PyProgram;

static void python_unload(void *p) {
  PyProgram *prg = p;
  if (!prg) return;
  Py_XDECREF(prg->name);
  PyMem_Free(prg->ins); PyMem_Free(prg->srcs); PyMem_Free(prg->consts);
  PyMem_Free(prg);
}

/* a malformed program: tinygrad's emulator fails its assert on it (AssertionError), naming the uop */
static int bad_uop(Py_ssize_t i, const char *why) {
  PyErr_Format(PyExc_AssertionError, "PYTHON program: uop %zd: %s", i, why);
  return -1;
}

/* a Python number as the Val of a dtype's kind (a CONST's arg) */
static int const_val(PyObject *o, Kind k, Val *out) {
  if (k == K_F) { out->f = PyFloat_AsDouble(o); return out->f == -1.0 && PyErr_Occurred() ? -1 : 0; }
  if (PyFloat_Check(o)) { PyErr_SetString(PyExc_TypeError, "an int CONST has a float arg"); return -1; }
  if (k == K_B) { int t = PyObject_IsTrue(o); out->i = t; return t < 0 ? -1 : 0; }
  if (!PyLong_Check(o)) { PyErr_Format(PyExc_TypeError, "CONST arg must be a number, got %.100s", Py_TYPE(o)->tp_name); return -1; }
  if (k == K_U) { out->u = PyLong_AsUnsignedLongLongMask(o); return out->u == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0; }   /* -1: its bits */
  out->i = PyLong_AsLongLong(o);
  return out->i == -1 && PyErr_Occurred() ? -1 : 0;
}

/* ---- reading the pickled list ---- */

/* (op, dtype, srcs, arg) of entry i into ins, its sources (indices of earlier entries) into srcbuf */
static int read_entry(PyProgram *prg, Py_ssize_t i, PyObject *e, PyObject **arg, int32_t **srcbuf) {
  if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 4)
    return PyErr_Format(PyExc_TypeError, "PYTHON program: uop %zd is not a tuple (op, dtype, srcs, arg)", i), -1;
  Inst *in = &prg->ins[i];
  int op = op_from_object(PyTuple_GET_ITEM(e, 0));
  if (op < 0) return -1;
  PyObject *dt = PyTuple_GET_ITEM(e, 1), *srcs = PyTuple_GET_ITEM(e, 2);
  if (!DType_Check(dt)) return PyErr_Format(PyExc_TypeError, "PYTHON program: uop %zd's dtype is %.100s, not a DType", i, Py_TYPE(dt)->tp_name), -1;
  if (!PyList_Check(srcs)) return PyErr_Format(PyExc_TypeError, "PYTHON program: uop %zd's srcs are not a list", i), -1;
  in->op = (Op)op, in->dtype = (DType *)dt, *arg = PyTuple_GET_ITEM(e, 3);
  in->nsrc = (int)PyList_GET_SIZE(srcs), in->src = *srcbuf, *srcbuf += in->nsrc;
  in->vsrc = *srcbuf, in->nv = 0;
  for (int k = 0; k < in->nsrc; k++) {
    Py_ssize_t s = PyLong_Check(PyList_GET_ITEM(srcs, k)) ? PyLong_AsSsize_t(PyList_GET_ITEM(srcs, k)) : -1;
    if (s == -1 && PyErr_Occurred()) return -1;
    if (s < 0 || s >= i) return bad_uop(i, "a source is not an earlier uop");
    in->src[k] = (int32_t)s;
    if (!is_void_op(prg->ins[s].op)) in->vsrc[in->nv++] = (int32_t)s;
  }
  *srcbuf += in->nv;
  return 0;
}

/* ---- checking each op's sources: what the interpreter reads is there, of the right form ---- */

static Inst *vsrc(PyProgram *prg, Inst *in, int k) { return &prg->ins[in->vsrc[k]]; }

/* source k holds values (not pointers) of `count` lanes (count 0: any) */
static bool val_src(PyProgram *prg, Inst *in, int k, int count) {
  return k < in->nv && !vsrc(prg, in, k)->is_ptr && vsrc(prg, in, k)->kind != K_NONE && (!count || vsrc(prg, in, k)->count == count);
}
static bool ptr_src(PyProgram *prg, Inst *in, int k) { return k < in->nv && vsrc(prg, in, k)->is_ptr; }

static int check_define(PyProgram *prg, Py_ssize_t i, Inst *in, PyObject *arg) {
  UNUSED(arg);
  if (!in->dtype->is_ptr) return bad_uop(i, "a DEFINE's dtype is not a pointer");
  in->is_ptr = true, in->count = 1, in->id = dtype_base(in->dtype)->id, in->kind = kind_of(in->id);
  if (in->kind == K_NONE) return PyErr_Format(PyExc_RuntimeError, "dtype=%R is not supported", (PyObject *)in->dtype), -1;
  if (in->op == OP_DEFINE_GLOBAL) { in->aux = prg->nglobals++; return 0; }
  in->size = in->dtype->size;
  if (in->size < 0 || in->size > ((int64_t)1 << 32)) return bad_uop(i, "a DEFINE_LOCAL/DEFINE_REG has no usable size");
  in->aux = in->op == OP_DEFINE_LOCAL ? prg->nlocals++ : prg->nregs++;
  return 0;
}

static int check_special(Py_ssize_t i, Inst *in, PyObject *arg) {
  Py_ssize_t len;
  const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &len) : NULL;
  if (!s) { PyErr_Clear(); return bad_uop(i, "SPECIAL's arg is not a str"); }
  if (len < 2 || (s[0] != 'g' && s[0] != 'l') || s[len - 1] < '0' || s[len - 1] > '2') return bad_uop(i, "SPECIAL is neither gidxN nor lidxN");
  in->special = s[0], in->aux = s[len - 1] - '0';
  return 0;
}

static int check_const(PyProgram *prg, Py_ssize_t i, Inst *in, PyObject *arg, Py_ssize_t *nconst) {
  in->aux = *nconst;
  if (in->count == 1) return const_val(arg, in->kind, &prg->consts[(*nconst)++]);
  if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != in->count) return bad_uop(i, "a vector CONST's arg is not a tuple of its width");
  for (int j = 0; j < in->count; j++) if (const_val(PyTuple_GET_ITEM(arg, j), in->kind, &prg->consts[(*nconst)++]) < 0) return -1;
  return 0;
}

static int check_gep(PyProgram *prg, Py_ssize_t i, Inst *in, PyObject *arg) {
  if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != 1) return PyErr_Format(PyExc_ValueError, "PYTHON program: uop %zd: GEP needs one element", i), -1;
  in->aux = PyLong_AsLongLong(PyTuple_GET_ITEM(arg, 0));
  if (in->aux == -1 && PyErr_Occurred()) return -1;
  if (!val_src(prg, in, 0, 0) || in->count != 1 || in->aux < 0 || in->aux >= vsrc(prg, in, 0)->count)
    return PyErr_Format(PyExc_IndexError, "PYTHON program: uop %zd: GEP element out of range", i), -1;
  return 0;
}

/* WMMA's arg (name, dims, dtype_in, dtype_out, device, threads, ...): the lane layout tinygrad emulates for it */
static int check_wmma(PyProgram *prg, Py_ssize_t i, Inst *in, PyObject *arg) {
  long d[3], threads;
  if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) < 6 || !PyArg_ParseTuple(PyTuple_GET_ITEM(arg, 1), "lll", &d[0], &d[1], &d[2]) ||
      !PyUnicode_Check(PyTuple_GET_ITEM(arg, 4)) || (threads = PyLong_AsLong(PyTuple_GET_ITEM(arg, 5))) == -1) {
    PyErr_Clear();
    return PyErr_Format(PyExc_TypeError, "PYTHON program: uop %zd: WMMA's arg is not a tensor core's", i), -1;
  }
  if (in->nv != 3 || !val_src(prg, in, 0, 0) || !val_src(prg, in, 1, 0) || !val_src(prg, in, 2, in->count) || in->kind != K_F ||
      vsrc(prg, in, 0)->kind != K_F || vsrc(prg, in, 1)->kind != K_F) return bad_uop(i, "WMMA needs float vectors A, B and C");
  const char *dev = PyUnicode_AsUTF8(PyTuple_GET_ITEM(arg, 4));
  DTypeId in_id = prg->ins[in->src[0]].id;
  int na = vsrc(prg, in, 0)->count;
  in->aux = d[2];
  if (!dev) return -1;
  if (!strcmp(dev, "METAL")) in->wmma = WM_METAL;
  else if (!strcmp(dev, "AMD")) in->wmma = threads == 64 ? WM_AMD_CDNA : na == 8 ? WM_AMD_RDNA4 : WM_AMD_RDNA3;
  else if (!strcmp(dev, "CUDA") && d[0] == 8 && d[1] == 16 && d[2] == 16) in->wmma = WM_CUDA_81616;
  else if (!strcmp(dev, "CUDA") && d[0] == 8 && d[1] == 16 && d[2] == 32) in->wmma = WM_CUDA_81632;
  else if (!strcmp(dev, "CUDA") && d[0] == 8 && d[1] == 16 && d[2] == 8 && in_id == DT_FLOAT16) in->wmma = WM_CUDA_8168_F16;
  else if (!strcmp(dev, "CUDA") && d[0] == 8 && d[1] == 16 && d[2] == 8 && in_id == DT_FLOAT32) in->wmma = WM_CUDA_8168_TF32;
  else if (!strcmp(dev, "INTEL")) in->wmma = WM_INTEL;
  else if (!strcmp(dev, "CPU")) in->wmma = WM_AMX;
  else return PyErr_Format(PyExc_NotImplementedError, "unimplemented tensor core %R", arg), -1;
  if (in->wmma == WM_AMD_CDNA && (d[2] < 4 || d[2] % 4)) return bad_uop(i, "a CDNA WMMA's K is not a multiple of 4");
  return 0;
}

/* the bitwise ops and TRUNC-like int forms need ints; the transcendental ops floats */
static bool kind_fits(Op op, Kind k) {
  if (op == OP_XOR || op == OP_OR || op == OP_AND || op == OP_SHL || op == OP_SHR) return k != K_F;
  if (op == OP_LOG2 || op == OP_SQRT || op == OP_RECIPROCAL || op == OP_SIN) return k == K_F;
  return true;
}

static int check_alu(PyProgram *prg, Py_ssize_t i, Inst *in) {
  Op op = in->op;
  int arity = IN_GROUP(op, Unary) ? 1 : IN_GROUP(op, Binary) ? 2 : 3;
  if (op == OP_THREEFRY || op == OP_FDIV)
    return PyErr_Format(PyExc_KeyError, "%U has no python_alu", ops_str[op]), -1;
  if (in->nv != arity) return bad_uop(i, "an ALU op with the wrong number of sources");
  bool cmp = IN_GROUP(op, Comparison);
  int first = op == OP_WHERE ? 1 : 0;   /* WHERE's condition may be any kind; its values are the result's */
  for (int k = 0; k < arity; k++) if (!val_src(prg, in, k, in->count)) return bad_uop(i, "an ALU source is not a value of the op's width");
  for (int k = first; k < arity; k++)
    if (!cmp && vsrc(prg, in, k)->kind != in->kind) return bad_uop(i, "dtype mismatch on an ALU op");
  if (cmp && (in->kind != K_B || (arity == 2 && vsrc(prg, in, 0)->kind != vsrc(prg, in, 1)->kind))) return bad_uop(i, "a comparison's dtypes mismatch");
  if (!kind_fits(op, cmp ? vsrc(prg, in, 0)->kind : in->kind))
    return PyErr_Format(PyExc_TypeError, "PYTHON program: uop %zd: %U on this dtype", i, ops_str[op]), -1;
  return 0;
}

/* INDEX(ptr, idx[, gate]), LOAD(index[, alt]), STORE(index, value): pointers and values where they must be */
static int check_memory_op(PyProgram *prg, Py_ssize_t i, Inst *in) {
  switch (in->op) {
  case OP_INDEX:
    if (!in->dtype->is_ptr || !ptr_src(prg, in, 0) || !val_src(prg, in, 1, 1) || (in->nv > 3) || (in->nv == 3 && !val_src(prg, in, 2, 1)) ||
        vsrc(prg, in, 1)->kind == K_F) return bad_uop(i, "INDEX needs a pointer, an int index and maybe a gate");
    in->is_ptr = true, in->count = 1, in->id = vsrc(prg, in, 0)->id, in->kind = vsrc(prg, in, 0)->kind;
    return 0;
  case OP_LOAD:
    if (!ptr_src(prg, in, 0) || in->nv > 2 || (in->nv == 2 && !val_src(prg, in, 1, 0)) ||
        (in->nv == 2 && vsrc(prg, in, 1)->count != 1 && vsrc(prg, in, 1)->count != in->count))
      return bad_uop(i, "LOAD needs an index and maybe an alt value");
    if (vsrc(prg, in, 0)->kind != in->kind || (in->nv == 2 && vsrc(prg, in, 1)->kind != in->kind)) return bad_uop(i, "LOAD's dtype is not its buffer's");
    return 0;
  default:   /* STORE */
    if (in->nv < 2 || !ptr_src(prg, in, 0) || !val_src(prg, in, 1, 0)) return bad_uop(i, "STORE needs an index and a value");
    if (vsrc(prg, in, 1)->kind != vsrc(prg, in, 0)->kind) return bad_uop(i, "STORE's value is not of its buffer's dtype");
    return 0;
  }
}

/* the rest: pointer casts, value casts, bitcasts, vectorize, after, ranges, ends, vars */
static int check_other(PyProgram *prg, Py_ssize_t i, Inst *in) {
  switch (in->op) {
  case OP_AFTER:
    if (in->nv < 1) return bad_uop(i, "AFTER holds no value");
    in->is_ptr = vsrc(prg, in, 0)->is_ptr, in->count = vsrc(prg, in, 0)->count, in->id = vsrc(prg, in, 0)->id, in->kind = vsrc(prg, in, 0)->kind;
    return 0;
  case OP_CAST:
    if (in->dtype->is_ptr) {
      if (!ptr_src(prg, in, 0)) return bad_uop(i, "a pointer CAST of a value");
      in->is_ptr = true, in->count = 1, in->id = vsrc(prg, in, 0)->id, in->kind = vsrc(prg, in, 0)->kind;
      return 0;
    }
    return val_src(prg, in, 0, in->count) ? 0 : bad_uop(i, "CAST of a non-value or of another width");
  case OP_BITCAST:
    if (!val_src(prg, in, 0, 1) || in->count != 1 || storage_size(vsrc(prg, in, 0)->id) != storage_size(in->id))
      return PyErr_Format(PyExc_ValueError, "PYTHON program: uop %zd: BITCAST between dtypes of different sizes", i), -1;
    return 0;
  case OP_VECTORIZE:
    if (in->nv != in->count) return bad_uop(i, "VECTORIZE's sources are not its width");
    for (int k = 0; k < in->nv; k++) if (!val_src(prg, in, k, 1) || vsrc(prg, in, k)->kind != in->kind) return bad_uop(i, "VECTORIZE of a non-scalar");
    return 0;
  case OP_RANGE:
    if (!val_src(prg, in, 0, 1) || vsrc(prg, in, 0)->kind == K_F || in->kind == K_F || in->count != 1) return bad_uop(i, "RANGE needs an int end");
    in->aux = -1;
    return 0;
  case OP_END:
    if (in->nsrc < 2 || prg->ins[in->src[1]].op != OP_RANGE) return bad_uop(i, "END's second source is not a RANGE");
    prg->ins[in->src[1]].aux = i;   /* tinygrad's loop_ends: the last END of a range wins */
    return 0;
  case OP_DEFINE_VAR:
    if (in->kind == K_F || in->count != 1) return bad_uop(i, "DEFINE_VAR is not an int");
    in->aux = prg->nvars++;
    return 0;
  default:
    return PyErr_Format(PyExc_AssertionError, "PYTHON program: uop %zd: %U is not run by the emulator", i, ops_str[in->op]), -1;
  }
}

/* check uop i and fill in its instruction */
static int check_uop(PyProgram *prg, Py_ssize_t i, PyObject *arg, Py_ssize_t *nconst) {
  Inst *in = &prg->ins[i];
  DType *dt = in->dtype;
  in->id = dt->is_ptr ? dtype_base(dt)->id : dt->id, in->kind = kind_of(in->id), in->count = dt->is_ptr ? 1 : dt->count;
  if (in->op == OP_STORE) return check_memory_op(prg, i, in);
  if (in->op == OP_END) return check_other(prg, i, in);
  if (is_void_op(in->op)) return 0;
  if (in->op == OP_AFTER || (in->op == OP_CAST && dt->is_ptr)) return check_other(prg, i, in);
  if (dt->is_ptr && in->op != OP_DEFINE_GLOBAL && in->op != OP_DEFINE_LOCAL && in->op != OP_DEFINE_REG && in->op != OP_INDEX)
    return bad_uop(i, "a pointer dtype on an op that holds values");
  if (!dt->is_ptr && in->kind == K_NONE) return PyErr_Format(PyExc_TypeError, "PYTHON program: uop %zd: dtype %R holds no values", i, (PyObject *)dt), -1;
  if (in->count < 1 || in->count > 4096) return bad_uop(i, "a vector too wide");
  switch (in->op) {
  case OP_DEFINE_GLOBAL: case OP_DEFINE_LOCAL: case OP_DEFINE_REG: return check_define(prg, i, in, arg);
  case OP_SPECIAL: return in->count == 1 && in->kind != K_F ? check_special(i, in, arg) : bad_uop(i, "SPECIAL is not an int");
  case OP_CONST: return check_const(prg, i, in, arg, nconst);
  case OP_GEP: return check_gep(prg, i, in, arg);
  case OP_WMMA: return check_wmma(prg, i, in, arg);
  case OP_INDEX: case OP_LOAD: return check_memory_op(prg, i, in);
  default: return IN_GROUP(in->op, ALU) ? check_alu(prg, i, in) : check_other(prg, i, in);
  }
}

/* the storage slot of each value: Vals [count][warp] or Ptrs [warp], in units of one thread's lane */
static void assign_slots(PyProgram *prg) {
  size_t nval = 0, nptr = 0;
  for (Py_ssize_t i = 0; i < prg->n; i++) {
    Inst *in = &prg->ins[i];
    if (is_void_op(in->op)) continue;
    if (in->is_ptr) in->slot = nptr++;
    else in->slot = nval, nval += (size_t)in->count;
  }
}

/* PythonProgram(name, lib): pickle.loads(lib), then every uop checked */
static void *python_load(void *dev, PyObject *name, const char *lib, size_t len) {
  UNUSED(dev);
  PyObject *bytes = PyBytes_FromStringAndSize(lib, (Py_ssize_t)len), *pickle = bytes ? PyImport_ImportModule("pickle") : NULL;
  PyObject *list = pickle ? PyObject_CallMethod(pickle, "loads", "O", bytes) : NULL;
  Py_XDECREF(bytes); Py_XDECREF(pickle);
  if (!list) return NULL;
  PyProgram *prg = NULL;
  if (!PyList_Check(list)) { PyErr_Format(PyExc_TypeError, "a PYTHON program is a pickled list of uops, not %.100s", Py_TYPE(list)->tp_name); goto fail; }
  Py_ssize_t n = PyList_GET_SIZE(list), nsrc = 0, nconsts = 0;
  for (Py_ssize_t i = 0; i < n; i++) {   /* sizes first: the sources and the constants' lanes */
    PyObject *e = PyList_GET_ITEM(list, i);
    if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 4) continue;
    if (PyList_Check(PyTuple_GET_ITEM(e, 2))) nsrc += PyList_GET_SIZE(PyTuple_GET_ITEM(e, 2));
    if (DType_Check(PyTuple_GET_ITEM(e, 1))) nconsts += ((DType *)PyTuple_GET_ITEM(e, 1))->count;
  }
  if (n > INT32_MAX / 2 || nsrc > INT32_MAX / 2 || nconsts > INT32_MAX) { PyErr_SetString(PyExc_ValueError, "a PYTHON program too large"); goto fail; }
  if (!(prg = PyMem_Calloc(1, sizeof(PyProgram)))) { PyErr_NoMemory(); goto fail; }
  prg->name = Py_NewRef(name), prg->n = n;
  prg->ins = PyMem_Calloc((size_t)n + 1, sizeof(Inst)), prg->srcs = PyMem_Calloc(2 * (size_t)nsrc + 1, sizeof(int32_t));
  prg->consts = PyMem_Calloc((size_t)nconsts + 1, sizeof(Val));
  if (!prg->ins || !prg->srcs || !prg->consts) { PyErr_NoMemory(); goto fail; }
  int32_t *srcbuf = prg->srcs;
  Py_ssize_t nconst = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *arg;
    if (read_entry(prg, i, PyList_GET_ITEM(list, i), &arg, &srcbuf) < 0 || check_uop(prg, i, arg, &nconst) < 0) goto fail;
  }
  assign_slots(prg);
  Py_DECREF(list);
  return prg;
fail:
  python_unload(prg);
  Py_DECREF(list);
  return NULL;
}

/* ================================================================================================
 * A launch: the warp of local threads runs each op in lockstep, once per global index
 * ================================================================================================ */

typedef struct {
  PyProgram *prg;
  size_t warp;
  Val *vals;            /* each value's [count][warp] lanes, at row slot */
  Ptr *ptrs;            /* each pointer's [warp] lanes, at row slot */
  Mem *globals, *locals, *regs;   /* regs: [nregs][warp], a memory per thread */
  char *scratch;        /* the memory of the locals and regs, zeroed for each global index */
  size_t scratch_bytes;
  bool *active;         /* per RANGE: inside its loop (tinygrad: `i in values`) */
  int64_t *lidx;        /* [3][warp]: each thread's local index per dim */
  int64_t gidx[3];
  const int64_t *vars;
} Run;

static Val *row(Run *r, const Inst *in, int j) { return r->vals + (in->slot + (size_t)j) * r->warp; }
static Ptr *prow(Run *r, const Inst *in) { return r->ptrs + in->slot * r->warp; }
static const Inst *src_of(Run *r, const Inst *in, int k) { return &r->prg->ins[in->vsrc[k]]; }

/* one ALU op over all the lanes; comparisons give bools, the rest is truncated to the result's dtype */
static int run_alu(Run *r, const Inst *in) {
  const Inst *s0 = src_of(r, in, 0), *s1 = in->nv > 1 ? src_of(r, in, 1) : s0, *s2 = in->nv > 2 ? src_of(r, in, 2) : s0;
  Val *o = row(r, in, 0), *a = row(r, s0, 0), *b = row(r, s1, 0), *c = row(r, s2, 0);
  size_t n = (size_t)in->count * r->warp;
  bool cmp = IN_GROUP(in->op, Comparison);
  Kind k = cmp ? s0->kind : in->kind;
  for (size_t e = 0; e < n; e++) {
    if (in->op == OP_WHERE) { o[e] = truth(a[e], s0->kind) ? b[e] : c[e]; continue; }
    Val v;
    if (k == K_F) {
      if (alu_f(in->op, a[e].f, b[e].f, c[e].f, &v) < 0 || (!cmp && round_float(in->id, &v.f) < 0)) return -1;
    } else {
      if (alu_int(in->op, k, a[e], b[e], c[e], &v) < 0) return -1;
      if (!cmp) v.u = wrap_int(in->id, v.u);
    }
    o[e] = v;
  }
  return 0;
}

/* an element offset plus j, saturated: an overflow is out of bounds like any other */
static int64_t add_off(int64_t a, int64_t b) {
  int64_t s;
  return __builtin_add_overflow(a, b, &s) ? INT64_MAX : s;
}

static int out_of_bounds(const char *what, const Mem *m, int64_t i, PyObject *value) {
  if (value) PyErr_Format(PyExc_IndexError, "%s out of bounds, size is %lld, access is %lld, value is %R", what, (long long)m->n, (long long)i, value);
  else PyErr_Format(PyExc_IndexError, "%s out of bounds, size is %lld and access is %lld", what, (long long)m->n, (long long)i);
  Py_XDECREF(value);
  return -1;
}

/* INDEX: each thread's (memory, offset, gate) */
static int run_index(Run *r, const Inst *in) {
  const Inst *p = src_of(r, in, 0), *ix = src_of(r, in, 1), *g = in->nv == 3 ? src_of(r, in, 2) : NULL;
  Ptr *o = prow(r, in), *pp = prow(r, p);
  Val *iv = row(r, ix, 0), *gv = g ? row(r, g, 0) : NULL;
  for (size_t l = 0; l < r->warp; l++) {
    int64_t idx = ix->kind == K_U && iv[l].u > INT64_MAX ? INT64_MAX : iv[l].i;
    o[l] = (Ptr){pp[l].m, add_off(pp[l].off, idx), gv ? truth(gv[l], g->kind) : true};
  }
  return 0;
}

/* LOAD: element j of each thread from offset+j; a gated-off thread takes the alt value (when there is one) */
static int run_load(Run *r, const Inst *in) {
  const Inst *p = src_of(r, in, 0), *alt = in->nv == 2 ? src_of(r, in, 1) : NULL;
  Ptr *pp = prow(r, p);
  for (int j = 0; j < in->count; j++) {
    Val *o = row(r, in, j), *av = alt ? row(r, alt, alt->count > 1 ? j : 0) : NULL;
    for (size_t l = 0; l < r->warp; l++) {
      if (av && !pp[l].gate) { o[l] = av[l]; continue; }
      int64_t i = add_off(pp[l].off, j);
      if (i < 0 || i >= pp[l].m->n) return out_of_bounds("load", pp[l].m, i, NULL);
      o[l] = mem_read(pp[l].m, i);
    }
  }
  return 0;
}

static int run_store(Run *r, const Inst *in) {
  const Inst *p = src_of(r, in, 0), *v = src_of(r, in, 1);
  Ptr *pp = prow(r, p);
  for (int j = 0; j < v->count; j++) {
    Val *vv = row(r, v, j);
    for (size_t l = 0; l < r->warp; l++) {
      if (!pp[l].gate) continue;
      int64_t i = add_off(pp[l].off, j);
      if (i < 0 || i >= pp[l].m->n) return out_of_bounds("store", pp[l].m, i, val_object(vv[l], v->kind));
      if (mem_write(pp[l].m, i, vv[l]) < 0) return -1;
    }
  }
  return 0;
}

static void run_define(Run *r, const Inst *in) {
  Ptr *o = prow(r, in);
  for (size_t l = 0; l < r->warp; l++) {
    Mem *m = in->op == OP_DEFINE_GLOBAL ? &r->globals[in->aux] : in->op == OP_DEFINE_LOCAL ? &r->locals[in->aux]
                                                                 : &r->regs[(size_t)in->aux * r->warp + l];
    o[l] = (Ptr){m, 0, true};
  }
}

/* CAST of values: dtypes.as_const + truncate, lane by lane */
static int run_cast(Run *r, const Inst *in) {
  const Inst *s = src_of(r, in, 0);
  Val *o = row(r, in, 0), *a = row(r, s, 0);
  for (size_t e = 0; e < (size_t)in->count * r->warp; e++) if (convert(a[e], s->kind, in->id, &o[e]) < 0) return -1;
  return 0;
}

/* BITCAST: the source's storage bytes read as the result's dtype */
static int run_bitcast(Run *r, const Inst *in) {
  const Inst *s = src_of(r, in, 0);
  Val *o = row(r, in, 0), *a = row(r, s, 0);
  char tmp[8];
  Mem from = {tmp, 1, s->id}, to = {tmp, 1, in->id};
  for (size_t l = 0; l < r->warp; l++) {
    if (mem_write(&from, 0, a[l]) < 0) return -1;
    o[l] = mem_read(&to, 0);
  }
  return 0;
}

/* the ops that only move lanes: constants, vars, SPECIAL, AFTER, pointer casts, VECTORIZE, GEP */
static void run_move(Run *r, const Inst *in) {
  size_t w = r->warp;
  switch (in->op) {
  case OP_CONST:
    for (int j = 0; j < in->count; j++) for (size_t l = 0; l < w; l++) row(r, in, j)[l] = r->prg->consts[in->aux + j];
    break;
  case OP_DEFINE_VAR: for (size_t l = 0; l < w; l++) row(r, in, 0)[l].i = r->vars[in->aux]; break;
  case OP_SPECIAL:
    for (size_t l = 0; l < w; l++) row(r, in, 0)[l].i = in->special == 'g' ? r->gidx[in->aux] : r->lidx[in->aux * w + l];
    break;
  case OP_VECTORIZE: for (int j = 0; j < in->count; j++) memcpy(row(r, in, j), row(r, src_of(r, in, j), 0), w * sizeof(Val)); break;
  case OP_GEP: memcpy(row(r, in, 0), row(r, src_of(r, in, 0), (int)in->aux), w * sizeof(Val)); break;
  default:   /* AFTER, pointer CAST: the first source's value */
    if (in->is_ptr) memcpy(prow(r, in), prow(r, src_of(r, in, 0)), w * sizeof(Ptr));
    else memcpy(row(r, in, 0), row(r, src_of(r, in, 0), 0), (size_t)in->count * w * sizeof(Val));
  }
}

/* ---- WMMA: tinygrad's models of the tensor cores, one lane layout per kind ---- */

typedef struct { int e, l; } Lane;   /* element of the source vector, thread within the warp group */
typedef Lane (*ElemFn)(int i, int j, int K);   /* a_elem(k, row) / b_elem(col, k), tinygrad's argument order */
typedef void (*CMapFn)(int lane, int elem, int *ci, int *cj);
typedef struct { int threads, K, na, nb, nc; ElemFn a, b; CMapFn c; bool rdna3_dup, lane0; } WmmaLayout;

static Lane metal_ab(int i, int j, int K) { UNUSED(K); return (Lane){i % 2, (i / 2) % 2 + (j % 4) * 2 + (i / 4) * 8 + (j / 4) * 16}; }
static void metal_c(int lane, int e, int *ci, int *cj) { *ci = e + (lane % 2) * 2 + ((lane / 8) % 2) * 4, *cj = (lane / 2) % 4 + (lane / 16) * 4; }
static Lane cdna_a(int k, int row, int K) { return (Lane){k % (K / 4), (k / (K / 4)) * 16 + row}; }
static Lane cdna_b(int col, int k, int K) { return cdna_a(k, col, K); }
static void cdna_c(int lane, int e, int *ci, int *cj) { *ci = lane % 16, *cj = (lane / 16) * 4 + e; }
static Lane rdna4_a(int k, int row, int K) {
  UNUSED(K);
  static const int de[4] = {0, 4, 4, 8}, dl[4] = {0, 16, 0, 16};
  return (Lane){k - de[(k / 4) % 4], row + dl[(k / 4) % 4]};
}
static Lane rdna4_b(int col, int k, int K) { return rdna4_a(k, col, K); }
static void rdna4_c(int lane, int e, int *ci, int *cj) { *ci = lane % 16, *cj = (lane / 16) * 8 + e; }
static Lane rdna3_a(int k, int row, int K) { UNUSED(K); return (Lane){k, row}; }
static Lane rdna3_b(int col, int k, int K) { UNUSED(K); return (Lane){k, col}; }
static void rdna3_c(int lane, int e, int *ci, int *cj) { *ci = lane % 16, *cj = lane / 16 + e * 2; }
static void cuda_c(int lane, int e, int *ci, int *cj) { *ci = e % 2 + (lane % 4) * 2, *cj = lane / 4 + (e / 2) * 8; }
static Lane cuda81616_a(int k, int row, int K) { UNUSED(K); return (Lane){k % 2 + (row / 8) * 2 + (k / 8) * 4, (k / 2) % 4 + (row % 8) * 4}; }
static Lane cuda81616_b(int col, int k, int K) { UNUSED(K); return (Lane){k % 2 + (k / 8) * 2, (k / 2) % 4 + col * 4}; }
static Lane cuda81632_a(int k, int row, int K) { UNUSED(K); return (Lane){k % 4 + (row / 8) * 4 + (k / 16) * 8, (k / 4) % 4 + (row % 8) * 4}; }
static Lane cuda81632_b(int col, int k, int K) { UNUSED(K); return (Lane){k % 4 + (k / 16) * 4, (k / 4) % 4 + col * 4}; }
static Lane cuda8168h_a(int k, int row, int K) { UNUSED(K); return (Lane){k % 2 + (row / 8) * 2, k / 2 + (row % 8) * 4}; }
static Lane cuda8168h_b(int col, int k, int K) { UNUSED(K); return (Lane){k % 2, k / 2 + col * 4}; }
static Lane cuda8168f_a(int k, int row, int K) { UNUSED(K); return (Lane){(k / 4) * 2 + row / 8, k % 4 + (row % 8) * 4}; }
static Lane cuda8168f_b(int col, int k, int K) { UNUSED(K); return (Lane){k / 4, k % 4 + col * 4}; }
static Lane intel_a(int k, int row, int K) { UNUSED(K); return (Lane){k % 2 + row * 2, k / 2}; }
static Lane intel_b(int col, int k, int K) { UNUSED(K); return (Lane){k, col}; }
static void intel_c(int lane, int e, int *ci, int *cj) { *ci = lane, *cj = e; }
static Lane amx_ab(int i, int j, int K) { UNUSED(K); return (Lane){i + j, 0}; }   /* x[col+row][0]: K is 1, lane 0 */
static void amx_c(int lane, int e, int *ci, int *cj) { UNUSED(lane); *ci = e % 16, *cj = e / 16; }

static WmmaLayout wmma_layout(const Inst *in, int na, int nb, int nc) {
  switch (in->wmma) {
  case WM_METAL: return (WmmaLayout){32, 8, 2, 2, 2, metal_ab, metal_ab, metal_c, false, false};
  case WM_AMD_CDNA: return (WmmaLayout){64, (int)in->aux, na, nb, nc, cdna_a, cdna_b, cdna_c, false, false};
  case WM_AMD_RDNA4: return (WmmaLayout){32, 16, 8, 8, 8, rdna4_a, rdna4_b, rdna4_c, false, false};
  case WM_AMD_RDNA3: return (WmmaLayout){32, 16, 16, 16, 8, rdna3_a, rdna3_b, rdna3_c, true, false};
  case WM_CUDA_81616: return (WmmaLayout){32, 16, 8, 4, 4, cuda81616_a, cuda81616_b, cuda_c, false, false};
  case WM_CUDA_81632: return (WmmaLayout){32, 32, 16, 8, 4, cuda81632_a, cuda81632_b, cuda_c, false, false};
  case WM_CUDA_8168_F16: return (WmmaLayout){32, 8, 4, 2, 4, cuda8168h_a, cuda8168h_b, cuda_c, false, false};
  case WM_CUDA_8168_TF32: return (WmmaLayout){32, 8, 4, 2, 4, cuda8168f_a, cuda8168f_b, cuda_c, false, false};
  case WM_INTEL: return (WmmaLayout){8, 16, 16, 16, 8, intel_a, intel_b, intel_c, false, false};
  default: return (WmmaLayout){1, 1, 16, 16, 256, amx_ab, amx_ab, amx_c, false, true};
  }
}

/* x[e][goff + l] of a source (x[e][l] for the layouts that read lane 0), checked as Python's list indexing is */
static int wmma_get(Run *r, const Inst *x, Lane at, size_t goff, bool lane0, double *out) {
  size_t l = lane0 ? (size_t)at.l : goff + (size_t)at.l;
  if (at.e < 0 || at.e >= x->count || at.l < 0 || l >= r->warp) { PyErr_SetString(PyExc_IndexError, "list index out of range"); return -1; }
  *out = row(r, x, at.e)[l].f;
  return 0;
}

static int wmma_counts(const Inst *x, int num, const char *cc) {
  if (x->count == num) return 0;
  PyErr_Format(PyExc_AssertionError, "%s must have %d elements per thread, it has %d", cc, num, x->count);
  return -1;
}

/* the RDNA3 model's check: lanes 16-31 repeat lanes 0-15 */
static int rdna3_dup(Run *r, const Inst *x, Lane at, size_t goff) {
  double a, b;
  if (wmma_get(r, x, at, goff, false, &a) < 0 || wmma_get(r, x, (Lane){at.e, at.l + 16}, goff, false, &b) < 0) return -1;
  if (a != b) { PyErr_SetString(PyExc_AssertionError, "warp elements not duplicated properly across lanes"); return -1; }
  return 0;
}

/* D = A*B + C over each group of `threads` lanes: tinygrad's generic_wmma_helper (sums in double, not truncated) */
static int run_wmma(Run *r, const Inst *in) {
  const Inst *A = src_of(r, in, 0), *B = src_of(r, in, 1), *C = src_of(r, in, 2);
  WmmaLayout L = wmma_layout(in, A->count, B->count, C->count);
  if (wmma_counts(A, L.na, "A") < 0 || wmma_counts(B, L.nb, "B") < 0 || wmma_counts(C, L.nc, "C") < 0) return -1;
  if (r->warp % (size_t)L.threads) { PyErr_Format(PyExc_AssertionError, "must have multiples of %d warp threads", L.threads); return -1; }
  for (int e = 0; e < L.nc; e++) memcpy(row(r, in, e), row(r, C, e), r->warp * sizeof(Val));
  for (size_t goff = 0; goff < r->warp; goff += (size_t)L.threads)
    for (int lane = 0; lane < L.threads; lane++)
      for (int e = 0; e < L.nc; e++) {
        int ci, cj;
        L.c(lane, e, &ci, &cj);
        double s = 0, a, b;
        for (int k = 0; k < L.K; k++) {
          Lane la = L.a(k, cj, L.K), lb = L.b(ci, k, L.K);
          if ((L.rdna3_dup && (rdna3_dup(r, A, la, goff) < 0 || rdna3_dup(r, B, lb, goff) < 0)) ||
              wmma_get(r, A, la, goff, L.lane0, &a) < 0 || wmma_get(r, B, lb, goff, L.lane0, &b) < 0) return -1;
          s += a * b;
        }
        row(r, in, e)[goff + (size_t)lane].f += s;
      }
  return 0;
}

/* ---- the loop ---- */

/* RANGE: start at 0 or step; at the end, leave the loop past its END. The next uop to run. */
static int run_range(Run *r, const Inst *in, Py_ssize_t i, Py_ssize_t *next) {
  Val *o = row(r, in, 0), end = row(r, src_of(r, in, 0), 0)[0];
  for (size_t l = 0; l < r->warp; l++) o[l].i = r->active[i] ? o[l].i + 1 : 0;
  r->active[i] = true;
  *next = i + 1;
  if (o[0].i < (src_of(r, in, 0)->kind == K_U && end.u > INT64_MAX ? INT64_MAX : end.i)) return 0;
  r->active[i] = false;
  if (in->aux < 0) { PyErr_Format(PyExc_KeyError, "RANGE %zd has no END", i); return -1; }
  *next = in->aux + 1;
  return 0;
}

static int run_one(Run *r, const Inst *in) {
  switch (in->op) {
  case OP_STORE: return run_store(r, in);
  case OP_DEFINE_GLOBAL: case OP_DEFINE_LOCAL: case OP_DEFINE_REG: run_define(r, in); return 0;
  case OP_INDEX: return run_index(r, in);
  case OP_LOAD: return run_load(r, in);
  case OP_BITCAST: return run_bitcast(r, in);
  case OP_WMMA: return run_wmma(r, in);
  case OP_CAST: if (!in->is_ptr) return run_cast(r, in); run_move(r, in); return 0;
  default:
    if (IN_GROUP(in->op, ALU)) return run_alu(r, in);
    if (!is_void_op(in->op)) run_move(r, in);   /* IF, ENDIF, BARRIER, SINK, GROUP, NOOP: the warp is always in sync */
    return 0;
  }
}

/* the whole program once, for the global index in r->gidx */
static int run_program(Run *r) {
  PyProgram *prg = r->prg;
  memset(r->scratch, 0, r->scratch_bytes);
  memset(r->active, 0, (size_t)prg->n * sizeof(bool));
  uint64_t jumps = 0;
  for (Py_ssize_t i = 0; i < prg->n;) {
    const Inst *in = &prg->ins[i];
    if (in->op == OP_END) {
      i = in->src[1];
      if (!(++jumps & 0xFFFFF) && PyErr_CheckSignals() < 0) return -1;
      continue;
    }
    if (in->op == OP_RANGE) { if (run_range(r, in, i, &i) < 0) return -1; continue; }
    if (run_one(r, in) < 0) return -1;
    i++;
  }
  return 0;
}

/* the memory of the locals (one per warp) and regs (one per thread), laid out in r->scratch */
static int layout_scratch(Run *r) {
  PyProgram *prg = r->prg;
  size_t bytes = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (Py_ssize_t i = 0; i < prg->n; i++) {
      const Inst *in = &prg->ins[i];
      if (in->op != OP_DEFINE_LOCAL && in->op != OP_DEFINE_REG) continue;
      size_t one = (size_t)in->size * (size_t)storage_size(in->id), copies = in->op == OP_DEFINE_REG ? r->warp : 1;
      for (size_t c = 0; c < copies; c++) {
        Mem *m = in->op == OP_DEFINE_LOCAL ? &r->locals[in->aux] : &r->regs[(size_t)in->aux * r->warp + c];
        if (pass) *m = (Mem){r->scratch + bytes, in->size, in->id};
        bytes += one;
        if (bytes > ((size_t)1 << 31)) { PyErr_SetString(PyExc_MemoryError, "PYTHON: locals and regs too large"); return -1; }
      }
    }
    if (!pass && !(r->scratch = PyMem_RawCalloc(bytes + 1, 1))) { PyErr_NoMemory(); return -1; }
    if (!pass) r->scratch_bytes = bytes, bytes = 0;
  }
  return 0;
}

static void run_free(Run *r) {
  PyMem_RawFree(r->vals); PyMem_RawFree(r->ptrs); PyMem_RawFree(r->globals); PyMem_RawFree(r->locals); PyMem_RawFree(r->regs);
  PyMem_RawFree(r->scratch); PyMem_RawFree(r->active); PyMem_RawFree(r->lidx);
}

/* each buffer as the memory of its DEFINE_GLOBAL (tinygrad pops them in the order the program defines them) */
static void bind_globals(Run *r, void *const *bufs) {
  for (Py_ssize_t i = 0; i < r->prg->n; i++) {
    const Inst *in = &r->prg->ins[i];
    if (in->op != OP_DEFINE_GLOBAL) continue;
    PyBuf *b = bufs[in->aux];
    r->globals[in->aux] = (Mem){b->data, (int64_t)(b->nbytes / (size_t)storage_size(in->id)), in->id};
  }
}

static int run_setup(Run *r, PyProgram *prg, void *const *bufs, const size_t local[3]) {
  size_t nval = 0, nptr = 0;
  for (Py_ssize_t i = 0; i < prg->n; i++) {
    const Inst *in = &prg->ins[i];
    if (is_void_op(in->op)) continue;
    if (in->is_ptr) nptr = in->slot + 1;
    else nval = in->slot + (size_t)in->count;
  }
  size_t l01;
  bool over = __builtin_mul_overflow(local[0], local[1], &l01) || __builtin_mul_overflow(l01, local[2], &r->warp);
  if (over || r->warp == 0 || r->warp > ((size_t)1 << 16)) {
    PyErr_Format(PyExc_ValueError, "%S: the local size (%zu, %zu, %zu) must hold 1 to 65536 threads", prg->name, local[0], local[1], local[2]);
    return -1;
  }
  r->vals = PyMem_RawCalloc(nval * r->warp + 1, sizeof(Val)), r->ptrs = PyMem_RawCalloc(nptr * r->warp + 1, sizeof(Ptr));
  r->globals = PyMem_RawCalloc((size_t)prg->nglobals + 1, sizeof(Mem)), r->locals = PyMem_RawCalloc((size_t)prg->nlocals + 1, sizeof(Mem));
  r->regs = PyMem_RawCalloc((size_t)prg->nregs * r->warp + 1, sizeof(Mem));
  r->active = PyMem_RawCalloc((size_t)prg->n + 1, sizeof(bool)), r->lidx = PyMem_RawCalloc(3 * r->warp, sizeof(int64_t));
  if (!r->vals || !r->ptrs || !r->globals || !r->locals || !r->regs || !r->active || !r->lidx) { PyErr_NoMemory(); return -1; }
  /* tinygrad's warp: itertools.product over the local dims reversed, so thread t is (l2, l1, l0) with l0 fastest */
  for (size_t t = 0; t < r->warp; t++) {
    r->lidx[t] = (int64_t)(t % local[0]);
    r->lidx[r->warp + t] = (int64_t)(t / local[0] % local[1]);
    r->lidx[2 * r->warp + t] = (int64_t)(t / (local[0] * local[1]));
  }
  bind_globals(r, bufs);
  return layout_scratch(r);
}

/* PythonProgram.__call__: the program for every global index (g2, g1, g0 with g0 fastest, as tinygrad's product) */
static double python_launch(void *p, void *const *bufs, Py_ssize_t nbufs, const size_t global[3], const size_t *local, const int64_t *vals,
                            Py_ssize_t nvals, bool wait) {
  UNUSED(wait);
  PyProgram *prg = p;
  static const size_t one[3] = {1, 1, 1};
  if (prg->nglobals > nbufs || prg->nvars > nvals) {
    PyErr_Format(PyExc_IndexError, "%S: pop from empty list (it takes %d buffers and %d vars, got %zd and %zd)", prg->name, prg->nglobals,
                 prg->nvars, nbufs, nvals);
    return -1;
  }
  Run r = {.prg = prg, .vars = vals};
  double t0 = device_now();
  int rc = run_setup(&r, prg, bufs, local ? local : one);
  for (size_t g2 = 0; rc == 0 && g2 < global[2]; g2++)
    for (size_t g1 = 0; rc == 0 && g1 < global[1]; g1++)
      for (size_t g0 = 0; rc == 0 && g0 < global[0]; g0++) {
        r.gidx[0] = (int64_t)g0, r.gidx[1] = (int64_t)g1, r.gidx[2] = (int64_t)g2;
        rc = run_program(&r);
        if (rc == 0 && !(g0 & 0xFF)) rc = PyErr_CheckSignals();
      }
  run_free(&r);
  return rc < 0 ? -1 : device_now() - t0;
}

static int python_synchronize(void *dev) { UNUSED(dev); return 0; }

static PyObject *PythonProgram_new(PyTypeObject *type, PyObject *args, PyObject *kw) { return program_new(type, "PYTHON", args, kw); }

static PyTypeObject PythonProgram_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.PythonProgram",
  .tp_basicsize = sizeof(ProgramObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "tinygrad's PythonProgram(name, lib): lib is the pickled uop list, interpreted in C; "
            "prg(*bufs, global_size=, local_size=, vals=, wait=)",
  .tp_base = &Program_Type,
  .tp_new = PythonProgram_new,
};

/* ================================================================================================
 * PythonRenderer, PythonCompiler
 * ================================================================================================ */

/* EMULATE=...: the device whose tensor cores (and WMMA arg) the renderer takes, and the tc table */
static const struct { const char *emulate, *device, *tc; } emulated[] = {
  {"METAL", "METAL", "metal"}, {"AMD", "AMD", "amd_rdna3"}, {"AMD_MFMA", "AMD", "amd_cdna4"}, {"AMD_RDNA4", "AMD", "amd_rdna4"},
  {"CUDA", "CUDA", "cuda_sm80"}, {"CUDA_SM75", "CUDA", "cuda_sm75"}, {"CUDA_SM89", "CUDA", "cuda_sm89"}, {"INTEL", "INTEL", "intel"},
  {"AMX", "CPU", "amx"},
};

static int set_instance_attr(PyObject *self, const char *name, PyObject *v) {
  int rc = v ? PyObject_SetAttrString(self, name, v) : -1;
  Py_XDECREF(v);
  return rc;
}

/* the tensor core list tinyc._C.tc.<name> */
static PyObject *tc_table(const char *name) {
  PyObject *mod = PyImport_ImportModule("tinyc._C"), *tc = mod ? getattr_literal(mod, "tc") : NULL;
  PyObject *l = tc ? PyObject_GetAttrString(tc, name) : NULL;
  Py_XDECREF(mod); Py_XDECREF(tc);
  return l;
}

static int PythonRenderer_init(PyObject *self, PyObject *args, PyObject *kw) {
  if (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw))) { PyErr_SetString(PyExc_TypeError, "PythonRenderer() takes no arguments"); return -1; }
  const char *e = ctxvar_text_value("EMULATE");
  if (!e || !*e) return 0;
  for (size_t i = 0; i < sizeof(emulated) / sizeof(emulated[0]); i++) {
    if (strcmp(e, emulated[i].emulate)) continue;
    if (!strcmp(e, "INTEL") && set_instance_attr(self, "suffix", PyUnicode_FromString("INTEL")) < 0) return -1;
    return set_instance_attr(self, "device", PyUnicode_FromString(emulated[i].device)) < 0 ||
      set_instance_attr(self, "tensor_cores", tc_table(emulated[i].tc)) < 0 ? -1 : 0;
  }
  PyErr_Format(PyExc_RuntimeError, "can't EMULATE device: %s", e);
  return -1;
}

/* render(uops): base64(pickle([(op, dtype, [index of each src], arg)])); SPECIAL keeps no sources */
static PyObject *PythonRenderer_render(PyObject *self, PyObject *uops) {
  UNUSED(self);
  PyObject *seq = PySequence_Fast(uops, "render needs a list of UOps"), *index = seq ? PyDict_New() : NULL, *lops = NULL, *ret = NULL;
  Py_ssize_t n = seq ? PySequence_Fast_GET_SIZE(seq) : 0;
  if (!index || !(lops = PyList_New(n))) goto done;
  for (Py_ssize_t i = 0; i < n; i++) {   /* the first position of each uop: tinygrad's uops.index(v) */
    PyObject *u = PySequence_Fast_GET_ITEM(seq, i), *pos = UOp_Check(u) ? PyLong_FromSsize_t(i) : NULL;
    if (!pos) { if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "render needs UOps, got %.100s", Py_TYPE(u)->tp_name); goto done; }
    PyObject *had = PyDict_SetDefault(index, u, pos);
    Py_DECREF(pos);
    if (!had) goto done;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    UOp *u = (UOp *)PySequence_Fast_GET_ITEM(seq, i);
    PyObject *srcs = PyList_New(0);
    for (uint32_t k = 0; srcs && u->op != OP_SPECIAL && k < u->nsrc; k++) {
      PyObject *pos = PyDict_GetItemWithError(index, (PyObject *)u->src[k]);
      if (!pos && !PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%R is not in list", (PyObject *)u->src[k]);
      if (!pos || PyList_Append(srcs, pos) < 0) Py_CLEAR(srcs);
    }
    PyObject *t = srcs ? PyTuple_Pack(4, ops_members[u->op], (PyObject *)u->dtype, srcs, u->arg) : NULL;
    Py_XDECREF(srcs);
    if (!t) goto done;
    PyList_SET_ITEM(lops, i, t);
  }
  PyObject *pickle = PyImport_ImportModule("pickle"), *base64 = pickle ? PyImport_ImportModule("base64") : NULL;
  PyObject *bytes = base64 ? PyObject_CallMethod(pickle, "dumps", "O", lops) : NULL, *b64 = bytes ? PyObject_CallMethod(base64, "b64encode", "O", bytes) : NULL;
  ret = b64 ? PyUnicode_FromEncodedObject(b64, "ascii", "strict") : NULL;
  Py_XDECREF(pickle); Py_XDECREF(base64); Py_XDECREF(bytes); Py_XDECREF(b64);
done:
  Py_XDECREF(seq); Py_XDECREF(index); Py_XDECREF(lops);
  return ret;
}

static PyMethodDef PythonRenderer_methods[] = {
  {"render", PythonRenderer_render, METH_O, "render(uops) -> base64 of the pickled (op, dtype, src indices, arg) list"},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject PythonRenderer_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.PythonRenderer",
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,   /* GC support and the instance dict are inherited */
  .tp_doc = "tinygrad's PythonRenderer: serialises the linear uops for the PYTHON emulator; EMULATE= picks a device's tensor cores",
  .tp_base = &Renderer_Type,
  .tp_init = PythonRenderer_init,
  .tp_methods = PythonRenderer_methods,
};

/* code_for_op: the ops python_alu has (only the keys are read: they tell the pipeline what not to decompose) */
static PyObject *python_code_for_op(void) {
  static const Op ops[] = {OP_LOG2, OP_EXP2, OP_SQRT, OP_RECIPROCAL, OP_SIN, OP_POW, OP_TRUNC, OP_NEG, OP_ADD, OP_SUB, OP_MUL, OP_CMPNE,
                           OP_CMPLT, OP_XOR, OP_OR, OP_AND, OP_SHR, OP_SHL, OP_MAX, OP_MOD, OP_IDIV, OP_MULACC, OP_WHERE, OP_CMPEQ};
  PyObject *d = PyDict_New();
  for (size_t i = 0; d && i < sizeof(ops) / sizeof(ops[0]); i++)
    if (PyDict_SetItem(d, ops_members[ops[i]], Py_None) < 0) Py_CLEAR(d);
  return d;
}

/* PythonCompiler.compile(src): the base64-decoded bytes */
static PyObject *PythonCompiler_compile(PyObject *self, PyObject *src) {
  UNUSED(self);
  if (!PyUnicode_Check(src)) return PyErr_Format(PyExc_TypeError, "compile needs the source as str, got %.100s", Py_TYPE(src)->tp_name);
  PyObject *base64 = PyImport_ImportModule("base64"), *ret = base64 ? PyObject_CallMethod(base64, "b64decode", "O", src) : NULL;
  Py_XDECREF(base64);
  return ret;
}

static PyMethodDef PythonCompiler_methods[] = {
  {"compile", PythonCompiler_compile, METH_O, "compile(src) -> the pickled uops (base64-decoded)"},
  {NULL, NULL, 0, NULL},
};

static PyTypeObject PythonCompiler_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.PythonCompiler",
  .tp_basicsize = sizeof(CompilerObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,   /* GC support is inherited */
  .tp_doc = "tinygrad's PythonCompiler: compile(src) decodes the renderer's base64",
  .tp_base = &Compiler_Type,
  .tp_methods = PythonCompiler_methods,
};

/* ================================================================================================
 * The device
 * ================================================================================================ */

static PyTypeObject PythonDevice_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.PythonDevice",
  .tp_basicsize = sizeof(CompiledObject),
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "tinygrad's PythonDevice: PythonRenderer + PythonCompiler, host memory, the uop emulator (in C)",
  .tp_base = &Compiled_Type,
};

static PyObject *python_renderer(void) { return PyObject_CallNoArgs((PyObject *)&PythonRenderer_Type); }
static PyObject *python_compiler(void) { return PyObject_CallNoArgs((PyObject *)&PythonCompiler_Type); }

static const CompilerPair python_pairs[] = {
  {"PYTHON", python_renderer, python_compiler, NULL},
};

static const DeviceDef python_device = {
  .type = &PythonDevice_Type,
  .program_type = &PythonProgram_Type,
  .allocator = {python_alloc, python_free, python_copyin, python_copyout, python_host_view},
  .program = {python_load, python_launch, python_unload},
  .synchronize = python_synchronize,
  .compilers = {python_pairs, sizeof(python_pairs) / sizeof(python_pairs[0]), NULL},
};

const DeviceDef *python_open(PyObject *device, void **dev) {
  UNUSED(device);
  *dev = NULL;
  return &python_device;
}

int tinyc_init_ops_python(PyObject *m) {
  if (PyType_Ready(&PythonProgram_Type) < 0 || PyType_Ready(&PythonDevice_Type) < 0 || PyType_Ready(&PythonCompiler_Type) < 0 ||
      PyType_Ready(&PythonRenderer_Type) < 0 || ctxvar_text("EMULATE") < 0) return -1;
  PyTypeObject *t = &PythonRenderer_Type;
  if (renderer_set_attr(t, "device", PyUnicode_FromString("PYTHON")) < 0 || renderer_set_attr(t, "code_for_op", python_code_for_op()) < 0) return -1;
  PyType_Modified(t);
  return tinyc_add(m, "PythonProgram", (PyObject *)&PythonProgram_Type) < 0 || tinyc_add(m, "PythonDevice", (PyObject *)&PythonDevice_Type) < 0 ||
    tinyc_add(m, "PythonRenderer", (PyObject *)&PythonRenderer_Type) < 0 || tinyc_add(m, "PythonCompiler", (PyObject *)&PythonCompiler_Type) < 0
    ? -1 : 0;
}
