"""python -m tinyc demo: the main job (see tinyc/demo.py)."""
import sys

def main(argv):
  if argv[1:] != ["demo"]: raise SystemExit("usage: python -m tinyc demo")
  from tinyc import demo
  demo.main()

main(sys.argv)
