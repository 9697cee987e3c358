/* tinygrad/codegen/late/devectorizer.py's rule sets, native: pm_add_loads, load_store_folding,
 * correct_load_store (split_load_store, image_fixup), load_store_indexing, devectorize, pm_render, pm_reduce and ReduceContext.
 * Image buffers (ImageDType) load and store float4 texels at int2 coordinates: image_fixup turns an element index into one,
 * and simplify_valid_load drops the conditions an image read needs no guard for (out-of-image reads give zero). */
#include "../passes.h"
#include "devectorizer.h"
#include <structmember.h>

/* a copy of u with a new dtype and sources (tinygrad's u.replace(dtype=..., src=...)), tag kept */
static UOp *u_replace(UOp *u, DType *dt, UOp *const *src, int n) {
  for (int i = 0; i < n; i++) if (!src[i]) return NULL;
  return u && dt ? KEEP(uop_new(u->op, dt, src, n, u->arg, uop_tag(u))) : NULL;
}

/* tinygrad's u.replace(dtype=dt, src=u.src[:at]+(first,)+u.src[at+1:]) */
static UOp *with_src(UOp *u, int at, UOp *first, DType *dt) {
  if (!u || !first) return NULL;
  int n = (int)u->nsrc;
  UOp **src = PyMem_Malloc(sizeof(UOp *) * (size_t)(n ? n : 1));
  if (!src) { PyErr_NoMemory(); return NULL; }
  for (int i = 0; i < n; i++) src[i] = i == at ? first : u->src[i];
  UOp *r = u_replace(u, dt, src, n);
  PyMem_Free(src);
  return r;
}

/* ---- pm_add_loads ---- */

/* an INDEX that yields a value (not a pointer) becomes a pointer INDEX followed by a LOAD */
RULE(add_load_to_index, idx) {
  if (idx->dtype->is_ptr) return NULL;
  UOp *ptr_idx = u_replace(idx, idx->src[0]->dtype, idx->src, (int)idx->nsrc);
  return u_new(OP_LOAD, dtype_base(idx->dtype), &ptr_idx, 1, Py_None);
}

/* a STORE whose target is a LOAD stores through the LOAD's pointer instead */
RULE(store_through_load, s) {
  return with_src(s, 0, s->src[0]->src[0], s->dtype);
}

static const RuleDef pm_add_loads_defs[] = {
  R("UPat(Ops.INDEX, name='idx')", add_load_to_index),
  R("UPat(Ops.STORE, src=(UPat(Ops.LOAD),), allow_any_len=True, name='s')", store_through_load),
};

/* ---- small builders ---- */

/* buf.index(i, ptr=True) */
static UOp *index_ptr(UOp *buf, UOp *i) {
  UOp *src[2] = {buf, i};
  return buf ? u_new(OP_INDEX, buf->dtype, src, 2, Py_None) : NULL;
}
/* a tuple (lo, lo+1, ..., hi-1) of Python ints, pooled */
static PyObject *int_range(long long lo, long long hi) {
  PyObject *t = PyTuple_New(hi > lo ? (Py_ssize_t)(hi - lo) : 0);
  for (long long i = lo; t && i < hi; i++) {
    PyObject *v = PyLong_FromLongLong(i);
    if (!v) { Py_DECREF(t); return NULL; }
    PyTuple_SET_ITEM(t, (Py_ssize_t)(i - lo), v);
  }
  return pool_keep(t);
}
/* buf's pointee as a vector of n, a pointer with buf's size and address space */
static DType *vec_ptr_like(DType *bufdt, int n) {
  return dtype_ptr(dtype_vec(dtype_base(bufdt), n), bufdt->size, bufdt->addrspace);
}
/* UOp.group(*srcs): one source is itself, more make a GROUP */
static UOp *u_group(UOp *const *src, int n) { return n == 1 ? src[0] : u_new(OP_GROUP, DTYPE(VOID), src, n, Py_None); }
/* x.store(data, *rest) */
static UOp *store_with(UOp *target, UOp *data, UOp *const *rest, int nrest) {
  UOp *src[8] = {target, data};
  if (nrest > 6) { PyErr_SetString(PyExc_ValueError, "STORE with too many sources"); return NULL; }
  for (int i = 0; i < nrest; i++) src[2 + i] = rest[i];
  return u_new(OP_STORE, DTYPE(VOID), src, 2 + nrest, Py_None);
}

/* a growable list of borrowed UOps (the pool owns them) */
typedef struct { UOp **items; int len, cap; } UList;
static int ulist_push(UList *l, UOp *u) {
  if (!u) return -1;
  if (l->len == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    UOp **items = PyMem_Realloc(l->items, sizeof(UOp *) * (size_t)cap);
    if (!items) { PyErr_NoMemory(); return -1; }
    l->items = items, l->cap = cap;
  }
  l->items[l->len++] = u;
  return 0;
}
static void ulist_free(UList *l) { PyMem_Free(l->items); }

/* ---- load_store_folding ---- */

/* INDEX of a broadcast buffer by a vector index: one pointer INDEX per lane, vectorized */
RULE_MAYBE(expand_index, (vec), buf) {
  UOp *r = NULL;
  UList lanes = {0};
  int n = vec->dtype->count, ok = 0;
  for (int i = 0; i < n && ok == 0; i++) ok = ulist_push(&lanes, index_ptr(buf, u_gep(vec, n_int(i))));
  if (ok == 0) r = u_new(OP_VECTORIZE, buf->dtype, lanes.items, lanes.len, Py_None);
  ulist_free(&lanes);
  return r;
}

static const char ROOT_INVALID, ROOT_CONST;   /* tinygrad's roots "INVALID" and "CONST", as markers no node can be */

/* one lane's index as fold_expanded_index splits it: its valid, its root (a node or a marker) and the constant added
 * to the root (borrowed; NULL for 0). 0, or -1 on error. */
static int lane_parts(UOp *lane, UOp **valid, const void **root, PyObject **off) {
  UOp *idx = u_get_idx(lane->src[1]);
  if (!idx || !(*valid = u_get_valid(lane->src[1]))) return -1;
  *root = idx, *off = NULL;
  if (idx->op == OP_ADD && idx->src[1]->op == OP_CONST) *root = idx->src[0], *off = idx->src[1]->arg;
  else if (idx->op == OP_ADD && idx->src[0]->op == OP_CONST) *root = idx->src[1], *off = idx->src[0]->arg;
  else if (idx->op == OP_CONST && idx->arg == Invalid) *root = &ROOT_INVALID;
  else if (idx->op == OP_CONST) *root = &ROOT_CONST, *off = idx->arg;
  return 0;
}

/* the grouping key and offset of one lane's index as Python values: (valid, root) and the constant added to root */
static int lane_key(UOp *lane, PyObject **key, PyObject **off) {
  UOp *valid;
  const void *root;
  if (lane_parts(lane, &valid, &root, off) < 0) return -1;
  PyObject *r = root == &ROOT_INVALID ? pool_keep(PyUnicode_FromString("INVALID"))
              : root == &ROOT_CONST ? pool_keep(PyUnicode_FromString("CONST")) : (PyObject *)root;
  if (!*off) *off = n_int(0);
  *key = r && *off ? pool_keep(PyTuple_Pack(2, (PyObject *)valid, r)) : NULL;
  return *key ? 0 : -1;
}

