"""tinygrad.helpers' getenv, ContextVar and Context, with tinygrad 0.12.0's meaning.

The switches tinyc's C code reads (SPEC, NOOPT, DEVECTORIZE, ...) are C integers registered in csrc/helpers/getenv.c
(EMULATE and CPU_CC, read when a renderer or device is made, are strings there): a ContextVar with one of those keys
reads and writes them, so `with Context(NOOPT=1): get_program(...)` is seen by the next C read, at the cost of
reading an int. As in tinygrad, the values are process-wide: a Context entered in
one thread is seen by every thread until it exits.
"""
from __future__ import annotations
import contextlib, functools, operator, os
from typing import Any, ClassVar
from tinyc import _C

@functools.cache
def getenv(key: str, default: Any = 0):
  """os.getenv(key) as type(default) (default itself when unset); cached per (key, default) as tinygrad's is:
  `getenv.cache_clear()` forgets"""
  raw = os.environ.get(key)
  return type(default)(default if raw is None else raw)

_NATIVE = frozenset(_C._ctxvar_keys())   # the keys tinyc's C reads: C integers, and the string switches among them
_NATIVE_TEXT = frozenset(_C._ctxvar_text_keys())

class ContextVar:
  """a named setting, from the environment at creation (getenv(key, default_value)); one per key"""
  _cache: ClassVar[dict[str, ContextVar]] = {}
  key: str

  def __init__(self, key: str, default_value: Any):
    if key in ContextVar._cache: raise RuntimeError(f"attempt to recreate ContextVar {key}")
    ContextVar._cache[key] = self
    self.key, self._native = key, key in _NATIVE
    if not self._native: self._value = getenv(key, default_value)   # a native key's value came from C's own read

  @property
  def value(self): return _C._ctxvar_get(self.key) if self._native else self._value
  @value.setter
  def value(self, v):
    if self._native: _C._ctxvar_set(self.key, v)
    else: self._value = v

  def _check(self, v):
    """the TypeError setting v would raise, before anything is set (C integers take ints only, string switches str)"""
    if self.key in _NATIVE_TEXT:
      if not isinstance(v, str): raise TypeError(f"ContextVar {self.key} is a string switch of tinyc, got {type(v).__name__}")
    elif self._native: operator.index(v)
  def _state(self): return _C._ctxvar_state(self.key) if self._native else self._value
  def _restore(self, state):
    if self._native: _C._ctxvar_set(self.key, state)   # None: unset again (the environment's value, as before)
    else: self._value = state

  def __bool__(self): return bool(self.value)
  def __eq__(self, x): return self.value == x
  def __ge__(self, x): return self.value >= x
  def __gt__(self, x): return self.value > x
  def __lt__(self, x): return self.value < x

class Context(contextlib.ContextDecorator):
  """`with Context(KEY=value, ...)`: set ContextVars for the block, restore them on exit (exception or not).
  An unknown key is tinygrad's KeyError; unlike tinygrad, nothing is set when a key or value is refused, and one
  Context object may be entered again while it is active (a decorated recursive function)."""
  def __init__(self, **kwargs): self.kwargs, self._saved = kwargs, []

  def __enter__(self):
    pairs = [(ContextVar._cache[k], v) for k, v in self.kwargs.items()]
    for var, v in pairs: var._check(v)
    self._saved.append([(var, var._state()) for var, _ in pairs])
    for var, v in pairs: var.value = v

  def __exit__(self, *args):
    for var, state in reversed(self._saved.pop()): var._restore(state)

def _cpu_count() -> int:
  return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))

