/* Python enums made from C name lists: tinygrad's Ops, OptOps, AddrSpace, AxisType are enum.Enum / enum.IntEnum
 * classes, so tinyc's are too (made by calling the enum functional API). */
#ifndef TINYC_ENUM_H
#define TINYC_ENUM_H
#include "../tinyc.h"

/* An enum.Enum / enum.IntEnum subclass from a NULL-terminated list of names, values from 1 (tinygrad's auto()).
 * `base` is "Enum" or "IntEnum"; the class is placed in module `tinyc` for pickling. Returns a new reference. */
PyObject *tinyc_make_enum(const char *base, const char *clsname, const char *const *names);

#endif
