/* keys.c - CURVE key files: generate a key pair, load ours and the authorized peers'.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Keys are made by libzmq (zmq_curve_keypair) and stored as Z85 text, one
 * `name = value` per line. This file owns the key directory's modes: NAME.key
 * is written 0600 and refused at load when group or others may use it, .pub
 * files are written 0644, and a directory we create is 0700. Every refusal
 * says which command or change fixes it. Secret bytes on our stack are wiped
 * before return. No state, no locks; nothing here exits.
 */
#include "keys.h"
#include "err.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define KEYS_PATH_MAX 4096
#define KEYS_LEN      40 /* Z85 of 32 bytes */
#define KEYS_MAXPEERS                                                                              \
    ((int)(sizeof(((struct piod_keys *)0)->peer) / sizeof(((struct piod_keys *)0)->peer[0])))

static const char keys_z85[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

static void keys_say(FILE *errs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void keys_say(FILE *errs, const char *fmt, ...)
{
    va_list ap;
    if (errs == NULL)
        return;
    fputs("piod: ", errs);
    va_start(ap, fmt);
    vfprintf(errs, fmt, ap);
    va_end(ap);
    fputc('\n', errs);
}

static int keys_name_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char ch = s[n];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return 0;
    }
    return n >= 1 && n < sizeof(((struct piod_keys *)0)->peer[0].name);
}

static int keys_z85_ok(const char *s)
{
    if (strlen(s) != KEYS_LEN)
        return 0;
    for (; *s; s++)
        if (strchr(keys_z85, *s) == NULL)
            return 0;
    return 1;
}

/* mkdir -p: parents 0755, the last component with mode. */
static int keys_mkdirs(const char *dir, mode_t mode)
{
    char path[KEYS_PATH_MAX];
    size_t n = strlen(dir);

    if (n == 0 || n >= sizeof(path))
        return PIO_EINVAL;
    memcpy(path, dir, n + 1);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    for (char *q = path + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return pio_from_errno(errno);
        *q = '/';
    }
    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return pio_from_errno(errno);
    return PIO_OK;
}

/* Create path with exactly mode (whatever the umask), write text, fsync. */
static int keys_write_file(const char *path, int flags, mode_t mode, const char *text)
{
    size_t len = strlen(text), off = 0;
    int fd, rc = PIO_OK;

    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | flags, mode);
    if (fd < 0)
        return pio_from_errno(errno);
    PIO_CHECK(fchmod(fd, mode) != 0, rc, pio_from_errno(errno), close);
    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        PIO_CHECK(n < 0, rc, pio_from_errno(errno), close);
        off += (size_t)n;
    }
    PIO_CHECK(fsync(fd) != 0, rc, pio_from_errno(errno), close);
close:
    if (close(fd) != 0 && rc == PIO_OK)
        rc = pio_from_errno(errno);
    return rc;
}

