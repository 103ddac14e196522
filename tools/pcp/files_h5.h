/* files_h5.h - HDF5 mode of remote merged output (pio-files only).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Thread-safety: every function may be called from any session thread; all
 * HDF5 calls are serialized inside. Errors are errno values, with a message
 * for people in text where a text argument is given.
 */
#ifndef FILES_H5_H
#define FILES_H5_H

#include "wire/pcp_proto.h"

#include <stddef.h>
#include <stdint.h>

struct fh5;

/* files_h5_init - once, before the others: HDF5 reports no errors itself. */
void files_h5_init(void);

/* files_h5_esize - bytes of one element of PIO type code type; 0 if HDF5
 * mode does not carry it. */
size_t files_h5_esize(int type);

/* files_h5_spec_check - is FOPEN's dataset (text = name, type, ndims,
 * count = shape) acceptable? 0, or EINVAL / ENOTSUP with text. */
int files_h5_spec_check(const struct pcp_msg *spec, char *text, size_t cap);

/* files_h5_create - make fd (an empty, writable regular file) an HDF5 file
 * holding spec's dataset. *out [out]: the handle. 0, or an errno with text. */
int files_h5_create(int fd, const struct pcp_msg *spec, struct fh5 **out, char *text, size_t cap);

/* files_h5_same - 1 when spec names the dataset h was created with. */
int files_h5_same(const struct fh5 *h, const struct pcp_msg *spec);

/* files_h5_slab_check - is WRITE w's hyperslab inside the dataset, with
 * size = its bytes? 0 and *elems [out] its elements, or EINVAL. */
int files_h5_slab_check(const struct fh5 *h, const struct pcp_msg *w, uint64_t *elems);

/* files_h5_write - the elements of w's slab (checked), packed in C order in
 * buf, into the dataset. 0 or EIO. */
int files_h5_write(struct fh5 *h, const struct pcp_msg *w, const void *buf);

/* files_h5_close - close the dataset and the file (the data reaches fd's
 * file; the caller syncs it) and free h. 0 or EIO. NULL is a no-op. */
int files_h5_close(struct fh5 *h);

#endif
