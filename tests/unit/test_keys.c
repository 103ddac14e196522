/* test_keys.c - CURVE key files: generation, modes, loading, refusals.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Every case works in its own mkdtemp folder; the key directory is a
 * not-yet-existing "keys" below it, so generation also creates it.
 */
#include "pio.h"
#include "piod/keys.h"
#include "tests/lib/unit.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char top[64];     /* the case's temp folder */
static char keydir[128]; /* top/keys */

static void make_dirs(void)
{
    snprintf(top, sizeof(top), "/tmp/pio-test-keys.XXXXXX");
    assert_non_null(mkdtemp(top));
    snprintf(keydir, sizeof(keydir), "%s/keys", top);
}

static void cleanup(void)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
    assert_int_equal(system(cmd), 0);
}

static const char *kpath(const char *file, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", keydir, file);
    return buf;
}

static int mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (int)(st.st_mode & 07777);
}

static void write_file(const char *file, const char *text)
{
    char path[256];
    FILE *f = fopen(kpath(file, path, sizeof(path)), "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The value of "key = " in a key file. */
static void read_value(const char *file, const char *key, char out[PIOD_Z85_KEY])
{
    char path[256], line[256], want[64];
    FILE *f = fopen(kpath(file, path, sizeof(path)), "r");
    assert_non_null(f);
    snprintf(want, sizeof(want), "%s = ", key);
    out[0] = '\0';
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, want, strlen(want)) == 0) {
            snprintf(out, PIOD_Z85_KEY, "%.40s", line + strlen(want));
            break;
        }
    fclose(f);
    assert_int_equal(strlen(out), 40);
}

/* Run f's load of NAME and capture what it says. */
static int load_said(struct piod_keys *k, const char *name, char **said)
{
    size_t len;
    FILE *errs = open_memstream(said, &len);
    int rc = piod_keys_load(k, keydir, name, errs);
    fclose(errs);
    return rc;
}

static void test_generate_modes(void **state)
{
    (void)state;
    char path[256];
    make_dirs();
    mode_t old = umask(0); /* the modes must not depend on the umask */
    assert_int_equal(piod_keys_generate(keydir, "sysA", stderr), PIO_OK);
    umask(077);
    assert_int_equal(piod_keys_generate(keydir, "sysB", stderr), PIO_OK);
    umask(old);
    assert_int_equal(mode_of(keydir), 0700);
    assert_int_equal(mode_of(kpath("sysA.key", path, sizeof(path))), 0600);
    assert_int_equal(mode_of(kpath("sysA.pub", path, sizeof(path))), 0644);
    assert_int_equal(mode_of(kpath("sysB.key", path, sizeof(path))), 0600);
    assert_int_equal(mode_of(kpath("sysB.pub", path, sizeof(path))), 0644);

    /* the .key holds both halves, the .pub only the public one, the same */
    char pub_k[PIOD_Z85_KEY], sec_k[PIOD_Z85_KEY], pub_p[PIOD_Z85_KEY];
    read_value("sysA.key", "public-key", pub_k);
    read_value("sysA.key", "secret-key", sec_k);
    read_value("sysA.pub", "public-key", pub_p);
    assert_string_equal(pub_k, pub_p);
    assert_string_not_equal(pub_k, sec_k);
    cleanup();
}

static void test_generate_refuses_overwrite(void **state)
{
    (void)state;
    char before[PIOD_Z85_KEY], after[PIOD_Z85_KEY], *said = NULL;
    size_t len;
    make_dirs();
    assert_int_equal(piod_keys_generate(keydir, "sysA", NULL), PIO_OK);
    read_value("sysA.key", "secret-key", before);
    FILE *errs = open_memstream(&said, &len);
    assert_int_equal(piod_keys_generate(keydir, "sysA", errs), PIO_EEXIST);
    fclose(errs);
    assert_non_null(strstr(said, "refusing to overwrite"));
    read_value("sysA.key", "secret-key", after);
    assert_string_equal(before, after);
    free(said);
    /* a name that could leave the folder is refused */
    assert_int_equal(piod_keys_generate(keydir, "../x", NULL), PIO_EINVAL);
    cleanup();
}