/* {(valid, root): {offset: [lane, ...]}} in first-seen order */
static PyObject *lanes_by_root(UOp *midx) {
  PyObject *groups = pool_keep(PyDict_New());
  for (int i = 0; groups && i < (int)midx->nsrc; i++) {
    PyObject *key, *off, *offs, *lst;
    if (lane_key(midx->src[i], &key, &off) < 0) return NULL;
    if (!(offs = PyDict_GetItemWithError(groups, key))) {
      if (PyErr_Occurred() || !(offs = pool_keep(PyDict_New())) || PyDict_SetItem(groups, key, offs) < 0) return NULL;
    }
    if (!(lst = PyDict_GetItemWithError(offs, off))) {
      if (PyErr_Occurred() || !(lst = pool_keep(PyList_New(0))) || PyDict_SetItem(offs, off, lst) < 0) return NULL;
    }
    if (PyList_Append(lst, pool_keep(PyLong_FromLong(i))) < 0) return NULL;
  }
  return groups;
}

/* one run of consecutive offsets sorted[lo:hi] becomes one (maybe vector) pointer; its lanes get their places */
static int emit_run(UOp *midx, PyObject *offs, PyObject *sorted, Py_ssize_t lo, Py_ssize_t hi, UList *ret,
                    PyObject *idxs, long *global_offset) {
  DType *bufdt = midx->src[0]->src[0]->dtype;
  PyObject *first = PyDict_GetItem(offs, PyList_GET_ITEM(sorted, lo));
  UOp *lidx = midx->src[PyLong_AsLong(PyList_GET_ITEM(first, 0))];
  if (hi - lo > 1) lidx = u_cast(lidx, vec_ptr_like(bufdt, (int)(hi - lo)));
  for (Py_ssize_t g = lo; g < hi; g++) {
    PyObject *lanes = PyDict_GetItem(offs, PyList_GET_ITEM(sorted, g));
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(lanes); k++) {
      PyObject *pos = PyLong_FromLong(*global_offset + (long)(g - lo));
      if (!pos) return -1;
      PyTuple_SET_ITEM(idxs, PyLong_AsLong(PyList_GET_ITEM(lanes, k)), pos);
    }
  }
  *global_offset += (long)(hi - lo);
  return ulist_push(ret, lidx);
}

/* split sorted offsets into runs where offset - position is constant */
static int emit_runs(UOp *midx, PyObject *offs, UList *ret, PyObject *idxs, long *global_offset) {
  PyObject *sorted = pool_keep(PyDict_Keys(offs));
  if (!sorted || PyList_Sort(sorted) < 0) return -1;
  Py_ssize_t n = PyList_GET_SIZE(sorted), lo = 0;
  for (Py_ssize_t i = 1; i <= n; i++) {
    if (i < n) {
      PyObject *d0 = n_sub(PyList_GET_ITEM(sorted, lo), n_int((long long)lo));
      PyObject *d1 = n_sub(PyList_GET_ITEM(sorted, i), n_int((long long)i));
      int same = n_eq(d0, d1);
      if (same < 0) return -1;
      if (same) continue;
    }
    if (emit_run(midx, offs, sorted, lo, i, ret, idxs, global_offset) < 0) return -1;
    lo = i;
  }
  return 0;
}

/* ---- the same grouping on C integers: every offset a small int, as in practice ---- */

typedef struct { UOp *valid; const void *root; long long off; int lane, group; } Lane;

/* one lane as C values: 1, 0 when its offset is no int within +-2**62 (the Python numbers' path), -1 on error */
static int lane_in_c(UOp *lane, int i, Lane *l) {
  UOp *valid;
  const void *root;
  PyObject *off;
  if (lane_parts(lane, &valid, &root, &off) < 0) return -1;
  long long v = 0;
  if (off) {
    int overflow = 0;
    if (!PyLong_CheckExact(off) || ((v = PyLong_AsLongLongAndOverflow(off, &overflow)) == -1 && PyErr_Occurred())) return -1;
    if (overflow || v > (1LL << 62) || v < -(1LL << 62)) return 0;
  }
  *l = (Lane){valid, root, v, i, 0};
  return 1;
}

/* by group (first seen first), then offset, then lane: the order the Python dicts and sorted() give */
static int lane_order(const void *a, const void *b) {
  const Lane *x = a, *y = b;
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  if (x->off != y->off) return x->off < y->off ? -1 : 1;
  return (x->lane > y->lane) - (x->lane < y->lane);
}

/* fold_expanded_index's pointers (pushed on ret) and lanes' places (set in idxs) on C integers: 1 done, 0 when an
 * offset needs Python numbers (nothing done yet), -1 on error */
static int fold_lanes_in_c(UOp *midx, UList *ret, PyObject *idxs, long *global_offset) {
  int n = (int)midx->nsrc, groups = 0, rc = -1;
  Lane *lanes = PyMem_Malloc(sizeof(Lane) * (size_t)n);
  if (!lanes) { PyErr_NoMemory(); return -1; }
  for (int i = 0; i < n; i++) {
    int r = lane_in_c(midx->src[i], i, &lanes[i]);
    if (r <= 0) { rc = r; goto end; }
    int g = 0;
    while (g < i && (lanes[g].valid != lanes[i].valid || lanes[g].root != lanes[i].root)) g++;
    lanes[i].group = g < i ? lanes[g].group : groups++;
  }
  qsort(lanes, (size_t)n, sizeof(Lane), lane_order);
  DType *bufdt = midx->src[0]->src[0]->dtype;
  for (int lo = 0; lo < n;) {   /* a run: one group's offsets, each one more than the last; its lanes get their places */
    int hi = lo + 1, width = 1;
    for (; hi < n && lanes[hi].group == lanes[lo].group && lanes[hi].off - lanes[hi - 1].off <= 1; hi++)
      width += lanes[hi].off != lanes[hi - 1].off;
    UOp *lidx = midx->src[lanes[lo].lane];
    if (width > 1) lidx = u_cast(lidx, vec_ptr_like(bufdt, width));
    for (int k = lo; k < hi; k++) {
      PyObject *pos = PyLong_FromLong(*global_offset + (long)(lanes[k].off - lanes[lo].off));
      if (!pos) goto end;
      PyTuple_SET_ITEM(idxs, lanes[k].lane, pos);
    }
    *global_offset += width;
    if (ulist_push(ret, lidx) < 0) goto end;
    lo = hi;
  }
  rc = 1;
end:
  PyMem_Free(lanes);
  return rc;
}

