/* tinygrad/renderer/__init__.py's Estimates and ProgramSpec, as C types.
 *
 * Estimates(ops, lds, mem) is a frozen dataclass of sints (an int, or a UOp when the kernel is symbolic);
 * Estimates.from_uops counts a linear kernel's flops, bytes loaded/stored and global memory touched.
 * ProgramSpec is the plain (mutable, unhashable) dataclass describing one rendered kernel; from_uop builds it
 * from a finished PROGRAM UOp (SINK, DEVICE, LINEAR, SOURCE, optional BINARY) in one pass over the linear uops.
 * sint arithmetic goes through the Python number protocol, so ints stay ints and UOps build the same graph
 * (same operand order) as tinygrad's. */
#include "../uop/native.h"
#include "../uop/form.h"
#include "../uop/kernel_info.h"
#include "../helpers/dataclass.h"
#include "program_spec.h"
#include "renderer.h"
#include <zlib.h>

/* ==================== Estimates ==================== */

typedef struct {
  PyObject_HEAD
  PyObject *ops, *lds, *mem;   /* sint each */
} EstimatesObject;

static PyTypeObject Estimates_Type;
#define Estimates_Check(o) PyObject_TypeCheck((o), &Estimates_Type)

/* Steals the three references (any may be NULL: then everything is released and NULL returned). */
static PyObject *estimates_steal(PyObject *ops, PyObject *lds, PyObject *mem) {
  EstimatesObject *self = NULL;
  if (ops && lds && mem && (self = PyObject_GC_New(EstimatesObject, &Estimates_Type))) {
    self->ops = ops, self->lds = lds, self->mem = mem;
    PyObject_GC_Track(self);
    return (PyObject *)self;
  }
  Py_XDECREF(ops); Py_XDECREF(lds); Py_XDECREF(mem);
  return NULL;
}

static PyObject *Estimates_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"ops", "lds", "mem", NULL};
  PyObject *zero = PyLong_FromLong(0);
  if (!zero) return NULL;
  PyObject *ops = zero, *lds = zero, *mem = zero;
  EstimatesObject *self = NULL;
  if (PyArg_ParseTupleAndKeywords(args, kw, "|OOO:Estimates", kwlist, &ops, &lds, &mem) &&
      (self = PyObject_GC_New(EstimatesObject, type))) {
    self->ops = Py_NewRef(ops), self->lds = Py_NewRef(lds), self->mem = Py_NewRef(mem);
    PyObject_GC_Track(self);
  }
  Py_DECREF(zero);
  return (PyObject *)self;
}

static int Estimates_traverse(EstimatesObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->ops); Py_VISIT(self->lds); Py_VISIT(self->mem);
  return 0;
}

static void Estimates_dealloc(EstimatesObject *self) {
  PyObject_GC_UnTrack(self);
  Py_XDECREF(self->ops); Py_XDECREF(self->lds); Py_XDECREF(self->mem);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* __add__: field by field */
static PyObject *Estimates_add(PyObject *a, PyObject *b) {
  if (!Estimates_Check(a) || !Estimates_Check(b)) Py_RETURN_NOTIMPLEMENTED;
  EstimatesObject *x = (EstimatesObject *)a, *y = (EstimatesObject *)b;
  PyObject *ops = PyNumber_Add(x->ops, y->ops);
  PyObject *lds = ops ? PyNumber_Add(x->lds, y->lds) : NULL;
  PyObject *mem = lds ? PyNumber_Add(x->mem, y->mem) : NULL;
  return estimates_steal(ops, lds, mem);
}

/* ssimplify: a UOp simplified (a CONST becomes its value), anything else as is. New reference. */
static PyObject *sint_ssimplify(PyObject *x) {
  if (!UOp_Check(x)) return Py_NewRef(x);
  UOp *s = uop_simplify((UOp *)x);
  if (!s || s->op != OP_CONST) return (PyObject *)s;
  PyObject *v = Py_NewRef(s->arg);
  Py_DECREF(s);
  return v;
}

static PyObject *Estimates_simplify(EstimatesObject *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *ops = sint_ssimplify(self->ops);
  PyObject *lds = ops ? sint_ssimplify(self->lds) : NULL;
  PyObject *mem = lds ? sint_ssimplify(self->mem) : NULL;
  return estimates_steal(ops, lds, mem);
}

/* ---- Estimates.from_uops ---- */

/* The nodes tinygrad's dont_count holds: a map node -> flags; DC_GATED when the node's walk that stops at
 * RANGEs is done, DC_FULL when its whole graph is in. A node reached by either walk is in dont_count. */
enum { DC_GATED = 1, DC_FULL = 2 };

/* Add root's toposort (gated: without RANGE nodes and what is only below them) to the set. */
static int dont_count_add(PtrMap *set, UOp *root, bool gated) {
  PtrVec stack = {0};
  int ret = -1;
  intptr_t want = gated ? DC_GATED : DC_FULL;
  if (ptrvec_push(&stack, root) < 0) goto end;
  while (stack.len) {
    UOp *u = ptrvec_pop(&stack);
    if (gated && u->op == OP_RANGE) continue;
    intptr_t flags = (intptr_t)ptrmap_get(set, u);
    /* a full walk covers a gated one; a gated one covers only gated ones */
    if ((flags & want) || (flags & DC_FULL)) continue;
    if (ptrmap_set(set, u, (void *)(flags | want)) < 0) goto end;
    for (uint32_t i = 0; i < u->nsrc; i++)
      if (ptrvec_push(&stack, u->src[i]) < 0) goto end;
  }
  ret = 0;
end:
  ptrvec_free(&stack);
  return ret;
}

static int need_src(UOp *u, uint32_t n) {
  if (u->nsrc >= n) return 0;
  PyErr_Format(PyExc_IndexError, "Estimates.from_uops: %S needs %u sources, has %u", ops_members[u->op], n, (unsigned)u->nsrc);
  return -1;
}

/* A count as tinygrad's Python computes it: a C integer while every term is one (and no step overflows), else the
 * Python number (an int, or a UOp for a symbolic size), made by the same operations in the same order. */
typedef struct { long long c; PyObject *py; } Count;   /* the value: py (owned) when set, else c */

static PyObject *count_py(const Count *x) { return x->py ? Py_NewRef(x->py) : PyLong_FromLongLong(x->c); }

/* *x = v (stolen; NULL on error): its C value when v is an int that fits */
static int count_take(Count *x, PyObject *v) {
  if (!v) return -1;
  Py_CLEAR(x->py);
  if (PyLong_CheckExact(v)) {
    int overflow;
    long long c = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!overflow) { Py_DECREF(v); x->c = c; return c == -1 && PyErr_Occurred() ? -1 : 0; }
  }
  x->py = v;
  return 0;
}

