# viz_lib.bash - helpers shared by bench/viz.sh and bench/viz_cpu.sh (sourced; needs PY).
# SPDX-License-Identifier: BSD-3-Clause

# json FILE KEY: a number from pio-vizd's status file
json() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# delivered FILE SENT: wait until pio-vizd's status FILE counts SENT piece
# bytes received, or their count stands still for 3 s (60 s at most)
delivered() {
  local last=-1 b same=0 i
  for ((i = 0; i < 240; i++)); do
    b=$(json "$1" bytes 2>/dev/null) || b=0
    [ "$b" -ge "$2" ] && return 0
    if [ "$b" = "$last" ]; then same=$((same + 1)); else same=0; fi
    [ "$same" -ge 12 ] && return 0
    last=$b
    sleep 0.25
  done
}