/* a VECTORIZE of pointer INDEXes into one buffer: group consecutive offsets into vector pointers, PTRCAT, GEP */
RULE(fold_expanded_index, midx) {
  /* every lane is read as INDEX(buf, idx): a lane with fewer sources is tinygrad's IndexError, not a read past them */
  for (int i = 0; i < (int)midx->nsrc; i++)
    if (midx->src[i]->nsrc < 2) { PyErr_SetString(PyExc_IndexError, "tuple index out of range"); return NULL; }
  if (!midx->nsrc) return NULL;
  UOp *buf = midx->src[0]->src[0], *r = NULL;
  for (int i = 0; i < (int)midx->nsrc; i++) {
    if (midx->src[i]->src[0] != buf || !midx->src[i]->dtype->is_ptr) return NULL;
  }
  PyObject *idxs = pool_keep(PyTuple_New(midx->nsrc));
  if (!idxs) return NULL;
  UList ret = {0};
  long global_offset = 0;
  int in_c = fold_lanes_in_c(midx, &ret, idxs, &global_offset);
  if (in_c < 0) goto end;
  if (!in_c) {   /* an offset past C integers: the same steps on Python numbers */
    PyObject *groups = lanes_by_root(midx), *offs, *key;
    Py_ssize_t pos = 0;
    if (!groups) goto end;
    while (PyDict_Next(groups, &pos, &key, &offs)) {
      if (emit_runs(midx, offs, &ret, idxs, &global_offset) < 0) goto end;
    }
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(idxs); i++) {
    if (!PyTuple_GET_ITEM(idxs, i)) { PyErr_SetString(PyExc_AssertionError, "some idxs are missing"); goto end; }
  }
  DType *catdt = dtype_vec(dtype_ptr(dtype_base(buf->dtype), buf->dtype->size, buf->dtype->addrspace), (int)global_offset);
  r = u_gep(u_new(OP_PTRCAT, catdt, ret.items, ret.len, Py_None), idxs);
end:
  ulist_free(&ret);
  return r;
}

/* a LOAD through a GEP of pointers loads the vector and GEPs the value */
RULE(gep_after_load, gep, ld) {
  DType *dt = dtype_vec(dtype_scalar(ld->dtype), gep->dtype->count);
  return u_gep(with_src(ld, 0, gep->src[0], dt), gep->arg);
}

/* a STORE through a GEP of pointers stores the data GEPed by the inverse permutation */
RULE(gep_on_store, sto, gep, st) {
  PyObject *inverse = pool_keep(PyDict_New());
  for (Py_ssize_t i = 0; inverse && i < PyTuple_GET_SIZE(gep->arg); i++) {
    PyObject *pos = pool_keep(PyLong_FromSsize_t(i));
    if (!pos || PyDict_SetItem(inverse, PyTuple_GET_ITEM(gep->arg, i), pos) < 0) return NULL;
  }
  PyObject *items = inverse ? pool_keep(PyDict_Items(inverse)) : NULL;
  if (!items || PyList_Sort(items) < 0) return NULL;
  PyObject *new_arg = pool_keep(PyTuple_New(PyList_GET_SIZE(items)));
  for (Py_ssize_t i = 0; new_arg && i < PyList_GET_SIZE(items); i++) {
    PyTuple_SET_ITEM(new_arg, i, Py_NewRef(PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 1)));
  }
  return new_arg ? store_with(gep->src[0], u_gep(st, new_arg), sto->src + 2, (int)sto->nsrc - 2) : NULL;
}

/* a LOAD through a PTRCAT is a CAT of LOADs, one per pointer */
RULE(ptrcat_after_load, cat, ld) {
  UOp *r = NULL;
  UList loads = {0};
  int ok = 0;
  for (int i = 0; i < (int)cat->nsrc && ok == 0; i++) ok = ulist_push(&loads, with_src(ld, 0, cat->src[i], dtype_base(cat->src[i]->dtype)));
  if (ok == 0) r = u_new(OP_CAT, dtype_vec(dtype_base(cat->dtype), dtype_vcount(cat->dtype)), loads.items, loads.len, Py_None);
  ulist_free(&loads);
  return r;
}

/* a STORE through a PTRCAT is a group of STOREs, each of its slice of the data */
RULE(cat_after_store, cat, data, sto) {
  UOp *r = NULL;
  UList stores = {0};
  int ok = 0, offset = 0;
  for (int i = 0; i < (int)cat->nsrc && ok == 0; i++) {
    int cnt = cat->src[i]->dtype->count;
    ok = ulist_push(&stores, store_with(cat->src[i], u_gep(data, int_range(offset, offset + cnt)), sto->src + 2, (int)sto->nsrc - 2));
    offset += cnt;
  }
  if (ok == 0) r = u_group(stores.items, stores.len);
  ulist_free(&stores);
  return r;
}

static const RuleDef load_store_folding_defs[] = {
  R("UPat(Ops.INDEX, src=(UPat(Ops.VECTORIZE, src=UPat(GroupOp.Defines).or_after('buf')), UPat.var('vec')))", expand_index),
  R("UPat(Ops.VECTORIZE, src=UPat(Ops.INDEX), name='midx')", fold_expanded_index),
  R("UPat(Ops.LOAD, src=(UPat(Ops.GEP, name='gep'),), name='ld', allow_any_len=True)", gep_after_load),
  R("UPat(Ops.STORE, src=(UPat(Ops.GEP, name='gep'), UPat.var('st')), allow_any_len=True, name='sto')", gep_on_store),
  R("UPat(Ops.LOAD, src=(UPat(Ops.PTRCAT, name='cat'),), name='ld', allow_any_len=True)", ptrcat_after_load),
  R("UPat(Ops.STORE, src=(UPat(Ops.PTRCAT, name='cat'), UPat(name='data')), allow_any_len=True, name='sto')", cat_after_store),
};

/* ---- correct_load_store ---- */

static int attr_truth(PyObject *o, const char *name) {
  PyObject *v = PyObject_GetAttrString(o, name);
  int r = v ? PyObject_IsTrue(v) : -1;
  Py_XDECREF(v);
  return r;
}
static int device_is(PyObject *ctx, const char *dev) {
  PyObject *v = getattr_literal(ctx, "device");
  int r = v ? (PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, dev) == 0) : -1;
  Py_XDECREF(v);
  return r;
}

/* the vector widths a load/store of buf may be split into, widest first (1 always last) */
static int fold_lengths(PyObject *ctx, DType *bufdt, int *lengths, bool *must_divide) {
  static const int dsp[] = {128, 64, 32, 16, 8, 4};
  int n = 0;
  *must_divide = true;
  int is_dsp = ctx != Py_None ? device_is(ctx, "DSP") : 0;
  if (is_dsp < 0) return -1;
  DTypeId id = dtype_base(bufdt)->id;
  bool floaty = dtype_base(bufdt)->scalar_ == NULL &&
                (id == DT_FLOAT32 || id == DT_FLOAT16 || id == DT_FP8E4M3 || id == DT_FP8E5M2);
  if (is_dsp) {
    for (int i = 0; i < 6; i++) lengths[n++] = dsp[i];
    *must_divide = false;
  } else if (floaty && bufdt->addrspace != ADDRSPACE_REG && dtype_is_image(bufdt)) {
    lengths[n++] = 4;   /* an image moves whole texels */
  } else if (floaty && bufdt->addrspace != ADDRSPACE_REG && ctx != Py_None) {
    int f4 = attr_truth(ctx, "supports_float4");
    if (f4 < 0) return -1;
    if (f4) lengths[n++] = 4, lengths[n++] = 2;
  }
  lengths[n++] = 1;
  return n;
}

