/* tinygrad/engine/realize.py's CompiledRunner in C.
 *
 * CompiledRunner(p) takes a ProgramSpec and reads it only through attributes (p.lib, p.src, p.name, p.function_name,
 * p.device, p.global_size, p.local_size, p.vars, p.globals, p.uops / p.ast, p.estimates, p.launch_dims(var_vals)),
 * so tinygrad's ProgramSpec and tinyc's both work. It compiles with the device's compiler (through the disk cache)
 * only when p.lib is None, keeping a copy of p with lib set (p.replace(lib=...), else dataclasses.replace), and loads
 * the program with the device's runtime. It pickles as (CompiledRunner, (p,)): unpickling loads p.lib, no compile.
 * A call launches through the program's device (program_launch), whichever device it is.
 *
 * A call checks what a kernel would otherwise read out of bounds: the number of buffers, each buffer's type, device,
 * allocation, dtype and size (against the kernel's DEFINE_GLOBALs), and a value in range for every variable. */
#include "realize.h"
#include "../helpers.h"
#include <structmember.h>

typedef struct { PyObject *dtname; int itemsize; Py_ssize_t size; } ExpectedBuf;   /* size -1: unknown */
typedef struct { PyObject *name; long long lo, hi; } ExpectedVar;
typedef struct { size_t global[3], local[3]; bool has_local; } LaunchDims;   /* has_local: p.local_size is not None nor empty */

typedef struct {
  PyObject_HEAD
  PyObject *p, *prg, *name, *device, *estimates, *dict;
  int first_run;
  Py_ssize_t nbufs, nvars;
  ExpectedBuf *bufs;
  ExpectedVar *vars;
  bool const_dims;        /* every launch dim is an int: they are in dims; else ask p.launch_dims(var_vals) at each call */
  LaunchDims dims;
} CompiledRunnerObject;


static void runner_free_info(CompiledRunnerObject *self) {
  for (Py_ssize_t i = 0; self->bufs && i < self->nbufs; i++) Py_XDECREF(self->bufs[i].dtname);
  for (Py_ssize_t i = 0; self->vars && i < self->nvars; i++) Py_XDECREF(self->vars[i].name);
  PyMem_Free(self->bufs); PyMem_Free(self->vars);
  self->bufs = NULL, self->vars = NULL, self->nbufs = self->nvars = 0;
}

static int CompiledRunner_clear(CompiledRunnerObject *self) {
  Py_CLEAR(self->p); Py_CLEAR(self->prg); Py_CLEAR(self->name); Py_CLEAR(self->device); Py_CLEAR(self->estimates); Py_CLEAR(self->dict);
  return 0;
}
static int CompiledRunner_traverse(CompiledRunnerObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->p); Py_VISIT(self->prg); Py_VISIT(self->estimates); Py_VISIT(self->dict);
  return 0;
}
static void CompiledRunner_dealloc(CompiledRunnerObject *self) {
  PyObject_GC_UnTrack(self);
  CompiledRunner_clear(self);
  runner_free_info(self);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* p with one field replaced: p.replace(field=value) when the spec has it, else dataclasses.replace(p, field=value) */
PyObject *spec_replace(PyObject *p, const char *field, PyObject *value) {
  PyObject *kw = Py_BuildValue("{sO}", field, value), *args = NULL, *fn = NULL, *ret = NULL;
  if (!kw) return NULL;
  if (PyObject_HasAttrString(p, "replace")) {
    if ((fn = getattr_literal(p, "replace")) && (args = PyTuple_New(0))) ret = PyObject_Call(fn, args, kw);
  } else {
    PyObject *dc = PyImport_ImportModule("dataclasses");
    if (dc && (fn = getattr_literal(dc, "replace")) && (args = PyTuple_Pack(1, p))) ret = PyObject_Call(fn, args, kw);
    Py_XDECREF(dc);
  }
  Py_XDECREF(fn); Py_XDECREF(args); Py_DECREF(kw);
  return ret;
}

/* Clear an ordinary error (an Exception: what an odd spec raises here is not fatal); keep KeyboardInterrupt and the
 * other BaseExceptions, which a Ctrl-C arriving in the Python code these attribute reads run raises. */
static void clear_ordinary(void) {
  if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_Exception)) PyErr_Clear();
}

