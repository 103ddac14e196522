/* files_h5.c - HDF5 mode of remote merged output, in the file service.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * The merged file is one HDF5 file holding one dataset; every process's
 * WRITE is a hyperslab of it. The service already holds the part file open
 * (created beneath the export root, see pio-files.c); libhdf5 is given that
 * very file through /proc/self/fd/N, so confinement does not depend on a
 * path HDF5 resolves. The dataset is contiguous and allocated at creation,
 * filled with 0. Debian's serial libhdf5 is not built thread-safe: every
 * HDF5 call of the process goes through h5_mtx (sessions only wait on it
 * around a write; no other lock is taken inside it).
 */
#include "files_h5.h"
#include "pio.h"

#include <errno.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fh5 {
    hid_t file, dset, mem_type;
    int type, ndims;
    hsize_t dims[PCP_DIMS_MAX];
    char name[PCP_TEXT_MAX];
};

static pthread_mutex_t h5_mtx = PTHREAD_MUTEX_INITIALIZER;

/* The native HDF5 type of a PIO element type (integers and reals), or -1. */
static hid_t native(int t)
{
    switch (t) {
    case PIO_CHAR: return H5T_NATIVE_CHAR;
    case PIO_INT8: return H5T_NATIVE_INT8;
    case PIO_UINT8: return H5T_NATIVE_UINT8;
    case PIO_INT16: return H5T_NATIVE_INT16;
    case PIO_UINT16: return H5T_NATIVE_UINT16;
    case PIO_INT32:
    case PIO_INTEGER: return H5T_NATIVE_INT32;
    case PIO_UINT32: return H5T_NATIVE_UINT32;
    case PIO_INT64: return H5T_NATIVE_INT64;
    case PIO_UINT64: return H5T_NATIVE_UINT64;
    case PIO_FLOAT:
    case PIO_REAL: return H5T_NATIVE_FLOAT;
    case PIO_DOUBLE:
    case PIO_DOUBLE_PRECISION: return H5T_NATIVE_DOUBLE;
    default: return -1;
    }
}

void files_h5_init(void)
{
    pthread_mutex_lock(&h5_mtx);
    H5open();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors are reported to the client */
    pthread_mutex_unlock(&h5_mtx);
}

size_t files_h5_esize(int type)
{
    hid_t t = native(type);
    if (t < 0)
        return 0;
    pthread_mutex_lock(&h5_mtx);
    size_t n = H5Tget_size(t);
    pthread_mutex_unlock(&h5_mtx);
    return n;
}

int files_h5_spec_check(const struct pcp_msg *spec, char *text, size_t cap)
{
    if (spec->ndims < 1 || spec->ndims > PCP_DIMS_MAX) {
        snprintf(text, cap, "dataset rank %u: give 1 to %d dimensions", spec->ndims, PCP_DIMS_MAX);
        return EINVAL;
    }
    if (native((int)spec->type) < 0) {
        snprintf(text, cap, "element type %u cannot be written in HDF5 mode", spec->type);
        return ENOTSUP;
    }
    if (!spec->text[0]) {
        snprintf(text, cap, "the dataset has no name");
        return EINVAL;
    }
    for (uint32_t i = 0; i < spec->ndims; i++)
        if (spec->count[i] == 0) {
            snprintf(text, cap, "dataset %.100s: dimension %u has extent 0", spec->text, i);
            return EINVAL;
        }
    return 0;
}

