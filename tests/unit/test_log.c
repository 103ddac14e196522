/* test_log.c - piod logging: line format, level filtering, reopen after rotation, whole lines.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Each case logs to a file in its own mkdtemp folder and reads it back.
 */
#include "piod/config.h"
#include "piod/log.h"
#include "tests/lib/unit.h"

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static char top[64];
static char logpath[128];

static void make_dirs(void)
{
    snprintf(top, sizeof(top), "/tmp/pio-test-log.XXXXXX");
    assert_non_null(mkdtemp(top));
    snprintf(logpath, sizeof(logpath), "%s/piod.log", top);
}

static void cleanup(void)
{
    char cmd[256];
    piod_log_open(0, NULL, PIOD_LOG_INFO);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
    assert_int_equal(system(cmd), 0);
}

/* The file's text (caller frees). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = NULL;
    size_t len;
    FILE *out = open_memstream(&buf, &len);
    int ch;
    while ((ch = fgetc(f)) != EOF)
        fputc(ch, out);
    fclose(out);
    fclose(f);
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void assert_matches(const char *text, const char *pattern)
{
    regex_t re;
    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB | REG_NEWLINE), 0);
    int rc = regexec(&re, text, 0, NULL, 0);
    regfree(&re);
    if (rc != 0)
        fail_msg("'%s' does not match /%s/", text, pattern);
}

#define STAMP "^[0-9]{4}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\\.[0-9]{3}Z "

static void test_log_line_format(void **state)
{
    (void)state;
    char pattern[256];
    make_dirs();
    assert_int_equal(piod_log_open(0, logpath, PIOD_LOG_INFO), 0);
    PIOD_INFO("hello %d", 42);
    PIOD_ERR("it broke: %s", "badly");
    PIOD_WARN("careful\n"); /* a trailing newline is not doubled */
    char *text = slurp(logpath);
    assert_int_equal(count_lines(text), 3);
    snprintf(pattern, sizeof(pattern), STAMP "piod\\[%ld\\] INFO: hello 42$", (long)getpid());
    assert_matches(text, pattern);
    snprintf(pattern, sizeof(pattern), STAMP "piod\\[%ld\\] ERROR: it broke: badly$",
             (long)getpid());
    assert_matches(text, pattern);
    assert_matches(text, STAMP "piod\\[[0-9]+\\] WARN: careful$");

    /* the stamp is UTC now, to the second or so */
    time_t now = time(NULL);
    struct tm tm;
    char today[16];
    gmtime_r(&now, &tm);
    strftime(today, sizeof(today), "%Y-%m-%dT", &tm);
    assert_memory_equal(text, today, strlen(today));
    free(text);
    cleanup();
}

static void test_log_level_filter(void **state)
{
    (void)state;
    make_dirs();
    assert_int_equal(piod_log_open(0, logpath, PIOD_LOG_WARN), 0);
    PIOD_ERR("e1");
    PIOD_WARN("w1");
    PIOD_INFO("i1");
    PIOD_DEBUG("d1");
    char *text = slurp(logpath);
    assert_int_equal(count_lines(text), 2);
    assert_non_null(strstr(text, "ERROR: e1\n"));
    assert_non_null(strstr(text, "WARN: w1\n"));
    assert_null(strstr(text, "i1"));
    free(text);

    assert_int_equal(piod_log_open(0, logpath, PIOD_LOG_DEBUG), 0);
    PIOD_DEBUG("d2");
    PIOD_INFO("i2");
    assert_int_equal(piod_log_open(0, logpath, PIOD_LOG_ERROR), 0);
    PIOD_WARN("w3");
    PIOD_ERR("e3");
    text = slurp(logpath);
    assert_int_equal(count_lines(text), 5);
    assert_non_null(strstr(text, "DEBUG: d2\n"));
    assert_non_null(strstr(text, "INFO: i2\n"));
    assert_null(strstr(text, "w3"));
    assert_non_null(strstr(text, "ERROR: e3\n"));
    free(text);
    cleanup();
}