/* a string attribute of an object's attribute, e.g. u.op.name; new ref or NULL (an ordinary exception cleared) */
static PyObject *op_name(PyObject *u) {
  PyObject *op = getattr_literal(u, "op"), *name = op ? getattr_literal(op, "name") : NULL;
  Py_XDECREF(op);
  if (!name) clear_ordinary();
  return name;
}

/* From the kernel's DEFINE_GLOBALs (in p.uops, else p.ast's graph): the dtype and size each buffer must have. */
static int collect_buffers(CompiledRunnerObject *self, PyObject *p) {
  PyObject *globals = getattr_literal(p, "globals");
  if (!globals) return -1;
  PyObject *gl = PySequence_Fast(globals, "p.globals must be a sequence");
  Py_DECREF(globals);
  if (!gl) return -1;
  self->nbufs = PySequence_Fast_GET_SIZE(gl);
  self->bufs = PyMem_Calloc((size_t)self->nbufs + 1, sizeof(ExpectedBuf));
  if (!self->bufs) { Py_DECREF(gl); PyErr_NoMemory(); return -1; }
  for (Py_ssize_t i = 0; i < self->nbufs; i++) self->bufs[i].size = -1;
  PyObject *uops = getattr_literal(p, "uops");
  if (!uops) clear_ordinary();
  if (!PyErr_Occurred() && (!uops || uops == Py_None)) {  /* no uops: walk the AST */
    Py_XDECREF(uops);
    PyObject *ast = getattr_literal(p, "ast");
    uops = ast && ast != Py_None ? PyObject_CallMethod(ast, "toposort", NULL) : NULL;
    Py_XDECREF(ast);
    if (!uops) clear_ordinary();
  }
  PyObject *it = uops && !PyErr_Occurred() ? PyObject_GetIter(uops) : NULL, *u;
  if (!it) clear_ordinary();
  int rc = 0;
  while (it && !PyErr_Occurred() && (u = PyIter_Next(it))) {
    PyObject *nm = op_name(u);
    if (nm && PyUnicode_Check(nm) && PyUnicode_CompareWithASCIIString(nm, "DEFINE_GLOBAL") == 0) {
      PyObject *arg = getattr_literal(u, "arg"), *dt = arg ? getattr_literal(u, "dtype") : NULL;
      PyObject *base = dt ? getattr_literal(dt, "base") : NULL, *bname = base ? getattr_literal(base, "name") : NULL;
      PyObject *isz = bname ? getattr_literal(base, "itemsize") : NULL, *sz = isz ? getattr_literal(dt, "size") : NULL;
      if (arg && bname && isz && sz && PyLong_Check(arg) && PyUnicode_Check(bname)) {
        for (Py_ssize_t i = 0; i < self->nbufs; i++) {
          PyObject *g = PySequence_Fast_GET_ITEM(gl, i);
          int eq = PyObject_RichCompareBool(g, arg, Py_EQ);
          if (eq < 0) { clear_ordinary(); if (PyErr_Occurred()) break; continue; }
          if (!eq) continue;
          Py_XSETREF(self->bufs[i].dtname, Py_NewRef(bname));
          self->bufs[i].itemsize = (int)PyLong_AsLong(isz);
          self->bufs[i].size = PyLong_AsSsize_t(sz);
          if (PyErr_Occurred()) { clear_ordinary(); self->bufs[i].size = -1; }
        }
      }
      clear_ordinary();
      Py_XDECREF(arg); Py_XDECREF(dt); Py_XDECREF(base); Py_XDECREF(bname); Py_XDECREF(isz); Py_XDECREF(sz);
    }
    Py_XDECREF(nm);
    Py_DECREF(u);
  }
  if (PyErr_Occurred()) rc = -1;
  Py_XDECREF(it); Py_XDECREF(uops); Py_DECREF(gl);
  return rc;
}