/* *out = l * r (out may be either operand) */
static int count_mul(Count *out, const Count *l, const Count *r) {
  long long c;
  if (!l->py && !r->py && !__builtin_mul_overflow(l->c, r->c, &c)) { Py_CLEAR(out->py); out->c = c; return 0; }
  PyObject *a = count_py(l), *b = a ? count_py(r) : NULL, *v = b ? PyNumber_Multiply(a, b) : NULL;
  Py_XDECREF(a); Py_XDECREF(b);
  return count_take(out, v);
}

/* *acc += x */
static int count_add(Count *acc, const Count *x) {
  long long c;
  if (!acc->py && !x->py && !__builtin_add_overflow(acc->c, x->c, &c)) { acc->c = c; return 0; }
  PyObject *a = count_py(acc), *b = a ? count_py(x) : NULL, *v = b ? PyNumber_Add(a, b) : NULL;
  Py_XDECREF(a); Py_XDECREF(b);
  return count_take(acc, v);
}

/* mults with every SPECIAL in it replaced by 0 (the SPECIALs are counted in mults already). Steals mults. */
static PyObject *mults_drop_specials(PyObject *mults) {
  if (!UOp_Check(mults)) return mults;
  PyObject *topo = uop_toposort_list((UOp *)mults, NULL), *dvars = topo ? PyDict_New() : NULL, *ret = NULL;
  if (!dvars) goto end;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(topo); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(topo, i);
    if (x->op != OP_SPECIAL) continue;
    UOp *zero = uop_const_int(x->dtype, 0);
    int err = !zero || PyDict_SetItem(dvars, (PyObject *)x, (PyObject *)zero) < 0;
    Py_XDECREF(zero);
    if (err) goto end;
  }
  ret = PyDict_GET_SIZE(dvars) ? PyObject_CallMethod(mults, "substitute", "O", dvars) : Py_NewRef(mults);
end:
  Py_XDECREF(topo); Py_XDECREF(dvars); Py_DECREF(mults);
  return ret;
}

/* 2 * prod(arg[1]) // arg[5] of a WMMA: new reference */
static PyObject *wmma_flops(UOp *u) {
  PyObject *dims = PyTuple_Check(u->arg) && PyTuple_GET_SIZE(u->arg) > 5 ? PyTuple_GET_ITEM(u->arg, 1) : NULL;
  if (!dims) return PyErr_Format(PyExc_ValueError, "Estimates.from_uops: WMMA arg must be a tuple of at least 6 items");
  PyObject *it = PyObject_GetIter(dims), *p = PyLong_FromLong(2), *x;
  if (!it) { Py_XDECREF(p); return NULL; }
  while (p && (x = PyIter_Next(it))) { Py_SETREF(p, PyNumber_Multiply(p, x)); Py_DECREF(x); }
  Py_DECREF(it);
  if (p && PyErr_Occurred()) Py_CLEAR(p);
  if (p) Py_SETREF(p, PyNumber_FloorDivide(p, PyTuple_GET_ITEM(u->arg, 5)));
  return p;
}

