/* "C dataclasses" (see dataclass.h): the methods Python's @dataclass writes, read off a field table. */
#include "dataclass.h"
#include "../helpers.h"
#include <structmember.h>

static PyObject *FrozenInstanceError;   /* dataclasses.FrozenInstanceError */

/* The types made dataclasses, with their descriptions: a slot gets only self, so it looks its type up here. */
#define MAX_DATACLASSES 16
static struct { PyTypeObject *type; const Dataclass *dc; } registry[MAX_DATACLASSES];
static int nregistered;

static const Dataclass *dataclass_of(PyObject *self) {
  for (int i = 0; i < nregistered; i++)
    if (registry[i].type == Py_TYPE(self)) return registry[i].dc;
  return NULL;   /* unreachable: the slots below are installed on registered types only */
}

static PyObject *field_value(PyObject *self, const DataclassField *f) { return *(PyObject **)((char *)self + f->offset); }

static Py_ssize_t field_count(const DataclassField *fields) {
  Py_ssize_t n = 0;
  while (fields[n].name) n++;
  return n;
}

/* the type's name without its module, as its __qualname__: "KernelInfo" */
static const char *short_name(PyTypeObject *type) {
  const char *dot = strrchr(type->tp_name, '.');
  return dot ? dot + 1 : type->tp_name;
}

PyObject *dataclass_astuple(PyObject *self) {
  const DataclassField *fields = dataclass_of(self)->fields;
  Py_ssize_t n = field_count(fields);
  PyObject *t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; i++) PyTuple_SET_ITEM(t, i, Py_NewRef(field_value(self, &fields[i])));
  return t;
}

/* ---- the slots ---- */

/* "Name(f1=v1, f2=v2)" with the type's short name, as the dataclass's __repr__ (qualname, recursive_repr) */
static PyObject *dataclass_repr(PyObject *self) {
  const Dataclass *dc = dataclass_of(self);
  int seen = Py_ReprEnter(self);
  if (seen != 0) return seen > 0 ? PyUnicode_FromString("...") : NULL;
  PyObject *parts = PyList_New(0), *sep = PyUnicode_FromString(", "), *body = NULL, *ret = NULL;
  for (const DataclassField *f = dc->fields; parts && f->name; f++) {
    PyObject *s = PyUnicode_FromFormat(dc->str_repr ? "%s=%S" : "%s=%R", f->name, field_value(self, f));
    if (!s || PyList_Append(parts, s) < 0) Py_CLEAR(parts);
    Py_XDECREF(s);
  }
  if (parts && sep && (body = PyUnicode_Join(sep, parts)))
    ret = PyUnicode_FromFormat("%s(%U)", short_name(Py_TYPE(self)), body);
  Py_XDECREF(parts); Py_XDECREF(sep); Py_XDECREF(body);
  Py_ReprLeave(self);
  return ret;
}

/* hash of the field tuple, as a frozen dataclass's; kept in the object when the type has room for it */
static Py_hash_t dataclass_hash(PyObject *self) {
  const Dataclass *dc = dataclass_of(self);
  Py_hash_t *cache = dc->hash_cache ? (Py_hash_t *)((char *)self + dc->hash_cache) : NULL;
  if (cache && *cache != -1) return *cache;
  PyObject *t = dataclass_astuple(self);
  Py_hash_t h = t ? PyObject_Hash(t) : -1;
  Py_XDECREF(t);
  if (cache) *cache = h;
  return h;
}

static PyObject *dataclass_richcompare(PyObject *a, PyObject *b, int cmp) {
  bool eq = cmp == Py_EQ || cmp == Py_NE;
  if (Py_TYPE(a) != Py_TYPE(b) || (!eq && !dataclass_of(a)->order)) Py_RETURN_NOTIMPLEMENTED;
  if (a == b && eq) return PyBool_FromLong(cmp == Py_EQ);
  PyObject *ret = NULL, *ta = dataclass_astuple(a), *tb = ta ? dataclass_astuple(b) : NULL;
  if (tb) ret = PyObject_RichCompare(ta, tb, cmp);
  Py_XDECREF(ta); Py_XDECREF(tb);
  return ret;
}

static int dataclass_frozen_setattr(PyObject *self, PyObject *name, PyObject *value) {
  UNUSED(self);
  PyErr_Format(FrozenInstanceError, value ? "cannot assign to field %R" : "cannot delete field %R", name);
  return -1;
}

/* ---- the methods ---- */

static PyObject *dataclass_reduce(PyObject *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *fields = dataclass_astuple(self), *ret = fields ? PyTuple_Pack(2, (PyObject *)Py_TYPE(self), fields) : NULL;
  Py_XDECREF(fields);
  return ret;
}

