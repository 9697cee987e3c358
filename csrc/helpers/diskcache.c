/* tinygrad/helpers.py's disk cache (diskcache_get / diskcache_put / diskcache_clear) in C, on SQLite's C API.
 *
 * One file holds every table; a table is named "<table>_<VERSION>" and maps a key (the kernel source for the
 * compile cache) to a blob. Differences from tinygrad, all for robustness:
 * - the path is $TINYC_CACHEDB, else $XDG_CACHE_HOME/tinyc/cache.db, else ~/.cache/tinyc/cache.db, read at each call
 *   (a changed path reopens);
 * - many processes share the file: WAL journal and a 60 s busy timeout (tinygrad: timeout=60);
 * - a file SQLite reports as corrupt or not a database is deleted (with its -wal/-shm) and rebuilt, never trusted;
 * - each row stores a checksum of its value (the query matches the key itself): a row that fails it is dropped and
 *   reads as a miss;
 * - errors of the cache never fail the caller: they read as a miss / a skipped store.
 * SQLite calls run without the GIL, under one mutex (the connection is shared by all threads). */
#include "diskcache.h"
#include <sqlite3.h>
#include <xxhash.h>
#include <pthread.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#define DISKCACHE_VERSION 3   /* 2: CRC-32 row checksums; 3: XXH3 of the value alone */

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static sqlite3 *cache_db;         /* open connection, or NULL */
static char *cache_db_path;       /* the path cache_db was opened on (malloc) */
static pid_t cache_db_pid;        /* the process that opened it: a forked child must not reuse it */

/* The SELECT of a few tables, prepared once on cache_db: preparing (parsing the SQL) was a sixth of a cache hit. */
#define CACHED_SELECTS 4
static struct { char *ident; sqlite3_stmt *st; } selects[CACHED_SELECTS];
static int next_select;            /* the entry a new table replaces */

/* tinygrad's CACHELEVEL ContextVar; the environment's value at each use until a Context sets it */
static EnvVar cachelevel = {"CACHELEVEL", 2, 2, false};
long diskcache_level(void) { return envvar_value(&cachelevel); }

/* The cache file's path as the environment says now: malloc'd, NULL when there is no home to put it in. */
static char *cache_path(void) {
  const char *p = getenv("TINYC_CACHEDB");
  if (p && *p) return strdup(p);
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char buf[4096];
  int n;
  if (xdg && *xdg) n = snprintf(buf, sizeof(buf), "%s/tinyc/cache.db", xdg);
  else if (home && *home) n = snprintf(buf, sizeof(buf), "%s/.cache/tinyc/cache.db", home);
  else return NULL;
  return n > 0 && (size_t)n < sizeof(buf) ? strdup(buf) : NULL;
}

/* mkdir -p of the directory holding path (errors surface later, when SQLite cannot open the file) */
static void make_parent_dirs(const char *path) {
  char *dir = strdup(path);
  if (!dir) return;
  for (char *s = dir + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    mkdir(dir, 0755);
    *s = '/';
  }
  free(dir);
}

static bool is_corrupt(int rc) { return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB; }

static void close_db(void) {
  bool ours = cache_db_pid == getpid();   /* a forked child leaks its parent's handle: closing could drop the parent's locks */
  for (int i = 0; i < CACHED_SELECTS; i++) {
    if (ours) sqlite3_finalize(selects[i].st);
    free(selects[i].ident);
    selects[i].ident = NULL, selects[i].st = NULL;
  }
  if (cache_db) {
    if (ours) sqlite3_close_v2(cache_db);
    cache_db = NULL;
  }
  free(cache_db_path); cache_db_path = NULL;
}

/* Delete a damaged cache file and its journals, so the next open starts empty. */
static void delete_db_files(const char *path) {
  char buf[4200];
  unlink(path);
  snprintf(buf, sizeof(buf), "%s-wal", path); unlink(buf);
  snprintf(buf, sizeof(buf), "%s-shm", path); unlink(buf);
  snprintf(buf, sizeof(buf), "%s-journal", path); unlink(buf);
}

/* Open path and check it reads as a database; returns an SQLite code (SQLITE_OK, or the failing one). */
static int try_open(const char *path) {
  make_parent_dirs(path);
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_busy_timeout(db, 60000);
  /* WAL lets readers run beside a writer; if the switch itself fails (a busy peer, a file system without shared
   * memory) the default journal still works, unless the failure says the file is no database */
  if (rc == SQLITE_OK) {
    int wal = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    if (is_corrupt(wal)) rc = wal;
  }
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
  if (rc != SQLITE_OK) { if (db) sqlite3_close_v2(db); return rc; }
  cache_db = db, cache_db_path = strdup(path), cache_db_pid = getpid();
  return SQLITE_OK;
}

/* Make cache_db the connection for path (called under cache_lock). A corrupt file is deleted and reopened once. */
static bool ensure_db(const char *path) {
  if (cache_db && (cache_db_pid != getpid() || strcmp(cache_db_path, path) != 0)) close_db();
  if (cache_db) return true;
  int rc = try_open(path);
  if (is_corrupt(rc)) { delete_db_files(path); rc = try_open(path); }
  return rc == SQLITE_OK;
}

