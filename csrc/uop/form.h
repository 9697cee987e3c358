/* The form of a UOp: how many sources each op takes and what kind of arg it carries.
 *
 * tinygrad lets any (op, dtype, src, arg) be built and fails later, in Python, where a pass indexes a source that is
 * not there or reads an arg of the wrong kind. tinyc's passes are C, so the same graph must fail *before* C reads it.
 * Every node's form is checked once, when the node is made (uop_new), and a node whose form is wrong — or that has
 * such a node anywhere below it — carries UOP_FLAG_MALFORMED. Native code reads a source or arg only of nodes
 * without the flag, which it tests at its entry: a native rule before it runs (upat.c), a pass before it walks.
 * So within the form table's bounds a source index or an arg kind never needs a check of its own. */
#ifndef TINYC_UOP_FORM_H
#define TINYC_UOP_FORM_H
#include "uop.h"

/* false when the node made of these would be malformed by itself (its sources are not looked at) */
bool uop_form_ok(Op op, Py_ssize_t nsrc, PyObject *arg);

/* 0 when nothing in the graph of `root` is malformed; else -1 with the exception tinygrad's Python would raise on
 * reading it (IndexError for a missing source, TypeError for an arg of the wrong kind), naming the first malformed
 * node in toposort order and, when the checker is not `root` itself, what refused it. */
int uop_require_form(UOp *root, const char *who);
static inline int uop_check_form(UOp *root, const char *who) {
  return (root->flags & UOP_FLAG_MALFORMED) ? uop_require_form(root, who) : 0;
}
/* the same over a sequence of UOps (a linearized program): 0, or -1 with the exception (TypeError for a non-UOp) */
int uops_check_form(PyObject *seq, const char *who);

#endif