static PyObject *estimates_from_uops(PyObject *seq, bool ignore_indexing) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject **items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < n; i++)
    if (!UOp_Check(items[i]))
      return PyErr_Format(PyExc_TypeError, "Estimates.from_uops needs UOps, got %.100s", Py_TYPE(items[i])->tp_name);
  PtrMap dont_count = {0}, mem_load = {0}, mem_store = {0};
  Count flops = {0, NULL}, lds = {0, NULL}, mults = {1, NULL};
  PyObject *stack = PyList_New(0), *ret = NULL;   /* the mults outside each open RANGE, as Python numbers */
  long long mem = 0;
  if (!stack) goto end;
  if (ignore_indexing) {
    for (Py_ssize_t i = 0; i < n; i++) {
      UOp *u = (UOp *)items[i];
      if (u->op == OP_LOAD || u->op == OP_STORE) {
        if (need_src(u, 1) < 0) goto end;
        /* an INDEX's buffer may be an AFTER: its indexing sources count, the buffer not */
        UOp *idx = u->src[0];
        if (idx->op == OP_INDEX) { for (uint32_t j = 1; j < idx->nsrc; j++) if (dont_count_add(&dont_count, idx->src[j], true) < 0) goto end; }
        else if (dont_count_add(&dont_count, idx, true) < 0) goto end;
        if (u->nsrc > 2 && dont_count_add(&dont_count, u->src[2], false) < 0) goto end;
      } else if (u->op == OP_IF) {
        if (need_src(u, 1) < 0 || dont_count_add(&dont_count, u->src[0], false) < 0) goto end;
      }
    }
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    UOp *u = (UOp *)items[i];
    Op op = u->op;
    if (op == OP_LOAD || op == OP_STORE) {
      if (need_src(u, op == OP_STORE ? 2 : 1) < 0) goto end;
      UOp *buf = u;
      while (buf->nsrc) buf = buf->src[0];
      if (buf->op == OP_DEFINE_GLOBAL) {   /* all of a global buffer counts as accessed, once per (buffer, op) */
        if (!buf->dtype->is_ptr) { PyErr_SetString(PyExc_RuntimeError, "ptrdtype called on UOp without PtrDType"); goto end; }
        PtrMap *seen = op == OP_LOAD ? &mem_load : &mem_store;
        if (!ptrmap_has(seen, buf)) {
          if (ptrmap_set(seen, buf, buf) < 0) goto end;
          mem += (long long)buf->dtype->size * dtype_itemsize(buf->dtype);
        }
      }
    }
    if (op == OP_RANGE || op == OP_SPECIAL) {
      if (need_src(u, 1) < 0) goto end;
      Count bound = {0, NULL};
      PyObject *outer = op == OP_RANGE ? count_py(&mults) : NULL;
      int err = count_take(&bound, sint_ssimplify((PyObject *)u->src[0])) < 0 ||
                (op == OP_RANGE && (!outer || PyList_Append(stack, outer) < 0)) || count_mul(&mults, &mults, &bound) < 0;
      Py_XDECREF(outer); Py_XDECREF(bound.py);
      if (err) goto end;
      /* a SPECIAL is counted in mults already; SPECIALs are never ENDed, so they are not pushed */
      if (op == OP_RANGE && mults.py && !(mults.py = mults_drop_specials(mults.py))) goto end;
    } else if (op == OP_END) {
      Py_ssize_t k = PyList_GET_SIZE(stack);
      if (!k) { PyErr_SetString(PyExc_IndexError, "Estimates.from_uops: END without a RANGE (pop from empty list)"); goto end; }
      if (count_take(&mults, Py_NewRef(PyList_GET_ITEM(stack, k - 1))) < 0 || PyList_SetSlice(stack, k - 1, k, NULL) < 0) goto end;
    } else if ((op == OP_LOAD || op == OP_STORE) && !(u->src[0]->dtype->is_ptr && u->src[0]->dtype->addrspace == ADDRSPACE_REG)) {
      /* bytes moved: itemsize * mults (the int on the left, as tinygrad writes it) */
      Count x = {dtype_itemsize(op == OP_LOAD ? u->dtype : u->src[1]->dtype), NULL};
      int err = count_mul(&x, &x, &mults) < 0 || count_add(&lds, &x) < 0;
      Py_XDECREF(x.py);
      if (err) goto end;
    } else if (IN_GROUP(op, ALU) && !ptrmap_has(&dont_count, u)) {
      /* (mults * (2 for MULACC else 1)) * vector width */
      Count x = {0, NULL}, twice = {op == OP_MULACC ? 2 : 1, NULL}, width = {u->dtype->count, NULL};
      int err = count_mul(&x, &mults, &twice) < 0 || count_mul(&x, &x, &width) < 0 || count_add(&flops, &x) < 0;
      Py_XDECREF(x.py);
      if (err) goto end;
    } else if (op == OP_WMMA && !ptrmap_has(&dont_count, u)) {
      Count x = {0, NULL};
      int err = count_take(&x, wmma_flops(u)) < 0 || count_mul(&x, &x, &mults) < 0 || count_add(&flops, &x) < 0;
      Py_XDECREF(x.py);
      if (err) goto end;
    }
  }
  ret = estimates_steal(count_py(&flops), count_py(&lds), PyLong_FromLongLong(mem));
end:
  Py_XDECREF(flops.py); Py_XDECREF(lds.py); Py_XDECREF(mults.py); Py_XDECREF(stack);
  ptrmap_free(&dont_count); ptrmap_free(&mem_load); ptrmap_free(&mem_store);
  return ret;
}