/* A damaged file seen mid-query: drop the connection and the file; the next call starts a fresh one. */
static void rebuild_db(void) {
  char *path = cache_db_path ? strdup(cache_db_path) : NULL;
  close_db();
  if (path) { delete_db_files(path); free(path); }
}

/* a row's checksum: xxHash's XXH3 of the value (a damaged row is recompiled); zlib's CRC-32 of key and value was half
 * of a cache hit */
static sqlite3_int64 row_checksum(const char *val, Py_ssize_t vallen) { return (sqlite3_int64)XXH3_64bits(val, (size_t)vallen); }

/* "<table>_<VERSION>" as a quoted SQL identifier (embedded quotes doubled); malloc'd */
static char *table_ident(const char *table) {
  size_t n = strlen(table), j = 0;
  char *out = malloc(2 * n + 32);
  if (!out) return NULL;
  out[j++] = '"';
  for (size_t i = 0; i < n; i++) { if (table[i] == '"') out[j++] = '"'; out[j++] = table[i]; }
  j += (size_t)sprintf(out + j, "_%d\"", DISKCACHE_VERSION);
  out[j] = 0;
  return out;
}

typedef struct { char *data; Py_ssize_t len; bool found; } Fetched;

/* the prepared SELECT of diskcache_get for table ident (under cache_lock): kept for the next call; an SQLite code */
static int select_of(const char *ident, sqlite3_stmt **out) {
  for (int i = 0; i < CACHED_SELECTS; i++)
    if (selects[i].ident && strcmp(selects[i].ident, ident) == 0) { *out = selects[i].st; return SQLITE_OK; }
  char sql[512 + 4096], *copy = strdup(ident);
  snprintf(sql, sizeof(sql), "SELECT val, sum FROM %s WHERE key=?", ident);
  if (!copy) return SQLITE_NOMEM;
  int rc = sqlite3_prepare_v2(cache_db, sql, -1, out, NULL);
  if (rc != SQLITE_OK) { free(copy); return rc; }   /* e.g. no such table yet: a miss, prepared again next time */
  int at = next_select;
  next_select = (next_select + 1) % CACHED_SELECTS;
  sqlite3_finalize(selects[at].st), free(selects[at].ident);
  selects[at].ident = copy, selects[at].st = *out;
  return SQLITE_OK;
}

static void delete_row(const char *ident, const char *key, Py_ssize_t keylen) {
  char sql[512 + 4096];
  sqlite3_stmt *del = NULL;
  snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE key=?", ident);
  if (sqlite3_prepare_v2(cache_db, sql, -1, &del, NULL) == SQLITE_OK) {
    sqlite3_bind_blob(del, 1, key, (int)keylen, SQLITE_STATIC);
    sqlite3_step(del);
  }
  sqlite3_finalize(del);
}

/* the SELECT of diskcache_get, under cache_lock without the GIL; returns an SQLite code */
static int fetch_row(const char *ident, const char *key, Py_ssize_t keylen, Fetched *out) {
  sqlite3_stmt *st = NULL;
  int rc = select_of(ident, &st);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_blob(st, 1, key, (int)keylen, SQLITE_STATIC);
  rc = sqlite3_step(st);
  bool damaged = false;
  if (rc == SQLITE_ROW) {
    const void *blob = sqlite3_column_blob(st, 0);
    int n = sqlite3_column_bytes(st, 0);
    sqlite3_int64 sum = sqlite3_column_int64(st, 1);
    if (n >= 0 && (out->data = malloc((size_t)n + 1)) != NULL) {
      if (n) memcpy(out->data, blob, (size_t)n);
      out->len = n;
      out->found = row_checksum(out->data, n) == sum;
      if (!out->found) { free(out->data); out->data = NULL; }
    }
    damaged = !out->found;
    rc = SQLITE_OK;
  } else if (rc == SQLITE_DONE) rc = SQLITE_OK;
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);   /* the key is the caller's buffer */
  if (damaged) delete_row(ident, key, keylen);   /* so that the recomputed value replaces it */
  return rc;
}

