"""Shared pytest fixtures."""
import os
import pytest
from sanitizer import import_quietly
import_quietly("numpy")

@pytest.fixture(scope="module")
def cache_db(tmp_path_factory):
  """a compile cache file of the test module's own (TINYC_CACHEDB), so its counts of hits and compiles are its own"""
  path = str(tmp_path_factory.mktemp("tinyc_cache") / "cache.db")
  old = os.environ.get("TINYC_CACHEDB")
  os.environ["TINYC_CACHEDB"] = path
  yield path
  if old is None: del os.environ["TINYC_CACHEDB"]
  else: os.environ["TINYC_CACHEDB"] = old
