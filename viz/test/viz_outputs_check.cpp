// viz_outputs_check.cpp - drives pio-vizd's PNG output, live page and event
// feed without a simulation, for tests/bats/viz_outputs.bats.
// SPDX-License-Identifier: BSD-3-Clause
//
//   viz_outputs_check render DIR      frames of a moving Gaussian blob in
//                                     three set-ups (double/coolwarm/z,
//                                     float/viridis/x, int32/gray/y), each
//                                     checked: size, not blank, changing
//   viz_outputs_check bad-display     DISPLAY names a dead server: the PNG
//                                     output refuses, nothing aborts
//   viz_outputs_check serve DIR SEC   the live page on a free port (printed
//                                     as "PORT n"), a new frame every 250 ms
//   viz_outputs_check publish ENDPOINT N MS   N events, one every MS ms
// Each check that fails prints "FAIL ..."; the exit status is 1 then.
// Rendering starts its own Xvfb when DISPLAY is unset (ensure_display).
#include "outputs.h"

#include <vtkImageData.h>
#include <vtkNew.h>
#include <vtkPNGReader.h>
#include <vtkPointData.h>
#include <vtkUnsignedCharArray.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace vizd;

static int fails = 0;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fails++;                                                                               \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                 \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

static double mono()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// blob - a Gaussian of width 0.15 centred at (cx, 0.5, 0.5) in the unit
// cube, plus a gentle wave, on an n^3 grid, as type
static StepPtr blob(uint64_t step, int n, double cx, int type)
{
    auto s = std::make_shared<Step>();
    s->step = step;
    s->time = 0.25 * (double)step;
    for (int i = 0; i < 3; i++) {
        s->grid.dims[i] = (uint64_t)n;
        s->grid.origin[i] = 0;
        s->grid.spacing[i] = 1.0 / (n - 1);
    }
    Field f;
    f.name = "temperature";
    f.type = type;
    size_t np = (size_t)n * n * n, es = type == PIO_DOUBLE ? 8 : 4;
    f.data.resize(np * es);
    for (int k = 0; k < n; k++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                double x = (double)i / (n - 1), y = (double)j / (n - 1), z = (double)k / (n - 1);
                double r2 = (x - cx) * (x - cx) + (y - 0.5) * (y - 0.5) + (z - 0.5) * (z - 0.5);
                double v = std::exp(-r2 / (2 * 0.15 * 0.15)) + 0.1 * std::sin(6 * y + 4 * z);
                size_t at = ((size_t)k * n + j) * n + i;
                if (type == PIO_DOUBLE) {
                    memcpy(&f.data[at * 8], &v, 8);
                } else if (type == PIO_FLOAT) {
                    float fv = (float)v;
                    memcpy(&f.data[at * 4], &fv, 4);
                } else {
                    int32_t iv = (int32_t)std::lround(v * 1000);
                    memcpy(&f.data[at * 4], &iv, 4);
                }
            }
    s->bytes = f.data.size();
    s->fields.push_back(std::move(f));
    return s;
}

static std::string slurp(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Pixels {
    int w = 0, h = 0, comps = 0;
    std::vector<uint8_t> rgb; // w * h * 3
};

static bool read_png(const std::string &path, Pixels *px)
{
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || st.st_size == 0)
        return false;
    vtkNew<vtkPNGReader> r;
    if (!r->CanReadFile(path.c_str()))
        return false;
    r->SetFileName(path.c_str());
    r->Update();
    vtkImageData *im = r->GetOutput();
    int d[3];
    im->GetDimensions(d);
    auto *a = vtkUnsignedCharArray::SafeDownCast(im->GetPointData()->GetScalars());
    if (!a)
        return false;
    px->w = d[0], px->h = d[1], px->comps = a->GetNumberOfComponents();
    px->rgb.resize((size_t)d[0] * d[1] * 3);
    for (vtkIdType p = 0; p < (vtkIdType)d[0] * d[1]; p++)
        for (int c = 0; c < 3; c++)
            px->rgb[(size_t)p * 3 + c] = a->GetValue(p * px->comps + std::min(c, px->comps - 1));
    return true;
}

