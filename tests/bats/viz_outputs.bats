#!/usr/bin/env bats
# viz_outputs.bats - pio-vizd's outputs without a simulation: PNG frames
# rendered offscreen, the live page (curl and headless Chromium), and the
# ZeroMQ event feed.
# SPDX-License-Identifier: BSD-3-Clause
#
# $PIO_BUILD/viz/test/viz_outputs_check drives the outputs with synthetic
# steps (a moving Gaussian blob). Rendering runs with DISPLAY unset, so the
# program starts (and stops) its own Xvfb through ensure_display. Pictures
# are compared with Debian's python3 (PIL, zmq): /usr/bin/python3, not the
# first python3 on PATH.

load "$BATS_TEST_DIRNAME/../lib/helpers"
case $PIO_BUILD in *asan*) export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 ;; esac

CHECK=$PIO_BUILD/viz/test/viz_outputs_check
PY=/usr/bin/python3

setup() {
  [ -x "$CHECK" ] || fail "$CHECK not built: run make"
}

teardown() {
  pio_cleanup
}

# serve SECONDS: the live page over a new frame every 250 ms; sets PORT,
# SERVE_PID, XVFB_PID and FRAMES
serve() {
  FRAMES=$BATS_TEST_TMPDIR/frames
  mkdir -p "$FRAMES"
  SERVE_LOG=$BATS_TEST_TMPDIR/serve.log
  SERVE_PID=$(pio_spawn "$SERVE_LOG" env -u DISPLAY "$CHECK" serve "$FRAMES" "$1")
  pio_wait_until 20 grep -q '^PORT ' "$SERVE_LOG" || { cat "$SERVE_LOG"; return 1; }
  PORT=$(awk '/^PORT /{print $2}' "$SERVE_LOG")
  XVFB_PID=$(awk '/^XVFB_PID /{print $2}' "$SERVE_LOG")
  pio_wait_until 10 test -s "$FRAMES/latest.png"
}

# shot URL FILE [chromium option...]: headless Chromium (as root: no sandbox)
shot() {
  local url=$1 file=$2 ud
  shift 2
  ud=$(mktemp -d "$BATS_TEST_TMPDIR/chromium.XXXXXX")
  timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --disable-background-networking --disable-component-update --disable-sync --no-first-run \
    --user-data-dir="$ud" --window-size=800,700 --virtual-time-budget=2000 "$@" \
    ${file:+--screenshot="$file"} "$url" </dev/null 2>"$ud.log"
}

# alive PID: the process runs (a zombie does not count)
alive() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $st != Z* ]]
}

status_step() {
  curl -sf "http://127.0.0.1:$PORT/status.json" | $PY -c 'import json,sys; print(json.load(sys.stdin)["last_step"])'
}

@test "PNG frames of double, float and int32 fields: right size, not blank, changing; own Xvfb stopped" {
  run timeout 90 env -u DISPLAY "$CHECK" render "$BATS_TEST_TMPDIR/png"
  echo "$output"
  assert_success
  assert_output --partial "OK render"
  refute_output --partial "FAIL"
  xvfb=$(awk '/^XVFB_PID /{print $2}' <<<"$output")
  [ -n "$xvfb" ]
  if alive "$xvfb"; then fail "Xvfb $xvfb still runs"; fi
  # an independent reader agrees on the files: 5 frames per set-up, sizes
  run $PY - "$BATS_TEST_TMPDIR/png" <<'PY'
import glob, os, sys
from PIL import Image, ImageStat
root = sys.argv[1]
for name, size in [("double-coolwarm-z", (640, 480)), ("float-viridis-x", (320, 240)),
                   ("int32-gray-y", (400, 300))]:
    frames = sorted(glob.glob(os.path.join(root, name, "frame_*.png")))
    names = [os.path.basename(f) for f in frames]
    assert names == ["frame_%06d.png" % s for s in (10, 13, 16, 19, 100)], names
    for f in frames + [os.path.join(root, name, "latest.png")]:
        im = Image.open(f)
        im.load()
        assert im.size == size, (f, im.size)
        sd = ImageStat.Stat(im.convert("L")).stddev[0]
        assert sd > 15, (f, sd)
    assert not [f for f in os.listdir(os.path.join(root, name)) if f.endswith(".tmp")]
print("OK files")
PY
  echo "$output"
  assert_success
  assert_output "OK files"
}

