// viz_archive_check.cpp - open pio-vizd's archive (a .pvd and its .vti
// files) with VTK's readers and compare it with a reference.
// SPDX-License-Identifier: BSD-3-Clause
//
//   viz_archive_check PVD N STEPS REF NRANKS
// The .pvd (parsed with VTK's XML parser) must list STEPS data sets with
// increasing times; each .vti (vtkXMLImageDataReader) must be N^3 points
// with arrays "temperature" (double) and "rank" (int). "temperature" must
// equal, bit for bit, the reference (examples/heat3d --ref: STEPS x N^3
// doubles, x fastest); "rank" must hold every rank 0..NRANKS-1 and nothing
// else. Prints "OK ..." and exits 0, or says what differs and exits 1.
#include <vtkDataArray.h>
#include <vtkDoubleArray.h>
#include <vtkImageData.h>
#include <vtkIntArray.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkXMLDataElement.h>
#include <vtkXMLDataParser.h>
#include <vtkXMLImageDataReader.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

static int fail(const char *what, const std::string &detail)
{
    printf("FAIL %s: %s\n", what, detail.c_str());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: viz_archive_check PVD N STEPS REF NRANKS\n");
        return 2;
    }
    std::string pvd = argv[1], dir = pvd.substr(0, pvd.rfind('/') + 1);
    long n = atol(argv[2]), steps = atol(argv[3]), nranks = atol(argv[5]);
    FILE *rf = fopen(argv[4], "rb");
    if (!rf)
        return fail("reference", argv[4]);
    vtkNew<vtkXMLDataParser> p;
    p->SetFileName(pvd.c_str());
    if (!p->Parse())
        return fail("pvd", "VTK's XML parser cannot read " + pvd);
    vtkXMLDataElement *root = p->GetRootElement(),
                      *coll = root->FindNestedElementWithName("Collection");
    if (!coll || strcmp(root->GetAttribute("type"), "Collection") != 0)
        return fail("pvd", "no Collection");
    if (coll->GetNumberOfNestedElements() != steps)
        return fail("pvd", std::to_string(coll->GetNumberOfNestedElements()) + " data sets, not " +
                               std::to_string(steps));
    size_t pts = (size_t)n * n * n;
    std::vector<double> ref(pts);
    double last_t = -1;
    for (long i = 0; i < steps; i++) {
        vtkXMLDataElement *e = coll->GetNestedElement((int)i);
        const char *file = e->GetAttribute("file"), *ts = e->GetAttribute("timestep");
        if (!file || !ts)
            return fail("pvd", "a DataSet without file or timestep");
        double t = atof(ts);
        if (t <= last_t)
            return fail("pvd", "times do not increase at " + std::string(file));
        last_t = t;
        vtkNew<vtkXMLImageDataReader> r;
        r->SetFileName((dir + file).c_str());
        r->Update();
        vtkImageData *img = r->GetOutput();
        int d[3];
        img->GetDimensions(d);
        if (d[0] != n || d[1] != n || d[2] != n)
            return fail(file, "dimensions " + std::to_string(d[0]) + "x" + std::to_string(d[1]) +
                                  "x" + std::to_string(d[2]));
        auto *temp = vtkDoubleArray::SafeDownCast(img->GetPointData()->GetArray("temperature"));
        auto *rank = vtkIntArray::SafeDownCast(img->GetPointData()->GetArray("rank"));
        if (!temp || !rank || (size_t)temp->GetNumberOfTuples() != pts ||
            (size_t)rank->GetNumberOfTuples() != pts)
            return fail(file, "no double temperature and int rank of N^3 points");
        if (fread(ref.data(), sizeof(double), pts, rf) != pts)
            return fail("reference", "shorter than the archive");
        if (memcmp(ref.data(), temp->GetPointer(0), pts * sizeof(double)) != 0) {
            for (size_t k = 0; k < pts; k++)
                if (memcmp(&ref[k], temp->GetPointer(0) + k, sizeof(double)) != 0)
                    return fail(file, "temperature differs at point " + std::to_string(k) + ": " +
                                          std::to_string(temp->GetValue((vtkIdType)k)) +
                                          " instead of " + std::to_string(ref[k]));
        }
        std::set<int> seen;
        for (size_t k = 0; k < pts; k++)
            seen.insert(rank->GetValue((vtkIdType)k));
        if ((long)seen.size() != nranks || *seen.begin() != 0 || *seen.rbegin() != nranks - 1)
            return fail(file,
                        "the rank field does not hold ranks 0.." + std::to_string(nranks - 1));
    }
    if (fgetc(rf) != EOF)
        return fail("reference", "longer than the archive");
    fclose(rf);
    printf("OK %ld steps of %ld^3, temperature bit-exact, ranks 0..%ld\n", steps, n, nranks - 1);
    return 0;
}
