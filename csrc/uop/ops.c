/* tinygrad/uop/ops.py, the node itself: the UOp type, hash-consing, graph walks (toposort),
 * the content key, pretty printing and pickling. Constructors and sugar are in ops_sugar.c,
 * range analysis and the symbolic helpers in ops_range.c, operators in mixin/math.c. */
#include "uop.h"
#include "form.h"
#include "../helpers/dataclass.h"
#include "../helpers.h"
#include "ops_movement.h"
#include "../mixin/math.h"
#include <dlfcn.h>
#include <structmember.h>

/* ------------------------------------------------------------------------------------------
 * The intern table: every live UOp, found by (op, dtype, src, arg, tag). Open addressing with
 * linear probing and backward-shift deletion, so a dead node leaves no tombstone and the table
 * shrinks back when the graph is dropped. Entries are node pointers; a node carries its hash.
 * ------------------------------------------------------------------------------------------ */

static UOp **table;
static size_t table_cap, table_len;
static uint64_t table_version;    /* bumped on every insert/delete: detects re-entrant changes */
#define TABLE_MIN_CAP 16384   /* 128 KiB: a kernel's graphs come and go without growing and shrinking the table each time */

Py_ssize_t uop_intern_count(void) { return (Py_ssize_t)table_len; }


static inline uint64_t mix_hash(uint64_t h, uint64_t v) {
  /* one round of xxHash64's accumulate step: cheap, and good enough to spread pointers */
  h += v * 0xC2B2AE3D27D4EB4FULL;
  h = (h << 31) | (h >> 33);
  return h * 0x9E3779B185EBCA87ULL;
}

static int table_resize(size_t cap) {
  UOp **fresh = PyMem_Calloc(cap, sizeof(UOp *));
  if (!fresh) { PyErr_NoMemory(); return -1; }
  for (size_t i = 0; i < table_cap; i++) {
    UOp *u = table[i];
    if (!u) continue;
    size_t j = u->hash & (cap - 1);
    while (fresh[j]) j = (j + 1) & (cap - 1);
    fresh[j] = u;
  }
  PyMem_Free(table);
  table = fresh, table_cap = cap;
  table_version++;
  return 0;
}

static void table_remove(UOp *u) {
  size_t mask = table_cap - 1, i = u->hash & mask;
  while (table[i] != u) {
    if (!table[i]) return;  /* not interned (construction failed half way) */
    i = (i + 1) & mask;
  }
  /* backward shift: pull later entries of the probe run into the hole when their home allows */
  for (size_t k = (i + 1) & mask; table[k]; k = (k + 1) & mask) {
    size_t home = table[k]->hash & mask;
    if (((k - home) & mask) >= ((k - i) & mask)) table[i] = table[k], i = k;
  }
  table[i] = NULL;
  table_len--, table_version++;
  if (table_cap > TABLE_MIN_CAP && table_len * 8 < table_cap) {
    UOp **old = table;
    size_t old_cap = table_cap;
    if (table_resize(table_cap / 2) < 0) { PyErr_Clear(); table = old, table_cap = old_cap; }
  }
}

/* Python equality as a dict key compares, identity first. May run Python code (user __eq__). */
static int key_equal(PyObject *a, PyObject *b) {
  if (a == b) return 1;
  if (Py_TYPE(a) != Py_TYPE(b) && !(PyNumber_Check(a) && PyNumber_Check(b))) return 0;
  return compare_bool(a, b, Py_EQ);
}

/* 1 when u is the node (op, dtype, src, arg, tag); 0 not; -1 error. */
static int node_equal(UOp *u, Op op, DType *dtype, UOp *const *src, Py_ssize_t nsrc, PyObject *arg, PyObject *tag) {
  if (u->op != op || u->dtype != dtype || u->nsrc != nsrc) return 0;
  for (Py_ssize_t i = 0; i < nsrc; i++)
    if (u->src[i] != src[i]) return 0;
  int eq = key_equal(u->arg, arg);
  if (eq != 1) return eq;
  return key_equal(uop_tag(u), tag);
}

static int node_hash(Op op, DType *dtype, UOp *const *src, Py_ssize_t nsrc, PyObject *arg, PyObject *tag, uint32_t *out) {
  Py_hash_t harg = arg == Py_None ? 0 : PyObject_Hash(arg), htag = tag == Py_None ? 0 : PyObject_Hash(tag);   /* most args: None */
  if (harg == -1 || htag == -1) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "UOp %s must be hashable, got unhashable %.100s", harg == -1 ? "arg" : "tag",
                   Py_TYPE(harg == -1 ? arg : tag)->tp_name);
    }
    return -1;
  }
  uint64_t h = mix_hash((uint64_t)op, (uint64_t)(uintptr_t)dtype);
  for (Py_ssize_t i = 0; i < nsrc; i++) h = mix_hash(h, (uint64_t)(uintptr_t)src[i]);
  h = mix_hash(mix_hash(h, (uint64_t)harg), (uint64_t)htag);
  h ^= h >> 33, h *= 0xC2B2AE3D27D4EB4FULL, h ^= h >> 29, h *= 0x165667B19E3779F9ULL, h ^= h >> 32;   /* xxHash64's avalanche */
  *out = (uint32_t)h;
  return 0;
}

static bool same_structure(UOp *u, uint32_t hash, Op op, DType *dtype, UOp *const *src, Py_ssize_t nsrc) {
  if (u->hash != hash || u->op != op || u->dtype != dtype || u->nsrc != nsrc) return false;
  for (Py_ssize_t i = 0; i < nsrc; i++)
    if (u->src[i] != src[i]) return false;
  return true;
}

static bool in_vec(PtrVec *v, void *p) {
  for (Py_ssize_t i = 0; i < v->len; i++)
    if (v->items[i] == p) return true;
  return false;
}

/* The slow path, once an arg comparison (a user __eq__) changed the table: collect the candidates of
 * the probe run without running Python code, then compare those not compared yet; repeat until a
 * probe finds nothing new and the table did not change meanwhile. Restarting the whole probe on any
 * change instead would never finish if every __eq__ made a node. */
static UOp *table_find_slow(uint32_t hash, Op op, DType *dtype, UOp *const *src, Py_ssize_t nsrc, PyObject *arg,
                            PyObject *tag, size_t *slot, uint64_t *slot_version, UOp *compared) {
  PtrVec seen = {0}, fresh = {0};
  UOp *ret = NULL;
  Py_INCREF(compared);
  if (ptrvec_push(&seen, compared) < 0) { Py_DECREF(compared); return NULL; }
  for (;;) {
    uint64_t version = table_version;
    size_t mask = table_cap - 1, i = hash & mask;
    fresh.len = 0;
    for (; table[i]; i = (i + 1) & mask)
      if (same_structure(table[i], hash, op, dtype, src, nsrc) && !in_vec(&seen, table[i]) && ptrvec_push(&fresh, table[i]) < 0) goto end;
    if (!fresh.len && version == table_version) { *slot = i, *slot_version = version; break; }
    for (Py_ssize_t k = 0; k < fresh.len; k++) {
      UOp *u = (UOp *)Py_NewRef(fresh.items[k]);
      if (ptrvec_push(&seen, u) < 0) { Py_DECREF(u); goto end; }
      int eq = key_equal(u->arg, arg);
      if (eq == 1) eq = key_equal(uop_tag(u), tag);
      if (eq < 0) goto end;
      if (eq == 1) { ret = (UOp *)Py_NewRef(u); goto end; }
    }
  }
end:
  for (Py_ssize_t k = 0; k < seen.len; k++) Py_DECREF((PyObject *)seen.items[k]);
  ptrvec_free(&seen); ptrvec_free(&fresh);
  return ret;
}

/* Find the live node, or the empty slot where it belongs. Returns a new ref, or NULL with *slot set
 * (or with an exception when comparing raised). The slot is good while table_version == *slot_version:
 * releasing the compared nodes at the end may free one and shift the table. */
static UOp *table_find(uint32_t hash, Op op, DType *dtype, UOp *const *src, Py_ssize_t nsrc, PyObject *arg,
                       PyObject *tag, size_t *slot, uint64_t *slot_version) {
  uint64_t version = table_version;
  size_t mask = table_cap - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    UOp *u = table[i];
    if (!u) { *slot = i, *slot_version = version; return NULL; }
    if (u->hash != hash) continue;
    Py_INCREF(u);
    int eq = node_equal(u, op, dtype, src, nsrc, arg, tag);
    if (eq == 1) return u;
    bool changed = version != table_version;
    UOp *ret = eq == 0 && changed ? table_find_slow(hash, op, dtype, src, nsrc, arg, tag, slot, slot_version, u) : NULL;
    Py_DECREF(u);
    if (eq < 0 || changed) return ret;
  }
}

