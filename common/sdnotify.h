/* sdnotify.h - tell systemd a daemon is ready (sd_notify), without libsystemd.
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Private to the PIO daemons (piod, pfs-mds, pfs-iod, gas-dispatcher,
 * pio-vizd), whose units are Type=notify (systemd/). Thread-safe (no state
 * of its own; pio_sd_ready changes the environment: call it from the main
 * thread, as daemons do once they serve). */
#ifndef PIO_SDNOTIFY_H
#define PIO_SDNOTIFY_H

#ifdef __cplusplus
extern "C" {
#endif

/* pio_sd_notify - send state (e.g. "READY=1", "STOPPING=1", "STATUS=...",
 * newline-separated assignments) to the service manager as one datagram on
 * $NOTIFY_SOCKET (a path, or "@name" for an abstract socket). state [in]:
 * read, not kept. Without NOTIFY_SOCKET (not started by systemd with
 * Type=notify) it does nothing and returns PIO_OK. Returns PIO_OK, or the
 * PIO status of the failed socket call (PIO_EINVAL for an address that is
 * not a path or an abstract name, or too long). Never exits. */
int pio_sd_notify(const char *state);

/* pio_sd_ready - pio_sd_notify("READY=1"), then unset
 * NOTIFY_SOCKET so that processes this one starts later (piod's file
 * service) do not speak for it. Returns as pio_sd_notify. */
int pio_sd_ready(void);

#ifdef __cplusplus
}
#endif

#endif
