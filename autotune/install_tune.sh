#!/bin/sh
# meson install hook (-Dtune_on_install=true): tune this machine quickly and
# write the winners into the system table the library reads from
# <prefix>/share/tessera. Honours DESTDIR, as packagers stage with it; a
# failed tune is reported and does not fail the install (the library runs on
# its heuristics without a table).
set -u
tune="$1"
table_dir="${DESTDIR:-}$2"
mkdir -p "$table_dir" || exit 0
echo "tessera: tuning this machine into $table_dir (tessera-tune --quick)"
"$tune" --quick --out "$table_dir" || echo "tessera: tessera-tune exited $?; the library will use its heuristics"
exit 0