/* ------------------------------------------------------------------------------------------
 * Construction and destruction
 * ------------------------------------------------------------------------------------------ */

UOpExtra *uop_extra(UOp *u) {
  if (!u->extra && !(u->extra = PyMem_Calloc(1, sizeof(UOpExtra)))) PyErr_NoMemory();
  return u->extra;
}

static UOp *alloc_node(uint32_t hash, Op op, DType *dtype, UOp *const *src, Py_ssize_t nsrc, PyObject *arg, PyObject *tag) {
  UOp *u = PyObject_Malloc(sizeof(UOp) + (size_t)nsrc * sizeof(UOp *));
  if (!u) return (UOp *)PyErr_NoMemory();
  PyObject_Init((PyObject *)u, &UOp_Type);
  u->op = op, u->flags = op == OP_DEVICE || op == OP_BUFFERIZE ? UOP_FLAG_HAS_DEVICE : 0;   /* BUFFERIZE: arg.device */
  if (!uop_form_ok(op, nsrc, arg)) u->flags |= UOP_FLAG_MALFORMED;
  u->nsrc = (uint32_t)nsrc, u->hash = hash, u->dtype = dtype, u->extra = NULL, u->rw_id = 0, u->rw_idx = 0;
  u->ops_below = op_bit(op);
  Py_INCREF(arg);
  u->arg = arg;
  for (Py_ssize_t i = 0; i < nsrc; i++) {
    Py_INCREF(src[i]);
    u->src[i] = src[i];
    u->flags |= src[i]->flags & (UOP_FLAG_HAS_DEVICE | UOP_FLAG_MALFORMED);
    u->ops_below |= src[i]->ops_below;
  }
  if (tag != Py_None) {
    if (!uop_extra(u)) { Py_DECREF(u); return NULL; }
    Py_INCREF(tag);
    u->extra->tag = tag;
  }
  return u;
}

UOp *uop_new(Op op, DType *dtype, UOp *const *src, Py_ssize_t nsrc, PyObject *arg, PyObject *tag) {
  if (!arg) arg = Py_None;
  if (!tag) tag = Py_None;
  if (nsrc > UOP_MAX_SRC) return (UOp *)PyErr_Format(PyExc_ValueError, "a UOp has at most %d sources", UOP_MAX_SRC);
  uint32_t hash;
  if (node_hash(op, dtype, src, nsrc, arg, tag, &hash) < 0) return NULL;
  size_t slot = 0;
  uint64_t slot_version = 0;
  do {
    UOp *found = table_find(hash, op, dtype, src, nsrc, arg, tag, &slot, &slot_version);
    if (found || PyErr_Occurred()) return found;
  } while (slot_version != table_version);
  UOp *u = alloc_node(hash, op, dtype, src, nsrc, arg, tag);
  if (!u) return NULL;
  if ((table_len + 1) * 4 > table_cap * 3) {   /* keep the load under 3/4 */
    if (table_resize(table_cap * 2) < 0) { Py_DECREF(u); return NULL; }
    size_t mask = table_cap - 1;
    for (slot = hash & mask; table[slot]; slot = (slot + 1) & mask) {}
  }
  table[slot] = u;
  table_len++, table_version++;
  return u;
}

UOp *uop_new0(Op op, DType *dtype, PyObject *arg) { return uop_new(op, dtype, NULL, 0, arg, NULL); }
UOp *uop_new1(Op op, DType *dtype, UOp *a, PyObject *arg) { return uop_new(op, dtype, &a, 1, arg, NULL); }
UOp *uop_new2(Op op, DType *dtype, UOp *a, UOp *b, PyObject *arg) {
  UOp *src[2] = {a, b};
  return uop_new(op, dtype, src, 2, arg, NULL);
}
UOp *uop_new3(Op op, DType *dtype, UOp *a, UOp *b, UOp *c, PyObject *arg) {
  UOp *src[3] = {a, b, c};
  return uop_new(op, dtype, src, 3, arg, NULL);
}

UOp *uop_append_src(UOp *u, UOp *extra, PyObject *arg) {
  if (!extra) return NULL;
  UOp *small[8], **src = u->nsrc < 8 ? small : PyMem_Malloc(sizeof(UOp *) * (u->nsrc + 1));
  if (!src) return (UOp *)PyErr_NoMemory();
  memcpy(src, u->src, sizeof(UOp *) * u->nsrc);
  src[u->nsrc] = extra;
  UOp *ret = uop_new(u->op, u->dtype, src, u->nsrc + 1, arg ? arg : u->arg, uop_tag(u));
  if (src != small) PyMem_Free(src);
  return ret;
}

/* Freeing a long chain node by node would recurse once per node and overflow the C stack, so
 * dead nodes queue on a list (linked through their `extra` field) and one loop frees them. */
static UOp *dealloc_queue;
static bool dealloc_running;

static void free_extra(UOp *u) {
  UOpExtra *e = u->extra;
  if (!e) return;
  u->extra = NULL;
  Py_XDECREF(e->tag); Py_XDECREF(e->vmin); Py_XDECREF(e->vmax); Py_XDECREF(e->key); Py_XDECREF(e->bslice);
  PyMem_Free(e);
}

static void uop_dealloc(UOp *u) {
  table_remove(u);
  free_extra(u);
  u->extra = (UOpExtra *)dealloc_queue;
  dealloc_queue = u;
  if (dealloc_running) return;
  dealloc_running = true;
  while ((u = dealloc_queue)) {
    dealloc_queue = (UOp *)u->extra;
    for (int i = 0; i < u->nsrc; i++) Py_DECREF(u->src[i]);
    Py_DECREF(u->arg);
    PyObject_Free(u);
  }
  dealloc_running = false;
}

/* ------------------------------------------------------------------------------------------
 * Graph walks
 * ------------------------------------------------------------------------------------------ */

/* tinygrad's toposort: a DFS with (node, visited) stack entries, children pushed in reverse so the
 * first source is finished first. `gate` (a Python callable or NULL) stops the walk at nodes it
 * rejects. Appends to out in finishing order. */
static int toposort_into(UOp *root, PyObject *gate, PtrVec *out) {
  /* Without a gate no Python code runs during the walk, so a bit in each node marks it done (cleared
   * after); a gate may start another walk, so gated walks keep their own map. */
  PtrVec stack = {0};
  PtrMap done = {0};
  Py_ssize_t first = out->len;
  int rc = -1;
  if (ptrvec_push(&stack, root) < 0) goto end;
  while (stack.len) {
    uintptr_t entry = (uintptr_t)ptrvec_pop(&stack);
    UOp *node = (UOp *)(entry & ~(uintptr_t)1);
    if (gate ? ptrmap_has(&done, node) : (node->flags & UOP_FLAG_VISITED)) continue;
    if (entry & 1) {   /* second visit: all sources are done */
      if (ptrvec_push(out, node) < 0 || (gate && ptrmap_set(&done, node, node) < 0)) goto end;
      node->flags |= gate ? 0 : UOP_FLAG_VISITED;
      continue;
    }
    if (gate) {
      PyObject *ok = PyObject_CallOneArg(gate, (PyObject *)node);
      int truth = ok ? PyObject_IsTrue(ok) : -1;
      Py_XDECREF(ok);
      if (truth < 0) goto end;
      if (!truth) continue;
    }
    if (ptrvec_push(&stack, (void *)((uintptr_t)node | 1)) < 0) goto end;
    for (int i = node->nsrc - 1; i >= 0; i--) {   /* a source already done would be skipped when popped */
      UOp *s = node->src[i];
      if (gate ? ptrmap_has(&done, s) : (s->flags & UOP_FLAG_VISITED)) continue;
      if (ptrvec_push(&stack, s) < 0) goto end;
    }
  }
  rc = 0;
end:
  for (Py_ssize_t i = first; i < out->len; i++) ((UOp *)out->items[i])->flags &= ~UOP_FLAG_VISITED & 7u;
  ptrvec_free(&stack);
  ptrmap_free(&done);
  return rc;
}

PyObject *uop_toposort_list(UOp *root, PyObject *gate) {
  PtrVec order = {0};
  PyObject *ret = NULL;
  if (toposort_into(root, gate, &order) == 0 && (ret = PyList_New(order.len)))
    for (Py_ssize_t i = 0; i < order.len; i++) PyList_SET_ITEM(ret, i, Py_NewRef(order.items[i]));
  ptrvec_free(&order);
  return ret;
}

static PyObject *new_dict(Py_ssize_t size) {
#if PY_VERSION_HEX < 0x030D0000
  return _PyDict_NewPresized(size);   /* no rehashing while filling a big one */
#else
  UNUSED(size);
  return PyDict_New();
#endif
}

/* backward_slice: every node below u in toposort order, u excluded; cached per node as tinygrad's
 * cached_property is (the graph below a node never changes). Borrowed reference. */
