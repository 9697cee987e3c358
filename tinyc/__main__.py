"""python -m tinyc demo: the main job (see tinyc/demo.py).
python -m tinyc run script.py [args]: run an unmodified tinygrad script with the bridge installed (tinyc.tinygrad), as
`python -m cProfile script.py` runs one: the script is __main__, sees sys.argv = [script.py, args...] and its own folder
first on sys.path."""
import os, runpy, sys

USAGE = "usage: python -m tinyc demo | python -m tinyc run script.py [args]"

def run(script, args):
  import tinyc.tinygrad as bridge
  sys.argv[:] = [script, *args]
  sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
  with bridge.installed():
    try: runpy.run_path(script, run_name="__main__")
    finally:
      from tinygrad.helpers import DEBUG
      if DEBUG >= 2: print(f"tinyc bridge: {bridge.stats()}", file=sys.stderr)

def main(argv):
  if argv[1:] == ["demo"]:
    from tinyc import demo
    return demo.main()
  if len(argv) >= 3 and argv[1] == "run": return run(argv[2], argv[3:])
  raise SystemExit(USAGE)

main(sys.argv)
