"""Prints the directory under PREFIX (argv[1]) where this interpreter looks
for packages: the site/dist-packages entry of sys.path inside the prefix
with the fewest components (/usr -> /usr/lib/python3/dist-packages, not
/usr/local/...), or nothing. meson's own choice for Debian's interpreter
with prefix /usr/local, <prefix>/lib/python3/dist-packages, is not on its
sys.path; this is."""
import os
import sys

prefix = os.path.normpath(sys.argv[1])
found = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")
         and p.startswith(prefix.rstrip("/") + "/")]
if found:
    print(min(found, key=lambda p: len(os.path.relpath(p, prefix).split(os.sep))), end="")