static PyObject *backward_slice(UOp *u) {
  if (u->extra && u->extra->bslice) return u->extra->bslice;
  PtrVec order = {0};
  PyObject *d = NULL;
  if (toposort_into(u, NULL, &order) == 0 && (d = new_dict(order.len))) {
    for (Py_ssize_t i = 0; i < order.len - 1; i++)   /* the last one finished is u itself */
      if (PyDict_SetItem(d, order.items[i], Py_None) < 0) { Py_CLEAR(d); break; }
  }
  ptrvec_free(&order);
  if (d && !uop_extra(u)) Py_CLEAR(d);
  if (d) u->extra->bslice = d;
  return d;
}

PyObject *uop_backward_slice(UOp *u) { return backward_slice(u); }

static PyObject *UOp_toposort(UOp *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"gate", NULL};
  PyObject *gate = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:toposort", kwlist, &gate)) return NULL;
  PyObject *ret = NULL;
  if (gate == Py_None) {   /* the cached slice, then self last */
    PyObject *slice = backward_slice(self);
    if (slice && (ret = PyDict_Copy(slice)) && PyDict_SetItem(ret, (PyObject *)self, Py_None) < 0) Py_CLEAR(ret);
    return ret;
  }
  PtrVec order = {0};
  if (toposort_into(self, gate, &order) == 0 && (ret = new_dict(order.len)))
    for (Py_ssize_t i = 0; i < order.len; i++)
      if (PyDict_SetItem(ret, order.items[i], Py_None) < 0) { Py_CLEAR(ret); break; }
  ptrvec_free(&order);
  return ret;
}

static PyObject *UOp_backward_slice(UOp *self, void *closure) {
  UNUSED(closure);
  return Py_XNewRef(backward_slice(self));
}

static PyObject *UOp_backward_slice_with_self(UOp *self, void *closure) {
  UNUSED(closure);
  /* tinygrad puts self first here: {self:None, **self.backward_slice} */
  PyObject *slice = backward_slice(self), *ret = slice ? new_dict(PyDict_GET_SIZE(slice) + 1) : NULL;
  if (ret && (PyDict_SetItem(ret, (PyObject *)self, Py_None) < 0 || PyDict_Update(ret, slice) < 0)) Py_CLEAR(ret);
  return ret;
}

static PyObject *UOp_op_in_backward_slice_with_self(UOp *self, PyObject *args) {
  OpSet want = {{0, 0}};
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
    int op = op_from_object(PyTuple_GET_ITEM(args, i));
    if (op < 0) return NULL;
    opset_add(&want, op);
  }
  PtrVec order = {0};
  if (toposort_into(self, NULL, &order) < 0) return NULL;
  bool found = false;
  for (Py_ssize_t i = 0; i < order.len && !found; i++) found = opset_has(want, ((UOp *)order.items[i])->op);
  ptrvec_free(&order);
  return PyBool_FromLong(found);
}

static PyObject *UOp_get_consumer_map(UOp *self, PyObject *unused) {
  UNUSED(unused);
  PtrVec order = {0};
  if (toposort_into(self, NULL, &order) < 0) return NULL;
  PyObject *ret = PyDict_New();
  for (Py_ssize_t i = 0; ret && i < order.len; i++) {
    UOp *u = order.items[i];
    PyObject *consumers = PyDict_New();
    if (!consumers || PyDict_SetItem(ret, (PyObject *)u, consumers) < 0) { Py_XDECREF(consumers); Py_CLEAR(ret); break; }
    Py_DECREF(consumers);
    for (int s = 0; s < u->nsrc; s++)
      if (PyDict_SetItem(PyDict_GetItem(ret, (PyObject *)u->src[s]), (PyObject *)u, Py_None) < 0) { Py_CLEAR(ret); break; }
  }
  ptrvec_free(&order);
  return ret;
}

/* ------------------------------------------------------------------------------------------
 * key: sha256(str((op, dtype, arg)).encode() + b"".join(src keys)), as tinygrad, so the key is the
 * same in every process (and equal to tinygrad's for the same graph). The hash is hashlib's.
 * ------------------------------------------------------------------------------------------ */

/* SHA-256 comes from OpenSSL's libcrypto, which CPython's hashlib has already loaded. Its low-level
 * SHA256_Init/Update/Final skip the algorithm fetch and context allocation that hashlib.sha256 (and
 * OpenSSL 3's one-shot SHA256()) pay on every call. Without libcrypto, hashlib is used. */
typedef struct { unsigned char opaque[256]; } Sha256Ctx;   /* larger than OpenSSL's SHA256_CTX (112 bytes) */
static int (*sha256_init)(Sha256Ctx *);
static int (*sha256_update)(Sha256Ctx *, const void *, size_t);
static int (*sha256_final)(unsigned char *, Sha256Ctx *);
static PyObject *hashlib_sha256;

static void find_libcrypto(void) {
  static const char *const names[] = {"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !sha256_final; i++) {
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
    if (!lib && !(lib = dlopen(names[i], RTLD_NOW))) continue;
    *(void **)&sha256_init = dlsym(lib, "SHA256_Init");
    *(void **)&sha256_update = dlsym(lib, "SHA256_Update");
    *(void **)&sha256_final = dlsym(lib, "SHA256_Final");
    if (!sha256_init || !sha256_update) sha256_final = NULL;
  }
}

static PyObject *sha256_digest(const char *data, Py_ssize_t len) {
  if (sha256_final) {
    Sha256Ctx ctx;
    unsigned char out[32];
    sha256_init(&ctx);
    sha256_update(&ctx, data, (size_t)len);
    sha256_final(out, &ctx);
    return PyBytes_FromStringAndSize((const char *)out, 32);
  }
  PyObject *bytes = PyBytes_FromStringAndSize(data, len), *hasher = bytes ? PyObject_CallOneArg(hashlib_sha256, bytes) : NULL;
  PyObject *digest = hasher ? PyObject_CallMethod(hasher, "digest", NULL) : NULL;
  Py_XDECREF(bytes); Py_XDECREF(hasher);
  return digest;
}

static PyObject *compute_key(UOp *u) {
  /* str((op, dtype, arg)), written out: the tuple's str is the reprs of its items */
  PyObject *text = PyUnicode_FromFormat("(%U, %R, %R)", ops_str[u->op], (PyObject *)u->dtype, u->arg), *digest = NULL;
  Py_ssize_t len;
  const char *utf8 = text ? PyUnicode_AsUTF8AndSize(text, &len) : NULL;
  if (!utf8) goto end;
  size_t total = (size_t)len + 32 * (size_t)u->nsrc;
  char stack_buf[512], *buf = total <= sizeof(stack_buf) ? stack_buf : PyMem_Malloc(total);
  if (!buf) { PyErr_NoMemory(); goto end; }
  memcpy(buf, utf8, (size_t)len);
  for (int i = 0; i < u->nsrc; i++) memcpy(buf + len + 32 * i, PyBytes_AS_STRING(u->src[i]->extra->key), 32);
  digest = sha256_digest(buf, (Py_ssize_t)total);
  if (buf != stack_buf) PyMem_Free(buf);
end:
  Py_XDECREF(text);
  return digest;
}

static PyObject *UOp_key(UOp *self, void *closure) {
  UNUSED(closure);
  if (self->extra && self->extra->key) return Py_NewRef(self->extra->key);
  PtrVec order = {0};
  if (toposort_into(self, NULL, &order) < 0) return NULL;
  for (Py_ssize_t i = 0; i < order.len; i++) {
    UOp *u = order.items[i];
    if (u->extra && u->extra->key) continue;
    PyObject *key = compute_key(u);
    if (!key || !uop_extra(u)) { Py_XDECREF(key); ptrvec_free(&order); return NULL; }
    u->extra->key = key;
  }
  ptrvec_free(&order);
  return Py_NewRef(self->extra->key);
}

/* ------------------------------------------------------------------------------------------
 * tuplize order: tinygrad's `a.tuplize < b.tuplize`, tuplize being (op value, arg, dtype, *source
 * tuplizes) compared as Python compares tuples: the first element that is not == decides with <,
 * else the shorter is less. The first difference decides at whatever depth it lies, so the walk goes
 * depth first over pairs of sources and stops there; pairs found equal are remembered (shared
 * subgraphs). Used by the commutative rule and the linearizer's tie break.
 * ------------------------------------------------------------------------------------------ */