static void test_load_self_and_peers(void **state)
{
    (void)state;
    struct piod_keys k;
    char pub_a[PIOD_Z85_KEY], sec_a[PIOD_Z85_KEY], pub_b[PIOD_Z85_KEY], pub_c[PIOD_Z85_KEY];
    make_dirs();
    assert_int_equal(piod_keys_generate(keydir, "sysA", NULL), PIO_OK);
    assert_int_equal(piod_keys_generate(keydir, "sysB", NULL), PIO_OK);
    assert_int_equal(piod_keys_generate(keydir, "sysC", NULL), PIO_OK);
    read_value("sysA.key", "public-key", pub_a);
    read_value("sysA.key", "secret-key", sec_a);
    read_value("sysB.pub", "public-key", pub_b);
    read_value("sysC.pub", "public-key", pub_c);

    assert_int_equal(piod_keys_load(&k, keydir, "sysA", stderr), PIO_OK);
    assert_string_equal(k.public_key, pub_a);
    assert_string_equal(k.secret_key, sec_a);
    assert_int_equal(k.npeers, 3); /* ours is among them */
    assert_string_equal(k.peer[0].name, "sysA");
    assert_string_equal(k.peer[1].name, "sysB");
    assert_string_equal(k.peer[2].name, "sysC");
    assert_string_equal(piod_keys_public_of(&k, "sysA"), pub_a);
    assert_string_equal(piod_keys_public_of(&k, "sysB"), pub_b);
    assert_string_equal(piod_keys_public_of(&k, "sysC"), pub_c);
    assert_null(piod_keys_public_of(&k, "sysD"));

    /* without our own .pub we still know ourselves */
    char path[256];
    assert_int_equal(unlink(kpath("sysA.pub", path, sizeof(path))), 0);
    assert_int_equal(piod_keys_load(&k, keydir, "sysA", stderr), PIO_OK);
    assert_int_equal(k.npeers, 3);
    assert_string_equal(piod_keys_public_of(&k, "sysA"), pub_a);
    cleanup();
}

static void test_find_by_key(void **state)
{
    (void)state;
    struct piod_keys k;
    char pub_b[PIOD_Z85_KEY];
    make_dirs();
    assert_int_equal(piod_keys_generate(keydir, "sysA", NULL), PIO_OK);
    assert_int_equal(piod_keys_generate(keydir, "sysB", NULL), PIO_OK);
    read_value("sysB.pub", "public-key", pub_b);
    assert_int_equal(piod_keys_load(&k, keydir, "sysA", stderr), PIO_OK);
    assert_string_equal(piod_keys_find(&k, pub_b), "sysB");
    assert_string_equal(piod_keys_find(&k, k.public_key), "sysA");
    assert_null(piod_keys_find(&k, "0000000000000000000000000000000000000000"));
    assert_null(piod_keys_find(&k, ""));
    assert_null(piod_keys_find(&k, NULL));
    cleanup();
}

/* write NAME.pub with this text; loading sysA must give PIO_ECONFIG saying want */
static void expect_malformed(const char *file, const char *text, const char *want)
{
    struct piod_keys k;
    char *said = NULL;
    write_file(file, text);
    int rc = load_said(&k, "sysA", &said);
    if (rc != PIO_ECONFIG || strstr(said, want) == NULL)
        fail_msg("%s: want PIO_ECONFIG and '%s', got %s: %s", file, want, PIO_Errname(rc), said);
    assert_string_equal(k.secret_key, ""); /* nothing half-loaded */
    free(said);
}

static void test_malformed_files(void **state)
{
    (void)state;
    char path[256], want[320];
    make_dirs();
    assert_int_equal(piod_keys_generate(keydir, "sysA", NULL), PIO_OK);
    const char *good = "0123456789abcdefghijABCDEFGHIJ.-:+=^!/*?";

    snprintf(want, sizeof(want), "%s:2: public-key has 39 characters, a Z85 key has 40",
             kpath("sysB.pub", path, sizeof(path)));
    expect_malformed("sysB.pub", "# short\npublic-key = 0123456789abcdefghijABCDEFGHIJ.-:+=^!/*\n",
                     want);
    snprintf(want, sizeof(want), "%s:1: public-key holds '~', which is not a Z85 character",
             kpath("sysB.pub", path, sizeof(path)));
    expect_malformed("sysB.pub", "public-key = 0123456789abcdefghijABCDEFGHIJ.-:+=^!/*~\n", want);
    expect_malformed("sysB.pub", "# nothing\n", "no public-key line");
    expect_malformed("sysB.pub", "public-key 0123\n", "expected 'public-key = KEY'");
    expect_malformed("sysB.pub", "colour = blue\n", "unknown key 'colour'");
    char text[256];
    snprintf(text, sizeof(text), "public-key = %s\nsecret-key = %s\n", good, good);
    expect_malformed("sysB.pub", text, "a .pub file must not hold a secret key");
    snprintf(text, sizeof(text), "public-key = %s\npublic-key = %s\n", good, good);
    expect_malformed("sysB.pub", text, "public-key given twice (first at line 1)");
    /* a .pub that is no name, and two names with one key */
    unlink(kpath("sysB.pub", path, sizeof(path)));
    snprintf(text, sizeof(text), "public-key = %s\n", good);
    expect_malformed("sys B.pub", text, "is not a system name");
    unlink(kpath("sys B.pub", path, sizeof(path)));
    char pub_a[PIOD_Z85_KEY];
    read_value("sysA.pub", "public-key", pub_a);
    snprintf(text, sizeof(text), "public-key = %s\n", pub_a);
    expect_malformed("sysZ.pub", text, "hold the same key");
    unlink(kpath("sysZ.pub", path, sizeof(path)));
    /* our .pub must match our .key */
    snprintf(text, sizeof(text), "public-key = %s\n", good);
    expect_malformed("sysA.pub", text, "sysA.pub does not match");
    cleanup();
}