static PyObject *Estimates_from_uops(PyObject *unused, PyObject *args, PyObject *kw) {
  UNUSED(unused);
  static char *kwlist[] = {"uops", "ignore_indexing", NULL};
  PyObject *uops;
  int ignore_indexing = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:from_uops", kwlist, &uops, &ignore_indexing)) return NULL;
  PyObject *seq = PySequence_Tuple(uops);   /* a copy: the count runs Python-visible code, the list may change */
  if (!seq) return NULL;
  PyObject *ret = estimates_from_uops(seq, ignore_indexing);
  Py_DECREF(seq);
  return ret;
}

static PyMethodDef Estimates_methods[] = {
  {"simplify", (PyCFunction)Estimates_simplify, METH_NOARGS, "Each field ssimplify'd."},
  {"from_uops", (PyCFunction)(void (*)(void))Estimates_from_uops, METH_VARARGS | METH_KEYWORDS | METH_STATIC,
   "from_uops(uops, ignore_indexing=False): flops, bytes loaded/stored and global memory of a linear kernel."},
  {NULL, NULL, 0, NULL}
};

/* tinygrad's @dataclass(frozen=True) */
static const DataclassField estimates_fields[] = {
  DATACLASS_FIELD_DEFAULT(EstimatesObject, ops, "FLOPs of the kernel", dataclass_zero),
  DATACLASS_FIELD_DEFAULT(EstimatesObject, lds, "bytes loaded and stored", dataclass_zero),
  DATACLASS_FIELD_DEFAULT(EstimatesObject, mem, "bytes of global memory accessed, each counted once", dataclass_zero), {NULL}};
static const Dataclass estimates_dataclass = {estimates_fields, .frozen = true};

static PyNumberMethods Estimates_as_number = {.nb_add = Estimates_add};

static PyTypeObject Estimates_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.Estimates",
  .tp_doc = "Estimates(ops=0, lds=0, mem=0): a kernel's cost, a frozen dataclass as tinygrad's.",
  .tp_basicsize = sizeof(EstimatesObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
  .tp_new = Estimates_tp_new,
  .tp_dealloc = (destructor)Estimates_dealloc,
  .tp_traverse = (traverseproc)Estimates_traverse,
  .tp_as_number = &Estimates_as_number,
  .tp_methods = Estimates_methods,
};

/* ==================== ProgramSpec ==================== */

enum { PS_NAME, PS_SRC, PS_DEVICE, PS_AST, PS_UOPS, PS_LIB, PS_AUX, PS_GLOBAL_SIZE, PS_LOCAL_SIZE, PS_VARS, PS_GLOBALS,
       PS_OUTS, PS_INS, PS_NFIELDS };

typedef struct {
  PyObject_HEAD
  PyObject *f[PS_NFIELDS];      /* the dataclass fields, never NULL */
  PyObject *estimates;          /* cached properties (tinygrad's functools.cached_property), NULL until asked */
  PyObject *function_name;
} ProgramSpecObject;

/* tinygrad's plain @dataclass: eq, unhashable, mutable (through ProgramSpec_getset's checked setters); its defaults */
static PyObject *default_global_size(void) { return Py_BuildValue("[iii]", 1, 1, 1); }
#define PS_FIELD(i, name, ...) [i] = {name, offsetof(ProgramSpecObject, f[i]), NULL, __VA_ARGS__}
static const DataclassField ps_fields[PS_NFIELDS + 1] = {
  PS_FIELD(PS_NAME, "name", NULL, false), PS_FIELD(PS_SRC, "src", NULL, false), PS_FIELD(PS_DEVICE, "device", NULL, false),
  PS_FIELD(PS_AST, "ast", NULL, false), PS_FIELD(PS_UOPS, "uops", dataclass_none, false), PS_FIELD(PS_LIB, "lib", dataclass_none, false),
  PS_FIELD(PS_AUX, "aux", dataclass_new_list, true), PS_FIELD(PS_GLOBAL_SIZE, "global_size", default_global_size, true),
  PS_FIELD(PS_LOCAL_SIZE, "local_size", dataclass_none, false), PS_FIELD(PS_VARS, "vars", dataclass_new_list, true),
  PS_FIELD(PS_GLOBALS, "globals", dataclass_new_list, true), PS_FIELD(PS_OUTS, "outs", dataclass_new_list, true),
  PS_FIELD(PS_INS, "ins", dataclass_new_list, true), [PS_NFIELDS] = {NULL}};
#undef PS_FIELD
static const Dataclass ps_dataclass = {ps_fields};

static PyTypeObject ProgramSpec_Type;
#define ProgramSpec_Check(o) PyObject_TypeCheck((o), &ProgramSpec_Type)

static bool is_list_or_tuple(PyObject *v) { return PyList_Check(v) || PyTuple_Check(v); }

