/* Shared by every C file of tinyc: the Python headers and the few helpers all files use. */
#ifndef TINYC_H
#define TINYC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdbool.h>

#define UNUSED(x) ((void)(x))
/* thread-local storage the hot paths read (the rule pool, the rewrite depth): initial-exec puts the module's few bytes in
 * the static TLS block, so a read is a load rather than a call to __tls_get_addr */
#define FAST_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* Add an object to a module under its name; steals nothing, returns -1 on error. */
static inline int tinyc_add(PyObject *module, const char *name, PyObject *obj) {
  Py_INCREF(obj);
  if (PyModule_AddObject(module, name, obj) < 0) { Py_DECREF(obj); return -1; }
  return 0;
}

/* x <op> y for a rich comparison op (Py_LT ... Py_GE) */
static inline int compare_longs(long x, long y, int op) {
  switch (op) {
    case Py_LT: return x < y;
    case Py_LE: return x <= y;
    case Py_EQ: return x == y;
    case Py_NE: return x != y;
    case Py_GT: return x > y;
    default: return x >= y;
  }
}
/* whether o is an exact int (not a bool) that fits a long, then in *out; never sets an exception */
static inline bool exact_long(PyObject *o, long *out) {
  if (!PyLong_CheckExact(o)) return false;
  int overflow;
  *out = PyLong_AsLongAndOverflow(o, &overflow);   /* an exact int cannot fail */
  return !overflow;
}
/* PyObject_RichCompareBool(a, b, op): 1, 0, or -1 with an exception. Two exact ints that fit a long (the args, bounds and
 * consts the rules compare, nearly always) are compared in C, without the generic dispatch; the rest go to Python.
 * (Written out rather than through exact_long: both types are checked before either is read, and gcc's code for the
 * two exact_long calls cost simplify() 0.5% more instructions.) */
static inline int compare_bool(PyObject *a, PyObject *b, int op) {
  if (PyLong_CheckExact(a) && PyLong_CheckExact(b)) {
    int oa, ob;
    long x = PyLong_AsLongAndOverflow(a, &oa), y = PyLong_AsLongAndOverflow(b, &ob);   /* an exact int cannot fail */
    if (!oa && !ob) return compare_longs(x, y, op);
  }
  return PyObject_RichCompareBool(a, b, op);
}

/* tinygrad's getenv / ContextVar for int settings (helpers/getenv.c).
 * env_int: read at import, as a ContextVar: int(os.getenv(name)); *value is left as it is (the default) when
 * unset; a value int() refuses is its ValueError (-1); huge values clamp to LONG_MIN/LONG_MAX (sign and truth kept).
 * env_flag: the same read as a bool (tinygrad's `if FLAG:`).
 * env_long: read at call time, forgiving: strtol of the value (its leading digits), dflt when unset or empty. */
int env_int(const char *name, long *value);
int env_flag(const char *name, bool *flag);
long env_long(const char *name, long dflt);

/* tinygrad's ContextVars, settable at run time (helpers/getenv.c; tinyc.helpers.Context sets them).
 * ctxvar_int / ctxvar_flag: env_int / env_flag at module init, and register the C integer under key: a Context sets it
 * in place, so the code reading it sees the change at its next read. Several files may register the same key.
 * EnvVar + ctxvar_env: a switch read from the environment at each use (env_long) until Python sets it; envvar_value reads it.
 * ctxvar_read: the value of key now as tinyc sees it (registered: its value; else env_int), for keys named at run time.
 * ctxvar_text + ctxvar_text_value: a string switch (EMULATE, CPU_CC): the str a Context set, else getenv(key) (NULL
 * when unset); the pointer is good until the next set, so read it under the GIL and use it at once. */
typedef struct { const char *key; long dflt; long value; bool set; } EnvVar;
static inline long envvar_value(const EnvVar *v) { return v->set ? v->value : env_long(v->key, v->dflt); }
int ctxvar_int(const char *key, long *slot);
int ctxvar_flag(const char *key, bool *flag);
int ctxvar_env(EnvVar *v);
int ctxvar_read(const char *key, long *value);
int ctxvar_text(const char *key);
const char *ctxvar_text_value(const char *key);
int tinyc_init_getenv(PyObject *m);

/* tinygrad's strip_parens(s) (helpers/strip_parens.c): "(...)" without its outer parens when what is inside is balanced;
 * a new reference (NULL stays NULL; TypeError for a non-str) */
PyObject *strip_parens(PyObject *s);
/* whether strip_parens(s) strips (s a str) */
bool parens_strippable(PyObject *s);


#endif