# tinygrad 0.12.0's ContextVars: (module attribute, key, default). The defaults of the keys tinyc reads in C are C's.
_TINYGRAD_VARS = (
  ("DEBUG", "DEBUG", 0), ("IMAGE", "IMAGE", 0), ("BEAM", "BEAM", 0), ("NOOPT", "NOOPT", 0), ("JIT", "JIT", 1),
  ("JIT_BATCH_SIZE", "JIT_BATCH_SIZE", 32), ("WINO", "WINO", 0), ("CAPTURING", "CAPTURING", 1), ("TRACEMETA", "TRACEMETA", 1),
  ("USE_TC", "TC", 1), ("TC_SELECT", "TC_SELECT", -1), ("TC_OPT", "TC_OPT", 0), ("AMX", "AMX", 0),
  ("TRANSCENDENTAL", "TRANSCENDENTAL", 1), ("NOLOCALS", "NOLOCALS", 0), ("SPLIT_REDUCEOP", "SPLIT_REDUCEOP", 1),
  ("NO_MEMORY_PLANNER", "NO_MEMORY_PLANNER", 0), ("LRU", "LRU", 1), ("RING", "RING", 1), ("ALL2ALL", "ALL2ALL", 0),
  ("CACHELEVEL", "CACHELEVEL", 2), ("IGNORE_BEAM_CACHE", "IGNORE_BEAM_CACHE", 0), ("DEVECTORIZE", "DEVECTORIZE", 1),
  ("VALIDATE_WITH_CPU", "VALIDATE_WITH_CPU", 0), ("DISABLE_FAST_IDIV", "DISABLE_FAST_IDIV", 0),
  ("CORRECT_DIVMOD_FOLDING", "CORRECT_DIVMOD_FOLDING", 0), ("FUSE_OPTIM", "FUSE_OPTIM", 0),
  ("ALLOW_DEVICE_USAGE", "ALLOW_DEVICE_USAGE", 1), ("MAX_BUFFER_SIZE", "MAX_BUFFER_SIZE", 0), ("EMULATE", "EMULATE", ""),
  ("CPU_COUNT", "CPU_COUNT", _cpu_count()), ("CPU_LLVM", "CPU_LLVM", 0), ("CPU_LVP", "CPU_LVP", 0), ("AMD_LLVM", "AMD_LLVM", 0),
  ("NV_PTX", "NV_PTX", 0), ("CUDA_PTX", "CUDA_PTX", 0), ("NV_NAK", "NV_NAK", 0), ("QCOM_IR3", "QCOM_IR3", 0),
  ("NULL_IR3", "NULL_IR3", 0), ("NULL_NAK", "NULL_NAK", 0), ("AMD_CC", "AMD_CC", ""), ("CPU_CC", "CPU_CC", ""),
  ("NV_CC", "NV_CC", ""), ("CUDA_CC", "CUDA_CC", ""), ("QCOM_CC", "QCOM_CC", ""), ("VIZ", "VIZ", 0), ("SPEC", "SPEC", 1),
  ("IGNORE_OOB", "IGNORE_OOB", 1), ("PCONTIG", "PCONTIG", 0), ("DEBUG_RANGEIFY", "DEBUG_RANGEIFY", 0),
  ("TUPLE_ORDER", "TUPLE_ORDER", 1), ("CCACHE", "CCACHE", 1), ("ALLOW_TF32", "ALLOW_TF32", 0),
)
for _attr, _key, _default in _TINYGRAD_VARS: globals()[_attr] = ContextVar(_key, _default)
PROFILE = ContextVar("PROFILE", abs(ContextVar._cache["VIZ"].value))
for _key in sorted(_NATIVE - ContextVar._cache.keys()): globals()[_key] = ContextVar(_key, 0)   # C-only switches
del _attr, _key, _default

# ---- follow_tinygrad: tinyc's values follow tinygrad.helpers' ContextVars ----

_MISSING = object()
_followed: Any = None          # (tinygrad's ContextVar class, what its class dict held under "value") while following

def _mirror(key: str, v):
  mine = ContextVar._cache.get(key)
  if mine is not None: mine.value = v

def _tg_value_property():
  """a data descriptor for tinygrad's ContextVar.value: the value stays in the instance dict (where tinygrad keeps it,
  so removing the descriptor leaves tinygrad as it was), and every set is copied to tinyc's ContextVar of the key"""
  def get(var): return var.__dict__["value"]
  def set_(var, v):
    key = var.__dict__.get("key")   # tinygrad's __init__ sets value before key: a new key is none of tinyc's
    if key is not None: _mirror(key, v)
    var.__dict__["value"] = v
  return property(get, set_)

def follow_tinygrad(enable: bool = True) -> None:
  """enable: every value tinygrad.helpers' ContextVars take (its Context, or `NOOPT.value = 1`) is also set on tinyc's
  ContextVar of the same key, starting from tinygrad's current values. disable: tinygrad's ContextVar is as it was;
  tinyc keeps the values it has. Imports tinygrad (only when enabling): this is the bridge's hook."""
  global _followed
  if not enable:
    if _followed is None: return
    cls, old = _followed
    if old is _MISSING: del cls.value
    else: cls.value = old
    _followed = None
    return
  if _followed is not None: return
  from tinygrad.helpers import ContextVar as TgContextVar
  for key, var in TgContextVar._cache.items():
    mine = ContextVar._cache.get(key)
    if mine is not None and mine.value != var.value: mine.value = var.value
  _followed = (TgContextVar, TgContextVar.__dict__.get("value", _MISSING))
  TgContextVar.value = _tg_value_property()
