/* tinygrad/helpers.py's getenv and ContextVar, for the int settings tinyc reads (declared in tinyc.h).
 *
 * A ContextVar that tinyc honours is a C integer in the file that reads it (a static long or bool), registered here
 * by key with ctxvar_int / ctxvar_flag at module init. tinyc.helpers.ContextVar's value setter (and so Context)
 * writes every C integer registered under the key, so the hot paths read a plain int and see the change at once:
 * no dict lookups, no environment reads. Variables tinyc always read from the environment at each use (CACHELEVEL:
 * tests and users change it with os.environ) register an EnvVar instead: it follows the environment until Python
 * sets a value, and again once that value is reset. A string switch (EMULATE, CPU_CC: read when a renderer or device is
 * made, not on hot paths) registers with ctxvar_text and is read with ctxvar_text_value: the str Python set, else the
 * environment. Everything here runs under the GIL; the values are process globals, as tinygrad's ContextVars are (a
 * Context entered in one thread is seen by all). */
#include "../tinyc.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>

int env_int(const char *name, long *value) {
  const char *env = getenv(name);
  if (!env) return 0;
  PyObject *s = PyUnicode_FromString(env), *v = s ? PyNumber_Long(s) : NULL;   /* Python's int(): " 1", "+1", "1_0" */
  int overflow = 0;
  long x = v ? PyLong_AsLongAndOverflow(v, &overflow) : -1;
  Py_XDECREF(s); Py_XDECREF(v);
  if (x == -1 && PyErr_Occurred()) return -1;
  *value = overflow > 0 ? LONG_MAX : overflow < 0 ? LONG_MIN : x;
  return 0;
}

int env_flag(const char *name, bool *flag) {
  long v = *flag;
  if (env_int(name, &v) < 0) return -1;
  *flag = v != 0;
  return 0;
}

long env_long(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : dflt;
}

/* ---- the registry of C integers behind ContextVars ---- */

#define CTXVAR_MAX 64    /* keys: tinygrad has about 50 ContextVars */
#define CTXVAR_SLOTS 4   /* C integers per key (a key read by several files registers each file's copy) */

typedef struct {
  const char *key;
  long initial;                  /* the value at import: the environment's, else the C default */
  long value;                    /* the value now (initial until Python sets one) */
  long *ints[CTXVAR_SLOTS];
  bool *flags[CTXVAR_SLOTS];     /* read as `if FLAG:` */
  int nints, nflags;
  EnvVar *live;                  /* a variable read from the environment at each use while Python has not set it */
  bool text;                     /* a string switch: no C integers, the value is `set` (a str) or the environment's */
  PyObject *set;                 /* the value Python set (strong), NULL while the import-time value holds */
} CtxVar;

static CtxVar ctxvars[CTXVAR_MAX];
static int nctxvars;

static CtxVar *ctxvar_find(const char *key) {
  for (int i = 0; i < nctxvars; i++) if (!strcmp(ctxvars[i].key, key)) return &ctxvars[i];
  return NULL;
}

/* the entry of key, made with initial value `initial` when new; NULL (RuntimeError) when a table is full: a
 * programming error of tinyc, found at import */
static CtxVar *ctxvar_entry(const char *key, long initial, bool room_for_int, bool room_for_flag) {
  CtxVar *c = ctxvar_find(key);
  if (!c && nctxvars < CTXVAR_MAX) c = &ctxvars[nctxvars++], c->key = key, c->initial = c->value = initial;
  if (!c || (room_for_int && c->nints == CTXVAR_SLOTS) || (room_for_flag && c->nflags == CTXVAR_SLOTS)) {
    PyErr_Format(PyExc_RuntimeError, "tinyc: no room to register ContextVar %s", key);
    return NULL;
  }
  return c;
}

/* the value c has now (its flags hold it as a bool) */
static long ctxvar_now(const CtxVar *c) {
  return c->live && !c->live->set ? env_long(c->key, c->live->dflt) : c->value;
}

