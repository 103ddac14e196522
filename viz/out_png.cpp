// out_png.cpp - PNG frames of each step, rendered offscreen with VTK 9.1,
// and the Xvfb that Debian's VTK needs to render at all.
// SPDX-License-Identifier: BSD-3-Clause
//
// A PngOutput draws one picture per step: an isosurface of the chosen field
// (vtkFlyingEdges3D, translucent), a slice through the middle of the grid
// across slice_axis coloured by the field (vtkFlyingEdgesPlaneCutter), the
// grid's outline, a scalar bar and the step number and time. The pipeline
// is built once, at the first step, in the output's own thread (the GLX
// context lives there); each step only swaps the image's point data (the
// Step's bytes wrapped without a copy; the StepPtr is kept until the next
// step replaces it) and renders again. The context is released after each
// frame so that whichever thread destroys the output can take it.
// The PNG is encoded in memory once and written to DIR/frame_%06llu.png
// and DIR/latest.png, each through a temporary name and rename(2), so a
// reader (the live page, a tool told by the event feed) never sees half a
// file.
//
// VTK 9.1 on Debian renders through X only and abort()s when it cannot
// open the display: make_png_output checks that an X server answers on
// DISPLAY before anything is built, and ensure_display starts Xvfb (waiting
// on its -displayfd) when there is none. Nothing here exits or aborts.
//
// Thread-safety: a PngOutput is used by one thread at a time (its Hub
// thread). ensure_display and stop_display change the environment: call
// them from main before other threads read DISPLAY.
#include "outputs.h"

#include <vtkActor.h>
#include <vtkAutoInit.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkColorTransferFunction.h>
#include <vtkDoubleArray.h>
#include <vtkFloatArray.h>
#include <vtkFlyingEdges3D.h>
#include <vtkFlyingEdgesPlaneCutter.h>
#include <vtkImageData.h>
#include <vtkIntArray.h>
#include <vtkLookupTable.h>
#include <vtkNew.h>
#include <vtkPNGWriter.h>
#include <vtkPlane.h>
#include <vtkPointData.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>
#include <vtkScalarBarActor.h>
#include <vtkTextActor.h>
#include <vtkTextProperty.h>
#include <vtkUnsignedCharArray.h>
#include <vtkWindowToImageFilter.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// Without CMake the object factories must be registered by hand: the
// OpenGL render window and the FreeType text renderer.
VTK_MODULE_INIT(vtkRenderingOpenGL2);
VTK_MODULE_INIT(vtkRenderingFreeType);

namespace vizd
{

namespace
{

std::string png_errno(const std::string &what)
{
    return what + ": " + std::strerror(errno);
}

// png_mkdirs - mkdir -p
bool png_mkdirs(const std::string &dir, std::string *err)
{
    std::string cur;
    size_t i = 0;
    while (i <= dir.size()) {
        size_t j = dir.find('/', i);
        if (j == std::string::npos)
            j = dir.size();
        cur = dir.substr(0, j);
        if (!cur.empty() && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
            *err = png_errno("cannot create folder " + cur);
            return false;
        }
        i = j + 1;
    }
    struct stat st;
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        *err = dir + ": not a folder";
        return false;
    }
    if (access(dir.c_str(), W_OK) != 0) {
        *err = png_errno("cannot write in " + dir);
        return false;
    }
    return true;
}

// png_write_atomic - path gets n bytes, through DIR/.NAME.tmp and rename
bool png_write_atomic(const std::string &dir, const std::string &name, const uint8_t *p, size_t n,
                      std::string *err)
{
    std::string path = dir + "/" + name, tmp = dir + "/." + name + ".tmp";
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        *err = png_errno("cannot create " + tmp);
        return false;
    }
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, p + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            *err = png_errno("cannot write " + tmp);
            goto unlink_tmp;
        }
        off += (size_t)w;
    }
    if (close(fd) != 0) {
        fd = -1;
        *err = png_errno("cannot write " + tmp);
        goto unlink_tmp;
    }
    fd = -1;
    if (rename(tmp.c_str(), path.c_str()) != 0) {
        *err = png_errno("cannot rename " + tmp + " to " + path);
        goto unlink_tmp;
    }
    return true;