int piod_keys_generate(const char *dir, const char *name, FILE *errs)
{
    char pub[PIOD_Z85_KEY], sec[PIOD_Z85_KEY];
    char keypath[KEYS_PATH_MAX], pubpath[KEYS_PATH_MAX], tmppath[KEYS_PATH_MAX];
    char text[512], when[32];
    time_t now = time(NULL);
    struct tm tm;
    struct stat st;
    int rc;

    if (dir == NULL || name == NULL || !keys_name_ok(name)) {
        keys_say(errs, "bad system name '%s': expected 1 to 63 characters from A-Z a-z 0-9 . _ -",
                 name ? name : "");
        return PIO_EINVAL;
    }
    if ((size_t)snprintf(keypath, sizeof(keypath), "%s/%s.key", dir, name) >= sizeof(keypath) ||
        (size_t)snprintf(pubpath, sizeof(pubpath), "%s/%s.pub", dir, name) >= sizeof(pubpath) ||
        (size_t)snprintf(tmppath, sizeof(tmppath), "%s/.%s.pub.tmp", dir, name) >=
            sizeof(tmppath)) {
        keys_say(errs, "key directory path '%s' is too long", dir);
        return PIO_EINVAL;
    }
    if (stat(dir, &st) != 0) {
        rc = keys_mkdirs(dir, 0700);
        if (rc != PIO_OK) {
            keys_say(errs, "cannot create the key directory %s: %s", dir, PIO_Strerror(rc));
            return rc;
        }
    } else if (!S_ISDIR(st.st_mode)) {
        keys_say(errs, "%s is not a directory: give a directory for the keys", dir);
        return PIO_EINVAL;
    }
    if (lstat(keypath, &st) == 0) {
        keys_say(errs,
                 "%s exists: refusing to overwrite a key. Remove it first (rm %s) if you "
                 "really want a new one; every peer then needs the new %s.pub",
                 keypath, keypath, name);
        return PIO_EEXIST;
    }

    if (zmq_curve_keypair(pub, sec) != 0) {
        rc = pio_from_errno(errno);
        keys_say(errs,
                 "cannot make a CURVE key pair: %s (libzmq must be built with CURVE "
                 "support, libsodium)",
                 zmq_strerror(errno));
        return rc;
    }
    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);

    snprintf(text, sizeof(text),
             "# CURVE key pair of system %s, made by piod --keygen on %s.\n"
             "# Secret: keep it mode 0600, never copy it off this system.\n"
             "public-key = %s\n"
             "secret-key = %s\n",
             name, when, pub, sec);
    rc = keys_write_file(keypath, O_EXCL, 0600, text);
    if (rc == PIO_EEXIST) {
        keys_say(errs, "%s appeared while we were writing it: refusing to overwrite it", keypath);
        goto wipe;
    }
    if (rc != PIO_OK) {
        keys_say(errs, "cannot write %s: %s", keypath, PIO_Strerror(rc));
        goto unlink_key;
    }

    snprintf(text, sizeof(text),
             "# CURVE public key of system %s, made by piod --keygen on %s.\n"
             "# Copy it into the key directory of every system %s talks to.\n"
             "public-key = %s\n",
             name, when, name, pub);
    unlink(tmppath);
    rc = keys_write_file(tmppath, O_EXCL, 0644, text);
    if (rc != PIO_OK) {
        keys_say(errs, "cannot write %s: %s", tmppath, PIO_Strerror(rc));
        goto unlink_tmp;
    }
    if (rename(tmppath, pubpath) != 0) {
        rc = pio_from_errno(errno);
        keys_say(errs, "cannot rename %s to %s: %s", tmppath, pubpath, strerror(errno));
        goto unlink_tmp;
    }
    rc = PIO_OK;
    goto wipe;

unlink_tmp:
    unlink(tmppath);
unlink_key:
    unlink(keypath);
wipe:
    explicit_bzero(sec, sizeof(sec));
    explicit_bzero(text, sizeof(text));
    return rc;
}

/* Read one key file from f (closed here). want_secret: a .key (public-key and
 * secret-key), else a .pub (public-key only). fix: what to tell the user when
 * it is malformed. */