static void ctxvar_write(CtxVar *c, long v, bool set) {
  c->value = v;
  for (int i = 0; i < c->nints; i++) *c->ints[i] = v;
  for (int i = 0; i < c->nflags; i++) *c->flags[i] = v != 0;
  if (c->live) c->live->value = v, c->live->set = set;
}

int ctxvar_int(const char *key, long *slot) {
  if (env_int(key, slot) < 0) return -1;
  CtxVar *c = ctxvar_entry(key, *slot, true, false);
  if (!c) return -1;
  if (c->text) { PyErr_Format(PyExc_RuntimeError, "tinyc: ContextVar %s is both a number and a string", key); return -1; }
  *slot = c->value;   /* a later copy takes the value the key has: the first file's, or what Python set */
  c->ints[c->nints++] = slot;
  return 0;
}

int ctxvar_flag(const char *key, bool *flag) {
  long v = *flag;
  if (env_int(key, &v) < 0) return -1;
  CtxVar *c = ctxvar_entry(key, v, false, true);
  if (!c) return -1;
  *flag = c->value != 0;
  c->flags[c->nflags++] = flag;
  return 0;
}

int ctxvar_env(EnvVar *v) {
  CtxVar *c = ctxvar_entry(v->key, v->dflt, false, false);
  if (!c) return -1;
  if (c->live && c->live != v) { PyErr_Format(PyExc_RuntimeError, "tinyc: ContextVar %s registered twice", v->key); return -1; }
  c->live = v;
  return 0;
}

int ctxvar_text(const char *key) {
  CtxVar *c = ctxvar_entry(key, 0, false, false);
  if (!c) return -1;
  if (c->nints || c->nflags || c->live) { PyErr_Format(PyExc_RuntimeError, "tinyc: ContextVar %s is both a number and a string", key); return -1; }
  c->text = true;
  return 0;
}

const char *ctxvar_text_value(const char *key) {
  const CtxVar *c = ctxvar_find(key);
  if (c && c->text && c->set) return PyUnicode_AsUTF8(c->set);   /* checked encodable when it was set: cannot fail */
  return getenv(key);
}

int ctxvar_read(const char *key, long *value) {
  const CtxVar *c = ctxvar_find(key);
  if (!c) return env_int(key, value);
  *value = ctxvar_now(c);
  return 0;
}

/* ---- the Python side: tinyc.helpers.ContextVar reads and writes through these ---- */

static CtxVar *ctxvar_arg(PyObject *key) {
  const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
  if (!k) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "ContextVar key must be str, not %.100s", Py_TYPE(key)->tp_name);
    return NULL;
  }
  CtxVar *c = ctxvar_find(k);
  if (!c) PyErr_SetObject(PyExc_KeyError, key);
  return c;
}

static PyObject *py_ctxvar_keys(PyObject *mod, PyObject *noargs) {
  UNUSED(mod); UNUSED(noargs);
  PyObject *t = PyTuple_New(nctxvars);
  for (int i = 0; t && i < nctxvars; i++) {
    PyObject *s = PyUnicode_FromString(ctxvars[i].key);
    if (!s) { Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i, s);
  }
  return t;
}

static PyObject *py_ctxvar_get(PyObject *mod, PyObject *key) {
  UNUSED(mod);
  const CtxVar *c = ctxvar_arg(key);
  if (!c) return NULL;
  if (c->text && !c->set) { const char *env = getenv(c->key); return PyUnicode_FromString(env ? env : ""); }
  return c->set ? Py_NewRef(c->set) : PyLong_FromLong(ctxvar_now(c));
}

