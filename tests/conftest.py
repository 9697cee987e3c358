"""Shared pytest fixtures."""
import os
import pytest
from sanitizer import import_quietly, leaks_unchecked
import_quietly("numpy")

@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
  """collecting imports the test modules: what CPython's compiler leaks doing it (a 64-byte constant key, under the
  sanitizer build) is not tinyc's; the tests themselves run with leak detection on"""
  with leaks_unchecked(): yield

@pytest.fixture(scope="module")
def cache_db(tmp_path_factory):
  """a compile cache file of the test module's own (TINYC_CACHEDB), so its counts of hits and compiles are its own"""
  path = str(tmp_path_factory.mktemp("tinyc_cache") / "cache.db")
  old = os.environ.get("TINYC_CACHEDB")
  os.environ["TINYC_CACHEDB"] = path
  yield path
  if old is None: del os.environ["TINYC_CACHEDB"]
  else: os.environ["TINYC_CACHEDB"] = old
