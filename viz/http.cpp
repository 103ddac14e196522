// http.cpp - pio-vizd's live page: a small HTTP server on loopback.
// SPDX-License-Identifier: BSD-3-Clause
//
// libmicrohttpd serves three fixed paths, nothing else (no file names from
// the request ever reach the file system, so there is no traversal):
//   GET /             the page (self-contained HTML + JS, no outside links)
//   GET /latest.png   PNG_DIR/latest.png; 404 until the first frame (and
//                     always without a PNG folder).
//                     ETag: the file's inode, size and mtime (each frame is
//                     a new file renamed over the old one), so the page can
//                     ask cheaply (HEAD) whether the frame changed.
//   GET /status.json  whatever status_json() returns
// The page polls /status.json every 500 ms for the step ("step" or
// "last_step"), the simulation rate ("rate" or "steps_per_second") and the
// dropped steps ("dropped" or "steps_dropped"), lists everything else it
// finds there (numbers, arrays such as the per-rank lag, one line per
// element of an array of objects such as the outputs), and reloads the
// image with a cache-busting query when its ETag changes. It binds
// 127.0.0.1 only.
//
// Thread-safety: requests are answered in libmicrohttpd's internal thread;
// status_json is called from there and must be thread-safe. Destroying the
// LivePage stops the server and waits for that thread.
#include "outputs.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vizd
{

namespace
{

const char http_page[] = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>pio-vizd live</title>
<style>
  body { background: #16181d; color: #e6e6e6; font: 15px/1.4 sans-serif; margin: 16px; }
  h1 { font-size: 18px; margin: 0 0 10px 0; font-weight: 600; }
  #bar span { display: inline-block; margin-right: 22px; }
  #bar b { font-size: 20px; color: #fff; }
  #frame { display: block; margin: 10px 0; max-width: 100%; border: 1px solid #333; }
  #none { color: #aaa; margin: 10px 0; }
  #more { font-size: 12px; color: #aaa; border-collapse: collapse; }
  #more td { padding: 1px 12px 1px 0; }
  #state.down { color: #f66; }
</style>
</head>
<body>
<h1>pio-vizd &mdash; live frame</h1>
<div id="bar">
  <span>step <b id="step">&ndash;</b></span>
  <span>simulation <b id="rate">&ndash;</b> steps/s</span>
  <span>dropped <b id="dropped">&ndash;</b></span>
  <span id="state"></span>
</div>
<div id="none" hidden>no frame yet</div>
<img id="frame" src="latest.png" alt="the newest frame"
     onerror="this.hidden=true; document.getElementById('none').hidden=false">
<table id="more"></table>
<script>
"use strict";
var shownTag = null;
function pick(s, names) {
  for (var i = 0; i < names.length; i++) {
    var v = s, path = names[i].split(".");
    for (var j = 0; j < path.length && v !== undefined && v !== null; j++) v = v[path[j]];
    if (v !== undefined && v !== null) return v;
  }
  return undefined;
}
function fmt(v) {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toPrecision(4);
  return String(v);
}
function show(id, v) {
  document.getElementById(id).textContent = v === undefined ? "\u2013" : fmt(v);
}
function flat(o) { // "k=v ..." of an object's plain values
  var parts = [];
  for (var k in o) if (o[k] === null || typeof o[k] !== "object") parts.push(k + "=" + fmt(o[k]));
  return parts.join("  ");
}
function table(s) {
  var t = document.getElementById("more"), rows = [];
  (function walk(o, pre) {
    for (var k in o) {
      var v = o[k];
      if (Array.isArray(v)) {
        if (v.length && v[0] !== null && typeof v[0] === "object")
          v.forEach(function (e, i) { rows.push([pre + k + "." + (e.name || i), flat(e)]); });
        else
          rows.push([pre + k, v.map(fmt).join(" ")]);
      } else if (v !== null && typeof v === "object") {
        if (pre === "") walk(v, k + ".");
      } else {
        rows.push([pre + k, fmt(v)]);
      }
    }
  })(s, "");
  t.textContent = "";
  rows.forEach(function (r) {
    var tr = t.insertRow(), a = tr.insertCell(), b = tr.insertCell();
    a.textContent = r[0]; b.textContent = r[1];
  });
}
function frame() {
  fetch("latest.png", { method: "HEAD", cache: "no-store" }).then(function (r) {
    if (!r.ok) return;
    var tag = r.headers.get("ETag") || r.headers.get("Last-Modified") || String(Date.now());
    if (tag === shownTag) return;
    var img = new Image();
    img.onload = function () {
      var f = document.getElementById("frame");
      f.src = img.src; f.hidden = false;
      document.getElementById("none").hidden = true;
      shownTag = tag;
    };
    img.src = "latest.png?v=" + encodeURIComponent(tag);
  }).catch(function () {});
}
function tick() {
  fetch("status.json", { cache: "no-store" }).then(function (r) { return r.json(); })
    .then(function (s) {
      show("step", pick(s, ["step", "last_step", "frame_step", "steps.last"]));
      show("rate", pick(s, ["rate", "steps_per_second", "steps_per_s", "steps.rate"]));
      show("dropped", pick(s, ["dropped", "steps_dropped", "steps.dropped"]));
      document.getElementById("state").textContent = "";
      document.getElementById("state").className = "";
      table(s);
    })
    .catch(function () {
      document.getElementById("state").textContent = "receiver not answering";
      document.getElementById("state").className = "down";
    })
    .then(frame)
    .then(function () { setTimeout(tick, 500); });
}
tick();
</script>
</body>
</html>
)HTML";

class HttpPage : public LivePage
{
  public:
    HttpPage(const std::string &dir, std::function<std::string()> status)
        : dir_(dir), status_(std::move(status))
    {
    }
    ~HttpPage() override
    {
        if (d_)
            MHD_stop_daemon(d_);
    }
    bool start(int port, std::string *err);

  private:
    static MHD_Result handle(void *cls, MHD_Connection *c, const char *url, const char *method,
                             const char *version, const char *upload, size_t *upload_size,
                             void **con_cls);
    static void log(void *cls, const char *fmt, va_list ap);
    MHD_Result answer(MHD_Connection *c, const char *url, bool head);

    std::string dir_;
    std::function<std::string()> status_;
    MHD_Daemon *d_ = nullptr;
    std::mutex log_mtx_;
    std::string last_log_;
};

void HttpPage::log(void *cls, const char *fmt, va_list ap)
{
    auto *self = static_cast<HttpPage *>(cls);
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = 0;
    std::lock_guard<std::mutex> g(self->log_mtx_);
    self->last_log_ = buf;
}

MHD_Result http_send(MHD_Connection *c, unsigned code, MHD_Response *r, const char *type)
{
    if (!r)
        return MHD_NO;
    if (type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_Result rc = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return rc;
}

MHD_Result http_text(MHD_Connection *c, unsigned code, const std::string &body)
{
    MHD_Response *r =
        MHD_create_response_from_buffer(body.size(), (void *)body.data(), MHD_RESPMEM_MUST_COPY);
    return http_send(c, code, r, "text/plain; charset=utf-8");
}

MHD_Result HttpPage::answer(MHD_Connection *c, const char *url, bool head)
{
    (void)head; // libmicrohttpd sends no body for HEAD itself
    if (strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0) {
        MHD_Response *r = MHD_create_response_from_buffer(sizeof http_page - 1, (void *)http_page,
                                                          MHD_RESPMEM_PERSISTENT);
        return http_send(c, MHD_HTTP_OK, r, "text/html; charset=utf-8");
    }
    if (strcmp(url, "/status.json") == 0) {
        std::string body;
        try {
            body = status_();
        } catch (const std::exception &e) {
            return http_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                             std::string("status failed: ") + e.what() + "\n");
        }
        MHD_Response *r = MHD_create_response_from_buffer(body.size(), (void *)body.data(),
                                                          MHD_RESPMEM_MUST_COPY);
        return http_send(c, MHD_HTTP_OK, r, "application/json");
    }
    if (strcmp(url, "/latest.png") == 0) {
        // open once: a frame renamed over latest.png meanwhile leaves this
        // file whole
        std::string path = dir_ + "/latest.png";
        int fd = dir_.empty() ? -1 : open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return http_text(c, MHD_HTTP_NOT_FOUND, "no frame yet\n");
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            return http_text(c, MHD_HTTP_NOT_FOUND, "no frame yet\n");
        }
        char tag[96];
        snprintf(tag, sizeof tag, "\"%llx-%llx-%llx.%09ld\"", (unsigned long long)st.st_ino,
                 (unsigned long long)st.st_size, (unsigned long long)st.st_mtim.tv_sec,
                 (long)st.st_mtim.tv_nsec);
        const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
        if (inm && strcmp(inm, tag) == 0) {
            close(fd);
            MHD_Response *r =
                MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
            if (r)
                MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, tag);
            return http_send(c, MHD_HTTP_NOT_MODIFIED, r, nullptr);
        }
        MHD_Response *r = MHD_create_response_from_fd((size_t)st.st_size, fd); // owns fd
        if (!r) {
            close(fd);
            return MHD_NO;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, tag);
        return http_send(c, MHD_HTTP_OK, r, "image/png");
    }
    return http_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

MHD_Result HttpPage::handle(void *cls, MHD_Connection *c, const char *url, const char *method,
                            const char *version, const char *upload, size_t *upload_size,
                            void **con_cls)
{
    (void)version;
    (void)upload;
    (void)con_cls;
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    bool head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (!get && !head) {
        MHD_Response *r = MHD_create_response_from_buffer(19, (void *)"method not allowed\n",
                                                          MHD_RESPMEM_PERSISTENT);
        if (r)
            MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        return http_send(c, MHD_HTTP_METHOD_NOT_ALLOWED, r, "text/plain; charset=utf-8");
    }
    if (*upload_size) { // a GET with a body: ignore the body
        *upload_size = 0;
        return MHD_YES;
    }
    return static_cast<HttpPage *>(cls)->answer(c, url, head);
}

bool HttpPage::start(int port, std::string *err)
{
    if (port < 1 || port > 65535) {
        *err = "http: port " + std::to_string(port) + ": use 1 to 65535";
        return false;
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    d_ = MHD_start_daemon(flags, (uint16_t)port, nullptr, nullptr, &HttpPage::handle, this,
                          MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_EXTERNAL_LOGGER,
                          &HttpPage::log, this, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
    if (!d_) {
        std::lock_guard<std::mutex> g(log_mtx_);
        *err = "http: cannot serve on 127.0.0.1:" + std::to_string(port) +
               (last_log_.empty() ? std::string(" (port in use?)") : ": " + last_log_);
        return false;
    }
    return true;
}

} // namespace

std::unique_ptr<LivePage> LivePage::start(int port, const std::string &png_dir,
                                          std::function<std::string()> status_json,
                                          std::string *err)
{
    if (!status_json) {
        *err = "http: no status function";
        return nullptr;
    }
    std::unique_ptr<HttpPage> p(new HttpPage(png_dir, std::move(status_json)));
    if (!p->start(port, err))
        return nullptr;
    return p;
}

} // namespace vizd