/* p.vars: each a DEFINE_VAR with arg (name, min, max) */
static int collect_vars(CompiledRunnerObject *self, PyObject *p) {
  PyObject *vars = getattr_literal(p, "vars");
  if (!vars) return -1;
  PyObject *vl = PySequence_Fast(vars, "p.vars must be a sequence");
  Py_DECREF(vars);
  if (!vl) return -1;
  self->nvars = PySequence_Fast_GET_SIZE(vl);
  self->vars = PyMem_Calloc((size_t)self->nvars + 1, sizeof(ExpectedVar));
  if (!self->vars) { Py_DECREF(vl); PyErr_NoMemory(); return -1; }
  for (Py_ssize_t i = 0; i < self->nvars; i++) {
    PyObject *arg = getattr_literal(PySequence_Fast_GET_ITEM(vl, i), "arg");
    if (!arg || !PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(arg, 0))) {
      if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "p.vars[%zd] is not a variable with arg (name, min, max)", i);
      Py_XDECREF(arg); Py_DECREF(vl);
      return -1;
    }
    ExpectedVar *v = &self->vars[i];
    v->name = Py_NewRef(PyTuple_GET_ITEM(arg, 0));
    v->lo = PyLong_AsLongLong(PyTuple_GET_ITEM(arg, 1));
    v->hi = PyLong_AsLongLong(PyTuple_GET_ITEM(arg, 2));
    Py_DECREF(arg);
    if (PyErr_Occurred()) { Py_DECREF(vl); return -1; }
  }
  Py_DECREF(vl);
  return 0;
}

/* a launch size that is None, an empty sequence or one of ints: whether it is all ints */
static int all_int(PyObject *size) {
  if (size == Py_None) return 1;
  PyObject *seq = PySequence_Fast(size, "launch sizes must be sequences");
  if (!seq) return -1;
  bool ok = true;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) ok = ok && PyLong_Check(PySequence_Fast_GET_ITEM(seq, i));
  Py_DECREF(seq);
  return ok;
}

/* the dims of (global_size, local_size) as tinygrad passes them: global always 3 long, local none when it is empty */
static int set_dims(LaunchDims *d, PyObject *gs, PyObject *ls, PyObject *who) {
  int has_local = ls == Py_None ? 0 : PyObject_IsTrue(ls);
  if (has_local < 0) return -1;
  d->global[0] = d->global[1] = d->global[2] = 1;
  d->has_local = has_local;
  return (gs != Py_None && launch_size(gs, d->global, who, "global_size") < 0) || (has_local && launch_size(ls, d->local, who, "local_size") < 0)
    ? -1 : 0;
}

/* the launch dims, kept when they are constant */
static int collect_dims(CompiledRunnerObject *self, PyObject *p) {
  PyObject *gs = getattr_literal(p, "global_size"), *ls = gs ? getattr_literal(p, "local_size") : NULL;
  int gi = ls ? all_int(gs) : -1, li = gi > 0 ? all_int(ls) : gi;
  int rc = li < 0 ? -1 : 0;
  if ((self->const_dims = gi > 0 && li > 0)) rc = set_dims(&self->dims, gs, ls, self->name);
  Py_XDECREF(gs); Py_XDECREF(ls);
  return rc;
}