unlink_tmp:
    if (fd >= 0)
        close(fd);
    unlink(tmp.c_str());
    return false;
}

// png_local_display - the display number of DISPLAY when it names a local
// server (":N", ":N.S", "unix:N"), else -1
int png_local_display(const char *d)
{
    if (!d)
        return -1;
    if (strncmp(d, "unix:", 5) == 0)
        d += 4;
    if (d[0] != ':' || d[1] < '0' || d[1] > '9')
        return -1;
    char *end;
    long n = strtol(d + 1, &end, 10);
    if ((*end != 0 && *end != '.') || n < 0 || n > 65535)
        return -1;
    return (int)n;
}

// png_x_answers - an X server accepts connections on local display n (its
// abstract socket, as Xorg and Xvfb listen on Linux, or the socket file)
bool png_x_answers(int n)
{
    char path[64];
    int len = snprintf(path, sizeof path, "/tmp/.X11-unix/X%d", n);
    for (int abstract = 1; abstract >= 0; abstract--) {
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        memcpy(sa.sun_path + abstract, path, (size_t)len);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return false;
        int rc = connect(fd, (struct sockaddr *)&sa,
                         (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract + len));
        close(fd);
        if (rc == 0)
            return true;
    }
    return false;
}

// png_display_usable - whether VTK can open DISPLAY without aborting. A
// remote display (host:N) cannot be checked cheaply and is trusted.
bool png_display_usable(std::string *why)
{
    const char *d = getenv("DISPLAY");
    if (!d || !*d) {
        *why = "DISPLAY is not set (VTK 9.1 renders through X only; pio-vizd starts Xvfb)";
        return false;
    }
    int n = png_local_display(d);
    if (n >= 0 && !png_x_answers(n)) {
        *why = std::string("no X server answers on DISPLAY=") + d;
        return false;
    }
    return true;
}

// ---- colour maps: control points in [0, 1] ----
struct PngStop {
    double x, r, g, b;
};
const PngStop png_coolwarm[] = {{0, 0.230, 0.299, 0.754}, {1, 0.706, 0.016, 0.150}};
const PngStop png_viridis[] = {
    {0.000, 0.267004, 0.004874, 0.329415}, {0.125, 0.282327, 0.140926, 0.457517},
    {0.250, 0.229739, 0.322361, 0.545706}, {0.375, 0.172719, 0.448791, 0.557885},
    {0.500, 0.127568, 0.566949, 0.550556}, {0.625, 0.157851, 0.683765, 0.501686},
    {0.750, 0.369214, 0.788888, 0.382914}, {0.875, 0.678489, 0.863742, 0.189503},
    {1.000, 0.993248, 0.906157, 0.143936}};
const PngStop png_gray[] = {{0, 0, 0, 0}, {1, 1, 1, 1}};

bool png_fill_lut(const std::string &name, vtkLookupTable *lut)
{
    vtkNew<vtkColorTransferFunction> ctf;
    const PngStop *s;
    size_t n;
    if (name == "coolwarm") {
        ctf->SetColorSpaceToDiverging(); // Moreland's diverging map
        s = png_coolwarm, n = sizeof png_coolwarm / sizeof *s;
    } else if (name == "viridis") {
        s = png_viridis, n = sizeof png_viridis / sizeof *s;
    } else if (name == "gray" || name == "grey") {
        s = png_gray, n = sizeof png_gray / sizeof *s;
    } else {
        return false;
    }
    for (size_t i = 0; i < n; i++)
        ctf->AddRGBPoint(s[i].x, s[i].r, s[i].g, s[i].b);
    const int N = 256;
    lut->SetNumberOfTableValues(N);
    for (int i = 0; i < N; i++) {
        double rgb[3];
        ctf->GetColor(i / (N - 1.0), rgb);
        lut->SetTableValue(i, rgb[0], rgb[1], rgb[2], 1.0);
    }
    return true;
}