int py_value_order(PyObject *a, PyObject *b) {
  if (a == b) return ORD_EQUAL;   /* identity first, as PyObject_RichCompareBool (a NaN equals itself) */
  /* the common cases without Python's protocol: two ints that fit a long long, two floats (a NaN is
   * neither equal nor less, as Python answers) */
  if (PyLong_CheckExact(a) && PyLong_CheckExact(b)) {
    int oa, ob;
    long long x = PyLong_AsLongLongAndOverflow(a, &oa), y = PyLong_AsLongLongAndOverflow(b, &ob);
    if (!oa && !ob) return x == y ? ORD_EQUAL : x < y ? ORD_LESS : ORD_NOT_LESS;
    PyErr_Clear();
  } else if (PyFloat_CheckExact(a) && PyFloat_CheckExact(b)) {
    double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
    return x == y ? ORD_EQUAL : x < y ? ORD_LESS : ORD_NOT_LESS;
  }
  int eq = PyObject_RichCompareBool(a, b, Py_EQ);
  if (eq) return eq < 0 ? -1 : ORD_EQUAL;
  int lt = PyObject_RichCompareBool(a, b, Py_LT);
  return lt < 0 ? -1 : lt ? ORD_LESS : ORD_NOT_LESS;
}

/* the order of the (op, arg, dtype) heads of two nodes */
static int head_order(UOp *a, UOp *b) {
  if (a->op != b->op) return a->op < b->op ? ORD_LESS : ORD_NOT_LESS;
  int r = py_value_order(a->arg, b->arg);
  if (r != ORD_EQUAL || a->dtype == b->dtype) return r;   /* dtypes are equal only when identical */
  int lt = PyObject_RichCompareBool((PyObject *)a->dtype, (PyObject *)b->dtype, Py_LT);
  return lt < 0 ? -1 : lt ? ORD_LESS : ORD_NOT_LESS;
}

int uop_head_order(UOp *a, UOp *b) { return head_order(a, b); }

typedef struct { UOp *a, *b; int next; } PairFrame;

/* pairs found equal: a few inline, then a map */
typedef struct { UOp *a[8], *b[8]; int n; PtrMap map; } EqualPairs;
static bool equal_pairs_has(const EqualPairs *e, UOp *a, UOp *b) {
  for (int i = 0; i < e->n; i++)
    if (e->a[i] == a) return e->b[i] == b;
  return e->map.len && ptrmap_get(&e->map, a) == b;
}
static int equal_pairs_add(EqualPairs *e, UOp *a, UOp *b) {
  if (e->n < 8) { e->a[e->n] = a, e->b[e->n] = b, e->n++; return 0; }
  return ptrmap_set(&e->map, a, b);
}

int uop_tuplize_order(UOp *a, UOp *b) {
  if (a == b) return ORD_EQUAL;
  int r = head_order(a, b);
  if (r != ORD_EQUAL) return r;
  PairFrame small[64], *stack = small;
  Py_ssize_t len = 0, cap = 64;
  EqualPairs equal;   /* a -> b for pairs whose tuplizes are equal */
  equal.n = 0, equal.map = (PtrMap){0};
  stack[len++] = (PairFrame){a, b, 0};
  while (len && r == ORD_EQUAL) {
    PairFrame *f = &stack[len - 1];
    int common = f->a->nsrc < f->b->nsrc ? f->a->nsrc : f->b->nsrc;
    if (f->next == common) {   /* every common source equal: the shorter is less */
      if (f->a->nsrc != f->b->nsrc) r = f->a->nsrc < f->b->nsrc ? ORD_LESS : ORD_NOT_LESS;
      else if (equal_pairs_add(&equal, f->a, f->b) < 0) r = -1;
      len--;
      continue;
    }
    UOp *x = f->a->src[f->next], *y = f->b->src[f->next];
    f->next++;
    if (x == y || equal_pairs_has(&equal, x, y)) continue;
    if ((r = head_order(x, y)) != ORD_EQUAL) break;
    if (len == cap) {
      PairFrame *grown = stack == small ? PyMem_Malloc(sizeof(PairFrame) * (size_t)(cap * 2))
                                        : PyMem_Realloc(stack, sizeof(PairFrame) * (size_t)(cap * 2));
      if (!grown) { PyErr_NoMemory(); r = -1; break; }
      if (stack == small) memcpy(grown, small, sizeof(small));
      stack = grown, cap *= 2;
    }
    stack[len++] = (PairFrame){x, y, 0};
  }
  if (stack != small) PyMem_Free(stack);
  ptrmap_free(&equal.map);
  return r;
}

/* ------------------------------------------------------------------------------------------
 * repr: tinygrad's pretty_print. Shared nodes are numbered in a first pass (preorder over sources,
 * x<N>:= at the first print, xN after), then printed with two spaces of indent per level.
 * ------------------------------------------------------------------------------------------ */

typedef struct { Py_ssize_t id, uses; bool printed; } PrintInfo;
typedef struct { PtrMap info; PyObject *parts; PrintInfo *pool; Py_ssize_t npool, cap; } Printer;

static PrintInfo *printer_info(Printer *p, UOp *u) {
  PrintInfo *pi = ptrmap_get(&p->info, u);
  if (pi) return pi;
  if (p->npool == p->cap) return NULL;   /* pool sized to the graph, never reached */
  pi = &p->pool[p->npool++];
  pi->id = (Py_ssize_t)p->info.len, pi->uses = 0, pi->printed = false;
  return ptrmap_set(&p->info, u, pi) < 0 ? NULL : pi;
}

/* tinygrad's dfs: number each source when first met, count every use, descend on the first use. */
static int printer_number(Printer *p, UOp *root) {
  typedef struct { UOp *u; int next; } Frame;
  Frame *stack = PyMem_Malloc(sizeof(Frame) * (size_t)(p->cap + 1));
  if (!stack) { PyErr_NoMemory(); return -1; }
  Py_ssize_t depth = 0;
  stack[depth++] = (Frame){root, 0};
  while (depth) {
    Frame *f = &stack[depth - 1];
    if (f->next == f->u->nsrc) { depth--; continue; }
    UOp *s = f->u->src[f->next++];
    PrintInfo *pi = printer_info(p, s);
    if (!pi) { PyMem_Free(stack); if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "repr: graph walk"); return -1; }
    if (++pi->uses == 1) stack[depth++] = (Frame){s, 0};
  }
  PyMem_Free(stack);
  return 0;
}

static int append_str(PyObject *parts, PyObject *s) {
  if (!s) return -1;
  int rc = PyList_Append(parts, s);
  Py_DECREF(s);
  return rc;
}

static PyObject *uop_argstr(UOp *u) {
  if (u->op != OP_REDUCE_AXIS || !PyTuple_Check(u->arg)) return PyObject_Repr(u->arg);
  /* f'({", ".join(map(str, self.arg))})' */
  PyObject *strs = PyList_New(0), *joined = NULL, *sep = PyUnicode_FromString(", ");
  for (Py_ssize_t i = 0; strs && sep && i < PyTuple_GET_SIZE(u->arg); i++)
    if (append_str(strs, PyObject_Str(PyTuple_GET_ITEM(u->arg, i))) < 0) Py_CLEAR(strs);
  if (strs && sep) joined = PyUnicode_Join(sep, strs);
  PyObject *ret = joined ? PyUnicode_FromFormat("(%U)", joined) : NULL;
  Py_XDECREF(strs); Py_XDECREF(sep); Py_XDECREF(joined);
  return ret;
}

static PyObject *uop_tagstr(UOp *u) {
  PyObject *tag = uop_tag(u);
  return tag == Py_None ? PyUnicode_FromString("") : PyUnicode_FromFormat(", tag=%S", tag);
}

static PyObject *spaces(int n) {
  PyObject *s = PyUnicode_New(n, 127);
  if (s) for (int i = 0; i < n; i++) PyUnicode_WRITE(PyUnicode_1BYTE_KIND, PyUnicode_DATA(s), i, ' ');
  return s;
}

static int printer_print(Printer *p, UOp *u, int indent) {
  PrintInfo *pi = printer_info(p, u);
  PyObject *pad = pi ? spaces(indent) : NULL;
  if (!pad) return -1;
  if (pi->printed) {
    int rc = append_str(p->parts, PyUnicode_FromFormat("%Ux%zd", pad, pi->id));
    Py_DECREF(pad);
    return rc;
  }
  pi->printed = true;
  if (Py_EnterRecursiveCall(" while printing a UOp")) { Py_DECREF(pad); return -1; }
  PyObject *argstr = uop_argstr(u), *tagstr = uop_tagstr(u), *name = NULL;
  int rc = -1;
  if (!argstr || !tagstr) goto end;
  name = pi->uses > 1 ? PyUnicode_FromFormat("x%zd:=", pi->id) : PyUnicode_FromString("");
  if (!name || append_str(p->parts, PyUnicode_FromFormat("%U%UUOp(%U, %R, arg=%U%U, src=(", pad, name, ops_str[u->op],
                                                         (PyObject *)u->dtype, argstr, tagstr)) < 0) goto end;
  for (int i = 0; i < u->nsrc; i++) {
    if (append_str(p->parts, PyUnicode_FromString("\n")) < 0 || printer_print(p, u->src[i], indent + 2) < 0 ||
        append_str(p->parts, PyUnicode_FromString(",")) < 0) goto end;
  }
  rc = append_str(p->parts, PyUnicode_FromString("))"));
end:
  Py_LeaveRecursiveCall();
  Py_XDECREF(argstr); Py_XDECREF(tagstr); Py_XDECREF(name); Py_DECREF(pad);
  return rc;
}