// stats - the standard deviation of luminance (0..255) and distinct colours
static void stats(const Pixels &px, double *sd, size_t *colours)
{
    std::set<uint32_t> cs;
    double sum = 0, sum2 = 0;
    size_t n = (size_t)px.w * px.h;
    for (size_t p = 0; p < n; p++) {
        const uint8_t *c = &px.rgb[p * 3];
        double l = 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];
        sum += l, sum2 += l * l;
        cs.insert((uint32_t)c[0] << 16 | (uint32_t)c[1] << 8 | c[2]);
    }
    double m = sum / (double)n;
    *sd = std::sqrt(std::max(0.0, sum2 / (double)n - m * m));
    *colours = cs.size();
}

static size_t differing(const Pixels &a, const Pixels &b)
{
    if (a.w != b.w || a.h != b.h)
        return (size_t)-1;
    size_t d = 0;
    for (size_t p = 0; p < (size_t)a.w * a.h; p++)
        if (memcmp(&a.rgb[p * 3], &b.rgb[p * 3], 3) != 0)
            d++;
    return d;
}

static long display_or_die()
{
    std::string err;
    long pid = ensure_display(&err);
    if (pid < 0) {
        printf("FAIL ensure_display: %s\n", err.c_str());
        exit(1);
    }
    printf("display %s (%s)\n", getenv("DISPLAY"), pid ? "own Xvfb" : "existing");
    if (pid > 0)
        printf("XVFB_PID %ld\n", pid);
    fflush(stdout);
    return pid;
}

// ---- render ----
struct Setup {
    const char *name;
    int type;
    const char *colormap;
    char axis;
    int w, h;
};

static void render_setup(const std::string &root, const Setup &su)
{
    PngOptions o;
    o.dir = root + "/" + su.name;
    o.width = su.w, o.height = su.h;
    o.colormap = su.colormap;
    o.slice_axis = su.axis;
    std::string err;
    auto out = make_png_output(o, &err);
    CHECK(out, "%s: make_png_output: %s", su.name, err.c_str());
    if (!out)
        return;
    CHECK(out->policy() == Policy::LIVE, "%s: default policy is not LIVE", su.name);
    Pixels prev;
    std::vector<double> ms;
    const int steps = 4;
    for (int i = 0; i < steps; i++) {
        uint64_t step = 10 + (uint64_t)i * 3;
        StepPtr s = blob(step, 48, 0.3 + 0.12 * i, su.type);
        double t0 = mono();
        bool ok = out->consume(s);
        ms.push_back((mono() - t0) * 1000);
        CHECK(ok, "%s: consume(step %llu) failed", su.name, (unsigned long long)step);
        char frame[64];
        snprintf(frame, sizeof frame, "/frame_%06llu.png", (unsigned long long)step);
        std::string path = o.dir + frame;
        auto lp = out->last_paths();
        CHECK(lp.size() == 1 && lp[0] == path, "%s: last_paths() is not {%s}", su.name,
              path.c_str());
        Pixels px;
        CHECK(read_png(path, &px), "%s: %s is missing or not a PNG", su.name, path.c_str());
        CHECK(px.w == su.w && px.h == su.h, "%s: %s is %dx%d, not %dx%d", su.name, path.c_str(),
              px.w, px.h, su.w, su.h);
        double sd;
        size_t colours;
        stats(px, &sd, &colours);
        printf("%s step %llu: %dx%d, luminance sd %.1f, %zu colours, %.1f ms\n", su.name,
               (unsigned long long)step, px.w, px.h, sd, colours, ms.back());
        CHECK(sd > 15, "%s: %s looks blank (luminance sd %.2f)", su.name, path.c_str(), sd);
        CHECK(colours > 200, "%s: %s has only %zu colours", su.name, path.c_str(), colours);
        CHECK(slurp(o.dir + "/latest.png") == slurp(path),
              "%s: latest.png is not step %llu's frame", su.name, (unsigned long long)step);
        if (i > 0) {
            size_t d = differing(prev, px);
            CHECK(d != (size_t)-1 && d > (size_t)px.w * px.h / 100,
                  "%s: frame of step %llu hardly differs from the one before (%zu pixels)", su.name,
                  (unsigned long long)step, d);
        }
        prev = std::move(px);
    }
    CHECK(access((o.dir + "/.latest.png.tmp").c_str(), F_OK) != 0, "%s: a temporary file is left",
          su.name);
    std::sort(ms.begin() + 1, ms.end());
    double med = ms[1 + (ms.size() - 1) / 2];
    printf("%s: first frame %.1f ms (builds the pipeline), then median %.1f ms\n", su.name, ms[0],
           med);
    CHECK(med < 2000, "%s: a frame takes %.0f ms", su.name, med);

    // bad steps: consume says no, writes nothing, and the output goes on
    auto wrong = std::make_shared<Step>(*blob(99, 8, 0.5, su.type));
    wrong->fields[0].name = "pressure";
    PngOptions o2 = o;
    o2.field = "temperature";
    auto out2 = make_png_output(o2, &err);
    CHECK(out2 && !out2->consume(wrong), "%s: a step without the field was drawn", su.name);
    auto shortf = std::make_shared<Step>(*blob(98, 8, 0.5, su.type));
    shortf->fields[0].data.resize(shortf->fields[0].data.size() - 4);
    CHECK(!out->consume(shortf), "%s: a field of the wrong size was drawn", su.name);
    CHECK(access((o.dir + "/frame_000098.png").c_str(), F_OK) != 0 &&
              access((o.dir + "/frame_000099.png").c_str(), F_OK) != 0,
          "%s: a frame was written for a bad step", su.name);
    CHECK(out->consume(blob(100, 16, 0.5, su.type)), "%s: a smaller grid after a bad step failed",
          su.name);
    Pixels px;
    CHECK(read_png(o.dir + "/frame_000100.png", &px) && px.w == su.w,
          "%s: no frame for the smaller grid", su.name);
}