@test "PNG output with a DISPLAY nobody answers on: refused with a clear error, no abort" {
  run timeout 30 "$CHECK" bad-display "$BATS_TEST_TMPDIR"
  echo "$output"
  assert_success
  assert_output --partial "make_png_output: png: no X server answers on DISPLAY=:"
  assert_output --partial "OK bad-display"
  [ ! -e "$BATS_TEST_TMPDIR/never" ]
}

@test "live page over HTTP: the page, status.json, latest.png; 404 elsewhere, loopback only" {
  serve 30
  run curl -sf "http://127.0.0.1:$PORT/"
  assert_success
  assert_output --partial '<img id="frame" src="latest.png"'
  assert_output --partial 'fetch("status.json"'
  assert_output --partial 'steps/s'
  assert_output --partial 'dropped'
  run curl -sf "http://127.0.0.1:$PORT/status.json"
  assert_success
  echo "$output" | $PY -c 'import json,sys; s=json.load(sys.stdin); assert s["last_step"] >= 1 and "steps_per_second" in s and "steps_dropped" in s, s'
  curl -sf -D "$BATS_TEST_TMPDIR/h" -o "$BATS_TEST_TMPDIR/got.png" "http://127.0.0.1:$PORT/latest.png"
  grep -qi '^Content-Type: image/png' "$BATS_TEST_TMPDIR/h"
  $PY -c 'import sys; from PIL import Image; im=Image.open(sys.argv[1]); assert im.size == (640, 480), im.size' "$BATS_TEST_TMPDIR/got.png"
  # the frame's ETag: 304 when it is the same, a new one for a new frame
  etag=$(awk 'tolower($1)=="etag:"{print $2}' "$BATS_TEST_TMPDIR/h" | tr -d '\r')
  [ -n "$etag" ]
  run curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "http://127.0.0.1:$PORT/latest.png"
  [ "$output" = 304 ] || [ "$output" = 200 ] # 200 when a new frame came in between
  sleep 0.6
  etag2=$(curl -sfI "http://127.0.0.1:$PORT/latest.png" | awk 'tolower($1)=="etag:"{print $2}' | tr -d '\r')
  [ -n "$etag2" ]
  [ "$etag2" != "$etag" ]
  for path in /../etc/passwd /etc/passwd /latest.png/../../etc/passwd /frames /frame_000001.png \
    /%2e%2e/%2e%2e/etc/passwd /status.json/x; do
    run curl -s --path-as-is -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT$path"
    echo "$path -> $output"
    [ "$output" = 404 ]
  done
  run curl -s -o /dev/null -w '%{http_code}' -X POST -d x=1 "http://127.0.0.1:$PORT/"
  [ "$output" = 405 ]
  # bound to 127.0.0.1 only
  run bash -c "ss -ltnH 'sport = :$PORT' | awk '{print \$4}'"
  assert_output "127.0.0.1:$PORT"
  # the server and its Xvfb leave with the process (Xvfb: PR_SET_PDEATHSIG)
  pio_stop "$SERVE_PID" 5 || true
  [ -n "$XVFB_PID" ]
  pio_wait_until 5 bash -c "! ps -o stat= -p $XVFB_PID | grep -qv Z"
  run curl -s -o /dev/null "http://127.0.0.1:$PORT/"
  assert_failure
}