static PyObject *UOp_repr(UOp *self) {
  PtrVec order = {0};
  if (toposort_into(self, NULL, &order) < 0) return NULL;
  Printer p = {.cap = order.len + 1};
  ptrvec_free(&order);
  PyObject *ret = NULL, *empty = NULL;
  p.pool = PyMem_Calloc((size_t)p.cap, sizeof(PrintInfo));
  if (!p.pool) { PyErr_NoMemory(); goto end; }
  if (!(p.parts = PyList_New(0)) || printer_number(&p, self) < 0) goto end;
  /* the root is registered last, so it may share the id of the first source, as in tinygrad */
  if (!printer_info(&p, self)) goto end;
  if (printer_print(&p, self, 0) < 0 || !(empty = PyUnicode_FromString(""))) goto end;
  ret = PyUnicode_Join(empty, p.parts);
end:
  Py_XDECREF(empty); Py_XDECREF(p.parts);
  PyMem_Free(p.pool);
  ptrmap_free(&p.info);
  return ret;
}

/* ------------------------------------------------------------------------------------------
 * The Python type: construction, attributes, replace, pickling
 * ------------------------------------------------------------------------------------------ */

/* Parse a src argument (tuple or list of UOps) into a borrowed C array; returns the length or -1. */
static Py_ssize_t parse_src(PyObject *src, UOp ***out, PyObject **seq_out) {
  if (PyTuple_CheckExact(src)) Py_INCREF(src);
  PyObject *seq = PyTuple_CheckExact(src) ? src : PySequence_Fast(src, "UOp src must be a tuple of UOps");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject **items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!UOp_Check(items[i])) {
      PyErr_Format(PyExc_TypeError, "UOp src[%zd] must be a UOp, not %.100s", i, Py_TYPE(items[i])->tp_name);
      Py_DECREF(seq);
      return -1;
    }
  }
  *out = (UOp **)items, *seq_out = seq;
  return n;
}

static DType *parse_dtype(PyObject *o) {
  if (DType_Check(o)) return (DType *)o;
  PyErr_Format(PyExc_TypeError, "UOp dtype must be a DType, not %.100s", Py_TYPE(o)->tp_name);
  return NULL;
}

/* UOp(op, dtype=dtypes.void, src=(), arg=None, tag=None): the existing node when one is alive. */
static UOp *uop_from_python(PyObject *op_obj, PyObject *dtype_obj, PyObject *src_obj, PyObject *arg, PyObject *tag) {
  int op = op_from_object(op_obj);
  if (op < 0) return NULL;
  DType *dtype = dtype_obj ? parse_dtype(dtype_obj) : DTYPE(VOID);
  if (!dtype) return NULL;
  UOp **src = NULL;
  PyObject *seq = NULL;
  Py_ssize_t nsrc = 0;
  if (src_obj && (nsrc = parse_src(src_obj, &src, &seq)) < 0) return NULL;
  UOp *ret = uop_new(op, dtype, src, nsrc, arg, tag);
  Py_XDECREF(seq);
  return ret;
}

static PyObject *UOp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  UNUSED(type);
  static char *kwlist[] = {"op", "dtype", "src", "arg", "tag", "metadata", NULL};
  PyObject *op, *dtype = NULL, *src = NULL, *arg = Py_None, *tag = Py_None, *metadata = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOOOO:UOp", kwlist, &op, &dtype, &src, &arg, &tag, &metadata)) return NULL;
  return (PyObject *)uop_from_python(op, dtype, src, arg, tag);
}

/* UOp(...) without building an argument tuple: node creation is the hottest call there is. */
static PyObject *UOp_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  static const char *const names[] = {"op", "dtype", "src", "arg", "tag", "metadata"};
  PyObject *v[6] = {NULL, NULL, NULL, Py_None, Py_None, Py_None};
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nargs > 6) return PyErr_Format(PyExc_TypeError, "UOp() takes at most 6 arguments (%zd given)", nargs);
  for (Py_ssize_t i = 0; i < nargs; i++) v[i] = args[i];
  for (Py_ssize_t k = 0; k < nkw; k++) {
    PyObject *name = PyTuple_GET_ITEM(kwnames, k);
    int slot = -1;
    for (int j = 0; j < 6 && slot < 0; j++)
      if (PyUnicode_CompareWithASCIIString(name, names[j]) == 0) slot = j;
    if (slot < 0) return PyErr_Format(PyExc_TypeError, "UOp() got an unexpected keyword argument %R", name);
    if (slot < nargs) return PyErr_Format(PyExc_TypeError, "UOp() got multiple values for argument %R", name);
    v[slot] = args[nargs + k];
  }
  if (!v[0]) return PyErr_Format(PyExc_TypeError, "UOp() missing required argument 'op'");
  UNUSED(type);
  return (PyObject *)uop_from_python(v[0], v[1], v[2], v[3], v[4]);
}

static PyObject *src_tuple(UOp *u) {
  PyObject *t = PyTuple_New(u->nsrc);
  for (int i = 0; t && i < u->nsrc; i++) PyTuple_SET_ITEM(t, i, Py_NewRef(u->src[i]));
  return t;
}

static PyObject *UOp_get_op(UOp *self, void *c) { UNUSED(c); return Py_NewRef(ops_members[self->op]); }
static PyObject *UOp_get_dtype(UOp *self, void *c) { UNUSED(c); return Py_NewRef(self->dtype); }
static PyObject *UOp_get_src(UOp *self, void *c) { UNUSED(c); return src_tuple(self); }
static PyObject *UOp_get_arg(UOp *self, void *c) { UNUSED(c); return Py_NewRef(self->arg); }
static PyObject *UOp_get_tag(UOp *self, void *c) { UNUSED(c); return Py_NewRef(uop_tag(self)); }

static PyObject *UOp_reduce(UOp *self, PyObject *unused) {
  UNUSED(unused);
  PyObject *src = src_tuple(self);
  if (!src) return NULL;
  return Py_BuildValue("(O(OONOO))", (PyObject *)&UOp_Type, ops_members[self->op], (PyObject *)self->dtype, src, self->arg,
                       uop_tag(self));
}

/* tinygrad's replace pops the fields it knows and asserts nothing is left: an unknown name is an AssertionError */
static int check_replace_names(PyObject *kw, char *const *kwlist) {
  PyObject *unused = PyList_New(0), *name, *value;
  for (Py_ssize_t pos = 0; unused && kw && PyDict_Next(kw, &pos, &name, &value);) {
    bool known = false;
    for (int i = 0; !known && kwlist[i]; i++) known = PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, kwlist[i]) == 0;
    if (!known && PyList_Append(unused, name) < 0) Py_CLEAR(unused);
  }
  if (unused && PyList_GET_SIZE(unused)) PyErr_Format(PyExc_AssertionError, "unused kwargs in replace %R", unused);
  int rc = unused && !PyList_GET_SIZE(unused) ? 0 : -1;
  Py_XDECREF(unused);
  return rc;
}

/* replace(op=, dtype=, src=, arg=, tag=): self when nothing changes */
static PyObject *UOp_replace(UOp *self, PyObject *args, PyObject *kw) {
  if (PyTuple_GET_SIZE(args)) return PyErr_Format(PyExc_TypeError, "replace takes keyword arguments only");
  static char *kwlist[] = {"op", "dtype", "src", "arg", "tag", NULL};
  if (check_replace_names(kw, kwlist) < 0) return NULL;
  PyObject *op = ops_members[self->op], *dtype = (PyObject *)self->dtype, *src = NULL, *arg = self->arg, *tag = uop_tag(self);
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOOO:replace", kwlist, &op, &dtype, &src, &arg, &tag)) return NULL;
  PyObject *own_src = NULL;
  if (!src && !(src = own_src = src_tuple(self))) return NULL;
  PyObject *ret = (PyObject *)uop_from_python(op, dtype, src, arg, tag);
  Py_XDECREF(own_src);
  return ret;
}

/* self.f(op, **kwargs): UOp(op, dtype=kwargs.pop("dtype", self.dtype), src=(self,), **kwargs) */
static PyObject *UOp_f(UOp *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"op", "dtype", "arg", "tag", NULL};
  PyObject *op, *dtype = (PyObject *)self->dtype, *arg = Py_None, *tag = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$OOO:f", kwlist, &op, &dtype, &arg, &tag)) return NULL;
  int o = op_from_object(op);
  DType *dt = o < 0 ? NULL : parse_dtype(dtype);
  return dt ? (PyObject *)uop_new(o, dt, &self, 1, arg, tag) : NULL;
}

