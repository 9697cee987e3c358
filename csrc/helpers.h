/* Small containers every pass uses (tinygrad leans on dict/list; these are their C stand-ins):
 * a growable pointer vector and an open-addressing pointer -> pointer map. Header-only. */
#ifndef TINYC_HELPERS_H
#define TINYC_HELPERS_H
#include "tinyc.h"

typedef struct { void **items; Py_ssize_t len, cap; } PtrVec;

static inline int ptrvec_push(PtrVec *v, void *p) {
  if (v->len == v->cap) {
    Py_ssize_t cap = v->cap ? v->cap * 2 : 16;
    void **items = PyMem_Realloc(v->items, (size_t)cap * sizeof(void *));
    if (!items) { PyErr_NoMemory(); return -1; }
    v->items = items, v->cap = cap;
  }
  v->items[v->len++] = p;
  return 0;
}
static inline void *ptrvec_pop(PtrVec *v) { return v->items[--v->len]; }
static inline void ptrvec_free(PtrVec *v) { PyMem_Free(v->items); v->items = NULL; v->len = v->cap = 0; }

/* Keys are non-NULL pointers; a missing key reads as NULL. Never shrinks (maps are per call). */
typedef struct { void **keys; void **vals; size_t cap, len; } PtrMap;

static inline size_t ptrmap_slot(const void *key, size_t mask) {
  uint64_t h = (uint64_t)(uintptr_t)key;
  h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33;  /* spread the aligned bits of addresses */
  return (size_t)h & mask;
}
static inline void *ptrmap_get(const PtrMap *m, const void *key) {
  if (!m->cap) return NULL;
  for (size_t i = ptrmap_slot(key, m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) return m->vals[i];
    if (!m->keys[i]) return NULL;
  }
}
static inline bool ptrmap_has(const PtrMap *m, const void *key) {
  if (!m->cap) return false;
  for (size_t i = ptrmap_slot(key, m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) return true;
    if (!m->keys[i]) return false;
  }
}
static inline int ptrmap_rehash(PtrMap *m, size_t cap) {
  void **keys = PyMem_Calloc(cap, sizeof(void *)), **vals = PyMem_Malloc(cap * sizeof(void *));   /* a value is read only under its key */
  if (!keys || !vals) { PyMem_Free(keys); PyMem_Free(vals); PyErr_NoMemory(); return -1; }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = ptrmap_slot(m->keys[i], cap - 1);
    while (keys[j]) j = (j + 1) & (cap - 1);
    keys[j] = m->keys[i], vals[j] = m->vals[i];
  }
  PyMem_Free(m->keys); PyMem_Free(m->vals);
  m->keys = keys, m->vals = vals, m->cap = cap;
  return 0;
}
static inline int ptrmap_grow(PtrMap *m) { return ptrmap_rehash(m, m->cap ? m->cap * 2 : 64); }
/* room for n keys without growing (one allocation instead of a doubling series) */
static inline int ptrmap_reserve(PtrMap *m, size_t n) {
  size_t cap = m->cap ? m->cap : 64;
  while (cap < n * 2 + 2) cap *= 2;
  return cap == m->cap ? 0 : ptrmap_rehash(m, cap);
}
/* Insert or overwrite. */
static inline int ptrmap_set(PtrMap *m, void *key, void *val) {
  if ((m->len + 1) * 2 > m->cap && ptrmap_grow(m) < 0) return -1;
  size_t i = ptrmap_slot(key, m->cap - 1);
  while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  if (!m->keys[i]) m->keys[i] = key, m->len++;
  m->vals[i] = val;
  return 0;
}
static inline void ptrmap_free(PtrMap *m) { PyMem_Free(m->keys); PyMem_Free(m->vals); memset(m, 0, sizeof(*m)); }

/* obj.<name> for a string literal name. PyObject_GetAttrString makes, decodes and hashes a new str on every call; here
 * each literal's str is made and interned once and kept by the literal's address for the module's life (one map per
 * file). */
static inline PyObject *getattr_literal(PyObject *obj, const char *name) {
  static PtrMap names;
  PyObject *s = ptrmap_get(&names, name);
  if (!s) {
    if (!(s = PyUnicode_InternFromString(name))) return NULL;
    if (ptrmap_set(&names, (void *)name, s) < 0) { Py_DECREF(s); return NULL; }
  }
  return PyObject_GetAttr(obj, s);
}

/* The nodes a chain of rewrites has met, to tell a loop: nearly every chain is a step or two long, so the first eight
 * sit in an array and only the rest in a map. Zero-initialised; smallset_free after. */
typedef struct { const void *small[8]; int n; PtrMap more; } SmallSet;
/* adds p: 1 when it was there already, 0 when added, -1 on error */
static inline int smallset_add(SmallSet *s, const void *p) {
  for (int i = 0; i < s->n; i++) if (s->small[i] == p) return 1;
  if (ptrmap_has(&s->more, p)) return 1;
  if (s->n < 8) { s->small[s->n++] = p; return 0; }
  return ptrmap_set(&s->more, (void *)p, (void *)p);
}
static inline void smallset_free(SmallSet *s) { ptrmap_free(&s->more); }

#endif