/* The type each field takes (what tinygrad's annotations say); 0 or -1 with a TypeError. */
static int ps_check_field(int i, PyObject *v) {
  const char *want = NULL;
  switch (i) {
  case PS_NAME: case PS_SRC: case PS_DEVICE: if (!PyUnicode_Check(v)) want = "str"; break;
  case PS_AST: if (!UOp_Check(v)) want = "UOp"; break;
  case PS_UOPS:
    if (v == Py_None) break;
    if (!is_list_or_tuple(v)) { want = "list of UOps or None"; break; }
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(v); j++)
      if (!UOp_Check(PySequence_Fast_GET_ITEM(v, j))) { want = "list of UOps or None"; break; }
    break;
  case PS_LIB: if (v != Py_None && !PyBytes_Check(v)) want = "bytes or None"; break;
  case PS_LOCAL_SIZE: if (v != Py_None && !is_list_or_tuple(v)) want = "list or None"; break;
  case PS_AUX: case PS_GLOBAL_SIZE: case PS_VARS: case PS_GLOBALS: case PS_OUTS: case PS_INS:
    if (!is_list_or_tuple(v)) want = "list";
    break;
  default: break;
  }
  if (!want) return 0;
  PyErr_Format(PyExc_TypeError, "ProgramSpec: %s must be %s, not %.100s", ps_fields[i].name, want, Py_TYPE(v)->tp_name);
  return -1;
}

/* A new ProgramSpec from 13 borrowed field values (checked). */
static PyObject *ps_make(PyTypeObject *type, PyObject *const *vals) {
  for (int i = 0; i < PS_NFIELDS; i++)
    if (ps_check_field(i, vals[i]) < 0) return NULL;
  ProgramSpecObject *self = (ProgramSpecObject *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  for (int i = 0; i < PS_NFIELDS; i++) self->f[i] = Py_NewRef(vals[i]);
  return (PyObject *)self;
}

static PyObject *ProgramSpec_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "src", "device", "ast", "uops", "lib", "aux", "global_size", "local_size", "vars",
                           "globals", "outs", "ins", NULL};
  PyObject *v[PS_NFIELDS] = {0};
  v[PS_UOPS] = v[PS_LIB] = v[PS_LOCAL_SIZE] = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|OOOOOOOOO:ProgramSpec", kwlist, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                                   &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], &v[12])) return NULL;
  /* the default factories: fresh lists per instance */
  PyObject *made[PS_NFIELDS] = {0}, *ret = NULL;
  for (int i = PS_AUX; i < PS_NFIELDS; i++) {
    if (v[i] || i == PS_LOCAL_SIZE) continue;
    made[i] = i == PS_GLOBAL_SIZE ? Py_BuildValue("[iii]", 1, 1, 1) : PyList_New(0);
    if (!(v[i] = made[i])) goto end;
  }
  ret = ps_make(type, v);
end:
  for (int i = 0; i < PS_NFIELDS; i++) Py_XDECREF(made[i]);
  return ret;
}

static int ProgramSpec_traverse(ProgramSpecObject *self, visitproc visit, void *arg) {
  for (int i = 0; i < PS_NFIELDS; i++) Py_VISIT(self->f[i]);
  Py_VISIT(self->estimates); Py_VISIT(self->function_name);
  return 0;
}

/* Fields are replaced by None on clear (not NULL), so a half-collected spec still reads safely. */
static int ProgramSpec_clear(ProgramSpecObject *self) {
  for (int i = 0; i < PS_NFIELDS; i++) if (self->f[i]) Py_SETREF(self->f[i], Py_NewRef(Py_None));
  Py_CLEAR(self->estimates); Py_CLEAR(self->function_name);
  return 0;
}