static int cmd_render(const std::string &root)
{
    long pid = display_or_die();
    std::string err;
    PngOptions bad;
    bad.dir = root + "/bad";
    bad.colormap = "rainbow";
    CHECK(!make_png_output(bad, &err) && err.find("colour map 'rainbow'") != std::string::npos,
          "an unknown colour map: %s", err.c_str());
    bad.colormap = "gray";
    bad.slice_axis = 'w';
    CHECK(!make_png_output(bad, &err) && err.find("slice axis") != std::string::npos,
          "an unknown axis: %s", err.c_str());
    bad.slice_axis = 'z';
    bad.width = 0;
    CHECK(!make_png_output(bad, &err) && err.find("width and height") != std::string::npos,
          "a zero width: %s", err.c_str());

    const Setup setups[] = {{"double-coolwarm-z", PIO_DOUBLE, "coolwarm", 'z', 640, 480},
                            {"float-viridis-x", PIO_FLOAT, "viridis", 'x', 320, 240},
                            {"int32-gray-y", PIO_INT32, "gray", 'y', 400, 300}};
    for (const Setup &su : setups)
        render_setup(root, su);

    if (pid > 0) {
        stop_display(pid);
        CHECK(kill((pid_t)pid, 0) != 0 && errno == ESRCH, "Xvfb %ld still runs after stop_display",
              pid);
        CHECK(getenv("DISPLAY") == nullptr, "DISPLAY is still set after stop_display");
    }
    if (fails == 0)
        printf("OK render\n");
    return fails ? 1 : 0;
}

// ---- bad-display ----
static int cmd_bad_display(const std::string &root)
{
    int n = 0;
    for (n = 4321; n < 4400; n++) {
        char lock[40];
        snprintf(lock, sizeof lock, "/tmp/.X11-unix/X%d", n);
        if (access(lock, F_OK) != 0)
            break;
    }
    std::string d = ":" + std::to_string(n);
    setenv("DISPLAY", d.c_str(), 1);
    PngOptions o;
    o.dir = root + "/never";
    std::string err;
    auto out = make_png_output(o, &err);
    CHECK(!out, "a PNG output was made with DISPLAY=%s", d.c_str());
    CHECK(err.find("no X server answers on DISPLAY=" + d) != std::string::npos, "error was: %s",
          err.c_str());
    printf("make_png_output: %s\n", err.c_str());
    unsetenv("DISPLAY");
    err.clear();
    CHECK(!make_png_output(o, &err) && err.find("DISPLAY is not set") != std::string::npos,
          "without DISPLAY: %s", err.c_str());
    if (fails == 0)
        printf("OK bad-display\n");
    return fails ? 1 : 0;
}