static void test_log_reopen_after_rename(void **state)
{
    (void)state;
    char old[160];
    make_dirs();
    snprintf(old, sizeof(old), "%s.1", logpath);
    assert_int_equal(piod_log_open(0, logpath, PIOD_LOG_INFO), 0);
    PIOD_INFO("before");
    assert_int_equal(rename(logpath, old), 0);
    PIOD_INFO("between"); /* still the old file, as logrotate expects */
    assert_int_equal(piod_log_reopen(), 0);
    PIOD_INFO("after");
    char *a = slurp(old), *b = slurp(logpath);
    assert_int_equal(count_lines(a), 2);
    assert_non_null(strstr(a, "INFO: before\n"));
    assert_non_null(strstr(a, "INFO: between\n"));
    assert_int_equal(count_lines(b), 1);
    assert_non_null(strstr(b, "INFO: after\n"));
    free(a);
    free(b);
    cleanup();
}

static void test_log_open_failure(void **state)
{
    (void)state;
    errno = 0;
    assert_int_equal(piod_log_open(0, "/nonexistent-dir/piod.log", PIOD_LOG_INFO), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(piod_log_reopen(), 0); /* stderr: nothing to reopen */
    assert_int_equal(piod_log_open(0, "", PIOD_LOG_INFO), 0);
}

static void test_log_one_line_per_call(void **state)
{
    (void)state;
    char big[10000];
    make_dirs();
    assert_int_equal(piod_log_open(0, logpath, PIOD_LOG_INFO), 0);
    PIOD_INFO("two\nlines");
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    PIOD_INFO("%s", big); /* cut, still one line */
    errno = EAGAIN;
    PIOD_INFO("errno kept");
    assert_int_equal(errno, EAGAIN);
    char *text = slurp(logpath);
    assert_int_equal(count_lines(text), 3);
    assert_non_null(strstr(text, "INFO: two lines\n"));
    assert_non_null(strstr(text, "xxx...\n"));
    free(text);
    cleanup();
}

/* syslog: nothing to read back here, but switching to it and away works */
static void test_log_syslog_switch(void **state)
{
    (void)state;
    make_dirs();
    assert_int_equal(piod_log_open(1, NULL, PIOD_LOG_ERROR), 0);
    PIOD_DEBUG("filtered out before reaching syslog");
    assert_int_equal(piod_log_reopen(), 0); /* a no-op for syslog */
    assert_int_equal(piod_log_open(0, logpath, PIOD_LOG_INFO), 0);
    PIOD_INFO("back in the file");
    char *text = slurp(logpath);
    assert_int_equal(count_lines(text), 1);
    free(text);
    cleanup();
}

#define THREADS 4
#define LINES   500

static void *log_thread(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < LINES; i++)
        PIOD_INFO("thread %ld line %d %s", id, i,
                  "padding-padding-padding-padding-padding-padding-padding-padding");
    return NULL;
}

static void test_log_threads_whole_lines(void **state)
{
    (void)state;
    pthread_t t[THREADS];
    make_dirs();
    assert_int_equal(piod_log_open(0, logpath, PIOD_LOG_INFO), 0);
    for (long i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, log_thread, (void *)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    char *text = slurp(logpath);
    assert_int_equal(count_lines(text), THREADS * LINES);
    regex_t re;
    assert_int_equal(regcomp(&re,
                             STAMP "piod\\[[0-9]+\\] INFO: thread [0-9] line [0-9]+ "
                                   "padding-padding-padding-padding-padding-padding-padding-"
                                   "padding$",
                             REG_EXTENDED | REG_NOSUB),
                     0);
    int seen[THREADS] = {0};
    for (char *line = text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        *nl = '\0';
        if (regexec(&re, line, 0, NULL, 0) != 0)
            fail_msg("mangled line: '%s'", line);
        seen[strstr(line, "thread ")[7] - '0']++;
    }
    regfree(&re);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(seen[i], LINES);
    free(text);
    cleanup();
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_log_line_format),         cmocka_unit_test(test_log_level_filter),
    cmocka_unit_test(test_log_reopen_after_rename), cmocka_unit_test(test_log_open_failure),
    cmocka_unit_test(test_log_one_line_per_call),   cmocka_unit_test(test_log_syslog_switch),
    cmocka_unit_test(test_log_threads_whole_lines),
};
PIO_UNIT_MAIN(tests)