static PyObject *CompiledRunner_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"p", "prg", NULL};
  PyObject *p, *prg = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:CompiledRunner", kwlist, &p, &prg)) return NULL;
  CompiledRunnerObject *self = (CompiledRunnerObject *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->first_run = 1;
  PyObject *dev = NULL, *lib = NULL, *aux = NULL, *fname = NULL;
  if (!(self->device = getattr_literal(p, "device"))) goto fail;
  if (!PyUnicode_Check(self->device)) { PyErr_Format(PyExc_TypeError, "p.device must be str, got %.100s", Py_TYPE(self->device)->tp_name); goto fail; }
  if (!(dev = device_get(self->device))) goto fail;
  if (!(lib = getattr_literal(p, "lib"))) goto fail;
  if (lib == Py_None) {   /* compile now, through the cache, and keep a spec that carries the binary */
    PyObject *src = getattr_literal(p, "src"), *compiler = src ? getattr_literal(dev, "compiler") : NULL;
    Py_SETREF(lib, compiler ? PyObject_CallMethod(compiler, "compile_cached", "O", src) : NULL);
    Py_XDECREF(src); Py_XDECREF(compiler);
    if (!lib || !(self->p = spec_replace(p, "lib", lib))) goto fail;
  } else self->p = Py_NewRef(p);
  if (!(self->name = getattr_literal(self->p, "name")) || !(fname = getattr_literal(self->p, "function_name"))) goto fail;
  if (prg != Py_None) self->prg = Py_NewRef(prg);
  else {
    aux = getattr_literal(self->p, "aux");
    if (!aux) PyErr_Clear();
    PyObject *rt = getattr_literal(dev, "runtime"), *auxt = aux && aux != Py_None ? PySequence_Tuple(aux) : PyTuple_New(0);
    PyObject *head = auxt ? Py_BuildValue("(OO)", fname, lib) : NULL, *all = head ? PySequence_Concat(head, auxt) : NULL;
    self->prg = rt && all ? PyObject_Call(rt, all, NULL) : NULL;
    Py_XDECREF(rt); Py_XDECREF(auxt); Py_XDECREF(head); Py_XDECREF(all);
    if (!self->prg) goto fail;
  }
  if (!(self->estimates = getattr_literal(self->p, "estimates"))) goto fail;
  if (collect_buffers(self, self->p) < 0 || collect_vars(self, self->p) < 0 || collect_dims(self, self->p) < 0) goto fail;
  Py_DECREF(dev); Py_DECREF(lib); Py_XDECREF(aux); Py_DECREF(fname);
  return (PyObject *)self;
fail:
  Py_XDECREF(dev); Py_XDECREF(lib); Py_XDECREF(aux); Py_XDECREF(fname);
  Py_DECREF(self);
  return NULL;
}

/* The value of every var, checked against its range (a value outside it could index out of bounds). */
static int gather_vals(CompiledRunnerObject *self, PyObject *var_vals, int64_t *out) {
  for (Py_ssize_t i = 0; i < self->nvars; i++) {
    ExpectedVar *v = &self->vars[i];
    PyObject *val = var_vals && var_vals != Py_None ? PyObject_GetItem(var_vals, v->name) : NULL;
    if (!val) {
      if (var_vals && var_vals != Py_None && !PyErr_ExceptionMatches(PyExc_KeyError)) return -1;
      PyErr_Clear();
      PyObject *msg = PyUnicode_FromFormat("%S needs a value for var %R (var_vals has no such key)", self->name, v->name);
      if (msg) { PyErr_SetObject(PyExc_KeyError, msg); Py_DECREF(msg); }
      return -1;
    }
    if (!PyLong_Check(val)) {
      PyErr_Format(PyExc_TypeError, "%S: value of var %R must be int, got %.100s", self->name, v->name, Py_TYPE(val)->tp_name);
      Py_DECREF(val);
      return -1;
    }
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(val, &overflow);
    Py_DECREF(val);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (overflow || x < v->lo || x > v->hi) {
      PyErr_Format(PyExc_ValueError, "%S: var %R = %lld is outside its range [%lld, %lld]", self->name, v->name, overflow ? 0LL : x, v->lo, v->hi);
      return -1;
    }
    out[i] = x;
  }
  return 0;
}

static int check_buffer(CompiledRunnerObject *self, Py_ssize_t i, PyObject *o) {
  if (!Buffer_Check(o)) {
    PyErr_Format(PyExc_TypeError, "%S: rawbufs[%zd] must be a tinyc.Buffer, got %.100s", self->name, i, Py_TYPE(o)->tp_name);
    return -1;
  }
  BufferObject *b = (BufferObject *)o;
  int eq = PyUnicode_Compare(b->device, self->device);
  if (eq != 0) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%S: rawbufs[%zd] is on device %S, the kernel runs on %S", self->name, i, b->device, self->device);
    return -1;
  }
  if (!b->buf) { PyErr_Format(PyExc_RuntimeError, "%S: rawbufs[%zd] is not allocated", self->name, i); return -1; }
  ExpectedBuf *e = &self->bufs[i];
  if (e->dtname && (PyUnicode_Compare(b->dtype->name, e->dtname) != 0 || dtype_itemsize(b->dtype) != e->itemsize)) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_TypeError, "%S: rawbufs[%zd] has dtype %S, the kernel's buffer %zd is %S", self->name, i, b->dtype->name, i, e->dtname);
    return -1;
  }
  if (e->size >= 0 && b->size < e->size) {
    PyErr_Format(PyExc_ValueError, "%S: rawbufs[%zd] has size %zd, the kernel's buffer %zd needs %zd elements", self->name, i, b->size, i, e->size);
    return -1;
  }
  return 0;
}