static void ProgramSpec_dealloc(ProgramSpecObject *self) {
  PyObject_GC_UnTrack(self);
  for (int i = 0; i < PS_NFIELDS; i++) Py_CLEAR(self->f[i]);
  Py_CLEAR(self->estimates); Py_CLEAR(self->function_name);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ps_get_field(ProgramSpecObject *self, void *closure) { return Py_NewRef(self->f[(intptr_t)closure]); }

static int ps_set_field(ProgramSpecObject *self, PyObject *v, void *closure) {
  int i = (int)(intptr_t)closure;
  if (!v) { PyErr_Format(PyExc_AttributeError, "ProgramSpec: can't delete field %s", ps_fields[i].name); return -1; }
  if (ps_check_field(i, v) < 0) return -1;
  Py_SETREF(self->f[i], Py_NewRef(v));
  return 0;
}

/* estimates: cached, as tinygrad's cached_property */
static PyObject *ps_get_estimates(ProgramSpecObject *self, void *closure) {
  UNUSED(closure);
  if (!self->estimates) {
    PyObject *uops = self->f[PS_UOPS];
    if (uops == Py_None) self->estimates = estimates_steal(PyLong_FromLong(0), PyLong_FromLong(0), PyLong_FromLong(0));
    else {
      PyObject *seq = PySequence_Tuple(uops);
      if (!seq) return NULL;
      self->estimates = estimates_from_uops(seq, true);
      Py_DECREF(seq);
    }
    if (!self->estimates) return NULL;
  }
  return Py_NewRef(self->estimates);
}

static PyObject *ps_get_function_name(ProgramSpecObject *self, void *closure) {
  UNUSED(closure);
  if (!self->function_name && !(self->function_name = tinyc_to_function_name(self->f[PS_NAME]))) return NULL;
  return Py_NewRef(self->function_name);
}

static PyObject *ps_get_applied_opts(ProgramSpecObject *self, void *closure) {
  UNUSED(closure);
  PyObject *uops = self->f[PS_UOPS];
  if (uops == Py_None) Py_RETURN_NONE;
  Py_ssize_t n = PySequence_Size(uops);
  if (n < 0) return NULL;
  if (n == 0) return PyErr_Format(PyExc_IndexError, "ProgramSpec.applied_opts: uops is empty");
  PyObject *last = PySequence_GetItem(uops, n - 1), *ret = NULL;
  if (!last) return NULL;
  if (!UOp_Check(last)) PyErr_Format(PyExc_TypeError, "ProgramSpec.uops must hold UOps, not %.100s", Py_TYPE(last)->tp_name);
  else if (((UOp *)last)->op != OP_SINK) PyErr_Format(PyExc_AssertionError, "%S", ops_members[((UOp *)last)->op]);
  else ret = PyObject_GetAttrString(((UOp *)last)->arg, "applied_opts");
  Py_DECREF(last);
  return ret;
}

/* [sym_infer(sz, var_vals) for sz in sizes]: new list */
static PyObject *sizes_infer(PyObject *sizes, PyObject *var_vals) {
  PyObject *seq = PySequence_Fast(sizes, "launch_dims: sizes must be a list");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject *ret = PyList_New(n);
  for (Py_ssize_t i = 0; ret && i < n; i++) {
    PyObject *sz = PySequence_Fast_GET_ITEM(seq, i);
    PyObject *v = UOp_Check(sz) ? PyObject_CallMethod(sz, "sym_infer", "O", var_vals) : Py_NewRef(sz);
    if (!v) Py_CLEAR(ret);
    else PyList_SET_ITEM(ret, i, v);
  }
  Py_DECREF(seq);
  return ret;
}

static PyObject *ProgramSpec_launch_dims(ProgramSpecObject *self, PyObject *var_vals) {
  PyObject *gs = sizes_infer(self->f[PS_GLOBAL_SIZE], var_vals);
  PyObject *ls = !gs ? NULL : self->f[PS_LOCAL_SIZE] == Py_None ? Py_NewRef(Py_None) : sizes_infer(self->f[PS_LOCAL_SIZE], var_vals);
  if (!ls) { Py_XDECREF(gs); return NULL; }
  return Py_BuildValue("(NN)", gs, ls);
}

/* ---- from_uop ---- */

static PyObject *sorted_unique(PyObject *set) {
  PyObject *l = PySequence_List(set);
  if (l && PyList_Sort(l) < 0) Py_CLEAR(l);
  return l;
}

static PyObject *arg_getter;   /* operator.attrgetter("arg"): the sort key of vars */

/* the size index of a SPECIAL: int(arg[-1]) */
static int special_dim(UOp *u, Py_ssize_t *dim) {
  PyObject *last = PySequence_GetItem(u->arg, PySequence_Size(u->arg) - 1);
  PyObject *d = last ? PyNumber_Long(last) : NULL;
  Py_XDECREF(last);
  if (!d) return -1;
  *dim = PyLong_AsSsize_t(d);
  Py_DECREF(d);
  return *dim == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *ProgramSpec_from_uop(PyObject *unused, PyObject *prg_obj) {
  UNUSED(unused);
  return program_spec_from_uop(prg_obj);
}

PyObject *program_spec_from_uop(PyObject *prg_obj) {
  if (!UOp_Check(prg_obj)) return PyErr_Format(PyExc_TypeError, "ProgramSpec.from_uop needs a UOp, not %.100s", Py_TYPE(prg_obj)->tp_name);
  UOp *prg = (UOp *)prg_obj;
  if (uop_check_form(prg, "ProgramSpec.from_uop") < 0) return NULL;
  if (prg->op != OP_PROGRAM) return PyErr_Format(PyExc_AssertionError, "expected PROGRAM, got %S", ops_members[prg->op]);
  if (prg->nsrc < 4) return PyErr_Format(PyExc_ValueError, "not enough values to unpack (expected 4, got %u)", (unsigned)prg->nsrc);
  /* SINK, DEVICE, LINEAR, SOURCE, then BINARY when compiled */
  UOp *sink = prg->src[0], *device = prg->src[1], *linear = prg->src[2], *source = prg->src[3];
  PyObject *lib = prg->nsrc > 4 ? prg->src[4]->arg : Py_None;
  PyObject *uops = PyList_New(linear->nsrc), *vars = PyList_New(0), *globals = PySet_New(NULL), *outs = PySet_New(NULL);
  PyObject *ins = PySet_New(NULL), *gsize = Py_BuildValue("[iii]", 1, 1, 1), *lsize = Py_BuildValue("[iii]", 1, 1, 1);
  PyObject *name = NULL, *aux = NULL, *ret = NULL, *globals_l = NULL, *outs_l = NULL, *ins_l = NULL, *vars_s = NULL;
  if (!uops || !vars || !globals || !outs || !ins || !gsize || !lsize) goto end;
  for (uint32_t i = 0; i < linear->nsrc; i++) {
    UOp *u = linear->src[i];
    PyList_SET_ITEM(uops, i, Py_NewRef((PyObject *)u));
    if (u->op == OP_DEFINE_VAR && PyList_Append(vars, (PyObject *)u) < 0) goto end;
    if (u->op == OP_DEFINE_GLOBAL && PySet_Add(globals, u->arg) < 0) goto end;
    if ((u->op == OP_STORE || u->op == OP_LOAD) && u->nsrc) {
      /* the buffer of an INDEX (possibly under a CAST) that is a DEFINE_GLOBAL is an output / input */
      UOp *idx = u->src[0];
      if (idx->op == OP_CAST && idx->nsrc) idx = idx->src[0];
      if (idx->op == OP_INDEX && idx->nsrc && idx->src[0]->op == OP_DEFINE_GLOBAL &&
          PySet_Add(u->op == OP_STORE ? outs : ins, idx->src[0]->arg) < 0) goto end;
    }
    if (u->op == OP_SPECIAL) {
      if (!PyUnicode_Check(u->arg) || !PyUnicode_GET_LENGTH(u->arg) || !u->nsrc) {
        PyErr_Format(PyExc_ValueError, "ProgramSpec.from_uop: SPECIAL needs a name and a size, got arg %R", u->arg);
        goto end;
      }
      Py_UCS4 kind = PyUnicode_READ_CHAR(u->arg, 0);
      if (kind == 'i') Py_SETREF(lsize, Py_NewRef(Py_None));   /* threads: no local size */
      PyObject *sizes = kind == 'l' ? lsize : gsize;
      if (sizes == Py_None) continue;
      Py_ssize_t dim;
      if (special_dim(u, &dim) < 0) goto end;
      PyObject *sz = sint_ssimplify((PyObject *)u->src[0]);
      if (!sz || PySequence_SetItem(sizes, dim, sz) < 0) { Py_XDECREF(sz); goto end; }
      Py_DECREF(sz);
    }
  }
  if (!(name = getattr_literal(sink->arg, "name"))) goto end;
  int has_aux = PyObject_IsTrue(prg->arg);
  if (has_aux < 0 || !(aux = has_aux ? PySequence_List(prg->arg) : PyList_New(0))) goto end;
  PyObject *kw = Py_BuildValue("{sO}", "key", arg_getter);
  if (kw) {   /* sorted(vars, key=lambda v: v.arg) */
    PyObject *sorted = PyDict_GetItemString(PyEval_GetBuiltins(), "sorted"), *a = PyTuple_Pack(1, vars);
    if (sorted && a) vars_s = PyObject_Call(sorted, a, kw);
    Py_XDECREF(a);
  }
  Py_XDECREF(kw);
  if (!vars_s || !(globals_l = sorted_unique(globals)) || !(outs_l = sorted_unique(outs)) || !(ins_l = sorted_unique(ins))) goto end;
  PyObject *vals[PS_NFIELDS] = {name, source->arg, device->arg, (PyObject *)sink, uops, lib, aux, gsize, lsize, vars_s, globals_l,
                                outs_l, ins_l};
  ret = ps_make(&ProgramSpec_Type, vals);
end:
  Py_XDECREF(uops); Py_XDECREF(vars); Py_XDECREF(globals); Py_XDECREF(outs); Py_XDECREF(ins); Py_XDECREF(gsize);
  Py_XDECREF(lsize); Py_XDECREF(name); Py_XDECREF(aux); Py_XDECREF(globals_l); Py_XDECREF(outs_l); Py_XDECREF(ins_l);
  Py_XDECREF(vars_s);
  return ret;
}

/* zlib's CRC-32 of the bytes, with their length: it catches every burst of damage up to 32 bits long */
static unsigned long long ps_checksum(const char *data, Py_ssize_t n) {
  return ((unsigned long long)n << 32) | crc32_z(0L, (const Bytef *)data, (z_size_t)n);
}

/* Pickled as ProgramSpec._from_pickle(payload, checksum): the fields pickled on their own, with a checksum over them.
 * A spec carries machine code (lib) and the launch sizes it is run with; a pickle damaged in transit or on disk must
 * not reach dlopen or a launch (a damaged ELF can crash the loader, a damaged global_size runs threads out of
 * bounds), so it fails the checksum and raises instead. */
static PyObject *ProgramSpec_reduce(ProgramSpecObject *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *fields = dataclass_astuple((PyObject *)self), *pickle = fields ? PyImport_ImportModule("pickle") : NULL, *ret = NULL;
  PyObject *payload = pickle ? PyObject_CallMethod(pickle, "dumps", "(O)", fields) : NULL;
  if (payload && !PyBytes_Check(payload)) PyErr_SetString(PyExc_TypeError, "pickle.dumps did not return bytes");
  else if (payload)
    ret = Py_BuildValue("(N(OK))", PyObject_GetAttrString((PyObject *)Py_TYPE(self), "_from_pickle"), payload,
                        ps_checksum(PyBytes_AS_STRING(payload), PyBytes_GET_SIZE(payload)));
  Py_XDECREF(fields); Py_XDECREF(pickle); Py_XDECREF(payload);
  return ret;
}

static PyObject *ProgramSpec_from_pickle(PyObject *cls, PyObject *args) {
  PyObject *payload, *checksum;
  if (!PyArg_ParseTuple(args, "O!O!:_from_pickle", &PyBytes_Type, &payload, &PyLong_Type, &checksum)) return NULL;
  unsigned long long want = PyLong_AsUnsignedLongLong(checksum);
  if (want == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    return PyErr_Format(PyExc_ValueError, "corrupt ProgramSpec pickle: the checksum is no 64-bit number");
  }
  if (ps_checksum(PyBytes_AS_STRING(payload), PyBytes_GET_SIZE(payload)) != want)
    return PyErr_Format(PyExc_ValueError, "corrupt ProgramSpec pickle: its %zd bytes of fields fail their checksum",
                        PyBytes_GET_SIZE(payload));
  PyObject *pickle = PyImport_ImportModule("pickle"), *fields = pickle ? PyObject_CallMethod(pickle, "loads", "(O)", payload) : NULL;
  PyObject *ret = NULL;
  if (fields && (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) != PS_NFIELDS))
    PyErr_Format(PyExc_TypeError, "ProgramSpec pickle: the fields are no tuple of %d", PS_NFIELDS);
  else if (fields) ret = PyObject_Call(cls, fields, NULL);
  Py_XDECREF(pickle); Py_XDECREF(fields);
  return ret;
}

static PyMethodDef ProgramSpec_methods[] = {
  {"launch_dims", (PyCFunction)ProgramSpec_launch_dims, METH_O,
   "launch_dims(var_vals): (global_size, local_size) with the variables' values put in."},
  {"from_uop", (PyCFunction)ProgramSpec_from_uop, METH_O | METH_STATIC,
   "from_uop(prg): the ProgramSpec of a PROGRAM UOp (SINK, DEVICE, LINEAR, SOURCE[, BINARY])."},
  {"__reduce__", (PyCFunction)ProgramSpec_reduce, METH_NOARGS, NULL},
  {"_from_pickle", (PyCFunction)ProgramSpec_from_pickle, METH_VARARGS | METH_CLASS,
   "_from_pickle(payload, checksum): unpickle, refusing fields whose checksum fails (ValueError)."},
  {NULL, NULL, 0, NULL}
};

#define FIELD(i) {#i, (getter)ps_get_field, (setter)ps_set_field, NULL, (void *)(intptr_t)PS_FIELD_##i}
enum { PS_FIELD_name = PS_NAME, PS_FIELD_src = PS_SRC, PS_FIELD_device = PS_DEVICE, PS_FIELD_ast = PS_AST, PS_FIELD_uops = PS_UOPS,
       PS_FIELD_lib = PS_LIB, PS_FIELD_aux = PS_AUX, PS_FIELD_global_size = PS_GLOBAL_SIZE, PS_FIELD_local_size = PS_LOCAL_SIZE,
       PS_FIELD_vars = PS_VARS, PS_FIELD_globals = PS_GLOBALS, PS_FIELD_outs = PS_OUTS, PS_FIELD_ins = PS_INS };
static PyGetSetDef ProgramSpec_getset[] = {
  FIELD(name), FIELD(src), FIELD(device), FIELD(ast), FIELD(uops), FIELD(lib), FIELD(aux), FIELD(global_size), FIELD(local_size),
  FIELD(vars), FIELD(globals), FIELD(outs), FIELD(ins),
  {"estimates", (getter)ps_get_estimates, NULL, "Estimates.from_uops(uops, ignore_indexing=True), computed once", NULL},
  {"function_name", (getter)ps_get_function_name, NULL, "to_function_name(name), computed once", NULL},
  {"applied_opts", (getter)ps_get_applied_opts, NULL, "the opts the kernel's SINK says were applied", NULL},
  {NULL, NULL, NULL, NULL, NULL}
};
#undef FIELD

static PyTypeObject ProgramSpec_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.ProgramSpec",
  .tp_doc = "ProgramSpec(name, src, device, ast, uops=None, lib=None, aux=[], global_size=[1,1,1], local_size=None, vars=[],\n"
            "globals=[], outs=[], ins=[]): one rendered (and maybe compiled) kernel, a dataclass as tinygrad's.",
  .tp_basicsize = sizeof(ProgramSpecObject),
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
  .tp_new = ProgramSpec_tp_new,
  .tp_dealloc = (destructor)ProgramSpec_dealloc,
  .tp_traverse = (traverseproc)ProgramSpec_traverse,
  .tp_clear = (inquiry)ProgramSpec_clear,
  .tp_methods = ProgramSpec_methods,
  .tp_getset = ProgramSpec_getset,
};

int tinyc_init_program_spec(PyObject *m) {
  if (!arg_getter) {
    PyObject *operator = PyImport_ImportModule("operator");
    arg_getter = operator ? PyObject_CallMethod(operator, "attrgetter", "s", "arg") : NULL;
    Py_XDECREF(operator);
    if (!arg_getter) return -1;
  }
  if (dataclass_ready(&Estimates_Type, &estimates_dataclass) < 0 || dataclass_ready(&ProgramSpec_Type, &ps_dataclass) < 0) return -1;
  return tinyc_add(m, "Estimates", (PyObject *)&Estimates_Type) < 0 || tinyc_add(m, "ProgramSpec", (PyObject *)&ProgramSpec_Type) < 0
    ? -1 : 0;
}