static PyObject *UOp_argstr(UOp *self, PyObject *unused) { UNUSED(unused); return uop_argstr(self); }
static PyObject *UOp_tagstr(UOp *self, PyObject *unused) { UNUSED(unused); return uop_tagstr(self); }

static PyObject *UOp_sizeof(UOp *self, PyObject *unused) {
  UNUSED(unused);
  return PyLong_FromSize_t(sizeof(UOp) + self->nsrc * sizeof(UOp *) + (self->extra ? sizeof(UOpExtra) : 0));
}

static PyObject *UOp_ptrdtype(UOp *self, void *c) {
  UNUSED(c);
  if (!self->dtype->is_ptr) return PyErr_Format(PyExc_RuntimeError, "ptrdtype called on UOp with type %R", (PyObject *)self->dtype);
  return Py_NewRef(self->dtype);
}

/* _device: the device of the first DEVICE found through the sources, as tinygrad's recursive
 * property; nodes without a DEVICE below them (all of a kernel AST) answer None at once. */
PyObject *uop_device(UOp *u) {
  while (u->flags & UOP_FLAG_HAS_DEVICE) {
    if (u->op == OP_DEVICE) return Py_NewRef(u->arg);
    if (u->op == OP_BUFFERIZE) return getattr_literal(u->arg, "device");
    if ((u->op == OP_COPY || u->op == OP_BUFFER || u->op == OP_ALLREDUCE) && u->nsrc > 1) { u = u->src[1]; continue; }
    UOp *next = NULL;
    for (int i = 0; i < u->nsrc && !next; i++)
      if (u->src[i]->flags & UOP_FLAG_HAS_DEVICE) next = u->src[i];
    if (!next) break;
    u = next;
  }
  Py_RETURN_NONE;
}
static PyObject *UOp_get_device_(UOp *self, void *c) { UNUSED(c); return uop_device(self); }
static PyObject *UOp_get_device(UOp *self, void *c) {
  UNUSED(c);
  PyObject *d = uop_device(self);
  if (d == Py_None) { Py_DECREF(d); return PyErr_Format(PyExc_RuntimeError, "%S has no device", ops_members[self->op]); }
  return d;
}

static PyObject *intern_count(PyObject *mod, PyObject *unused) {
  UNUSED(mod); UNUSED(unused);
  return PyLong_FromSsize_t(uop_intern_count());
}

static PyMethodDef uop_core_methods[] = {
  {"toposort", (PyCFunction)(void (*)(void))UOp_toposort, METH_VARARGS | METH_KEYWORDS, "nodes in tinygrad's toposort order (a dict)"},
  {"op_in_backward_slice_with_self", (PyCFunction)UOp_op_in_backward_slice_with_self, METH_VARARGS, NULL},
  {"get_consumer_map", (PyCFunction)UOp_get_consumer_map, METH_NOARGS, NULL},
  {"replace", (PyCFunction)(void (*)(void))UOp_replace, METH_VARARGS | METH_KEYWORDS, "a copy with the given fields changed"},
  {"f", (PyCFunction)(void (*)(void))UOp_f, METH_VARARGS | METH_KEYWORDS, NULL},
  {"argstr", (PyCFunction)UOp_argstr, METH_NOARGS, NULL},
  {"tagstr", (PyCFunction)UOp_tagstr, METH_NOARGS, NULL},
  {"__reduce__", (PyCFunction)UOp_reduce, METH_NOARGS, NULL},
  {"__sizeof__", (PyCFunction)UOp_sizeof, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL},
};

static PyGetSetDef uop_core_getset[] = {
  {"op", (getter)UOp_get_op, NULL, NULL, NULL},
  {"dtype", (getter)UOp_get_dtype, NULL, NULL, NULL},
  {"src", (getter)UOp_get_src, NULL, NULL, NULL},
  {"arg", (getter)UOp_get_arg, NULL, NULL, NULL},
  {"tag", (getter)UOp_get_tag, NULL, NULL, NULL},
  {"key", (getter)UOp_key, NULL, "content hash, equal across processes", NULL},
  {"backward_slice", (getter)UOp_backward_slice, NULL, NULL, NULL},
  {"backward_slice_with_self", (getter)UOp_backward_slice_with_self, NULL, NULL, NULL},
  {"ptrdtype", (getter)UOp_ptrdtype, NULL, NULL, NULL},
  {"_device", (getter)UOp_get_device_, NULL, NULL, NULL},
  {"device", (getter)UOp_get_device, NULL, NULL, NULL},
  {NULL, NULL, NULL, NULL, NULL},
};

/* ---- UOp as tinygrad's OpMixin (MathMixin, MovementMixin): what the mixins require, and UOp's own number slots ---- */

static PyObject *mixin_alu(Op op, PyObject *const *src, Py_ssize_t n) { return (PyObject *)uop_alu(op, (UOp *const *)src, n); }
static PyObject *mixin_const_like(PyObject *self, PyObject *b) { return (PyObject *)uop_const_like((UOp *)self, b); }
static DType *mixin_dtype(PyObject *self) { return ((UOp *)self)->dtype; }
static PyObject *mixin_shape(PyObject *self) { return uop_shape_req((UOp *)self); }
static PyObject *mixin_mop(PyObject *self, Op op, PyObject *arg) { return (PyObject *)uop_mop((UOp *)self, op, arg, false); }

static int nb_bool(PyObject *a) { return uop_bool((UOp *)a); }
static PyObject *nb_int(PyObject *a) { return uop_int((UOp *)a); }
static PyObject *nb_float(PyObject *a) { return uop_float((UOp *)a); }

/* MathMixin's operators, and __bool__, __int__, __float__ (filled in by init_mixins) */
static PyNumberMethods uop_as_number;

static void init_mixins(void) {
  math_mixin_init(&(MathMixin){&UOp_Type, mixin_alu, mixin_const_like, mixin_dtype});
  movement_mixin_init(&(MovementMixin){mixin_shape, mixin_mop});
  uop_as_number = math_mixin_as_number;
  uop_as_number.nb_bool = nb_bool, uop_as_number.nb_int = nb_int, uop_as_number.nb_float = nb_float;
}

PyTypeObject UOp_Type = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "tinyc.UOp",
  .tp_basicsize = sizeof(UOp),
  .tp_dealloc = (destructor)uop_dealloc,
  .tp_repr = (reprfunc)UOp_repr,
  .tp_as_number = &uop_as_number,
  .tp_richcompare = math_mixin_richcompare,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "UOp(op, dtype=dtypes.void, src=(), arg=None, tag=None): an immutable, hash-consed graph node",
  .tp_new = UOp_new,
  .tp_vectorcall = UOp_vectorcall,
  .tp_free = PyObject_Free,
};

/* Method tables come from several files; merge them into one before PyType_Ready. */
static PyMethodDef *merge_methods(PyMethodDef *const *tables, int n) {
  size_t total = 1;
  for (int t = 0; t < n; t++)
    for (PyMethodDef *d = tables[t]; d->ml_name; d++) total++;
  PyMethodDef *all = PyMem_Calloc(total, sizeof(PyMethodDef)), *out = all;
  if (!all) return (PyMethodDef *)PyErr_NoMemory();
  for (int t = 0; t < n; t++)
    for (PyMethodDef *d = tables[t]; d->ml_name; d++) *out++ = *d;
  return all;
}
static PyGetSetDef *merge_getset(PyGetSetDef *const *tables, int n) {
  size_t total = 1;
  for (int t = 0; t < n; t++)
    for (PyGetSetDef *d = tables[t]; d->name; d++) total++;
  PyGetSetDef *all = PyMem_Calloc(total, sizeof(PyGetSetDef)), *out = all;
  if (!all) return (PyGetSetDef *)PyErr_NoMemory();
  for (int t = 0; t < n; t++)
    for (PyGetSetDef *d = tables[t]; d->name; d++) *out++ = *d;
  return all;
}

/* how _rebuild_graph converts a node's parts for the other library */
typedef struct {
  PyObject *ops, *op_conv;         /* op memo dict, and its converter on a miss */
  PyObject *tinyc_ops[OP_COUNT];   /* a tinyc op's conversion, owned: the memo dict looked up once per op, not per node */
  PyObject *dtypes, *dtype_conv;   /* dtype memo dict, and its converter */
  PyObject *last_dtype[2];         /* owned: the last dtype converted and what it became (runs of nodes share one) */
  PyObject *arg_conv, *plain;      /* args and tags: as they are when their type is in plain (a frozenset), else arg_conv */
  PyObject *members;               /* NULL, or {enum type: ((member, its conversion), ...)}: swapped inside args in C */
  int none_plain, int_plain;       /* whether None's and int's types are in plain: most args are one of them */
} Converters;