@test "live page in headless Chromium: it fills in the numbers and the image changes between two screenshots" {
  command -v chromium >/dev/null || fail "chromium not installed: run make deps"
  serve 40
  url=http://127.0.0.1:$PORT/
  # the page's script ran: numbers from status.json, the image reloaded by ETag
  run shot "$url" "" --dump-dom
  assert_success
  for re in '<b id="step">[0-9]+</b>' '<b id="rate">[0-9.]+</b>' '<b id="dropped">[0-9]+</b>' \
    'id="frame" src="[^"]*latest\.png\?v=' '<td>lag</td><td>0 1 0 2</td>' \
    '<td>outputs.png</td><td>name=png  policy=live  done=[0-9]+</td>'; do
    [[ $output =~ $re ]] || fail "the page's DOM has no match for $re"
  done
  s1=$(status_step)
  shot "$url" "$BATS_TEST_TMPDIR/shot1.png"
  sleep 1.5
  s2=$(status_step)
  shot "$url" "$BATS_TEST_TMPDIR/shot2.png"
  echo "steps $s1 -> $s2"
  [ "$s2" -gt "$s1" ]
  run $PY - "$BATS_TEST_TMPDIR/shot1.png" "$BATS_TEST_TMPDIR/shot2.png" <<'PY'
import sys
from PIL import Image, ImageChops
a, b = (Image.open(f).convert("RGB") for f in sys.argv[1:3])
assert a.size == b.size == (800, 700), (a.size, b.size)
# the frame sits at (17, 90)-(657, 570) on the page; look inside it, away
# from the page's own text (whose numbers change too)
box = (100, 150, 560, 500)
ra, rb = a.crop(box), b.crop(box)
for name, r in (("first", ra), ("second", rb)):
    colours = len(set(r.getdata()))
    print(name, "screenshot:", colours, "colours in the frame's area")
    assert colours > 200, "no rendered frame in the %s screenshot" % name
diff = sum(1 for p in ImageChops.difference(ra, rb).getdata() if max(p) > 16)
print("pixels that changed in the frame's area:", diff)
assert diff > 2000, "the image did not change"
print("OK screenshots")
PY
  echo "$output"
  assert_success
  assert_output --partial "OK screenshots"
}

# subscribe ENDPOINT N LOG: Debian's pyzmq subscriber in the background; it
# checks every event's JSON and prints OK or a failure
subscribe() {
  cat >"$BATS_TEST_TMPDIR/sub.py" <<'PY'
import json, sys, zmq
ep, n = sys.argv[1], int(sys.argv[2])
s = zmq.Context().socket(zmq.SUB)
s.setsockopt(zmq.SUBSCRIBE, b"step")
s.setsockopt(zmq.RCVTIMEO, 10000)
s.connect(ep)
print("ready", flush=True)
got, end = [], False
while not end:
    try:
        frames = s.recv_multipart()
    except zmq.Again:
        break
    assert len(frames) == 2 and frames[0] == b"step", frames
    ev = json.loads(frames[1].decode("utf-8"))
    if ev["output"] == "end":
        assert ev == {"step": n, "time": None, "output": "end", "paths": []}, ev
        end = True
        continue
    i = ev["step"]
    want = {"step": i, "time": i * 0.5, "output": 'png "q" \\ \u00e9\n\ufffd',
            "paths": ["/tmp/a b/frame_%d.png" % i, "tab\there"]}
    assert ev == want, (ev, want)
    got.append(i)
assert end, "no end event"
# a subscriber misses what was sent before it joined, nothing after
assert len(got) >= n // 3 and sorted(got) == list(range(min(got), n)), got
print("OK %d events, steps %d..%d" % (len(got), min(got), n - 1), flush=True)
PY
  pio_spawn "$3" timeout 30 $PY "$BATS_TEST_TMPDIR/sub.py" "$1" "$2" >/dev/null
}

@test "event feed over tcp: a SUB gets every step event after it joined, JSON escaped, from two threads" {
  port=$(pio_free_port)
  ep=tcp://127.0.0.1:$port
  log=$BATS_TEST_TMPDIR/sub.log
  subscribe "$ep" 60 "$log"
  pio_wait_until 10 grep -q ready "$log"
  run timeout 30 "$CHECK" publish "$ep" 60 20
  echo "$output"
  assert_success
  refute_output --partial FAIL
  pio_wait_until 15 grep -qE '^(OK|Traceback)' "$log"
  cat "$log"
  grep -q '^OK ' "$log"
}

@test "event feed over ipc://, and a clear error for an endpoint that cannot be bound" {
  ep=ipc://$BATS_TEST_TMPDIR/events.sock
  log=$BATS_TEST_TMPDIR/sub.log
  subscribe "$ep" 30 "$log"
  pio_wait_until 10 grep -q ready "$log"
  run timeout 30 "$CHECK" publish "$ep" 30 20
  echo "$output"
  assert_success
  pio_wait_until 15 grep -qE '^(OK|Traceback)' "$log"
  cat "$log"
  grep -q '^OK ' "$log"
  run timeout 10 "$CHECK" publish tcp://192.0.2.1:1 1 1
  assert_failure
  assert_output --partial "FAIL Publisher::open: events: cannot bind tcp://192.0.2.1:1: "
}
