/* cli_json.h - JSON output of PIO's commands through json-c (cli_json.c).
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * A command builds its answer as json-c objects (json-c escapes every
 * string: names with quotes, backslashes or control characters stay valid
 * JSON) and prints it with pio_cli_json_print, so that all commands write
 * the same layout: one line, `{"key": value, ...}`, keys in the order they
 * were added, '/' not escaped (paths stay readable).
 * Thread safety: every function here is thread-safe. */
#ifndef PIO_CLI_JSON_H
#define PIO_CLI_JSON_H

#include <json-c/json.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* pio_cli_json_print - write o to stdout as one JSON text and a newline,
 * and drop the caller's reference to o (o is freed unless shared).
 * prog [in]: the command's name for the error message.
 * o [in, taken]: the value; NULL (a json-c allocation failed) is an error.
 * Returns 0, or 1 (message on stderr) when o is NULL, json-c cannot
 * serialize it or stdout fails. */
int pio_cli_json_print(const char *prog, json_object *o);

/* pio_cli_json_kv - an object from "key=value key=value ..." text (the
 * counters gas-stat and pfs qos receive): a value of decimal digits becomes
 * an integer, any other a string; words without '=' are skipped.
 * text [in]: not kept. Returns a new object (the caller owns its
 * reference), or NULL when out of memory. */
json_object *pio_cli_json_kv(const char *text);

/* pio_cli_json_rows - make array arr print each element on a line of its
 * own ("[\n  {...},\n  {...}]"), as pio-info always did, so that line tools
 * (grep -c) count rows. arr [in]: a json-c array; its elements still go
 * through json-c. */
void pio_cli_json_rows(json_object *arr);

/* pio_cli_json_u64 - json_object_object_add(o, key, json_object_new_uint64(v)),
 * the call every writer makes most. */
void pio_cli_json_u64(json_object *o, const char *key, uint64_t v);

/* pio_cli_json_str - the same for a string (copied; NULL becomes null). */
void pio_cli_json_str(json_object *o, const char *key, const char *s);

#ifdef __cplusplus
}
#endif
#endif
