// outputs.h - pio-vizd's outputs and services beyond the archive (PNG
// frames, the live page, the event feed), as main (vizd.cpp) creates them.
// SPDX-License-Identifier: BSD-3-Clause
//
// Thread-safety: a PngOutput is driven by its Hub thread only; LivePage
// serves from libmicrohttpd's threads and calls status_json from them (it
// must be thread-safe); Publisher::event may be called from any thread.
#ifndef VIZD_OUTPUTS_H
#define VIZD_OUTPUTS_H

#include "vizd.h"

#include <vtkImageData.h>
#include <vtkSmartPointer.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>

namespace vizd
{

// vtk_image - a vtkImageData over a step's fields without copying them (the
// arrays point into the Step: keep the StepPtr alive while it is used).
// Defined in out_archive.cpp; for out_png.cpp too.
vtkSmartPointer<vtkImageData> vtk_image(const Step &s);

// ---- the archive: a time series ParaView opens (out_archive.cpp) ----
// DIR/NAME_000123.vti per step (the whole grid, raw appended binary) and
// DIR/NAME.pvd, rewritten (to a temporary name, then renamed) after each.
std::unique_ptr<Output> make_archive_output(const std::string &dir, const std::string &name,
                                            std::string *err);

// ---- PNG frames rendered offscreen (out_png.cpp) ----
struct PngOptions {
    std::string dir; // frames go to DIR/frame_000123.png, and DIR/latest.png
    int width = 640, height = 480;
    std::string field;                 // "" = the first field
    double iso = NAN;                  // isosurface value; NAN = the middle of the field's range
    char slice_axis = 'z';             // 'x', 'y' or 'z'; the slice goes through the middle
    std::string colormap = "coolwarm"; // "coolwarm", "viridis", "gray"
    double azimuth = 30, elevation = 20, zoom = 1.0;
    Policy policy = Policy::LIVE;
};
std::unique_ptr<Output> make_png_output(const PngOptions &o, std::string *err);

// ensure_display - VTK 9.1 on Debian renders through X only: when DISPLAY
// is unset, start Xvfb on a free display number and set DISPLAY. Returns
// the Xvfb pid to stop at exit (0: a display was there), or -1 with *err.
long ensure_display(std::string *err);
void stop_display(long pid);

// ---- the live page (http.cpp): GET / (the page), /latest.png, /status.json ----
class LivePage
{
  public:
    virtual ~LivePage() = default;
    // start - serve on 127.0.0.1:port; png_dir holds latest.png
    static std::unique_ptr<LivePage> start(int port, const std::string &png_dir,
                                           std::function<std::string()> status_json,
                                           std::string *err);
};

// ---- the event feed (pub.cpp): a ZeroMQ PUB, one message per step an output finished ----
class Publisher
{
  public:
    virtual ~Publisher() = default;
    static std::unique_ptr<Publisher> open(const std::string &endpoint, std::string *err);
    // event - topic "step", then a JSON body {"step":N,"time":T,"output":"...","paths":[...]}
    virtual void event(const std::string &output, const Step &s,
                       const std::vector<std::string> &paths) = 0;
};

} // namespace vizd

#endif