/* the widths a vector of sz elements is cut into, each the first usable one that still fits (usable ends in 1):
 * the number of pieces, -1 when none fits */
static int plan_pieces(int sz, const int *usable, int nusable, int *pieces) {
  int n = 0;
  for (int global_offset = 0; global_offset < sz; global_offset += pieces[n++]) {
    int fold = 0;
    for (int i = 0; i < nusable && !fold; i++) if (global_offset + usable[i] <= sz) fold = usable[i];
    if (!fold) return -1;
    pieces[n] = fold;
  }
  return n;
}

/* a LOAD/STORE of a vector through a casted pointer is split into the widest pieces the offset allows */
RULE(split_load_store, ls, idx) {
  UOp *buf = idx->src[0], *r = NULL;
  int sz = ls->src[0]->dtype->count, lengths[8], usable[8], nusable = 0;
  bool must_divide;
  if (sz == 1) return NULL;
  int n = fold_lengths(ctx, buf->dtype, lengths, &must_divide);
  UOp *offset = u_get_idx(idx->src[1]), *mask = u_get_valid(idx->src[1]);
  if (n < 0 || !offset || !mask) return NULL;
  for (int i = 0; i < n; i++) {
    if (must_divide && lengths[i] != 1) {   /* everything divides by 1 */
      PyObject *d = pool_keep(uop_divides(offset, n_int(lengths[i])));
      if (!d) return NULL;
      if (d == Py_None) continue;
    }
    usable[nusable++] = lengths[i];
  }
  /* the pieces are known before any is built: one piece is no split (tinygrad builds it, then answers None) */
  int *pieces = PyMem_Malloc(sizeof(int) * (size_t)sz), npieces = pieces ? plan_pieces(sz, usable, nusable, pieces) : 0;
  if (!pieces) return (UOp *)PyErr_NoMemory();
  if (npieces < 0) PyErr_SetString(PyExc_RuntimeError, "split_load_store found no fold length");
  UList parts = {0};
  for (int k = 0, global_offset = 0; npieces > 1 && k < npieces; global_offset += pieces[k++]) {
    int fold = pieces[k];
    UOp *lidx = index_ptr(buf, u_valid(u_addi(offset, global_offset), mask));
    if (fold > 1) lidx = u_cast(lidx, vec_ptr_like(buf->dtype, fold));
    UOp *part = ls->op == OP_STORE
      ? with_src(with_src(ls, 0, lidx, ls->dtype), 1, u_gep(ls->src[1], int_range(global_offset, global_offset + fold)), ls->dtype)
      : with_src(ls, 0, lidx, dtype_vec(dtype_scalar(ls->dtype), fold));
    if (ulist_push(&parts, part) < 0) goto end;
  }
  if (npieces > 1) r = ls->op == OP_LOAD ? u_new(OP_CAT, ls->dtype, parts.items, parts.len, Py_None) : u_group(parts.items, parts.len);
end:
  PyMem_Free(pieces);
  ulist_free(&parts);
  return r;
}

/* ---- image_fixup ---- */

/* the texel coordinate, index.vec(2), of element x of an image `width` texels wide: ((x//4) % width, x // (4*width)) */
static UOp *texel_coord(UOp *x, DType *image) {
  Py_ssize_t width;
  if (dtype_image_dim(image, 1, &width) < 0) return NULL;
  if (width > (1LL << 40) || width < -(1LL << 40)) return (UOp *)PyErr_Format(PyExc_OverflowError, "image width %zd is too large", width);
  UOp *src[2] = {u_modi(u_idivi(x, 4), width), u_idivi(x, 4 * (long long)width)};
  return u_new(OP_VECTORIZE, dtype_vec(DTYPE(INDEX), 2), src, 2, NULL);
}

/* idx (an INDEX into an image) with its element index turned into the texel coordinate, the valid kept; *x is the
 * element index */
static UOp *texel_index(UOp *idx, UOp **x) {
  if (idx->nsrc < 2) return (UOp *)PyErr_Format(PyExc_IndexError, "tuple index out of range");
  *x = u_get_idx(idx->src[1]);
  UOp *src[2] = {idx->src[0], u_valid(texel_coord(*x, idx->src[0]->dtype), u_get_valid(idx->src[1]))};
  return u_replace_src(idx, src, 2);
}

/* a load of one element of a texel: the texel's float4 loaded, the lane x % 4 selected (nan where x % 4 may be negative) */
static UOp *unfoldable_image_load(UOp *ls, UOp *idx, UOp *x) {
  UOp *vec_load = with_src(ls, 0, idx, dtype_vec(ls->dtype, 4)), *lane = u_modi(x, 4);
  PyObject *lo, *hi;
  if (!vec_load || !lane || uop_min_max(lane, &lo, &hi) < 0) return NULL;
  long vmin = PyLong_AsLong(lo), vmax = vmin == -1 && PyErr_Occurred() ? 0 : PyLong_AsLong(hi);
  if (PyErr_Occurred()) return NULL;
  UOp *acc = vmin >= 0 ? u_gep(vec_load, n_int(vmin)) : u_const_like(ls, pool_keep(PyFloat_FromDouble(NAN)));
  for (long i = vmin >= 0 ? vmin + 1 : 0; i < (vmin >= 0 ? vmax + 1 : 4); i++)
    acc = u_where(u_binop(OP_CMPNE, lane, n_int(i)), acc, u_gep(vec_load, n_int(i)));
  return acc;
}

/* an image LOAD/STORE: through expand_index's float4 CAST it reads/writes a texel; an uncasted load (unfoldable) reads
 * the texel and picks the lane; an uncasted store cannot be done */
RULE(image_fixup, ls) {
  if (!ls->nsrc) return (UOp *)PyErr_Format(PyExc_IndexError, "tuple index out of range");
  UOp *p = ls->src[0], *x = NULL;
  if (p->op == OP_CAST && p->nsrc >= 1 && dtype_is_image(p->src[0]->dtype)) {
    if (p->dtype->count != 4) return (UOp *)PyErr_Format(PyExc_AssertionError, "image must be casted to 4");
    return with_src(ls, 0, texel_index(p->src[0], &x), ls->dtype);
  }
  if (!dtype_is_image(p->dtype)) return NULL;
  if (p->nsrc < 2) return (UOp *)PyErr_Format(PyExc_IndexError, "tuple index out of range");
  UOp *cur = u_get_idx(p->src[1]);
  if (!cur || cur->dtype == dtype_vec(DTYPE(INDEX), 2)) return NULL;
  if (ls->op != OP_LOAD) return (UOp *)PyErr_Format(PyExc_AssertionError, "if an image store isn't upcasted to 4, we can't store it");
  UOp *idx = texel_index(p, &x);
  return idx ? unfoldable_image_load(ls, idx, x) : NULL;
}