/* How _rebuild_graph makes a node: make(op, dtype, src, arg, tag), or, given consed=(cls, ucache), what tinygrad's
 * UOpMetaClass.__call__ does for a node without metadata or buffer: the live node of ucache[key] when there is one,
 * else cls's new object with its five slots (op, dtype, src, arg, tag: a slots dataclass's fields) set as its __init__
 * sets them, and ucache[key] = a weak reference to it. Without the Python frames of __call__ and __init__, that is
 * a third of the cost of a tinygrad node. */
typedef struct {
  PyObject *make;
  PyTypeObject *cls;               /* NULL: call make */
  PyObject *ucache;
  Py_ssize_t offset[5];            /* where cls keeps op, dtype, src, arg, tag */
} Maker;

static const char *const node_fields[5] = {"op", "dtype", "src", "arg", "tag"};

/* the slot offset of field `name` of cls: it must be a writable object member (a __slots__ entry); -1 with a TypeError */
static Py_ssize_t slot_offset(PyTypeObject *cls, const char *name) {
  PyObject *d = PyObject_GetAttrString((PyObject *)cls, name);
  if (!d && PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
  Py_ssize_t off = -1;
  if (d && Py_IS_TYPE(d, &PyMemberDescr_Type) && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
      !(((PyMemberDescrObject *)d)->d_member->flags & READONLY))
    off = ((PyMemberDescrObject *)d)->d_member->offset;
  else if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "consed: %.100s.%s is not a __slots__ field", cls->tp_name, name);
  Py_XDECREF(d);
  return off;
}

static int maker_init(Maker *mk, PyObject *make, PyObject *consed) {
  *mk = (Maker){make, NULL, NULL, {0}};
  if (consed == Py_None) return 0;
  if (!PyTuple_Check(consed) || PyTuple_GET_SIZE(consed) != 2 || !PyType_Check(PyTuple_GET_ITEM(consed, 0)) ||
      !PyDict_Check(PyTuple_GET_ITEM(consed, 1)))
    return PyErr_SetString(PyExc_TypeError, "consed must be None or (a class, its hash-consing dict)"), -1;
  mk->cls = (PyTypeObject *)PyTuple_GET_ITEM(consed, 0), mk->ucache = PyTuple_GET_ITEM(consed, 1);
  if (!mk->cls->tp_new || !mk->cls->tp_weaklistoffset)
    return PyErr_Format(PyExc_TypeError, "consed: %.100s makes no weakly referenced objects", mk->cls->tp_name), -1;
  for (int i = 0; i < 5; i++)
    if ((mk->offset[i] = slot_offset(mk->cls, node_fields[i])) < 0) return -1;
  return 0;
}

/* The cache is looked up and, on a miss, written with the key's hash computed once: hashing the key (its sources,
 * its arg) a second time was an eighth of a new node's cost. CPython 3.11 and 3.12 export the known-hash dict calls;
 * later ones hash twice. */
#if PY_VERSION_HEX < 0x030D0000
#define ucache_get(d, key, hash) _PyDict_GetItem_KnownHash((d), (key), (hash))
#define ucache_set(d, key, value, hash) _PyDict_SetItem_KnownHash((d), (key), (value), (hash))
#else
#define ucache_get(d, key, hash) ((void)(hash), PyDict_GetItemWithError((d), (key)))
#define ucache_set(d, key, value, hash) ((void)(hash), PyDict_SetItem((d), (key), (value)))
#endif

/* the live node ucache[key] names, or NULL (and no error) when there is none */
static PyObject *live_consed(const Maker *mk, PyObject *key, Py_hash_t hash) {
  PyObject *ref = ucache_get(mk->ucache, key, hash);
  if (!ref) return NULL;
  if (!PyWeakref_Check(ref)) return PyErr_Format(PyExc_TypeError, "consed: the cache holds a %.100s, not a weak reference", Py_TYPE(ref)->tp_name);
  PyObject *live = PyWeakref_GET_OBJECT(ref);
  return live == Py_None ? NULL : Py_NewRef(live);
}

static PyObject *consed_node(const Maker *mk, PyObject *const args[5]) {
  PyObject *key = PyTuple_Pack(5, args[0], args[1], args[2], args[3], args[4]), *node = NULL, *ref = NULL;
  Py_hash_t hash = key ? PyObject_Hash(key) : -1;
  if (hash == -1 || (node = live_consed(mk, key, hash)) || PyErr_Occurred()) goto done;
  static PyObject *no_args;
  if (!no_args && !(no_args = PyTuple_New(0))) goto done;
  if (!(node = mk->cls->tp_new(mk->cls, no_args, NULL))) goto done;
  for (int i = 0; i < 5; i++) {
    PyObject **slot = (PyObject **)((char *)node + mk->offset[i]);
    Py_XSETREF(*slot, Py_NewRef(args[i]));
  }
  if (!(ref = PyWeakref_NewRef(node, NULL)) || ucache_set(mk->ucache, key, ref, hash) < 0) Py_CLEAR(node);
done:
  Py_XDECREF(key); Py_XDECREF(ref);
  return node;
}

static PyObject *made(const Maker *mk, PyObject *const args[5]) {
  return mk->cls ? consed_node(mk, args) : PyObject_Vectorcall(mk->make, args, 5, NULL);
}

/* memo[key], made by convert(key) on a miss and remembered: a new reference */
static PyObject *converted(PyObject *memo, PyObject *convert, PyObject *key) {
  PyObject *v = PyDict_GetItemWithError(memo, key);
  if (v || PyErr_Occurred()) return Py_XNewRef(v);
  if (!(v = PyObject_CallOneArg(convert, key))) return NULL;
  if (PyDict_SetItem(memo, key, v) < 0) Py_CLEAR(v);
  return v;
}

/* a dtype's conversion, a new reference: the last one again, or from the memo dict */
static PyObject *converted_dtype(Converters *cv, PyObject *dtype) {
  if (dtype == cv->last_dtype[0]) return Py_NewRef(cv->last_dtype[1]);
  PyObject *v = converted(cv->dtypes, cv->dtype_conv, dtype);
  if (v) {
    Py_XSETREF(cv->last_dtype[0], Py_NewRef(dtype));
    Py_XSETREF(cv->last_dtype[1], Py_NewRef(v));
  }
  return v;
}

/* the conversion of enum member x by cv->members, a new reference; NULL without an error when x's type is not there.
 * An enum has few members: x is found by identity, without calling a Python enum's __hash__. */
static PyObject *converted_member(PyObject *x, const Converters *cv) {
  PyObject *pairs = cv->members ? PyDict_GetItemWithError(cv->members, (PyObject *)Py_TYPE(x)) : NULL;
  if (!pairs) return NULL;
  for (Py_ssize_t i = 0; PyTuple_Check(pairs) && i < PyTuple_GET_SIZE(pairs); i++) {
    PyObject *pair = PyTuple_GET_ITEM(pairs, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) break;
    if (PyTuple_GET_ITEM(pair, 0) == x) return Py_NewRef(PyTuple_GET_ITEM(pair, 1));
  }
  return PyErr_Format(PyExc_TypeError, "members[%.100s] must be a tuple of (member, conversion) holding %R", Py_TYPE(x)->tp_name, x);
}

/* x for the other side when it is made of plain values (their types in plain: both sides share them as they are) and
 * enum members, in tuples down to depth 8 (a GEP's lanes, a RANGE's (axis, AxisType)): a new reference, x itself when
 * nothing in it changes. NULL without an error when it holds anything else (convert_arg converts x then). */
static PyObject *converted_simple(PyObject *x, const Converters *cv, int depth) {
  if (x == Py_None) return cv->none_plain ? Py_NewRef(x) : NULL;
  if (PyLong_CheckExact(x)) return cv->int_plain ? Py_NewRef(x) : NULL;
  if (PyTuple_CheckExact(x)) {
    if (depth >= 8) return NULL;
    PyObject *t = NULL;   /* made once an item changes */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(x); i++) {
      PyObject *item = PyTuple_GET_ITEM(x, i), *y = converted_simple(item, cv, depth + 1);
      if (!y) return Py_XDECREF(t), NULL;
      if (y != item && !t) {
        if (!(t = PyTuple_New(PyTuple_GET_SIZE(x)))) return Py_DECREF(y), NULL;
        for (Py_ssize_t j = 0; j < i; j++) PyTuple_SET_ITEM(t, j, Py_NewRef(PyTuple_GET_ITEM(x, j)));
      }
      if (t) PyTuple_SET_ITEM(t, i, y);
      else Py_DECREF(y);
    }
    return t ? t : Py_NewRef(x);
  }
  PyObject *m = converted_member(x, cv);
  if (m || PyErr_Occurred()) return m;
  int is_plain = PySet_Contains(cv->plain, (PyObject *)Py_TYPE(x));
  return is_plain > 0 ? Py_NewRef(x) : NULL;
}