/* symbolic dims: p.launch_dims(var_vals) for this call */
static int infer_dims(CompiledRunnerObject *self, PyObject *var_vals, LaunchDims *d) {
  PyObject *vv = var_vals == Py_None ? PyDict_New() : Py_NewRef(var_vals);
  PyObject *dims = vv ? PyObject_CallMethod(self->p, "launch_dims", "O", vv) : NULL;
  Py_XDECREF(vv);
  if (!dims) return -1;
  int rc = -1;
  if ((!PyTuple_Check(dims) && !PyList_Check(dims)) || PySequence_Fast_GET_SIZE(dims) != 2)
    PyErr_Format(PyExc_TypeError, "p.launch_dims must return (global_size, local_size)");
  else rc = set_dims(d, PySequence_Fast_GET_ITEM(dims, 0), PySequence_Fast_GET_ITEM(dims, 1), self->name);
  Py_DECREF(dims);
  return rc;
}

/* a prg given to CompiledRunner(p, prg) that is not a loaded Program: tinygrad's call,
 * prg(*bufs, global_size=, local_size=, vals=, wait=) */
static PyObject *call_python_prg(CompiledRunnerObject *self, PyObject *seq, const LaunchDims *d, const int64_t *vals, int wait) {
  PyObject *vt = PyTuple_New(self->nvars), *bt = PySequence_Tuple(seq);
  for (Py_ssize_t i = 0; vt && i < self->nvars; i++) PyTuple_SET_ITEM(vt, i, PyLong_FromLongLong(vals[i]));
  PyObject *gt = Py_BuildValue("(nnn)", (Py_ssize_t)d->global[0], (Py_ssize_t)d->global[1], (Py_ssize_t)d->global[2]);
  PyObject *lt = !d->has_local ? Py_NewRef(Py_None) : Py_BuildValue("(nnn)", (Py_ssize_t)d->local[0], (Py_ssize_t)d->local[1], (Py_ssize_t)d->local[2]);
  PyObject *kwargs = vt && bt && gt && lt ? Py_BuildValue("{sOsOsOsO}", "global_size", gt, "local_size", lt, "vals", vt, "wait", wait ? Py_True : Py_False) : NULL;
  PyObject *ret = kwargs ? PyObject_Call(self->prg, bt, kwargs) : NULL;
  Py_XDECREF(vt); Py_XDECREF(bt); Py_XDECREF(gt); Py_XDECREF(lt); Py_XDECREF(kwargs);
  return ret;
}

/* runner(rawbufs, var_vals=None, wait=False) -> the kernel's seconds when wait, else None */
static PyObject *CompiledRunner_call(CompiledRunnerObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"rawbufs", "var_vals", "wait", NULL};
  PyObject *rawbufs, *var_vals = Py_None;
  int wait = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op:CompiledRunner", kwlist, &rawbufs, &var_vals, &wait)) return NULL;
  PyObject *seq = PySequence_Fast(rawbufs, "rawbufs must be a list of Buffers");
  if (!seq) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject *ret = NULL;
  int64_t vals[LAUNCH_MAX_ARGS];
  if (n != self->nbufs) {
    PyErr_Format(PyExc_ValueError, "%S takes %zd buffers, got %zd", self->name, self->nbufs, n);
    goto done;
  }
  if (self->nvars > LAUNCH_MAX_ARGS) { PyErr_Format(PyExc_ValueError, "%S has too many vars (%zd)", self->name, self->nvars); goto done; }
  for (Py_ssize_t i = 0; i < n; i++) if (check_buffer(self, i, PySequence_Fast_GET_ITEM(seq, i)) < 0) goto done;
  if (gather_vals(self, var_vals, vals) < 0) goto done;
  LaunchDims dims = self->dims;
  if (!self->const_dims && infer_dims(self, var_vals, &dims) < 0) goto done;
  if (Program_Check(self->prg)) {
    double t = program_launch((ProgramObject *)self->prg, (BufferObject *const *)PySequence_Fast_ITEMS(seq), n, dims.global,
                              dims.has_local ? dims.local : NULL, vals, self->nvars, wait);
    if (t >= 0) ret = wait ? PyFloat_FromDouble(t) : Py_NewRef(Py_None);
  } else ret = call_python_prg(self, seq, &dims, vals, wait);
  if (ret) self->first_run = 0;