static const RuleDef correct_load_store_defs[] = {
  R("UPat((Ops.LOAD, Ops.STORE), src=(UPat(Ops.INDEX, name='idx').cast(),), name='ls', allow_any_len=True)", split_load_store),
  R("UPat((Ops.LOAD, Ops.STORE), name='ls')", image_fixup),
};

/* ---- load_store_indexing ---- */

/* i.is_increasing(): 1, 0 or -1 */
static int is_increasing(UOp *i) {
  PyObject *r = pool_keep(PyObject_CallMethod((PyObject *)i, "is_increasing", NULL));
  return r ? PyObject_IsTrue(r) : -1;
}

/* for X0 + X1 + ... >= 1 (X's terms irreducible, from 0): is the read out of the image when every term is 0 */
static int out_when_terms_zero(UOp *idx, UOp *X) {
  PtrVec terms = {0};
  int ret = uop_split_uop(X, OP_ADD, &terms) < 0 ? -1 : 1;
  for (Py_ssize_t k = 0; ret == 1 && k < terms.len; k++) {
    UOp *u = terms.items[k];
    ret = IN_GROUP(u->op, Irreducible) ? n_eqi(vmin(u), 0) : 0;
  }
  UOp *test = idx;
  for (Py_ssize_t k = 0; ret == 1 && k < terms.len; k++) {
    UOp *u = terms.items[k];
    PyObject *sub = pool_keep(PyDict_New());
    if (!sub || PyDict_SetItem(sub, (PyObject *)u, (PyObject *)u_const_likei(u, 0)) < 0) ret = -1;
    else if (!(test = u_substitute(test, sub))) ret = -1;
  }
  if (ret == 1) {
    UOp *g0 = u_gep(test, n_int(0)), *g1 = g0 ? u_gep(test, n_int(1)) : NULL;
    ret = g1 ? n_lti(vmax(g0), 0) : -1;
    if (ret == 0) ret = n_lti(vmax(g1), 0);
  }
  ptrvec_free(&terms);
  return ret;
}

/* X <= c (or X >= c): is the read out of the image when X is c+1 (c-1), in a coordinate that increases with X */
static int out_past_bound(UOp *idx, DType *image, UOp *X, bool is_upper, PyObject *c) {
  Py_ssize_t bounds[2];
  if (dtype_image_dim(image, 1, &bounds[0]) < 0 || dtype_image_dim(image, 0, &bounds[1]) < 0) return -1;
  UOp *test_value = u_const_like(X, is_upper ? n_add(c, n_int(1)) : n_sub(c, n_int(1)));
  for (int k = 0; k < 2 && k < (int)idx->nsrc; k++) {
    UOp *i = idx->src[k];
    int inc = is_increasing(i);
    if (inc <= 0) { if (inc < 0) return -1; continue; }
    PyObject *sub = pool_keep(PyDict_New());
    if (!sub || !test_value || PyDict_SetItem(sub, (PyObject *)X, (PyObject *)test_value) < 0) return -1;
    UOp *rw = u_substitute(i, sub);
    if (!rw) return -1;
    int below = n_lti(vmin(rw), bounds[k]), out = below < 0 ? -1 : !below;   /* rw.vmin >= bound */
    if (out == 0) out = n_lti(vmax(rw), 0);
    if (out) return out;
  }
  return 0;
}

/* image reads outside the image give zero, so a valid whose failing means an out-of-image coordinate needs no guard:
 * the statements of the valid (stmts) that can go, in a new list (pooled) */
static PyObject *droppable_stmts(UOp *idx, DType *image, PtrVec *stmts) {
  PyObject *drop = pool_keep(PyList_New(0));
  for (Py_ssize_t k = 0; drop && k < stmts->len; k++) {
    UOp *stmt = stmts->items[k], *X;
    bool is_upper;
    PyObject *c;
    int parsed = uop_parse_valid(stmt, &X, &is_upper, &c), out = 0;
    if (parsed < 0) return NULL;
    if (!parsed) continue;
    if (!is_upper) {
      int one = n_eqi(c, 1);
      if (one < 0) return NULL;
      if (one && (out = out_when_terms_zero(idx, X)) < 0) return NULL;
    }
    if (!out && (out = out_past_bound(idx, image, X, is_upper, c)) < 0) return NULL;
    if (out && PyList_Append(drop, (PyObject *)stmt) < 0) return NULL;
  }
  return drop;
}

/* simplify_valid_load: the index simplified where its valid holds; for an image (once its index is a texel coordinate),
 * also the valid's statements dropped that only keep the read inside the image */
static UOp *simplify_valid_load(UOp *buf, UOp *start_idx, UOp *valid) {
  UOp *idx = uop_given_valid(valid, start_idx, true);
  if (!idx) return NULL;
  if (!dtype_is_image(buf->dtype)) return idx == start_idx ? NULL : index_ptr(buf, u_valid(idx, valid));
  if (start_idx->dtype->count != 2) return NULL;   /* not image indexed yet */
  PtrVec stmts = {0};
  PyObject *drop = uop_split_uop(valid, OP_AND, &stmts) < 0 ? NULL : droppable_stmts(idx, buf->dtype, &stmts);
  UOp *ret = NULL, *new_valid = NULL;
  if (!drop || (!PyList_GET_SIZE(drop) && idx == start_idx)) goto end;
  for (Py_ssize_t k = 0; k < stmts.len; k++) {
    int dropped = PySequence_Contains(drop, (PyObject *)stmts.items[k]);
    if (dropped < 0) goto end;
    if (!dropped) new_valid = new_valid ? u_and(new_valid, stmts.items[k]) : stmts.items[k];
  }
  ret = index_ptr(buf, new_valid ? u_valid(idx, new_valid) : idx);
end:
  ptrvec_free(&stmts);
  return ret;
}
RULE(simplify_gated_index, buf, x, cond) { return simplify_valid_load(buf, x, cond); }
/* after the index is lowered to int64, the gate is the INDEX's third source */
RULE(simplify_long_index, buf, x, c) { return simplify_valid_load(buf, x, c); }

/* an INDEX gated by the constant True drops the gate */
RULE(drop_true_gate, buf, x) { return index_ptr(buf, x); }

static const RuleDef load_store_indexing_defs[] = {
  R("UPat(Ops.INDEX, src=(UPat.var('buf'), UPat.var('cond').where(UPat.var('x'), UPat(Ops.CONST, arg=Invalid, name='i'))))", simplify_gated_index),
  R("UPat(Ops.INDEX, src=(UPat.var('buf'), UPat.var('x', dtypes.long), UPat.var('c', dtypes.bool)))", simplify_long_index),
  R("UPat(Ops.INDEX, src=(UPat.var('buf'), UPat.var('x'), UPat.const(dtypes.bool, True)),)", drop_true_gate),
};