static PyObject *dataclass_replace(PyObject *self, PyObject *args, PyObject *kw) {
  if (PyTuple_GET_SIZE(args) != 0) {
    PyErr_Format(PyExc_TypeError, "%s.replace() takes no positional arguments", Py_TYPE(self)->tp_name);
    return NULL;
  }
  PyObject *ret = NULL, *fields = PyDict_New(), *name, *value;
  if (!fields) return NULL;
  for (const DataclassField *f = dataclass_of(self)->fields; f->name; f++)
    if (PyDict_SetItemString(fields, f->name, field_value(self, f)) < 0) goto done;
  Py_ssize_t n = PyDict_GET_SIZE(fields);
  for (Py_ssize_t pos = 0; kw && PyDict_Next(kw, &pos, &name, &value);) {
    if (PyDict_SetItem(fields, name, value) < 0) goto done;
    if (PyDict_GET_SIZE(fields) > n) {   /* a name that is no field */
      PyErr_Format(PyExc_TypeError, "%s.replace() got an unexpected keyword argument %R", Py_TYPE(self)->tp_name, name);
      goto done;
    }
  }
  /* through the constructor, which checks the types of the changed fields */
  ret = PyObject_Call((PyObject *)Py_TYPE(self), args, fields);
done:
  Py_DECREF(fields);
  return ret;
}

static PyMethodDef dataclass_methods[] = {
  {"__reduce__", dataclass_reduce, METH_NOARGS, NULL},
  {"replace", (PyCFunction)(void (*)(void))dataclass_replace, METH_VARARGS | METH_KEYWORDS,
   "A copy with the given fields changed, as dataclasses.replace."},
  {"__replace__", (PyCFunction)(void (*)(void))dataclass_replace, METH_VARARGS | METH_KEYWORDS, NULL},
  {NULL, NULL, 0, NULL}
};

/* ---- defaults ---- */

PyObject *dataclass_none(void) { return Py_NewRef(Py_None); }
PyObject *dataclass_false(void) { return Py_NewRef(Py_False); }
PyObject *dataclass_true(void) { return Py_NewRef(Py_True); }
PyObject *dataclass_zero(void) { return PyLong_FromLong(0); }
PyObject *dataclass_empty_tuple(void) { return PyTuple_New(0); }
PyObject *dataclass_new_list(void) { return PyList_New(0); }

/* a default_factory as a Python callable: self is a capsule holding the (static) field whose make_default it calls */
static PyObject *call_factory(PyObject *capsule, PyObject *unused) {
  UNUSED(unused);
  const DataclassField *f = PyCapsule_GetPointer(capsule, "tinyc.DataclassField");
  return f ? f->make_default() : NULL;
}
static PyMethodDef factory_def = {"default_factory", call_factory, METH_NOARGS, "a new default value for the field"};

/* the field's entry for dataclasses.make_dataclass: its name, or (name, 'typing.Any', field(default=...|default_factory=...)) */
static PyObject *field_spec(const DataclassField *f, PyObject *field_fn) {
  if (!f->make_default) return PyUnicode_FromString(f->name);
  PyObject *value = f->factory ? PyCapsule_New((void *)f, "tinyc.DataclassField", NULL) : f->make_default(), *kw = NULL, *field = NULL;
  if (value && f->factory) Py_SETREF(value, PyCFunction_New(&factory_def, value));
  PyObject *noargs = value ? PyTuple_New(0) : NULL;
  if (noargs) kw = Py_BuildValue("{sO}", f->factory ? "default_factory" : "default", value);
  if (kw) field = PyObject_Call(field_fn, noargs, kw);
  PyObject *ret = field ? Py_BuildValue("(ssO)", f->name, "typing.Any", field) : NULL;
  Py_XDECREF(value); Py_XDECREF(noargs); Py_XDECREF(kw); Py_XDECREF(field);
  return ret;
}

/* make_dataclass's field list: every field's spec, in order */
static PyObject *field_specs(const DataclassField *fields, PyObject *dataclasses) {
  PyObject *field_fn = getattr_literal(dataclasses, "field"), *specs = field_fn ? PyList_New(0) : NULL;
  for (const DataclassField *f = fields; specs && f->name; f++) {
    PyObject *spec = field_spec(f, field_fn);
    if (!spec || PyList_Append(specs, spec) < 0) Py_CLEAR(specs);
    Py_XDECREF(spec);
  }
  Py_XDECREF(field_fn);
  return specs;
}

/* ---- making a type a dataclass ---- */

/* read-only members for the fields of a frozen type (kept for the life of the type) */
static PyMemberDef *frozen_members(const DataclassField *fields) {
  Py_ssize_t n = field_count(fields);
  PyMemberDef *members = PyMem_Calloc((size_t)n + 1, sizeof(PyMemberDef));
  if (!members) return (PyMemberDef *)PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < n; i++) members[i] = (PyMemberDef){fields[i].name, T_OBJECT_EX, fields[i].offset, READONLY, fields[i].doc};
  return members;
}

/* the methods of dataclass_methods the type lacks, each bound to it as a method descriptor */
static int add_methods(PyTypeObject *type) {
  for (PyMethodDef *def = dataclass_methods; def->ml_name; def++) {
    if (PyDict_GetItemString(type->tp_dict, def->ml_name)) continue;
    PyObject *descr = PyDescr_NewMethod(type, def);
    int err = !descr || PyDict_SetItemString(type->tp_dict, def->ml_name, descr) < 0;
    Py_XDECREF(descr);
    if (err) return -1;
  }
  return 0;
}