/* an arg for the other side: converted_simple's, else convert_arg(x); a new reference */
static PyObject *converted_arg(PyObject *x, const Converters *cv) {
  PyObject *y = converted_simple(x, cv, 0);
  return y || PyErr_Occurred() ? y : PyObject_CallOneArg(cv->arg_conv, x);
}

/* the remade sources of src[0..n) as a tuple (done: node -> remade); a new reference */
static PyObject *remade_sources(PyObject *const *src, Py_ssize_t n, PtrMap *done) {
  PyObject *t = PyTuple_New(n);
  for (Py_ssize_t i = 0; t && i < n; i++) {
    PyObject *s = ptrmap_get(done, src[i]);
    if (!s) { PyErr_SetString(PyExc_KeyError, "a source comes after its user: the nodes must be in toposort order"); Py_CLEAR(t); break; }
    PyTuple_SET_ITEM(t, i, Py_NewRef(s));
  }
  return t;
}

/* a tag for the other side: None as it is, else convert_arg(tag); a new reference */
static PyObject *converted_tag(PyObject *tag, const Converters *cv) {
  return tag == Py_None ? Py_NewRef(Py_None) : PyObject_CallOneArg(cv->arg_conv, tag);
}

/* remade_node for a tinyc UOp: its fields read from the node, its op converted once per op */
static PyObject *remade_tinyc_node(UOp *u, const Maker *mk, Converters *cv, PtrMap *done) {
  PyObject **op = &cv->tinyc_ops[u->op];
  if (!*op && !(*op = converted(cv->ops, cv->op_conv, ops_members[u->op]))) return NULL;
  PyObject *args[5] = {Py_NewRef(*op), converted_dtype(cv, (PyObject *)u->dtype), NULL, NULL, NULL}, *ret = NULL;
  if (args[1] && (args[2] = remade_sources((PyObject *const *)u->src, u->nsrc, done)) && (args[3] = converted_arg(u->arg, cv)) &&
      (args[4] = converted_tag(uop_tag(u), cv)))
    ret = made(mk, args);
  for (int i = 0; i < 5; i++) Py_XDECREF(args[i]);
  return ret;
}

/* one node made again (op, dtype, src, arg, tag), its sources already made (done: node -> remade); a new reference */
static PyObject *remade_node(PyObject *x, const Maker *mk, Converters *cv, PtrMap *done) {
  if (UOp_Check(x)) return remade_tinyc_node((UOp *)x, mk, cv, done);
  PyObject *f[5] = {NULL}, *args[5] = {NULL}, *ret = NULL;
  for (int i = 0; i < 5; i++)
    if (!(f[i] = getattr_literal(x, node_fields[i]))) goto done;
  PyObject *src = PySequence_Fast(f[2], "a node's src must be a sequence");
  if (!src) goto done;
  args[2] = remade_sources(PySequence_Fast_ITEMS(src), PySequence_Fast_GET_SIZE(src), done);
  Py_DECREF(src);
  if (!args[2] || !(args[0] = converted(cv->ops, cv->op_conv, f[0])) || !(args[1] = converted_dtype(cv, f[1])) ||
      !(args[3] = converted_arg(f[3], cv)) || !(args[4] = converted_tag(f[4], cv)))
    goto done;
  ret = made(mk, args);
done:
  for (int i = 0; i < 5; i++) Py_XDECREF(f[i]), Py_XDECREF(args[i]);
  return ret;
}

/* the bridge's graph conversion (tinyc.tinygrad): nodes of either library in toposort order, each made again for the
 * other (see Maker), its op and dtype through memo dicts (converted on a miss), its arg by converted_simple (plain values
 * as they are, enum members swapped) or else through convert_arg, a tag through convert_arg; the last node's remade
 * node. One pass in C: per node, the constructor (when it is called) is the only Python call. */
static PyObject *rebuild_graph(PyObject *mod, PyObject *args) {
  UNUSED(mod);
  PyObject *nodes, *make, *consed = Py_None;
  Converters cv = {0};
  Maker mk;
  if (!PyArg_ParseTuple(args, "O!OO!OO!OOO!|OO!:_rebuild_graph", &PyList_Type, &nodes, &make, &PyDict_Type, &cv.ops, &cv.op_conv,
                        &PyDict_Type, &cv.dtypes, &cv.dtype_conv, &cv.arg_conv, &PyFrozenSet_Type, &cv.plain, &consed,
                        &PyDict_Type, &cv.members) ||
      maker_init(&mk, make, consed) < 0 ||
      (cv.none_plain = PySet_Contains(cv.plain, (PyObject *)Py_TYPE(Py_None))) < 0 ||
      (cv.int_plain = PySet_Contains(cv.plain, (PyObject *)&PyLong_Type)) < 0)
    return NULL;
  Py_ssize_t n = PyList_GET_SIZE(nodes);
  if (!n) return PyErr_Format(PyExc_ValueError, "_rebuild_graph needs at least one node");
  PyObject *remade = PyList_New(0), *last = NULL;   /* owns every remade node; done maps to them */
  PtrMap done = {0};
  int gc_was_enabled = PyGC_Disable();   /* a graph has no cycles: its many new nodes need not start the collector */
  for (Py_ssize_t i = 0; remade && i < n; i++) {
    PyObject *x = PyList_GET_ITEM(nodes, i), *y = remade_node(x, &mk, &cv, &done);
    int err = !y || PyList_Append(remade, y) < 0 || ptrmap_set(&done, x, y) < 0;
    Py_XDECREF(y);
    if (err) Py_CLEAR(remade);
    else last = y;
  }
  if (gc_was_enabled) PyGC_Enable();
  PyObject *ret = remade ? Py_NewRef(last) : NULL;
  for (int op = 0; op < OP_COUNT; op++) Py_XDECREF(cv.tinyc_ops[op]);
  Py_XDECREF(cv.last_dtype[0]); Py_XDECREF(cv.last_dtype[1]);
  ptrmap_free(&done);
  Py_XDECREF(remade);
  return ret;
}

static PyMethodDef module_functions[] = {
  {"_intern_count", intern_count, METH_NOARGS, "number of live interned UOps"},
  {"_rebuild_graph", rebuild_graph, METH_VARARGS,
   "_rebuild_graph(nodes, make, ops, op_conv, dtypes, dtype_conv, convert_arg, plain, consed=None, members=None): the bridge's graph conversion"},
  {NULL, NULL, 0, NULL},
};

/* tinygrad's @dataclass(eq=False, slots=True): dataclasses.fields, replace and asdict see op, dtype, src, arg, tag */
static PyObject *default_dtype(void) { return Py_NewRef((PyObject *)DTYPE(VOID)); }
static const DataclassField uop_fields[] = {
  DATACLASS_NAMED("op", NULL), DATACLASS_NAMED("dtype", default_dtype), DATACLASS_NAMED("src", dataclass_empty_tuple),
  DATACLASS_NAMED("arg", dataclass_none), DATACLASS_NAMED("tag", dataclass_none), {NULL}};
static const Dataclass uop_dataclass = {uop_fields, .identity_eq = true};

int tinyc_init_uop(PyObject *m) {
  PyObject *hashlib = PyImport_ImportModule("hashlib");
  if (!hashlib || !(hashlib_sha256 = getattr_literal(hashlib, "sha256"))) { Py_XDECREF(hashlib); return -1; }
  Py_DECREF(hashlib);
  find_libcrypto();
  if (!(table = PyMem_Calloc(TABLE_MIN_CAP, sizeof(UOp *)))) { PyErr_NoMemory(); return -1; }
  table_cap = TABLE_MIN_CAP;
  init_mixins();
  PyMethodDef *methods[] = {uop_core_methods, uop_sugar_methods, math_mixin_methods, uop_range_methods, uop_eval_methods,
                           uop_renderer_methods, uop_movement_methods, movement_mixin_methods};
  PyGetSetDef *getsets[] = {uop_core_getset, uop_range_getset, uop_movement_getset, movement_mixin_getset};
  if (!(UOp_Type.tp_methods = merge_methods(methods, 8)) || !(UOp_Type.tp_getset = merge_getset(getsets, 4))) return -1;
  UOp_Type.tp_hash = PyBaseObject_Type.tp_hash;   /* identity hash: equal nodes are the same object */
  if (PyType_Ready(&UOp_Type) < 0 || tinyc_add(m, "UOp", (PyObject *)&UOp_Type) < 0) return -1;
  if (dataclass_describe(&UOp_Type, &uop_dataclass) < 0) return -1;
  if (PyModule_AddFunctions(m, module_functions) < 0) return -1;
  return tinyc_init_uop_sugar(m) < 0 ? -1 : tinyc_init_uop_range(m);
}
