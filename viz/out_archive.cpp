// out_archive.cpp - the archive output: a time series ParaView opens.
// SPDX-License-Identifier: BSD-3-Clause
//
// One .vti per step (the whole grid: pio-vizd has assembled it, so there are
// no pieces to index) written by vtkXMLImageDataWriter in raw appended
// binary, and a .pvd listing every step with its time, rewritten after each
// step under a temporary name and renamed, so a reader never sees half an
// index. Why .vti + .pvd rather than VTKHDF: every ParaView and VTK version
// reads them, VTK 9.1 cannot write VTKHDF, and a file per step lets a
// reader open the series while it grows.
#include "outputs.h"

#include <vtkDoubleArray.h>
#include <vtkFloatArray.h>
#include <vtkImageData.h>
#include <vtkIntArray.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkSmartPointer.h>
#include <vtkXMLImageDataWriter.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace vizd
{

// vtk_image - a vtkImageData over the step's fields, without copying them
// (the arrays point into the Step, which the caller keeps alive).
vtkSmartPointer<vtkImageData> vtk_image(const Step &s)
{
    auto img = vtkSmartPointer<vtkImageData>::New();
    img->SetDimensions((int)s.grid.dims[0], (int)s.grid.dims[1], (int)s.grid.dims[2]);
    img->SetOrigin(s.grid.origin);
    img->SetSpacing(s.grid.spacing);
    vtkIdType n = (vtkIdType)(s.grid.dims[0] * s.grid.dims[1] * s.grid.dims[2]);
    for (const Field &f : s.fields) {
        vtkSmartPointer<vtkDataArray> a;
        void *p = const_cast<uint8_t *>(f.data.data());
        if (f.type == PIO_DOUBLE) {
            auto d = vtkSmartPointer<vtkDoubleArray>::New();
            d->SetArray(static_cast<double *>(p), n, 1);
            a = d;
        } else if (f.type == PIO_FLOAT) {
            auto d = vtkSmartPointer<vtkFloatArray>::New();
            d->SetArray(static_cast<float *>(p), n, 1);
            a = d;
        } else {
            auto d = vtkSmartPointer<vtkIntArray>::New();
            d->SetArray(static_cast<int *>(p), n, 1);
            a = d;
        }
        a->SetName(f.name.c_str());
        img->GetPointData()->AddArray(a);
    }
    if (!s.fields.empty())
        img->GetPointData()->SetActiveScalars(s.fields[0].name.c_str());
    return img;
}

namespace
{

class Archive : public Output
{
  public:
    Archive(std::string dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {}
    std::string name() const override
    {
        return "archive";
    }
    Policy policy() const override
    {
        return Policy::ARCHIVE;
    }
    std::vector<std::string> last_paths() const override
    {
        return last_;
    }

    bool consume(const StepPtr &s) override
    {
        char file[64];
        snprintf(file, sizeof(file), "%s_%06llu.vti", name_.c_str(), (unsigned long long)s->step);
        std::string path = dir_ + "/" + file, tmp = dir_ + "/." + file + ".part";
        vtkNew<vtkXMLImageDataWriter> w;
        w->SetInputData(vtk_image(*s));
        w->SetFileName(tmp.c_str());
        w->SetDataModeToAppended();
        w->EncodeAppendedDataOff();
        w->SetCompressorTypeToNone();
        if (w->Write() != 1 || rename(tmp.c_str(), path.c_str()) != 0) {
            fprintf(stderr, "pio-vizd: archive: cannot write %s: %s\n", path.c_str(),
                    strerror(errno));
            remove(tmp.c_str());
            return false;
        }
        entries_.push_back({s->time, file});
        if (!write_pvd())
            return false;
        last_ = {path, dir_ + "/" + name_ + ".pvd"};
        return true;
    }

  private:
    bool write_pvd()
    {
        std::string pvd = dir_ + "/" + name_ + ".pvd", tmp = dir_ + "/." + name_ + ".pvd.part";
        FILE *f = fopen(tmp.c_str(), "w");
        if (!f) {
            fprintf(stderr, "pio-vizd: archive: %s: %s\n", tmp.c_str(), strerror(errno));
            return false;
        }
        fprintf(f, "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" "
                   "byte_order=\"LittleEndian\">\n  <Collection>\n");
        for (const auto &e : entries_)
            fprintf(f, "    <DataSet timestep=\"%.17g\" group=\"\" part=\"0\" file=\"%s\"/>\n",
                    e.first, e.second.c_str());
        fprintf(f, "  </Collection>\n</VTKFile>\n");
        if (fclose(f) != 0 || rename(tmp.c_str(), pvd.c_str()) != 0) {
            fprintf(stderr, "pio-vizd: archive: %s: %s\n", pvd.c_str(), strerror(errno));
            return false;
        }
        return true;
    }
    std::string dir_, name_;
    std::vector<std::pair<double, std::string>> entries_;
    std::vector<std::string> last_;
};

} // namespace

std::unique_ptr<Output> make_archive_output(const std::string &dir, const std::string &name,
                                            std::string *err)
{
    struct stat sb;
    if (stat(dir.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        *err = "archive folder " + dir + ": " + (errno ? strerror(errno) : "not a folder");
        return nullptr;
    }
    if (name.empty() || name.find('/') != std::string::npos) {
        *err = "archive name '" + name + "': give a plain file name stem";
        return nullptr;
    }
    return std::make_unique<Archive>(dir, name);
}

} // namespace vizd
