"""onnxscope-gui in a real X window (Xvfb, the xcb platform, not offscreen):
open sample_cnn, run reference against cpu side by side, select a node, and
render the window to PNG. The PNG must have the asked size and real content
(many colours: the graph, the docks, the overlay), and the GUI must exit 0.

usage: check_gui_xvfb.py ONNXSCOPE_GUI MODEL WORKDIR
"""
import os
import struct
import subprocess
import sys
import zlib

gui, model, work = sys.argv[1:4]
out = os.path.join(work, "xvfb_window.png")
if os.path.exists(out):
    os.remove(out)
env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY")}
cmd = ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", gui, "--screenshot", out, "--size", "1400x900",
       "--select", "/features/features.4/Conv", "--engines", "reference,cpu", model]
p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
assert p.returncode == 0, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
data = open(out, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert (width, height) == (1400, 900), (width, height)
# Decode enough of the image to count colours (8-bit RGB/RGBA, no interlace).
bit_depth, colour_type = data[24], data[25]
idat = b""
pos = 8
while pos < len(data):
    length = struct.unpack(">I", data[pos:pos + 4])[0]
    kind = data[pos + 4:pos + 8]
    if kind == b"IDAT":
        idat += data[pos + 8:pos + 8 + length]
    pos += 12 + length
raw = zlib.decompress(idat)
channels = {2: 3, 6: 4}[colour_type]
stride = width * channels + 1
colours = set()
for y in range(0, height, 7):
    row = raw[y * stride + 1:(y + 1) * stride]  # filter bytes make values approximate; enough to count variety
    for x in range(0, width, 11):
        colours.add(bytes(row[x * channels:x * channels + 3]))
assert bit_depth == 8 and len(colours) > 50, (bit_depth, len(colours))
print(f"xvfb window rendered: {width}x{height}, {len(colours)} colours sampled")