static int keys_read(FILE *f, const char *path, int want_secret, char pub[PIOD_Z85_KEY],
                     char sec[PIOD_Z85_KEY], const char *fix, FILE *errs)
{
    char *buf = NULL;
    size_t cap = 0;
    int line = 0, pub_line = 0, sec_line = 0, rc = PIO_OK;

    while (getline(&buf, &cap, f) != -1) {
        char *s = buf, *eq, *key, *val, *end;
        line++;
        while (*s == ' ' || *s == '\t')
            s++;
        end = s + strlen(s);
        while (end > s && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (*s == '\0' || *s == '#') /* Z85 holds '#': comments are whole lines */
            continue;
        eq = strchr(s, '=');
        PIO_CHECK(eq == NULL, rc, PIO_ECONFIG, malformed);
        *eq = '\0';
        key = s;
        for (end = eq; end > key && (end[-1] == ' ' || end[-1] == '\t');)
            *--end = '\0';
        val = eq + 1;
        while (*val == ' ' || *val == '\t')
            val++;
        if (strcmp(key, "public-key") == 0 || (want_secret && strcmp(key, "secret-key") == 0)) {
            int is_pub = key[0] == 'p';
            int *seen = is_pub ? &pub_line : &sec_line;
            if (*seen) {
                keys_say(errs, "%s:%d: %s given twice (first at line %d): %s", path, line, key,
                         *seen, fix);
                rc = PIO_ECONFIG;
                goto close;
            }
            if (!keys_z85_ok(val)) {
                size_t n = strlen(val), bad = strspn(val, keys_z85);
                if (n != KEYS_LEN)
                    keys_say(errs, "%s:%d: %s has %zu characters, a Z85 key has 40: %s", path, line,
                             key, n, fix);
                else
                    keys_say(errs, "%s:%d: %s holds '%c', which is not a Z85 character: %s", path,
                             line, key, val[bad], fix);
                rc = PIO_ECONFIG;
                goto close;
            }
            *seen = line;
            memcpy(is_pub ? pub : sec, val, KEYS_LEN + 1);
        } else if (strcmp(key, "secret-key") == 0) {
            keys_say(errs,
                     "%s:%d: a .pub file must not hold a secret key: remove that line, and "
                     "treat the key as leaked (make a new one with piod --keygen)",
                     path, line);
            rc = PIO_ECONFIG;
            goto close;
        } else {
            keys_say(errs, "%s:%d: unknown key '%s' (expected public-key%s): %s", path, line, key,
                     want_secret ? " and secret-key" : "", fix);
            rc = PIO_ECONFIG;
            goto close;
        }
    }
    if (ferror(f)) {
        rc = pio_from_errno(errno);
        keys_say(errs, "cannot read %s: %s", path, strerror(errno));
        goto close;
    }
    if (!pub_line || (want_secret && !sec_line)) {
        keys_say(errs, "%s: no %s line: %s", path, !pub_line ? "public-key" : "secret-key", fix);
        rc = PIO_ECONFIG;
    }
    goto close;
malformed:
    keys_say(errs, "%s:%d: expected 'public-key = KEY'%s: %s", path, line,
             want_secret ? " or 'secret-key = KEY'" : "", fix);
close:
    if (buf) {
        explicit_bzero(buf, cap);
        free(buf);
    }
    fclose(f);
    return rc;
}

static int keys_cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add every DIR/ *.pub, sorted by name, to k->peer. */
static int keys_load_peers(struct piod_keys *k, const char *dir, FILE *errs)
{
    DIR *d;
    FILE *f;
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0;
    char path[KEYS_PATH_MAX], fix[KEYS_PATH_MAX + 128], unused[PIOD_Z85_KEY];
    int rc = PIO_OK;

    d = opendir(dir);
    if (d == NULL) {
        rc = pio_from_errno(errno);
        keys_say(errs, "cannot read the key directory %s: %s", dir, strerror(errno));
        return rc;
    }
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 4, ".pub") != 0 || de->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **more = realloc(names, (cap ? cap * 2 : 16) * sizeof(*names));
            PIO_CHECK(more == NULL, rc, PIO_ENOMEM, free_names);
            names = more;
            cap = cap ? cap * 2 : 16;
        }
        names[n] = strndup(de->d_name, len - 4);
        PIO_CHECK(names[n] == NULL, rc, PIO_ENOMEM, free_names);
        n++;
        errno = 0;
    }
    if (errno != 0) {
        rc = pio_from_errno(errno);
        keys_say(errs, "cannot read the key directory %s: %s", dir, strerror(errno));
        goto free_names;
    }
    if (n > 1)
        qsort(names, n, sizeof(*names), keys_cmp_names);

    for (size_t i = 0; i < n; i++) {
        if (!keys_name_ok(names[i])) {
            keys_say(errs,
                     "%s/%s.pub: '%s' is not a system name (1 to 63 of A-Z a-z 0-9 . _ -): "
                     "rename or remove the file",
                     dir, names[i], names[i]);
            rc = PIO_ECONFIG;
            goto free_names;
        }
        if (k->npeers >= KEYS_MAXPEERS) {
            keys_say(errs, "%s: more than %d .pub files: at most %d peers are supported", dir,
                     KEYS_MAXPEERS, KEYS_MAXPEERS);
            rc = PIO_ECONFIG;
            goto free_names;
        }
        snprintf(path, sizeof(path), "%s/%s.pub", dir, names[i]);
        snprintf(fix, sizeof(fix), "get a fresh copy of %s.pub from system %s", names[i], names[i]);
        f = fopen(path, "re");
        if (f == NULL) {
            rc = pio_from_errno(errno);
            keys_say(errs, "cannot read %s: %s", path, strerror(errno));
            goto free_names;
        }
        rc = keys_read(f, path, 0, k->peer[k->npeers].public_key, unused, fix, errs);
        if (rc != PIO_OK)
            goto free_names;
        for (int j = 0; j < k->npeers; j++)
            if (strcmp(k->peer[j].public_key, k->peer[k->npeers].public_key) == 0) {
                keys_say(errs, "%s/%s.pub and %s/%s.pub hold the same key: remove the wrong one",
                         dir, k->peer[j].name, dir, names[i]);
                rc = PIO_ECONFIG;
                goto free_names;
            }
        snprintf(k->peer[k->npeers].name, sizeof(k->peer[0].name), "%s", names[i]);
        k->npeers++;
    }
