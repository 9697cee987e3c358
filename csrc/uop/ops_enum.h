/* tinygrad/uop/__init__.py: the Ops enum and GroupOp, plus AxisType (tinygrad keeps it in uop/ops.py), all defined in
 * ops_enum.c from the one list in ops_list.h. Below UOp: the mixins (csrc/mixin/) need Ops and nothing else of uop/. */
#ifndef TINYC_OPS_ENUM_H
#define TINYC_OPS_ENUM_H
#include "../tinyc.h"
#include "ops_list.h"

typedef enum {
  OP_NONE = 0,               /* values start at 1, as tinygrad's auto() */
#define X(name) OP_##name,
  OPS_LIST(X)
#undef X
  OP_COUNT
} Op;
_Static_assert(OP_COUNT <= 128, "a UOp stores its op in 7 bits");

extern const char *const op_names[OP_COUNT];   /* "ADD", ... ; op_names[0] is NULL */
extern PyObject *ops_members[OP_COUNT];        /* the tinyc.Ops members, borrowed */
extern PyObject *Ops_Type;                     /* the tinyc.Ops IntEnum class */
extern PyObject *ops_str[OP_COUNT];            /* "Ops.ADD", ...: str() of each member, made once */

/* A set of ops as a bit set: GroupOp's groups, pattern early-reject sets. */
typedef struct { uint64_t bits[2]; } OpSet;
static inline bool opset_has(OpSet s, int op) { return (s.bits[op >> 6] >> (op & 63)) & 1; }
static inline void opset_add(OpSet *s, int op) { s->bits[op >> 6] |= (uint64_t)1 << (op & 63); }

/* An op's bit in a node's ops_below summary: 32 bits, to keep a node within 100 bytes. The ops that the narrow rule sets
 * match at their roots (loads, stores, indexing, ranges, vectors, defines) have a bit each; the ALUs share a bit per
 * kind (a rule set that matches one of them usually matches most); the rest share the last bit. A summary may say an op
 * is below that is not, never the other way. */
extern const uint8_t op_bit_of[OP_COUNT];
static inline uint32_t op_bit(int op) { return (uint32_t)1 << (op_bit_of[op] ? op_bit_of[op] - 1 : 31); }

/* GroupOp, with tinygrad's members (filled at init from ops_enum.c's tables). */
typedef enum {
  GROUP_Unary, GROUP_Binary, GROUP_Ternary, GROUP_ALU, GROUP_Elementwise, GROUP_Defines, GROUP_Irreducible,
  GROUP_Movement, GROUP_Buffer, GROUP_Commutative, GROUP_Associative, GROUP_Idempotent, GROUP_Comparison,
  GROUP_UnsafePad, GROUP_All, GROUP_COUNT
} GroupId;
extern OpSet group_ops[GROUP_COUNT];
#define IN_GROUP(op, G) opset_has(group_ops[GROUP_##G], (op))

/* Op from a Python object (an Ops member or an int in range); -1 with TypeError/ValueError set. */
int op_from_object(PyObject *o);

/* AxisType (uop/ops.py), values from 1 in tinygrad's order */
#define AXIS_TYPES(X) X(GLOBAL) X(WARP) X(LOCAL) X(LOOP) X(GROUP_REDUCE) X(REDUCE) X(UPCAST) X(UNROLL) \
  X(THREAD) X(OUTER) X(PLACEHOLDER)
typedef enum {
  AXIS_NONE = 0,
#define X(name) AXIS_##name,
  AXIS_TYPES(X)
#undef X
  AXIS_COUNT
} AxisTypeId;
extern PyObject *axistype_members[AXIS_COUNT];  /* borrowed */

int tinyc_init_ops_enum(PyObject *m);

#endif