/* the field names as a tuple of interned strings: __match_args__ */
static PyObject *field_names(const DataclassField *fields) {
  Py_ssize_t n = field_count(fields);
  PyObject *names = PyTuple_New(n);
  for (Py_ssize_t i = 0; names && i < n; i++) {
    PyObject *s = PyUnicode_InternFromString(fields[i].name);
    if (!s) Py_CLEAR(names);
    else PyTuple_SET_ITEM(names, i, s);
  }
  return names;
}

/* The dataclasses module's metadata, taken from a stand-in made by dataclasses.make_dataclass with the same name,
 * fields and defaults: its Field objects are the module's own, not imitations. The stand-in is made with nothing
 * generated (its methods would be thrown away, and making them costs milliseconds at import); its parameters are then
 * set to the ones the type has. */
static int add_dataclass_metadata(PyTypeObject *type, const Dataclass *dc, PyObject *dataclasses) {
  PyObject *make = getattr_literal(dataclasses, "make_dataclass"), *standin = NULL, *fields = NULL, *params = NULL;
  PyObject *specs = field_specs(dc->fields, dataclasses), *args = specs ? Py_BuildValue("(sO)", short_name(type), specs) : NULL;
  /* a docstring, or make_dataclass would compute one from inspect.signature */
  PyObject *kw = Py_BuildValue("{sOsOsOs{ss}}", "init", Py_False, "repr", Py_False, "eq", Py_False, "namespace", "__doc__",
                               type->tp_doc ? type->tp_doc : short_name(type));
  if (make && args && kw) standin = PyObject_Call(make, args, kw);
  if (standin) fields = getattr_literal(standin, "__dataclass_fields__");
  if (fields) params = getattr_literal(standin, "__dataclass_params__");
  int err = !params || PyObject_SetAttrString(params, "init", Py_True) < 0 || PyObject_SetAttrString(params, "repr", Py_True) < 0 ||
            PyObject_SetAttrString(params, "eq", dc->identity_eq ? Py_False : Py_True) < 0 ||
            PyObject_SetAttrString(params, "order", dc->order ? Py_True : Py_False) < 0 ||
            PyObject_SetAttrString(params, "frozen", dc->frozen ? Py_True : Py_False) < 0 ||
            PyDict_SetItemString(type->tp_dict, "__dataclass_fields__", fields) < 0 ||
            PyDict_SetItemString(type->tp_dict, "__dataclass_params__", params) < 0;
  Py_XDECREF(make); Py_XDECREF(specs); Py_XDECREF(args); Py_XDECREF(kw); Py_XDECREF(standin); Py_XDECREF(fields);
  Py_XDECREF(params);
  return err ? -1 : 0;
}

static int add_attributes(PyTypeObject *type, const Dataclass *dc, PyObject *dataclasses, bool methods) {
  PyObject *names = field_names(dc->fields);
  int err = !names || PyDict_SetItemString(type->tp_dict, "__match_args__", names) < 0 ||
            add_dataclass_metadata(type, dc, dataclasses) < 0 || (methods && add_methods(type) < 0);
  Py_XDECREF(names);
  PyType_Modified(type);
  return err ? -1 : 0;
}

int dataclass_ready(PyTypeObject *type, const Dataclass *dc) {
  if (nregistered == MAX_DATACLASSES) { PyErr_SetString(PyExc_RuntimeError, "dataclass_ready: too many dataclass types"); return -1; }
  PyObject *dataclasses = PyImport_ImportModule("dataclasses");
  if (!dataclasses) return -1;
  int err = !FrozenInstanceError && !(FrozenInstanceError = getattr_literal(dataclasses, "FrozenInstanceError"));
  if (!err) {
    registry[nregistered].type = type, registry[nregistered++].dc = dc;
    if (!type->tp_repr) type->tp_repr = dataclass_repr;
    /* eq=False: no generated ==, and no generated hash either (the type's own, or identity's) */
    if (!type->tp_richcompare && !dc->identity_eq) type->tp_richcompare = dataclass_richcompare;
    if (!type->tp_hash && !dc->identity_eq) type->tp_hash = dc->frozen ? dataclass_hash : PyObject_HashNotImplemented;
    if (dc->frozen && !type->tp_setattro) type->tp_setattro = dataclass_frozen_setattr;
    if (dc->frozen && !type->tp_members && !(type->tp_members = frozen_members(dc->fields))) err = 1;
  }
  err = err || PyType_Ready(type) < 0 || add_attributes(type, dc, dataclasses, true) < 0;
  Py_DECREF(dataclasses);
  return err ? -1 : 0;
}

int dataclass_describe(PyTypeObject *type, const Dataclass *dc) {
  PyObject *dataclasses = PyImport_ImportModule("dataclasses");
  int err = !dataclasses || add_attributes(type, dc, dataclasses, false) < 0;
  Py_XDECREF(dataclasses);
  return err ? -1 : 0;
}