static PyObject *py_ctxvar_text_keys(PyObject *mod, PyObject *noargs) {
  UNUSED(mod); UNUSED(noargs);
  PyObject *l = PyList_New(0);
  for (int i = 0; l && i < nctxvars; i++) {
    PyObject *s = ctxvars[i].text ? PyUnicode_FromString(ctxvars[i].key) : NULL;
    if (ctxvars[i].text && (!s || PyList_Append(l, s) < 0)) Py_CLEAR(l);
    Py_XDECREF(s);
  }
  PyObject *t = l ? PyList_AsTuple(l) : NULL;
  Py_XDECREF(l);
  return t;
}

/* a string switch takes a str (one that encodes to UTF-8, so C can read it); nothing changes when it is refused */
static PyObject *set_text(CtxVar *c, PyObject *v) {
  if (!PyUnicode_Check(v)) return PyErr_Format(PyExc_TypeError, "ContextVar %s is a string switch of tinyc, got %.100s", c->key, Py_TYPE(v)->tp_name);
  if (!PyUnicode_AsUTF8(v)) return NULL;
  Py_XSETREF(c->set, Py_NewRef(v));
  Py_RETURN_NONE;
}

/* the value Python set, or None while the import-time value (or the environment) holds: what Context restores */
static PyObject *py_ctxvar_state(PyObject *mod, PyObject *key) {
  UNUSED(mod);
  const CtxVar *c = ctxvar_arg(key);
  if (!c) return NULL;
  return Py_NewRef(c->set ? c->set : Py_None);
}

/* _ctxvar_set(key, value): value must be an int (bool, or anything with __index__): the C side reads an integer.
 * tinygrad would take any object and fail at its first comparison; the TypeError comes here, before any change.
 * _ctxvar_set(key, None) resets: the import-time value again, and live variables follow the environment again. */
static PyObject *py_ctxvar_set(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
  UNUSED(mod);
  if (nargs != 2) return PyErr_Format(PyExc_TypeError, "_ctxvar_set expected 2 arguments, got %zd", nargs);
  CtxVar *c = ctxvar_arg(args[0]);
  if (!c) return NULL;
  if (args[1] == Py_None) {
    Py_CLEAR(c->set);
    ctxvar_write(c, c->initial, false);
    Py_RETURN_NONE;
  }
  if (c->text) return set_text(c, args[1]);
  PyObject *ix = PyNumber_Index(args[1]);
  if (!ix) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "ContextVar %s is an integer switch of tinyc, got %.100s", c->key, Py_TYPE(args[1])->tp_name);
    }
    return NULL;
  }
  int overflow = 0;
  long v = PyLong_AsLongAndOverflow(ix, &overflow);
  Py_DECREF(ix);
  if (v == -1 && PyErr_Occurred()) return NULL;
  ctxvar_write(c, overflow > 0 ? LONG_MAX : overflow < 0 ? LONG_MIN : v, true);   /* clamped as env_int clamps */
  Py_XSETREF(c->set, Py_NewRef(args[1]));
  Py_RETURN_NONE;
}

static PyMethodDef getenv_functions[] = {
  {"_ctxvar_keys", py_ctxvar_keys, METH_NOARGS, "_ctxvar_keys() -> tuple[str, ...]: the ContextVars tinyc reads in C"},
  {"_ctxvar_get", py_ctxvar_get, METH_O, "_ctxvar_get(key): the value tinyc's C code reads for ContextVar key"},
  {"_ctxvar_text_keys", py_ctxvar_text_keys, METH_NOARGS, "_ctxvar_text_keys() -> tuple[str, ...]: the string switches among them"},
  {"_ctxvar_state", py_ctxvar_state, METH_O, "_ctxvar_state(key): the value Python set for key, None while unset"},
  {"_ctxvar_set", (PyCFunction)(void (*)(void))py_ctxvar_set, METH_FASTCALL,
   "_ctxvar_set(key, value): set the C integers behind ContextVar key (value an int; a str for a string switch); None "
   "resets to the import-time value"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_getenv(PyObject *m) { return PyModule_AddFunctions(m, getenv_functions); }