done:
  Py_DECREF(seq);
  return ret;
}

static PyObject *CompiledRunner_exec(CompiledRunnerObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"rawbufs", "var_vals", NULL};
  PyObject *rawbufs, *var_vals = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:exec", kwlist, &rawbufs, &var_vals)) return NULL;
  PyObject *a = PyTuple_Pack(2, rawbufs, var_vals);
  if (!a) return NULL;
  PyObject *ret = CompiledRunner_call(self, a, NULL);
  Py_DECREF(a);
  return ret;
}

static PyObject *CompiledRunner_reduce(CompiledRunnerObject *self, PyObject *unused) {
  UNUSED(unused);
  return Py_BuildValue("(O(O))", (PyObject *)Py_TYPE(self), self->p);
}

static PyObject *CompiledRunner_repr(CompiledRunnerObject *self) { return PyUnicode_FromFormat("<CompiledRunner %S on %S>", self->name, self->device); }
static PyObject *CompiledRunner_get_dev(CompiledRunnerObject *self, void *c) { UNUSED(c); return device_get(self->device); }

static PyMethodDef CompiledRunner_methods[] = {
  {"exec", (PyCFunction)(void (*)(void))CompiledRunner_exec, METH_VARARGS | METH_KEYWORDS, "exec(rawbufs, var_vals=None)"},
  {"__reduce__", (PyCFunction)CompiledRunner_reduce, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL},
};
static PyMemberDef CompiledRunner_members[] = {
  {"p", T_OBJECT, offsetof(CompiledRunnerObject, p), READONLY, "the ProgramSpec, with lib"},
  {"_prg", T_OBJECT, offsetof(CompiledRunnerObject, prg), READONLY, "the loaded program"},
  {"name", T_OBJECT, offsetof(CompiledRunnerObject, name), READONLY, NULL},
  {"display_name", T_OBJECT, offsetof(CompiledRunnerObject, name), READONLY, NULL},
  {"device", T_OBJECT, offsetof(CompiledRunnerObject, device), READONLY, NULL},
  {"estimates", T_OBJECT, offsetof(CompiledRunnerObject, estimates), READONLY, NULL},
  {"first_run", T_BOOL, offsetof(CompiledRunnerObject, first_run), 0, NULL},
  {NULL, 0, 0, 0, NULL},
};
static PyGetSetDef CompiledRunner_getset[] = {
  {"dev", (getter)CompiledRunner_get_dev, NULL, "Device[device]", NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject CompiledRunner_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.CompiledRunner",
  .tp_basicsize = sizeof(CompiledRunnerObject),
  .tp_dealloc = (destructor)CompiledRunner_dealloc,
  .tp_repr = (reprfunc)CompiledRunner_repr,
  .tp_call = (ternaryfunc)CompiledRunner_call,
  .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
  .tp_doc = "tinygrad's CompiledRunner(p): compiles p when p.lib is None, loads it; runner(rawbufs, var_vals=None, wait=False)",
  .tp_traverse = (traverseproc)CompiledRunner_traverse,
  .tp_clear = (inquiry)CompiledRunner_clear,
  .tp_methods = CompiledRunner_methods,
  .tp_members = CompiledRunner_members,
  .tp_getset = CompiledRunner_getset,
  .tp_dictoffset = offsetof(CompiledRunnerObject, dict),
  .tp_new = CompiledRunner_new,
};

int tinyc_init_realize(PyObject *m) {
  if (PyType_Ready(&CompiledRunner_Type) < 0) return -1;
  return tinyc_add(m, "CompiledRunner", (PyObject *)&CompiledRunner_Type);
}