/* ---- devectorize ---- */

/* a CAST under an AFTER moves outside it */
RULE(cast_after_after, c, a) {
  return u_cast(with_src(a, 0, c->src[0], c->src[0]->dtype), c->dtype);
}

/* an ALU/CAST/BITCAST on vectors becomes a VECTORIZE of per-lane scalar ops (not an image index's Invalid gate) */
RULE_SHARED(no_vectorized_alu, alu) {
  UOp *r = NULL, *lane_src[3];
  int cnt = dtype_vcount(alu->dtype);
  if (cnt == 1) return NULL;
  if (alu->op == OP_WHERE && alu->src[2]->arg == Invalid) return NULL;
  if (alu->nsrc > 3) { PyErr_SetString(PyExc_ValueError, "ALU with more than 3 sources"); return NULL; }
  UList lanes = {0};
  int ok = 0;
  for (int i = 0; i < cnt && ok == 0; i++) {
    for (int k = 0; k < (int)alu->nsrc; k++) lane_src[k] = u_gep(alu->src[k], n_int(i));
    ok = ulist_push(&lanes, u_new(alu->op, dtype_scalar(alu->dtype), lane_src, (int)alu->nsrc, alu->arg));
  }
  if (ok == 0) r = u_new(OP_VECTORIZE, alu->dtype, lanes.items, lanes.len, Py_None);
  ulist_free(&lanes);
  return r;
}

/* the product of the sizes in ((axis, size), ...): how many lanes a WMMA source or output holds per call; -1 on error */
static long upcast_size(PyObject *axes) {
  if (!PyTuple_Check(axes)) { PyErr_SetString(PyExc_TypeError, "WMMA upcast axes must be a tuple"); return -1; }
  long n = 1;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(axes); i++) {
    PyObject *pair = PyTuple_GET_ITEM(axes, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) < 2) { PyErr_SetString(PyExc_TypeError, "WMMA upcast axis must be (axis, size)"); return -1; }
    n *= PyLong_AsLong(PyTuple_GET_ITEM(pair, 1));
  }
  return PyErr_Occurred() ? -1 : n;
}

/* a WMMA over several output groups becomes one WMMA per group, their lanes vectorized */
RULE(no_vectorized_wmma, wmma) {
  UOp *r = NULL, *tsrc[3];
  PyObject *upcasts = PyTuple_Check(wmma->arg) ? PyTuple_GetItem(wmma->arg, 6) : NULL;
  if (!upcasts || !PyTuple_Check(upcasts) || PyTuple_GET_SIZE(upcasts) == 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "WMMA arg[6] must be a tuple of upcast axes");
    return NULL;
  }
  long out_sz = upcast_size(PyTuple_GET_ITEM(upcasts, PyTuple_GET_SIZE(upcasts) - 1)), ssz[3];
  if (out_sz < 0 || wmma->dtype->count == out_sz) return NULL;
  int nsrc = (int)(wmma->nsrc < 3 ? wmma->nsrc : 3), groups = -1;
  if (PyTuple_GET_SIZE(upcasts) < nsrc) nsrc = (int)PyTuple_GET_SIZE(upcasts);
  for (int k = 0; k < nsrc; k++) {
    if ((ssz[k] = upcast_size(PyTuple_GET_ITEM(upcasts, k))) <= 0) return NULL;
    int g = (int)((wmma->src[k]->dtype->count + ssz[k] - 1) / ssz[k]);
    if (groups < 0 || g < groups) groups = g;
  }
  UList lanes = {0};
  int ok = 0;
  for (int g = 0; g < groups && ok == 0; g++) {
    for (int k = 0; k < nsrc; k++) tsrc[k] = u_gep(wmma->src[k], int_range(g * ssz[k], (g + 1) * ssz[k]));
    UOp *one = u_new(OP_WMMA, dtype_vec(dtype_scalar(wmma->dtype), (int)out_sz), tsrc, nsrc, wmma->arg);
    for (long i = 0; i < out_sz && ok == 0; i++) ok = ulist_push(&lanes, u_gep(one, n_int(i)));
  }
  if (ok == 0) r = u_new(OP_VECTORIZE, wmma->dtype, lanes.items, lanes.len, Py_None);
  ulist_free(&lanes);
  return r;
}

/* a local/register buffer of vectors becomes one of scalars, cast back to the vector pointer */
RULE(no_vectorized_buf, buf) {
  DType *dt = buf->dtype;
  DType *scalar_ptr = dtype_ptr(dtype_scalar(dt->base), dt->size * dt->count, dt->addrspace);
  return u_cast(u_replace(buf, scalar_ptr, buf->src, (int)buf->nsrc), dt);
}

/* idx.broadcast(cnt)*cnt + (0, 1, ..., cnt-1) indexes the scalar lanes of a vector buffer */
RULE(no_vectorized_index, cast, idx, buf) {
  int cnt = cast->dtype->count;
  UOp *lanes = u_const(dtype_vec(DTYPE(INDEX), cnt), int_range(0, cnt));
  UOp *bidx = u_broadcast(idx, cnt), *bbuf = u_broadcast(buf, cnt);
  return index_ptr(bbuf, u_add(u_muli(bidx, cnt), lanes));
}

/* the same through a broadcast or GEP of the casted buffer */
RULE_MAYBE(no_vectorized_index_broadcast, (bc, idx), cast, buf) {
  UOp *bcast = bc;
  int cnt = cast->dtype->count, precnt = dtype_vcount(bcast->dtype);
  PyObject *gep_arg = pool_keep(PyTuple_New((Py_ssize_t)cnt * precnt));
  PyObject *sum_arg = pool_keep(PyTuple_New((Py_ssize_t)cnt * precnt));
  for (int i = 0; gep_arg && sum_arg && i < cnt; i++) {
    for (int y = 0; y < precnt; y++) {
      PyObject *in = bcast->op == OP_GEP ? PyTuple_GET_ITEM(bcast->arg, y) : NULL;
      long input = in ? PyLong_AsLong(in) : 0;
      PyTuple_SET_ITEM(gep_arg, i * precnt + y, PyLong_FromLong(y));
      PyTuple_SET_ITEM(sum_arg, i * precnt + y, PyLong_FromLong(i + input));
    }
  }
  if (!gep_arg || !sum_arg || PyErr_Occurred()) return NULL;
  UOp *bbuf = u_broadcast(buf, (long)cnt * precnt);
  UOp *lanes = u_const(dtype_vec(DTYPE(INDEX), cnt * precnt), sum_arg);
  return index_ptr(bbuf, u_add(u_muli(u_gep(idx, gep_arg), cnt), lanes));
}