// ---- serve ----
static int cmd_serve(const std::string &dir, double seconds)
{
    long pid = display_or_die();
    PngOptions o;
    o.dir = dir;
    std::string err;
    auto out = make_png_output(o, &err);
    if (!out) {
        printf("FAIL make_png_output: %s\n", err.c_str());
        stop_display(pid);
        return 1;
    }
    std::mutex mtx;
    uint64_t cur_step = 0, dropped = 0;
    double t_start = mono(), cur_time = 0;
    auto status = [&]() {
        std::lock_guard<std::mutex> g(mtx);
        double el = mono() - t_start;
        // the keys pio-vizd's status has
        char b[512];
        snprintf(b, sizeof b,
                 "{\"last_step\":%llu,\"time\":%g,\"steps_per_second\":%.3f,"
                 "\"steps_dropped\":%llu,\"grid\":[40,40,40],\"lag\":[0,1,0,2],"
                 "\"outputs\":[{\"name\":\"png\",\"policy\":\"live\",\"done\":%llu,"
                 "\"paths\":[\"%s/frame_%06llu.png\"]}]}",
                 (unsigned long long)cur_step, cur_time, el > 0 ? (double)cur_step / el : 0.0,
                 (unsigned long long)dropped, (unsigned long long)cur_step, dir.c_str(),
                 (unsigned long long)cur_step);
        return std::string(b);
    };
    std::unique_ptr<LivePage> page;
    int port = 0;
    srand((unsigned)getpid());
    for (int i = 0; i < 30 && !page; i++) {
        port = 20000 + rand() % 40000;
        page = LivePage::start(port, dir, status, &err);
    }
    if (!page) {
        printf("FAIL LivePage::start: %s\n", err.c_str());
        stop_display(pid);
        return 1;
    }
    // a second page on the same port must be refused with a clear error
    auto again = LivePage::start(port, dir, status, &err);
    CHECK(!again && err.find("127.0.0.1:" + std::to_string(port)) != std::string::npos,
          "a second server on port %d: %s", port, err.c_str());
    printf("PORT %d\n", port);
    fflush(stdout);
    double end = mono() + seconds;
    for (uint64_t step = 1; mono() < end; step++) {
        // the blob sweeps x over 40 steps (10 s): frames some seconds
        // apart always differ
        double cx = 0.2 + 0.6 * (double)(step % 40) / 40;
        StepPtr s = blob(step, 40, cx, PIO_DOUBLE);
        if (!out->consume(s))
            fails++;
        {
            std::lock_guard<std::mutex> g(mtx);
            cur_step = step;
            cur_time = s->time;
            dropped = step / 3;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    page.reset();
    out.reset();
    stop_display(pid);
    return fails ? 1 : 0;
}

// ---- publish ----
static int cmd_publish(const std::string &endpoint, int n, int ms)
{
    std::string err;
    auto pub = Publisher::open(endpoint, &err);
    if (!pub) {
        printf("FAIL Publisher::open: %s\n", err.c_str());
        return 1;
    }
    // a second bind to the same endpoint must fail with a clear error
    auto again = Publisher::open(endpoint, &err);
    CHECK(!again && err.find("cannot bind " + endpoint) != std::string::npos,
          "a second PUB on %s: %s", endpoint.c_str(), err.c_str());
    printf("bound %s\n", endpoint.c_str());
    fflush(stdout);
    // two threads publish at once (event() is thread-safe): odd and even steps
    auto run = [&](int parity) {
        for (int i = parity; i < n; i += 2) {
            Step s;
            s.step = (uint64_t)i;
            s.time = i * 0.5;
            std::string name = std::string("png \"q\" \\ \xc3\xa9\n") + "\xff";
            pub->event(name, s, {"/tmp/a b/frame_" + std::to_string(i) + ".png", "tab\there"});
            std::this_thread::sleep_for(std::chrono::milliseconds(2 * ms));
        }
    };
    std::thread a(run, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    std::thread b(run, 1);
    a.join();
    b.join();
    Step inf;
    inf.step = (uint64_t)n;
    inf.time = INFINITY;
    pub->event("end", inf, {});
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, nullptr, _IOLBF, 0);
    std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "render" && argc == 3)
        return cmd_render(argv[2]);
    if (cmd == "bad-display" && argc == 3)
        return cmd_bad_display(argv[2]);
    if (cmd == "serve" && argc == 4)
        return cmd_serve(argv[2], atof(argv[3]));
    if (cmd == "publish" && argc == 5)
        return cmd_publish(argv[2], atoi(argv[3]), atoi(argv[4]));
    fprintf(stderr, "usage: viz_outputs_check render DIR | bad-display DIR | serve DIR SECONDS |"
                    " publish ENDPOINT N MS\n");
    return 2;
}
