"""The C core's layers go one way (DESIGN.md): helpers -> dtype -> uop -> schedule, codegen -> renderers -> device,
devices -> engine -> module. No file may include, declare or call anything of a layer above its own. These tests read
csrc/ as text: its `#include "..."` lines, the functions each file defines and declares, and the global names each file
uses. `python tests/test_layers.py` prints the cycles of the include graph and of the reference graph (file -> the files
defining the globals it uses)."""
import pathlib, re, sys
import pytest

CSRC = pathlib.Path(__file__).resolve().parent.parent / "csrc"
LAYERS = ("helpers", "dtype", "uop", "schedule, codegen", "renderers", "get_program", "device", "engine", "module")
# the first part of a path under csrc/ -> its layer (runtime/ is being renamed devices/: both are the device layer)
LAYER_OF = {"helpers": 0, "tinyc.h": 0, "helpers.h": 0, "dtype.c": 1, "dtype.h": 1, "uop": 2, "mixin": 2, "schedule": 3,
            "codegen": 3, "renderers": 4, "device.c": 6, "device.h": 6, "runtime": 6, "devices": 6, "engine": 7, "module.c": 8}

# Up-references kept for now, each (file, the header or global name it reaches up for). test_allow_list_is_needed fails
# on an entry whose reference is gone, so each goes as soon as it is fixed.
ALLOWED_UP: set = set()

# get_program (tinygrad's codegen/__init__.py) imports Renderer and ProgramSpec from renderer/, which itself imports
# codegen/opt: codegen/codegen.c sits above the renderers, the rest of codegen below them, as in tinygrad
LAYER_OF.update({"codegen/codegen.c": 5, "codegen/codegen.h": 5})
# BEAM (tinygrad's codegen/opt/search.py) times candidates with CompiledRunner: it imports engine.realize, so it sits on
# the engine's layer; apply_opts reaches it through a hook it sets at init, as tinygrad's apply_opts imports it lazily
LAYER_OF.update({"codegen/opt/search.c": 7, "codegen/opt/search.h": 7})

def layer(rel: str) -> int:
  return LAYER_OF.get(rel, LAYER_OF[rel.split("/")[0]])

def source_files():
  return sorted(p.relative_to(CSRC).as_posix() for p in CSRC.rglob("*") if p.suffix in (".c", ".h"))

def strip_comments(text: str) -> str:
  """text without comments and string or char literals (blanked, so offsets and line numbers stay)"""
  def blank(m): return re.sub(r"[^\n]", " ", m.group(0))
  return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text, flags=re.S)

def strip_preprocessor(text: str) -> str:
  """text with its preprocessor lines (and their continuations) blanked"""
  return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.M)

def depth_zero(text: str):
  """a mask: True where the text is outside every {} block"""
  depth, mask = 0, []
  for ch in text:
    if ch == "}": depth -= 1
    mask.append(depth == 0)
    if ch == "{": depth += 1
  return mask

# a function's head at the start of a line, up to its parameter list: `static PyObject *name(` (the project's style)
FUNC = re.compile(r"^(?P<head>[A-Za-z_][\w \t\*]*?)\b(?P<name>[A-Za-z_]\w*)[ \t]*\((?P<params>[^;{}]*?)\)\s*(?P<end>[;{])", re.M | re.S)
# a file-scope variable declaration or definition: `[extern] Type *a[N] = ..., b;` (names up to the first `=`)
VARS = re.compile(r"^(?P<head>(?:(?:static|extern|const)[ \t]+)*[A-Za-z_]\w*)[ \t]+(?P<names>[\w \t\*,\[\]]+?)\s*[=;]", re.M)
# a function-like macro whose body defines a function named after an argument: `#define NUM2(name, expr) PyObject *name(...`
MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<macro>\w+)\((?P<params>[^)]*)\)(?P<body>(?:[^\n]*\\\n)*[^\n]*)", re.M)
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "typedef"}
NOT_TYPES = {"return", "typedef", "struct", "enum", "union", "goto", "case", "else"}