int files_h5_create(int fd, const struct pcp_msg *spec, struct fh5 **out, char *text, size_t cap)
{
    int err = files_h5_spec_check(spec, text, cap);
    if (err)
        return err;
    struct fh5 *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(text, cap, "out of memory");
        return ENOMEM;
    }
    h->type = (int)spec->type;
    h->ndims = (int)spec->ndims;
    for (int i = 0; i < h->ndims; i++)
        h->dims[i] = spec->count[i];
    snprintf(h->name, sizeof(h->name), "%s", spec->text);
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);

    pthread_mutex_lock(&h5_mtx);
    h->mem_type = native(h->type);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), lcpl = H5Pcreate(H5P_LINK_CREATE),
          dcpl = H5Pcreate(H5P_DATASET_CREATE), space = -1;
    h->file = h->dset = -1;
    /* no HDF5 file lock: the service holds flock(LOCK_EX) on its own open of
     * the part file (part_lock), which HDF5's flock on its open would hit */
    if (fapl >= 0 && lcpl >= 0 && dcpl >= 0 && H5Pset_fapl_sec2(fapl) >= 0 &&
        H5Pset_file_locking(fapl, 0, 1) >= 0 && H5Pset_create_intermediate_group(lcpl, 1) >= 0 &&
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0 &&
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_ALLOC) >= 0 &&
        (space = H5Screate_simple(h->ndims, h->dims, NULL)) >= 0) {
        h->file = H5Fcreate(proc, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        if (h->file >= 0)
            h->dset = H5Dcreate2(h->file, h->name, h->mem_type, space, lcpl, dcpl, H5P_DEFAULT);
    }
    if (space >= 0)
        H5Sclose(space);
    if (fapl >= 0)
        H5Pclose(fapl);
    if (lcpl >= 0)
        H5Pclose(lcpl);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (h->dset < 0) {
        if (h->file >= 0) {
            snprintf(text, cap, "dataset %.100s: HDF5 cannot create it (a bad name?)", h->name);
            err = EINVAL;
            H5Fclose(h->file);
        } else {
            snprintf(text, cap, "HDF5 cannot create the file");
            err = EIO;
        }
        pthread_mutex_unlock(&h5_mtx);
        free(h);
        return err;
    }
    pthread_mutex_unlock(&h5_mtx);
    *out = h;
    return 0;
}

int files_h5_same(const struct fh5 *h, const struct pcp_msg *spec)
{
    if ((int)spec->ndims != h->ndims || (int)spec->type != h->type || strcmp(spec->text, h->name))
        return 0;
    for (int i = 0; i < h->ndims; i++)
        if (spec->count[i] != h->dims[i])
            return 0;
    return 1;
}

int files_h5_slab_check(const struct fh5 *h, const struct pcp_msg *w, uint64_t *elems)
{
    if ((int)w->ndims != h->ndims)
        return EINVAL;
    uint64_t n = 1;
    for (int i = 0; i < h->ndims; i++) {
        if (w->start[i] > h->dims[i] || w->count[i] > h->dims[i] - w->start[i])
            return EINVAL;
        n *= w->count[i]; /* bounded by the dataset, whose size HDF5 accepted */
    }
    size_t es = files_h5_esize(h->type);
    if (n == 0 || w->size != n * es)
        return EINVAL;
    *elems = n;
    return 0;
}

int files_h5_write(struct fh5 *h, const struct pcp_msg *w, const void *buf)
{
    hsize_t start[PCP_DIMS_MAX], count[PCP_DIMS_MAX];
    for (int i = 0; i < h->ndims; i++) {
        start[i] = w->start[i];
        count[i] = w->count[i];
    }
    int err = EIO;
    pthread_mutex_lock(&h5_mtx);
    hid_t fs = H5Dget_space(h->dset), ms = H5Screate_simple(h->ndims, count, NULL);
    if (fs >= 0 && ms >= 0 &&
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
        H5Dwrite(h->dset, h->mem_type, ms, fs, H5P_DEFAULT, buf) >= 0)
        err = 0;
    if (ms >= 0)
        H5Sclose(ms);
    if (fs >= 0)
        H5Sclose(fs);
    pthread_mutex_unlock(&h5_mtx);
    return err;
}

int files_h5_close(struct fh5 *h)
{
    if (!h)
        return 0;
    pthread_mutex_lock(&h5_mtx);
    int bad = H5Dclose(h->dset) < 0;
    bad |= H5Fclose(h->file) < 0;
    pthread_mutex_unlock(&h5_mtx);
    free(h);
    return bad ? EIO : 0;
}