static int store_row(const char *ident, const char *key, Py_ssize_t keylen, const char *val, Py_ssize_t vallen) {
  char sql[512 + 4096];
  snprintf(sql, sizeof(sql), "CREATE TABLE IF NOT EXISTS %s (key blob, val blob, sum integer, PRIMARY KEY (key))", ident);
  int rc = sqlite3_exec(cache_db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) return rc;
  snprintf(sql, sizeof(sql), "REPLACE INTO %s (key, val, sum) VALUES (?, ?, ?)", ident);
  sqlite3_stmt *st = NULL;
  rc = sqlite3_prepare_v2(cache_db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_blob(st, 1, key, (int)keylen, SQLITE_STATIC);
  sqlite3_bind_blob(st, 2, val, (int)vallen, SQLITE_STATIC);
  sqlite3_bind_int64(st, 3, row_checksum(val, vallen));
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

PyObject *diskcache_get(const char *table, const char *key, Py_ssize_t keylen) {
  if (diskcache_level() < 1 || keylen > INT32_MAX) Py_RETURN_NONE;
  char *path = cache_path(), *ident = table_ident(table);
  Fetched got = {NULL, 0, false};
  if (path && ident && strlen(ident) < 4096) {
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&cache_lock);
    if (ensure_db(path)) {
      int rc = fetch_row(ident, key, keylen, &got);
      if (is_corrupt(rc)) rebuild_db();
    }
    pthread_mutex_unlock(&cache_lock);
    Py_END_ALLOW_THREADS
  }
  free(path); free(ident);
  if (!got.found) Py_RETURN_NONE;
  PyObject *ret = PyBytes_FromStringAndSize(got.data, got.len);
  free(got.data);
  return ret;
}

int diskcache_put(const char *table, const char *key, Py_ssize_t keylen, const char *val, Py_ssize_t vallen) {
  if (diskcache_level() < 1 || keylen > INT32_MAX || vallen > INT32_MAX) return 0;
  char *path = cache_path(), *ident = table_ident(table);
  if (path && ident && strlen(ident) < 4096) {
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&cache_lock);
    for (int attempt = 0; attempt < 2 && ensure_db(path); attempt++) {
      int rc = store_row(ident, key, keylen, val, vallen);
      if (!is_corrupt(rc)) break;
      rebuild_db();   /* then one more try on the fresh file */
    }
    pthread_mutex_unlock(&cache_lock);
    Py_END_ALLOW_THREADS
  }
  free(path); free(ident);
  return 0;
}

/* ---- Python: _C.diskcache_get / diskcache_put / diskcache_clear / diskcache_path ---- */

/* key: str (UTF-8) or bytes */
static int key_bytes(PyObject *key, const char **data, Py_ssize_t *len) {
  if (PyUnicode_Check(key)) return (*data = PyUnicode_AsUTF8AndSize(key, len)) ? 0 : -1;
  if (PyBytes_Check(key)) { *data = PyBytes_AS_STRING(key), *len = PyBytes_GET_SIZE(key); return 0; }
  PyErr_Format(PyExc_TypeError, "diskcache keys are str or bytes, not %.100s", Py_TYPE(key)->tp_name);
  return -1;
}

static PyObject *py_diskcache_get(PyObject *self, PyObject *args) {
  UNUSED(self);
  const char *table, *k;
  PyObject *key;
  Py_ssize_t klen;
  if (!PyArg_ParseTuple(args, "sO:diskcache_get", &table, &key) || key_bytes(key, &k, &klen) < 0) return NULL;
  return diskcache_get(table, k, klen);
}

static PyObject *py_diskcache_put(PyObject *self, PyObject *args) {
  UNUSED(self);
  const char *table, *k;
  PyObject *key;
  Py_buffer val;
  Py_ssize_t klen;
  if (!PyArg_ParseTuple(args, "sOy*:diskcache_put", &table, &key, &val)) return NULL;
  if (key_bytes(key, &k, &klen) < 0) { PyBuffer_Release(&val); return NULL; }
  diskcache_put(table, k, klen, val.buf, val.len);
  PyObject *ret = PyBytes_FromStringAndSize(val.buf, val.len);
  PyBuffer_Release(&val);
  return ret;
}

/* tinygrad's diskcache_clear: drop every table of the current file */
static PyObject *py_diskcache_clear(PyObject *self, PyObject *unused) {
  UNUSED(self); UNUSED(unused);
  char *path = cache_path();
  if (!path) Py_RETURN_NONE;
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&cache_lock);
  close_db();
  delete_db_files(path);
  pthread_mutex_unlock(&cache_lock);
  Py_END_ALLOW_THREADS
  free(path);
  Py_RETURN_NONE;
}

static PyObject *py_diskcache_path(PyObject *self, PyObject *unused) {
  UNUSED(self); UNUSED(unused);
  char *path = cache_path();
  if (!path) Py_RETURN_NONE;
  PyObject *ret = PyUnicode_DecodeFSDefault(path);
  free(path);
  return ret;
}

static PyMethodDef diskcache_functions[] = {
  {"diskcache_get", py_diskcache_get, METH_VARARGS, "diskcache_get(table, key) -> bytes or None (a miss, or CACHELEVEL=0)"},
  {"diskcache_put", py_diskcache_put, METH_VARARGS, "diskcache_put(table, key, val: bytes) -> val"},
  {"diskcache_clear", py_diskcache_clear, METH_NOARGS, "delete the cache file"},
  {"diskcache_path", py_diskcache_path, METH_NOARGS, "the cache file's path as the environment sets it now"},
  {NULL, NULL, 0, NULL},
};

int tinyc_init_diskcache(PyObject *m) { return ctxvar_env(&cachelevel) < 0 ? -1 : PyModule_AddFunctions(m, diskcache_functions); }