static const RuleDef devectorize_defs[] = {
  R("UPat(Ops.CAST, name='c').f(Ops.AFTER, allow_any_len=True, name='a')", cast_after_after),
  R("UPat((*GroupOp.ALU, Ops.CAST, Ops.BITCAST), name='alu')", no_vectorized_alu),
  R("UPat(Ops.WMMA, name='wmma')", no_vectorized_wmma),
  /* devectorize_buf_and_index */
  R("UPat((Ops.DEFINE_LOCAL, Ops.DEFINE_REG), name='buf')", no_vectorized_buf),
  R("UPat((Ops.DEFINE_LOCAL, Ops.DEFINE_REG)).or_after('buf').cast(name='cast').index(UPat.var('idx'))", no_vectorized_index),
  R("UPat((Ops.DEFINE_LOCAL, Ops.DEFINE_REG)).or_after('buf').cast(name='cast').broadcast(name='bc').index(UPat.var('idx'))", no_vectorized_index_broadcast),
  R("UPat((Ops.DEFINE_LOCAL, Ops.DEFINE_REG)).or_after('buf').cast(name='cast').gep(name='bc').index(UPat.var('idx'))", no_vectorized_index_broadcast),
};

/* ---- pm_reduce ---- */

/* ReduceContext: the number of accumulators made so far (tinygrad's dataclass with one field, acc_num) */
typedef struct { PyObject_HEAD long acc_num; } ReduceContext;
static int ReduceContext_init(ReduceContext *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"acc_num", NULL};
  self->acc_num = 0;
  return PyArg_ParseTupleAndKeywords(args, kw, "|l:ReduceContext", kwlist, &self->acc_num) ? 0 : -1;
}
static PyMemberDef ReduceContext_members[] = {
  {"acc_num", T_LONG, offsetof(ReduceContext, acc_num), 0, NULL},
  {NULL, 0, 0, 0, NULL},
};
static PyTypeObject ReduceContext_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.ReduceContext", .tp_basicsize = sizeof(ReduceContext), .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_new = PyType_GenericNew, .tp_init = (initproc)ReduceContext_init, .tp_members = ReduceContext_members,
};

PyObject *reduce_context_new(void) { return PyObject_CallNoArgs((PyObject *)&ReduceContext_Type); }

/* the value a reduction of op starts from, as a constant of dt */
static PyObject *identity_element(Op op, DType *dt) {
  PyObject *v = op == OP_ADD ? PyLong_FromLong(0) : op == OP_MUL ? PyLong_FromLong(1) : op == OP_MAX ? dtype_min(dt) : NULL;
  if (!v) return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_KeyError, "no identity element for this op");
  PyObject *ret = dtype_as_const(v, dt);
  Py_DECREF(v);
  return pool_keep(ret);
}

/* the inputs of a reduction: inp itself, or its strided lanes when it is wider than the output */
static int horizontal_reduce(UOp *inp, DType *out_dtype, UList *lst) {
  if (inp->dtype == out_dtype) return ulist_push(lst, inp);
  if (!out_dtype->count) { PyErr_SetString(PyExc_ZeroDivisionError, "integer division or modulo by zero"); return -1; }   /* a .vec(0) */
  int amount = inp->dtype->count / out_dtype->count;
  for (int i = 0; i < amount; i++) {
    PyObject *lanes = pool_keep(PyTuple_New((inp->dtype->count - i + amount - 1) / amount));
    for (int k = i, j = 0; lanes && k < inp->dtype->count; k += amount, j++) PyTuple_SET_ITEM(lanes, j, PyLong_FromLong(k));
    if (!lanes || ulist_push(lst, u_gep(inp, lanes)) < 0) return -1;
  }
  return 0;
}

static bool in_srcs(UOp *u, UOp *const *xs, int n) {
  for (int i = 0; i < n; i++) if (xs[i] == u) return true;
  return false;
}

/* the RANGEs inp depends on that are neither reduced here nor ended inside inp */
static int input_ranges(UOp *inp, UOp *const *reduce_range, int nred, UList *out) {
  PyObject *topo = pool_keep(uop_toposort_list(inp, NULL));
  if (!topo) return -1;
  UList ended = {0};
  int rc = 0;
  for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(topo); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(topo, i);
    if (x->op == OP_END) for (int k = 1; rc == 0 && k < (int)x->nsrc; k++) rc = ulist_push(&ended, x->src[k]);
  }
  for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(topo); i++) {
    UOp *x = (UOp *)PyList_GET_ITEM(topo, i);
    if (x->op == OP_RANGE && !in_srcs(x, reduce_range, nred) && !in_srcs(x, ended.items, ended.len)) rc = ulist_push(out, x);
  }
  ulist_free(&ended);
  return rc;
}

static UOp *after(UOp *u, UOp *const *rest, int nrest) {
  UOp *src[64];
  if (nrest > 63) { PyErr_SetString(PyExc_ValueError, "AFTER with too many sources"); return NULL; }
  src[0] = u;
  for (int i = 0; i < nrest; i++) src[1 + i] = rest[i];
  return u_new(OP_AFTER, u->dtype, src, 1 + nrest, Py_None);
}
/* buf.index(i) (a value INDEX) and buf.store(v) */
static UOp *index_val(UOp *buf, UOp *i) { UOp *src[2] = {buf, i}; return buf ? u_new(OP_INDEX, dtype_base(buf->dtype), src, 2, Py_None) : NULL; }
static UOp *store(UOp *target, UOp *v) { return store_with(target, v, NULL, 0); }

/* a REDUCE over ranges becomes a register accumulator: initialized before the ranges, updated inside, read after */
RULE(reduce_to_acc, red) {
  UOp *inp = red->src[0], *const *reduce_range = red->src + 1, *ret = NULL;
  int nred = (int)red->nsrc - 1, op = op_from_object(red->arg);
  if (op < 0) return NULL;
  UList lst = {0}, inputs = {0};
  UOp *acc = NULL, *zero = u_const(DTYPE(INT32), n_int(0));
  if (nred) {
    PyObject *num = getattr_literal(ctx, "acc_num");
    acc = num ? u_new(OP_DEFINE_REG, dtype_ptr(red->dtype, 1, ADDRSPACE_REG), NULL, 0, num) : NULL;
    Py_XDECREF(num);
    UOp *identity = u_const(red->dtype, identity_element(op, dtype_scalar(red->dtype)));
    if (!acc || input_ranges(inp, reduce_range, nred, &inputs) < 0) goto end;
    UOp *acc_init = store(index_val(inputs.len ? after(acc, inputs.items, inputs.len) : acc, zero), identity);
    UOp *init_and_ranges[64] = {acc_init};
    if (nred > 63) { PyErr_SetString(PyExc_ValueError, "too many reduce ranges"); goto end; }
    for (int i = 0; i < nred; i++) init_and_ranges[1 + i] = reduce_range[i];
    if (ulist_push(&lst, index_val(after(acc, init_and_ranges, 1 + nred), zero)) < 0) goto end;
    PyObject *next = pool_keep(PyNumber_Add(acc->arg, n_int(1)));
    if (!next || PyObject_SetAttrString(ctx, "acc_num", next) < 0) goto end;
  }
  if (horizontal_reduce(inp, red->dtype, &lst) < 0) goto end;
  if (!lst.len) { PyErr_SetString(PyExc_IndexError, "list index out of range"); goto end; }   /* no lanes to reduce */
  ret = lst.items[0];
  for (int i = 1; i < lst.len; i++) ret = u_alu2((Op)op, ret, lst.items[i]);
  if (nred && ret) {
    UOp *end_src[64] = {store(index_val(acc, zero), ret)};
    for (int i = 0; i < nred; i++) end_src[1 + i] = reduce_range[i];
    ret = index_val(after(acc, &(UOp *){u_new(OP_END, DTYPE(VOID), end_src, 1 + nred, Py_None)}, 1), zero);
  }
end:
  ulist_free(&lst), ulist_free(&inputs);
  return ret;
}

