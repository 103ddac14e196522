/* cli_json.c - JSON output of PIO's commands through json-c (cli_json.h).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Not in libpio: only the commands that write JSON link it, with json-c
 * (docs/design-notes.md, "Command-line conventions"). */
#include "cli_json.h"

#include <json-c/printbuf.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pio_cli_json_print(const char *prog, json_object *o)
{
    const char *text = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE)
                         : NULL;
    int rc = 0;
    if (!text) {
        fprintf(stderr, "%s: cannot write JSON: out of memory\n", prog);
        rc = 1;
    } else if (printf("%s\n", text) < 0 || fflush(stdout) != 0) {
        fprintf(stderr, "%s: cannot write to stdout\n", prog);
        rc = 1;
    }
    json_object_put(o);
    return rc;
}

static int all_digits(const char *s, size_t n)
{
    if (n == 0 || n > 19) /* below 10^19: a uint64 holds it; longer is a string */
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

json_object *pio_cli_json_kv(const char *text)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    const char *p = text;
    while (*p) {
        p += strspn(p, " \t\n");
        size_t n = strcspn(p, " \t\n");
        const char *eq = memchr(p, '=', n);
        if (eq && eq > p) {
            char *key = strndup(p, (size_t)(eq - p));
            const char *v = eq + 1;
            size_t vn = n - (size_t)(eq - p) - 1;
            json_object *val = all_digits(v, vn) ? json_object_new_uint64(strtoull(v, NULL, 10))
                                                 : json_object_new_string_len(v, (int)vn);
            if (!key || !val || json_object_object_add(o, key, val) != 0) {
                free(key);
                json_object_put(val);
                json_object_put(o);
                return NULL;
            }
            free(key);
        }
        p += n;
    }
    return o;
}

/* rows_serializer - pio_cli_json_rows: "[", each element (json-c's own
 * text of it, same flags) after a newline and two spaces, "]". */
static int rows_serializer(json_object *arr, struct printbuf *pb, int level, int flags)
{
    (void)level;
    if (printbuf_memappend(pb, "[", 1) < 0)
        return -1;
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; i < n; i++) {
        const char *t = json_object_to_json_string_ext(json_object_array_get_idx(arr, i), flags);
        if (!t || printbuf_memappend(pb, i ? ",\n  " : "\n  ", i ? 4 : 3) < 0 ||
            printbuf_memappend(pb, t, (int)strlen(t)) < 0)
            return -1;
    }
    return printbuf_memappend(pb, "]", 1) < 0 ? -1 : 0;
}

void pio_cli_json_rows(json_object *arr)
{
    json_object_set_serializer(arr, rows_serializer, NULL, NULL);
}

void pio_cli_json_u64(json_object *o, const char *key, uint64_t v)
{
    json_object_object_add(o, key, json_object_new_uint64(v));
}

void pio_cli_json_str(json_object *o, const char *key, const char *s)
{
    json_object_object_add(o, key, s ? json_object_new_string(s) : NULL);
}