class PngOutput : public Output
{
  public:
    explicit PngOutput(const PngOptions &o) : o_(o) {}
    ~PngOutput() override = default;
    std::string name() const override
    {
        return "png";
    }
    Policy policy() const override
    {
        return o_.policy;
    }
    bool consume(const StepPtr &s) override;
    std::vector<std::string> last_paths() const override
    {
        return last_paths_;
    }

  private:
    void build();
    bool set_input(const StepPtr &s, std::string *err);
    void place_camera();

    PngOptions o_;
    bool built_ = false;
    StepPtr cur_; // the step whose bytes img_ wraps
    double geom_[9] = {};
    bool have_geom_ = false;
    std::vector<std::string> last_paths_;

    vtkNew<vtkImageData> img_;
    vtkNew<vtkFlyingEdges3D> iso_;
    vtkNew<vtkPlane> plane_;
    vtkNew<vtkFlyingEdgesPlaneCutter> cut_;
    vtkNew<vtkPoints> box_pts_;
    vtkNew<vtkPolyData> box_;
    vtkNew<vtkPolyDataMapper> iso_map_, cut_map_, box_map_;
    vtkNew<vtkActor> iso_actor_, cut_actor_, box_actor_;
    vtkNew<vtkLookupTable> lut_;
    vtkNew<vtkScalarBarActor> bar_;
    vtkNew<vtkTextActor> text_;
    vtkNew<vtkRenderer> ren_;
    vtkNew<vtkRenderWindow> win_;
    vtkNew<vtkWindowToImageFilter> grab_;
    vtkNew<vtkPNGWriter> png_;
};