/* a WMMA plus something accumulates it in the WMMA's third source */
RULE(wmma_accumulate, wmma, add) {
  UOp *src[3] = {wmma->src[0], wmma->src[1], u_add(wmma->src[2], add)};
  return u_new(OP_WMMA, wmma->dtype, src, 3, wmma->arg);
}

static const RuleDef pm_reduce_defs[] = {
  R("UPat(Ops.REDUCE, name='red')", reduce_to_acc),
  R("UPat(Ops.WMMA, name='wmma') + UPat.var('add')", wmma_accumulate),
};

/* ---- pm_render ---- */

/* a VECTORIZE of dt from n scalar constants: all v (vals NULL) or vals[i] */
static UOp *vectorize_consts(DType *dt, PyObject *v, PyObject *vals, int n) {
  UList lanes = {0};
  UOp *r = NULL;
  int ok = 0;
  for (int i = 0; i < n && ok == 0; i++) ok = ulist_push(&lanes, u_const(dtype_scalar(dt), vals ? PyTuple_GET_ITEM(vals, i) : v));
  if (ok == 0) r = u_new(OP_VECTORIZE, dt, lanes.items, lanes.len, Py_None);
  ulist_free(&lanes);
  return r;
}

/* a vector CONST is rendered as a VECTORIZE of scalar constants */
RULE(vector_const, c) {
  int n = dtype_vcount(c->dtype);
  return n > 1 ? vectorize_consts(c->dtype, c->arg, NULL, n) : NULL;
}

/* a VCONST is rendered as a VECTORIZE of its constants */
RULE(vconst, c) {
  return vectorize_consts(c->dtype, NULL, c->arg, (int)PyTuple_GET_SIZE(c->arg));
}

/* a GEP of several lanes is a VECTORIZE of one-lane GEPs */
RULE(gep_to_vectorize, gep) {
  UOp *r = NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(gep->arg);
  if (n <= 1) return NULL;
  UList lanes = {0};
  int ok = 0;
  for (Py_ssize_t i = 0; i < n && ok == 0; i++) ok = ulist_push(&lanes, u_gep(gep->src[0], PyTuple_GET_ITEM(gep->arg, i)));
  if (ok == 0) r = u_new(OP_VECTORIZE, gep->dtype, lanes.items, lanes.len, Py_None);
  ulist_free(&lanes);
  return r;
}

/* lane 0 of a scalar is the scalar */
RULE(gep_of_scalar, gep) {
  if (dtype_vcount(gep->src[0]->dtype) != 1 || PyTuple_GET_SIZE(gep->arg) != 1) return NULL;
  int zero = n_eqi(PyTuple_GET_ITEM(gep->arg, 0), 0);
  return zero < 0 ? NULL : zero ? gep->src[0] : NULL;
}

/* a VECTORIZE of one source is that source */
RULE(vectorize_of_one, x) { return x; }

/* a gated LOAD with no alternative value gets 0 as its alternative */
RULE(masked_load_alt, x) {
  if (x->nsrc > 1 && x->src[1]->op != OP_CUSTOM && x->src[1]->op != OP_STORE && x->src[1]->op != OP_BARRIER) return NULL;
  UOp *src[16];
  if (x->nsrc > 15) { PyErr_SetString(PyExc_ValueError, "LOAD with too many sources"); return NULL; }
  src[0] = x->src[0], src[1] = u_const_likei(x, 0);
  for (int i = 1; i < (int)x->nsrc; i++) src[1 + i] = x->src[i];
  return u_replace_src(x, src, (int)x->nsrc + 1);
}

/* a WHERE choosing between a LOAD gated on its own condition and a: a becomes the LOAD's alternative value */
RULE(where_into_load_alt, l, a) {
  UOp *src[16];
  if (l->nsrc > 16) { PyErr_SetString(PyExc_ValueError, "LOAD with too many sources"); return NULL; }
  int n = l->nsrc > 2 ? (int)l->nsrc : 2;
  src[0] = l->src[0], src[1] = u_cast(a, l->dtype);
  for (int i = 2; i < n; i++) src[i] = l->src[i];
  return u_cast(u_replace_src(l, src, n), a->dtype);
}

static const RuleDef pm_render_defs[] = {
  R("UPat(Ops.CONST, name='c')", vector_const),
  R("UPat(Ops.VCONST, name='c')", vconst),
  R("UPat(Ops.GEP, name='gep')", gep_to_vectorize),
  R("UPat(Ops.GEP, name='gep')", gep_of_scalar),
  R("UPat(Ops.VECTORIZE, src=(UPat(name='x'),))", vectorize_of_one),
  R("UPat(Ops.LOAD, src=(UPat(Ops.INDEX, src=(UPat(), UPat(), UPat())).or_casted(),), allow_any_len=True, name='x')", masked_load_alt),
  R("UPat.var('c').where(UPat(Ops.LOAD, src=(UPat().index(UPat.var('idx'), UPat.var('c')).or_casted(),), allow_any_len=True,"
   " name='l').or_casted(), UPat.var('a'))", where_into_load_alt),
  R("UPat.var('c').where(UPat.var('a'), UPat(Ops.LOAD, src=(UPat().index(UPat.var('idx'), UPat.var('c').logical_not()).or_casted(),),"
   " allow_any_len=True, name='l').or_casted())", where_into_load_alt),
};

int tinyc_init_devectorizer(PyObject *m) {
  if (PyType_Ready(&ReduceContext_Type) < 0 || tinyc_add(m, "ReduceContext", (PyObject *)&ReduceContext_Type) < 0) return -1;
  if (native_register("pm_render", pm_from_defs(pm_render_defs, N(pm_render_defs))) < 0) return -1;
  if (native_register("pm_reduce", pm_from_defs(pm_reduce_defs, N(pm_reduce_defs))) < 0) return -1;
  if (native_register("pm_add_loads", pm_from_defs(pm_add_loads_defs, N(pm_add_loads_defs))) < 0 ||
      native_register("load_store_folding", pm_from_defs(load_store_folding_defs, N(load_store_folding_defs))) < 0 ||
      native_register("correct_load_store", pm_from_defs(correct_load_store_defs, N(correct_load_store_defs))) < 0 ||
      native_register("load_store_indexing", pm_from_defs(load_store_indexing_defs, N(load_store_indexing_defs))) < 0)
    return -1;
  return native_register("devectorize", pm_from_defs(devectorize_defs, N(devectorize_defs)));
}