free_names:
    if (rc == PIO_ENOMEM)
        keys_say(errs, "out of memory reading %s", dir);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return rc;
}

int piod_keys_load(struct piod_keys *k, const char *dir, const char *name, FILE *errs)
{
    char path[KEYS_PATH_MAX], fix[2 * KEYS_PATH_MAX + 128], derived[PIOD_Z85_KEY];
    const char *ours;
    struct stat st;
    FILE *f;
    int fd, rc;

    memset(k, 0, sizeof(*k));
    if (dir == NULL || name == NULL || !keys_name_ok(name)) {
        keys_say(errs, "bad system name '%s': expected 1 to 63 characters from A-Z a-z 0-9 . _ -",
                 name ? name : "");
        return PIO_EINVAL;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s.key", dir, name) >= sizeof(path)) {
        keys_say(errs, "key directory path '%s' is too long", dir);
        return PIO_EINVAL;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        rc = pio_from_errno(errno);
        if (rc == PIO_ENOENT)
            keys_say(errs,
                     "no key for system %s: %s does not exist. Make one with `piod --keygen "
                     "%s --name %s`, then give %s.pub to its peers",
                     name, path, dir, name, name);
        else
            keys_say(errs, "cannot read %s: %s", path, strerror(errno));
        return rc;
    }
    if (fstat(fd, &st) != 0) {
        rc = pio_from_errno(errno);
        keys_say(errs, "cannot stat %s: %s", path, strerror(errno));
        goto close_fd;
    }
    if (!S_ISREG(st.st_mode)) {
        keys_say(errs, "%s is not a regular file: remove it and run `piod --keygen %s --name %s`",
                 path, dir, name);
        rc = PIO_ECONFIG;
        goto close_fd;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        keys_say(errs,
                 "%s holds a secret key but has mode %04o, open to group or others: run "
                 "`chmod 600 %s` (and consider the key leaked if others could read it)",
                 path, (unsigned)(st.st_mode & 07777), path);
        rc = PIO_EPERM;
        goto close_fd;
    }
    f = fdopen(fd, "r");
    if (f == NULL) {
        rc = pio_from_errno(errno);
        keys_say(errs, "cannot read %s: %s", path, strerror(errno));
        goto close_fd;
    }
    snprintf(fix, sizeof(fix),
             "the file is damaged: remove it and make a new key with `piod --keygen %s --name %s`",
             dir, name);
    rc = keys_read(f, path, 1, k->public_key, k->secret_key, fix, errs); /* closes f */
    if (rc != PIO_OK)
        goto wipe;
    if (zmq_curve_public(derived, k->secret_key) == 0 && strcmp(derived, k->public_key) != 0) {
        keys_say(errs, "%s: secret-key and public-key do not belong together: %s", path, fix);
        rc = PIO_ECONFIG;
        goto wipe;
    }

    rc = keys_load_peers(k, dir, errs);
    if (rc != PIO_OK)
        goto wipe;
    ours = piod_keys_public_of(k, name);
    if (ours == NULL) { /* no NAME.pub: we still know ourselves */
        if (k->npeers >= KEYS_MAXPEERS) {
            keys_say(errs, "%s: too many .pub files: at most %d peers", dir, KEYS_MAXPEERS - 1);
            rc = PIO_ECONFIG;
            goto wipe;
        }
        snprintf(k->peer[k->npeers].name, sizeof(k->peer[0].name), "%s", name);
        memcpy(k->peer[k->npeers].public_key, k->public_key, sizeof(k->public_key));
        k->npeers++;
    } else if (strcmp(ours, k->public_key) != 0) {
        keys_say(errs, "%s/%s.pub does not match %s: replace it with the public-key line of %s",
                 dir, name, path, path);
        rc = PIO_ECONFIG;
        goto wipe;
    }
    return PIO_OK;
close_fd:
    close(fd);
wipe:
    explicit_bzero(k, sizeof(*k));
    return rc;
}

const char *piod_keys_find(const struct piod_keys *k, const char *z85_public)
{
    if (k == NULL || z85_public == NULL)
        return NULL;
    for (int i = 0; i < k->npeers; i++)
        if (strcmp(k->peer[i].public_key, z85_public) == 0)
            return k->peer[i].name;
    return NULL;
}

const char *piod_keys_public_of(const struct piod_keys *k, const char *name)
{
    if (k == NULL || name == NULL)
        return NULL;
    for (int i = 0; i < k->npeers; i++)
        if (strcmp(k->peer[i].name, name) == 0)
            return k->peer[i].public_key;
    return NULL;
}