static void test_malformed_key_file(void **state)
{
    (void)state;
    char path[256], sec[PIOD_Z85_KEY], pub[PIOD_Z85_KEY], text[256];
    make_dirs();
    assert_int_equal(piod_keys_generate(keydir, "sysA", NULL), PIO_OK);
    assert_int_equal(piod_keys_generate(keydir, "sysB", NULL), PIO_OK);
    read_value("sysA.key", "public-key", pub);
    read_value("sysA.key", "secret-key", sec);
    kpath("sysA.key", path, sizeof(path));

    snprintf(text, sizeof(text), "public-key = %s\nsecret-key = %.39s\n", pub, sec);
    write_file("sysA.key", text);
    expect_malformed("sysA.key", text, "secret-key has 39 characters");
    snprintf(text, sizeof(text), "public-key = %s\n", pub);
    expect_malformed("sysA.key", text, "no secret-key line");
    /* the fix names the command */
    expect_malformed("sysA.key", text, "piod --keygen");
    /* a secret key from another pair */
    char sec_b[PIOD_Z85_KEY];
    read_value("sysB.key", "secret-key", sec_b);
    snprintf(text, sizeof(text), "public-key = %s\nsecret-key = %s\n", pub, sec_b);
    expect_malformed("sysA.key", text, "do not belong together");
    /* and the real one loads again */
    snprintf(text, sizeof(text), "# restored\n\npublic-key = %s\nsecret-key = %s\n", pub, sec);
    write_file("sysA.key", text);
    struct piod_keys k;
    assert_int_equal(piod_keys_load(&k, keydir, "sysA", stderr), PIO_OK);
    cleanup();
}

static void test_group_readable_key(void **state)
{
    (void)state;
    struct piod_keys k;
    char path[256], *said = NULL;
    make_dirs();
    assert_int_equal(piod_keys_generate(keydir, "sysA", NULL), PIO_OK);
    assert_int_equal(chmod(kpath("sysA.key", path, sizeof(path)), 0640), 0);
    assert_int_equal(load_said(&k, "sysA", &said), PIO_EPERM);
    assert_non_null(strstr(said, "chmod 600"));
    assert_non_null(strstr(said, "0640"));
    assert_string_equal(k.secret_key, "");
    free(said);
    assert_int_equal(chmod(path, 0604), 0);
    assert_int_equal(piod_keys_load(&k, keydir, "sysA", NULL), PIO_EPERM);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(piod_keys_load(&k, keydir, "sysA", NULL), PIO_OK);
    cleanup();
}

static void test_missing_key(void **state)
{
    (void)state;
    struct piod_keys k;
    char *said = NULL, want[256];
    make_dirs();
    assert_int_equal(load_said(&k, "sysA", &said), PIO_ENOENT); /* no folder at all */
    free(said);
    assert_int_equal(piod_keys_generate(keydir, "sysB", NULL), PIO_OK);
    assert_int_equal(load_said(&k, "sysA", &said), PIO_ENOENT);
    snprintf(want, sizeof(want), "piod --keygen %s --name sysA", keydir);
    assert_non_null(strstr(said, want));
    free(said);
    cleanup();
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_generate_modes),      cmocka_unit_test(test_generate_refuses_overwrite),
    cmocka_unit_test(test_load_self_and_peers), cmocka_unit_test(test_find_by_key),
    cmocka_unit_test(test_malformed_files),     cmocka_unit_test(test_malformed_key_file),
    cmocka_unit_test(test_group_readable_key),  cmocka_unit_test(test_missing_key),
};
PIO_UNIT_MAIN(tests)
