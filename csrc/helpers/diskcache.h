/* tinygrad/helpers.py's diskcache_get / diskcache_put in C: an SQLite file of (table, key) -> bytes.
 * Safe across processes (WAL + busy timeout); a file SQLite calls corrupt is deleted and rebuilt; every row
 * carries a checksum, so a damaged value reads as a miss and is recomputed. CACHELEVEL=0 turns it off. */
#ifndef TINYC_DISKCACHE_H
#define TINYC_DISKCACHE_H
#include "../tinyc.h"

/* The value stored under (table, key) as a new bytes object; Py_None (new ref) on a miss or when the cache is off.
 * Errors of the cache itself never surface: they read as a miss. NULL only for bad arguments. */
PyObject *diskcache_get(const char *table, const char *key, Py_ssize_t keylen);
/* Store val under (table, key). Returns 0, also when the cache is off or could not store (the cache is best effort). */
int diskcache_put(const char *table, const char *key, Py_ssize_t keylen, const char *val, Py_ssize_t vallen);
/* CACHELEVEL as the environment sets it now (tinygrad's default 2). */
long diskcache_level(void);

int tinyc_init_diskcache(PyObject *m);

#endif
