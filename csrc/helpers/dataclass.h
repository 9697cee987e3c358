/* "C dataclasses": what Python's @dataclass generates, for a C type described by a table of its fields.
 * tinygrad's Opt, KernelInfo, Estimates, ProgramSpec and BufferizeOpts are dataclasses; their tinyc types keep
 * their own constructors (argument checks, defaults) and get the rest from here, with the dataclass's semantics:
 *   __repr__     Name(f1=repr(v1), ...), "..." for an object reached again inside its own fields (recursive_repr)
 *   __eq__       the field tuples compared, against the same type only (NotImplemented otherwise); order=True adds <, <=, >, >=
 *   __hash__     hash of the field tuple when frozen; unhashable when not (eq without frozen)
 *   __setattr__  frozen: every assignment and deletion raises dataclasses.FrozenInstanceError
 *   __reduce__   (type, field tuple): pickles rebuild through the constructor
 *   replace(**changes), __replace__: type(**{fields of self, updated by changes}); the constructor rejects bad names
 *   __match_args__, and __dataclass_fields__ / __dataclass_params__, so that dataclasses.fields, replace, asdict and
 *   astuple accept the objects; the Field objects carry the dataclass's default or default_factory (the constructor
 *   applies its own, the same values: the table states them for dataclasses.fields). */
#ifndef TINYC_DATACLASS_H
#define TINYC_DATACLASS_H
#include "../tinyc.h"
#include <stddef.h>

/* A field's default: a new reference to the value (once, for a default; per object, for a default_factory). */
typedef PyObject *(*DataclassDefault)(void);

/* One field: its name and the offset of the PyObject * the object keeps it in (never NULL once the object is made). */
typedef struct {
  const char *name;
  Py_ssize_t offset;
  const char *doc;                /* the member's docstring, may be NULL */
  DataclassDefault make_default;  /* NULL: a field without a default */
  bool factory;                   /* make_default is the field's default_factory, not its default */
} DataclassField;
#define DATACLASS_FIELD(type, member, doc) {#member, offsetof(type, member), doc, NULL, false}
/* field(default=make()) and field(default_factory=make) */
#define DATACLASS_FIELD_DEFAULT(type, member, doc, make) {#member, offsetof(type, member), doc, make, false}
#define DATACLASS_FIELD_FACTORY(type, member, doc, make) {#member, offsetof(type, member), doc, make, true}

/* the defaults tinygrad's dataclasses use most: None, False, True, 0, (), and list as a default_factory */
PyObject *dataclass_none(void);
PyObject *dataclass_false(void);
PyObject *dataclass_true(void);
PyObject *dataclass_zero(void);
PyObject *dataclass_empty_tuple(void);
PyObject *dataclass_new_list(void);

typedef struct {
  const DataclassField *fields;   /* in declaration order, ended by {NULL} */
  bool frozen;                    /* @dataclass(frozen=True); a frozen type also gets read-only members for its fields */
  bool order;                     /* @dataclass(order=True) */
  bool str_repr;                  /* the repr shows fields with str(), as Opt's own __repr__ does */
  Py_ssize_t hash_cache;          /* offset of a Py_hash_t (-1 until computed) the hash is kept in; 0: computed each time */
  bool identity_eq;               /* @dataclass(eq=False): the type keeps its own (or identity) ==, no field comparison */
} Dataclass;

/* Make `type` (a static type, not subclassable) the dataclass `dc` describes, then PyType_Ready it. Slots and methods
 * the type defines itself are kept (ProgramSpec has its own __reduce__). `dc` must be static. 0, or -1 with an exception. */
int dataclass_ready(PyTypeObject *type, const Dataclass *dc);

/* Only the dataclasses module's view (__match_args__, __dataclass_fields__, __dataclass_params__) on a type that keeps all its
 * own slots and methods and reads its fields through its own attributes (UOp, DType: tinygrad declares them @dataclass(eq=False)
 * for their fields, not for generated methods); the offsets of dc's fields are unused. Call after PyType_Ready. 0 or -1. */
int dataclass_describe(PyTypeObject *type, const Dataclass *dc);
/* a field of such a type: a name, and a default or NULL */
#define DATACLASS_NAMED(name, make) {name, 0, NULL, make, false}

/* The field values of a dataclass object as a tuple (dataclasses.astuple, not recursive): new reference. */
PyObject *dataclass_astuple(PyObject *self);

#endif