void PngOutput::build()
{
    png_fill_lut(o_.colormap, lut_); // checked by make_png_output

    iso_->SetInputData(img_);
    iso_->ComputeNormalsOn();
    iso_->ComputeGradientsOff();
    iso_->ComputeScalarsOff();
    iso_map_->SetInputConnection(iso_->GetOutputPort());
    iso_map_->ScalarVisibilityOff();
    iso_actor_->SetMapper(iso_map_);
    iso_actor_->GetProperty()->SetOpacity(0.45);
    iso_actor_->GetProperty()->SetSpecular(0.3);

    plane_->SetNormal(o_.slice_axis == 'x', o_.slice_axis == 'y', o_.slice_axis == 'z');
    cut_->SetInputData(img_);
    cut_->SetPlane(plane_);
    cut_->InterpolateAttributesOn();
    cut_->ComputeNormalsOff();
    cut_map_->SetInputConnection(cut_->GetOutputPort());
    cut_map_->SetLookupTable(lut_);
    cut_map_->UseLookupTableScalarRangeOn();
    cut_map_->SetScalarModeToUsePointData();
    cut_map_->ScalarVisibilityOn();
    cut_actor_->SetMapper(cut_map_);
    cut_actor_->GetProperty()->LightingOff();

    // the grid's outline: 8 corners, 12 edges
    box_pts_->SetNumberOfPoints(8);
    vtkNew<vtkCellArray> lines;
    static const int edges[12][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3},
                                     {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
    for (const auto &e : edges) {
        vtkIdType ids[2] = {e[0], e[1]};
        lines->InsertNextCell(2, ids);
    }
    box_->SetPoints(box_pts_);
    box_->SetLines(lines);
    box_map_->SetInputData(box_);
    box_actor_->SetMapper(box_map_);
    box_actor_->GetProperty()->SetColor(0.85, 0.85, 0.85);
    box_actor_->GetProperty()->LightingOff();

    bar_->SetLookupTable(lut_);
    bar_->SetNumberOfLabels(5);
    bar_->SetLabelFormat("%-#7.3g");
    bar_->SetMaximumWidthInPixels(90);
    bar_->GetPositionCoordinate()->SetValue(0.86, 0.1);
    bar_->SetWidth(0.12);
    bar_->SetHeight(0.8);
    bar_->UnconstrainedFontSizeOn();
    bar_->GetLabelTextProperty()->SetFontSize(12);
    bar_->GetTitleTextProperty()->SetFontSize(14);

    text_->GetTextProperty()->SetFontSize(16);
    text_->GetTextProperty()->SetColor(1, 1, 1);
    text_->SetDisplayPosition(10, 10);

    ren_->SetBackground(0.10, 0.11, 0.14);
    ren_->AddActor(cut_actor_);
    ren_->AddActor(iso_actor_);
    ren_->AddActor(box_actor_);
    ren_->AddViewProp(bar_);
    ren_->AddViewProp(text_);

    win_->SetOffScreenRendering(1);
    win_->SetMultiSamples(0);
    win_->SetSize(o_.width, o_.height);
    win_->AddRenderer(ren_);

    grab_->SetInput(win_);
    grab_->SetInputBufferTypeToRGB();
    grab_->ReadFrontBufferOff();
    grab_->ShouldRerenderOff(); // consume() renders just before
    png_->SetInputConnection(grab_->GetOutputPort());
    png_->SetCompressionLevel(3); // speed over the last few percent of size
    png_->WriteToMemoryOn();
    built_ = true;
}

// set_input - wrap the step's field in img_ (no copy) and set geometry,
// iso value and colour range
bool PngOutput::set_input(const StepPtr &s, std::string *err)
{
    const Field *f = nullptr;
    for (const Field &x : s->fields)
        if (o_.field.empty() || x.name == o_.field) {
            f = &x;
            break;
        }
    if (!f) {
        *err =
            o_.field.empty() ? "the step has no field" : "the step has no field '" + o_.field + "'";
        return false;
    }
    const uint64_t *d = s->grid.dims;
    if (d[0] < 2 || d[1] < 2 || d[2] < 2 || d[0] > INT32_MAX || d[1] > INT32_MAX ||
        d[2] > INT32_MAX) {
        *err = "grid " + std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" +
               std::to_string(d[2]) + ": rendering needs at least 2 points along each axis";
        return false;
    }
    vtkIdType n = (vtkIdType)(d[0] * d[1] * d[2]);
    size_t esize = f->type == PIO_DOUBLE ? 8 : 4;
    if (f->type != PIO_DOUBLE && f->type != PIO_FLOAT && f->type != PIO_INT32) {
        *err = "field '" + f->name + "': type " + std::to_string(f->type) + " cannot be drawn";
        return false;
    }
    if (f->data.size() != (size_t)n * esize) {
        *err = "field '" + f->name + "': " + std::to_string(f->data.size()) + " bytes, expected " +
               std::to_string((size_t)n * esize);
        return false;
    }
    // VTK only reads its inputs; the array never frees (save = 1) what the
    // Step owns, and cur_ keeps the Step alive while img_ points into it.
    void *p = const_cast<uint8_t *>(f->data.data());
    vtkSmartPointer<vtkDataArray> arr;
    if (f->type == PIO_DOUBLE) {
        auto a = vtkSmartPointer<vtkDoubleArray>::New();
        a->SetArray(static_cast<double *>(p), n, 1);
        arr = a;
    } else if (f->type == PIO_FLOAT) {
        auto a = vtkSmartPointer<vtkFloatArray>::New();
        a->SetArray(static_cast<float *>(p), n, 1);
        arr = a;
    } else {
        auto a = vtkSmartPointer<vtkIntArray>::New();
        a->SetArray(static_cast<int *>(p), n, 1);
        arr = a;
    }
    arr->SetName(f->name.c_str());

    const double *o = s->grid.origin, *sp = s->grid.spacing;
    img_->SetDimensions((int)d[0], (int)d[1], (int)d[2]);
    img_->SetOrigin(o[0], o[1], o[2]);
    img_->SetSpacing(sp[0], sp[1], sp[2]);
    img_->GetPointData()->SetScalars(arr);
    img_->Modified();
    cur_ = s; // the previous step's bytes are no longer referenced

    double lo_hi[2];
    arr->GetRange(lo_hi, 0);
    if (!(lo_hi[1] > lo_hi[0])) // constant field (or NaNs): a range that draws
        lo_hi[1] = lo_hi[0] + 1;
    lut_->SetTableRange(lo_hi);
    double iso = std::isnan(o_.iso) ? 0.5 * (lo_hi[0] + lo_hi[1]) : o_.iso;
    iso_->SetValue(0, iso);
    double rgb[3];
    lut_->GetColor(iso, rgb);
    iso_actor_->GetProperty()->SetColor(rgb);
    bar_->SetTitle(f->name.c_str());

    double geom[9] = {(double)d[0], (double)d[1], (double)d[2], o[0], o[1],
                      o[2],         sp[0],        sp[1],        sp[2]};
    double hi[3];
    for (int i = 0; i < 3; i++)
        hi[i] = o[i] + (double)(d[i] - 1) * sp[i];
    plane_->SetOrigin(0.5 * (o[0] + hi[0]), 0.5 * (o[1] + hi[1]), 0.5 * (o[2] + hi[2]));
    for (int c = 0; c < 8; c++)
        box_pts_->SetPoint(c, c & 1 ? hi[0] : o[0], c & 2 ? hi[1] : o[1], c & 4 ? hi[2] : o[2]);
    box_pts_->Modified();
    if (!have_geom_ || memcmp(geom, geom_, sizeof geom) != 0) {
        memcpy(geom_, geom, sizeof geom);
        have_geom_ = true;
        place_camera();
    }

    char label[160];
    snprintf(label, sizeof label, "step %llu   t = %.6g   %s", (unsigned long long)s->step, s->time,
             f->name.c_str());
    text_->SetInput(label);
    return true;
}

// place_camera - look at the whole grid, then turn and zoom as asked
void PngOutput::place_camera()
{
    ren_->ResetCamera(img_->GetBounds());
    vtkCamera *cam = ren_->GetActiveCamera();
    cam->Azimuth(o_.azimuth);
    cam->Elevation(o_.elevation);
    cam->OrthogonalizeViewUp();
    cam->Zoom(o_.zoom);
    ren_->ResetCameraClippingRange(img_->GetBounds());
}

bool PngOutput::consume(const StepPtr &s)
{
    std::string err;
    if (!built_)
        build();
    if (!set_input(s, &err)) {
        fprintf(stderr, "pio-vizd: png: step %llu: %s\n", (unsigned long long)s->step, err.c_str());
        return false;
    }
    ren_->ResetCameraClippingRange();
    win_->Render();
    grab_->Modified();
    png_->Write();
    win_->ReleaseCurrent();
    vtkUnsignedCharArray *r = png_->GetResult();
    if (png_->GetErrorCode() != 0 || !r || r->GetNumberOfValues() == 0) {
        fprintf(stderr, "pio-vizd: png: step %llu: the PNG could not be encoded\n",
                (unsigned long long)s->step);
        return false;
    }
    const uint8_t *p = r->GetPointer(0);
    size_t n = (size_t)r->GetNumberOfValues();
    char frame[40];
    snprintf(frame, sizeof frame, "frame_%06llu.png", (unsigned long long)s->step);
    if (!png_write_atomic(o_.dir, frame, p, n, &err) ||
        !png_write_atomic(o_.dir, "latest.png", p, n, &err)) {
        fprintf(stderr, "pio-vizd: png: step %llu: %s\n", (unsigned long long)s->step, err.c_str());
        return false;
    }
    last_paths_ = {o_.dir + "/" + frame};
    return true;
}

// ---- Xvfb ----

// png_find_exe - name's full path along PATH (resolved before fork: the
// child may only make async-signal-safe calls)
std::string png_find_exe(const char *name)
{
    const char *path = getenv("PATH");
    std::string p = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
    size_t i = 0;
    while (i <= p.size()) {
        size_t j = p.find(':', i);
        if (j == std::string::npos)
            j = p.size();
        std::string dir = p.substr(i, j - i);
        std::string f = (dir.empty() ? "." : dir) + "/" + name;
        if (access(f.c_str(), X_OK) == 0)
            return f;
        i = j + 1;
    }
    return "";
}

double png_now()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

std::string png_tail(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return "";
    std::string last, line;
    char buf[256];
    while (fgets(buf, sizeof buf, f)) {
        line += buf;
        if (!line.empty() && line.back() == '\n') {
            line.pop_back();
            if (!line.empty())
                last = line;
            line.clear();
        }
    }
    if (!line.empty())
        last = line;
    fclose(f);
    return last;
}

// png_try_xvfb - start Xvfb on display n; its pid once it accepts
// connections, 0 when it exited (display taken: try another), -1 on error
long png_try_xvfb(const std::string &exe, int n, std::string *err)
{
    char disp[16], fdarg[16], logpath[] = "/tmp/pio-xvfb.XXXXXX";
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        *err = png_errno("pipe");
        return -1;
    }
    int logfd = mkstemp(logpath);
    if (logfd < 0) {
        *err = png_errno("cannot create a log file for Xvfb");
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    snprintf(disp, sizeof disp, ":%d", n);
    snprintf(fdarg, sizeof fdarg, "%d", pfd[1]);
    const char *argv[] = {exe.c_str(), disp,  "-screen",    "0",   "1280x1024x24",
                          "-nolisten", "tcp", "-displayfd", fdarg, nullptr};
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        // child: async-signal-safe calls only
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            dup2(nul, 1);
        }
        dup2(logfd, 2);
        fcntl(pfd[1], F_SETFD, 0);        // -displayfd: Xvfb writes N here when ready
        setpgid(0, 0);                    // a Ctrl-C to pio-vizd's group spares it
        prctl(PR_SET_PDEATHSIG, SIGTERM); // and it dies with its parent
        if (getppid() != parent)
            _exit(1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(pfd[1]);
    close(logfd);
    if (pid < 0) {
        *err = png_errno("fork");
        close(pfd[0]);
        unlink(logpath);
        return -1;
    }
    // wait for the display number (ready) or end of file (it exited)
    std::string got;
    double deadline = png_now() + 15;
    bool eof = false;
    while (!eof && got.find('\n') == std::string::npos) {
        int left = (int)((deadline - png_now()) * 1000);
        if (left <= 0)
            break;
        struct pollfd p = {pfd[0], POLLIN, 0};
        int rc = poll(&p, 1, left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            break;
        char buf[32];
        ssize_t r = read(pfd[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            eof = true;
        else
            got.append(buf, (size_t)r);
    }
    close(pfd[0]);
    std::string why = png_tail(logpath);
    unlink(logpath);
    if (got.find('\n') != std::string::npos && atoi(got.c_str()) == n && png_x_answers(n))
        return pid;
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
        *err = "cannot run " + exe;
        return -1;
    }
    if (!eof) {
        *err = "Xvfb on :" + std::to_string(n) + " did not become ready in 15 s" +
               (why.empty() ? "" : " (" + why + ")");
        return -1;
    }
    *err = "Xvfb on :" + std::to_string(n) + " exited" + (why.empty() ? "" : ": " + why);
    return 0;
}

struct PngDisplayState {
    long pid = 0;
    bool had_prev = false;
    std::string prev;
};
PngDisplayState png_disp;

} // namespace

std::unique_ptr<Output> make_png_output(const PngOptions &o, std::string *err)
{
    if (o.dir.empty()) {
        *err = "png: no folder given for the frames";
        return nullptr;
    }
    if (o.width < 16 || o.height < 16 || o.width > 8192 || o.height > 8192) {
        *err = "png: size " + std::to_string(o.width) + "x" + std::to_string(o.height) +
               ": width and height must be 16 to 8192";
        return nullptr;
    }
    if (o.slice_axis != 'x' && o.slice_axis != 'y' && o.slice_axis != 'z') {
        *err = std::string("png: slice axis '") + o.slice_axis + "': use x, y or z";
        return nullptr;
    }
    vtkNew<vtkLookupTable> probe;
    if (!png_fill_lut(o.colormap, probe)) {
        *err = "png: colour map '" + o.colormap + "': use coolwarm, viridis or gray";
        return nullptr;
    }
    if (!(o.zoom > 0) || !std::isfinite(o.zoom) || !std::isfinite(o.azimuth) ||
        !std::isfinite(o.elevation)) {
        *err = "png: the zoom must be a number above 0, azimuth and elevation numbers";
        return nullptr;
    }
    std::string why;
    if (!png_display_usable(&why)) {
        *err = "png: " + why;
        return nullptr;
    }
    if (!png_mkdirs(o.dir, &why)) {
        *err = "png: " + why;
        return nullptr;
    }
    return std::unique_ptr<Output>(new PngOutput(o));
}

long ensure_display(std::string *err)
{
    const char *d = getenv("DISPLAY");
    std::string why;
    if (d && *d) {
        if (png_display_usable(&why))
            return 0;
        fprintf(stderr, "pio-vizd: %s; starting Xvfb\n", why.c_str());
    }
    std::string exe = png_find_exe("Xvfb");
    if (exe.empty()) {
        *err = "no X display and Xvfb is not installed (Debian package xvfb)";
        return -1;
    }
    // a display number nobody holds: no lock file, no socket, no answer
    int n0 = 100 + (int)(getpid() % 800);
    std::string last = "no free display number";
    for (int i = 0; i < 10; i++) {
        int n = n0 + i * 7;
        char lock[40], sock[40];
        snprintf(lock, sizeof lock, "/tmp/.X%d-lock", n);
        snprintf(sock, sizeof sock, "/tmp/.X11-unix/X%d", n);
        if (access(lock, F_OK) == 0 || access(sock, F_OK) == 0 || png_x_answers(n))
            continue;
        long pid = png_try_xvfb(exe, n, &last);
        if (pid < 0) {
            *err = last;
            return -1;
        }
        if (pid == 0)
            continue; // lost a race for n: try the next
        png_disp.had_prev = d != nullptr;
        png_disp.prev = d ? d : "";
        png_disp.pid = pid;
        setenv("DISPLAY", (":" + std::to_string(n)).c_str(), 1);
        return pid;
    }
    *err = "cannot start Xvfb: " + last;
    return -1;
}

void stop_display(long pid)
{
    if (pid <= 0)
        return;
    kill((pid_t)pid, SIGTERM);
    double deadline = png_now() + 3;
    int st;
    while (waitpid((pid_t)pid, &st, WNOHANG) == 0) {
        if (png_now() > deadline) {
            kill((pid_t)pid, SIGKILL);
            waitpid((pid_t)pid, &st, 0);
            break;
        }
        usleep(10000);
    }
    if (png_disp.pid == pid) {
        if (png_disp.had_prev)
            setenv("DISPLAY", png_disp.prev.c_str(), 1);
        else
            unsetenv("DISPLAY");
        png_disp = PngDisplayState();
    }
}

} // namespace vizd