class Unit:
  """One file's includes, the global functions and variables it defines, and what it declares without defining."""
  def __init__(self, rel: str):
    self.rel = rel
    raw = (CSRC / rel).read_text()
    here = pathlib.PurePosixPath(rel).parent
    self.includes = [normalize(here / m) for m in re.findall(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', raw, re.M)]
    uncommented = strip_comments(raw)
    text = strip_preprocessor(uncommented)
    top = depth_zero(text)
    self.defines, self.statics, self.declares = set(), set(), set()   # global definitions, file-local ones, prototypes/externs
    def add(name, static, definition):
      (self.statics if static else self.defines if definition else self.declares).add(name)
    for m in FUNC.finditer(text):
      head, name = m.group("head").split(), m.group("name")
      if top[m.start()] and name not in KEYWORDS and "typedef" not in head: add(name, "static" in head, m.group("end") == "{")
    for m in VARS.finditer(text):
      head = m.group("head").split()
      if not top[m.start()] or head[-1] in NOT_TYPES: continue
      for decl in m.group("names").split(","):
        if (names := re.findall(r"[A-Za-z_]\w*", re.sub(r"\[[^\]]*\]", "", decl))):
          add(names[-1], "static" in head, "extern" not in head and rel.endswith(".c"))
    for m in MACRO.finditer(uncommented):
      self._macro_functions(m, text, top, add)
    self.idents = set(re.findall(r"[A-Za-z_]\w*", text))

  @staticmethod
  def _macro_functions(m, text, top, add):
    """the functions a macro's invocations at file scope define, named by pasting its arguments into the body's name"""
    body, params = m.group("body").replace("\\\n", " "), [p.strip() for p in m.group("params").split(",")]
    f = re.match(r"\s*(?P<head>[A-Za-z_][\w \t\*]*?)\b(?P<name>[\w#]+)\s*\([^{}]*\)\s*\{", body)
    if not f or not any(p in re.findall(r"\w+", f.group("name")) for p in params): return
    for inv in re.finditer(rf"^{m.group('macro')}\((?P<args>[^\n]*)\)", text, re.M):
      if not top[inv.start()]: continue
      args = [a.strip() for a in inv.group("args").split(",")]
      name = re.sub(r"\w+", lambda t: args[params.index(t.group(0))] if t.group(0) in params else t.group(0), f.group("name"))
      add(name.replace("##", "").replace(" ", ""), "static" in f.group("head").split(), True)

def normalize(path: pathlib.PurePosixPath) -> str:
  parts = []
  for p in path.parts:
    if p == "..": parts.pop()
    elif p != ".": parts.append(p)
  return "/".join(parts)

def load():
  units = {rel: Unit(rel) for rel in source_files()}
  owner = {}   # global name -> the .c file defining it
  for u in units.values():
    for name in u.defines: owner.setdefault(name, u.rel)
  return units, owner

def uses(u, owner):
  """the globals of other files a file uses: a name it defines itself, statically or not, is its own, and what a header
  declares is checked apart (test_headers_declare_their_own_layer)"""
  own = u.defines | u.statics | (u.declares if u.rel.endswith(".h") else set())
  return {n for n in u.idents - own if n in owner and owner[n] != u.rel}

def references(units, owner):
  """file -> the files defining the globals it uses"""
  return {u.rel: {owner[n] for n in uses(u, owner)} for u in units.values()}

@pytest.fixture(scope="module")
def tree(): return load()

def test_every_file_has_a_layer():
  unplaced = [rel for rel in source_files() if rel.split("/")[0] not in LAYER_OF]
  assert not unplaced, f"place these files in LAYER_OF: {unplaced}"

def test_includes_go_down(tree):
  units, _ = tree
  bad = [f"{u.rel} ({LAYERS[layer(u.rel)]}) includes {inc} ({LAYERS[layer(inc)]})"
         for u in units.values() for inc in u.includes if layer(inc) > layer(u.rel) and (u.rel, inc) not in ALLOWED_UP]
  assert not bad, "\n".join(bad)

def test_includes_exist(tree):
  units, _ = tree
  missing = [f"{u.rel}: {inc}" for u in units.values() for inc in u.includes if inc not in units]
  assert not missing, "\n".join(missing)

def test_mixin_below_uop(tree):
  """tinygrad's mixins are bases of UOp: they know it only through the interface UOp fills in (mixin/*.h), and need of
  uop/ only the Ops list (ops_enum.h: tinygrad's mixins import tinygrad.uop.Ops)"""
  units, owner = tree
  mixin = [u for u in units.values() if u.rel.startswith("mixin/")]
  bad = [f"{u.rel} includes {inc}" for u in mixin for inc in u.includes if inc.startswith("uop/") and inc != "uop/ops_enum.h"]
  bad += [f"{u.rel} uses {n} of {owner[n]}" for u in mixin for n in sorted(uses(u, owner))
          if owner[n].startswith("uop/") and owner[n] != "uop/ops_enum.c"]
  assert not bad, "\n".join(bad)

def test_no_local_prototypes_of_other_files(tree):
  """a function or variable of another file comes from that file's header, never from a prototype of one's own"""
  units, owner = tree
  bad = [f"{u.rel} declares {n}, defined in {owner[n]}" for u in units.values() if u.rel.endswith(".c")
         for n in sorted(u.declares) if n in owner and owner[n] != u.rel]
  assert not bad, "\n".join(bad)

def test_headers_declare_their_own_layer(tree):
  """a header declares only what its own layer defines: a lower file can not see a higher one's functions through it"""
  units, owner = tree
  bad = [f"{u.rel} ({LAYERS[layer(u.rel)]}) declares {n}, defined in {owner[n]} ({LAYERS[layer(owner[n])]})"
         for u in units.values() if u.rel.endswith(".h") for n in sorted(u.declares)
         if n in owner and layer(owner[n]) != layer(u.rel) and (u.rel, n) not in ALLOWED_UP]
  assert not bad, "\n".join(bad)

def test_allow_list_is_needed(tree):
  """each allowed exception still exists (an entry whose violation is gone is stale)"""
  units, owner = tree
  stale = [e for e in sorted(ALLOWED_UP) if e[1] not in units[e[0]].includes and e[1] not in units[e[0]].idents]
  assert not stale, f"remove from ALLOWED_UP: {stale}"

def test_no_calls_up(tree):
  """no file uses a global (function or variable) defined in a layer above its own"""
  units, owner = tree
  bad = [f"{rel} ({LAYERS[layer(rel)]}) uses {n} of {owner[n]} ({LAYERS[layer(owner[n])]})"
         for rel, u in units.items() for n in sorted(uses(u, owner)) if layer(owner[n]) > layer(rel) and (rel, n) not in ALLOWED_UP]
  assert not bad, "\n".join(bad)

def test_the_checks_see_the_code(tree):
  """the parser finds what it must, so that the checks above are not vacuous"""
  units, owner = tree
  assert owner["uop_new"] == "uop/ops.c" and owner["UOp_Type"] == "uop/ops.c" and owner["tinyc_init_dtype"] == "dtype.c"
  assert "uop_new" in units["uop/uop.h"].declares and "UOp_Type" in units["uop/uop.h"].declares
  assert "uop/uop.h" in units["uop/ops.c"].includes and "uop/ops.c" in references(units, owner)["codegen/codegen.c"]
  assert owner["n_add"] == "uop/native.c" and owner["stat_programs_loaded"] == "device.c"   # made by a macro; one of a list
  assert "stat_programs_loaded" in units["device.h"].declares and "ops_members" in units["uop/ops_enum.h"].declares
  assert len(owner) > 200

# ---- the report: strongly connected components (Tarjan's algorithm) ----

def cycles(graph):
  """the strongly connected components of more than one node, largest first"""
  index, low, stack, on, out = {}, {}, [], set(), []
  def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v); on.add(v)
    for w in graph.get(v, ()):
      if w not in index: visit(w); low[v] = min(low[v], low[w])
      elif w in on: low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      comp = []
      while True:
        w = stack.pop(); on.discard(w); comp.append(w)
        if w == v: break
      if len(comp) > 1: out.append(sorted(comp))
  sys.setrecursionlimit(10000)
  for v in sorted(graph):
    if v not in index: visit(v)
  return sorted(out, key=len, reverse=True)

def report():
  units, owner = load()
  graphs = {"include graph": {u.rel: set(u.includes) for u in units.values()}, "reference graph": references(units, owner)}
  for name, g in graphs.items():
    comps = cycles(g)
    print(f"{name}: {len(comps)} cycles (strongly connected components of >1 file)")
    for c in comps:
      print(f"  {len(c)} files, layers {sorted({LAYERS[layer(f)] for f in c})}: {' '.join(c)}")

if __name__ == "__main__":
  report()
