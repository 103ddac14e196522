// pub.cpp - pio-vizd's event feed: one ZeroMQ PUB message per step an
// output finished, for other tools (a viewer that reloads, a copier).
// SPDX-License-Identifier: BSD-3-Clause
//
// A message has two frames: the topic "step", then a JSON object
//   {"step":N,"time":T,"output":"NAME","paths":["...", ...]}
// The body is built with json-c (common/cli_json.h), which escapes strings
// as JSON demands (quote, backslash, control characters); bytes that are
// not UTF-8 become U+FFFD first, so the body always parses. A time that is not finite is null. PUB
// never blocks: a slow or absent subscriber loses messages (ZMQ_SNDHWM), the receiver never waits.
// ZeroMQ binds an ipc:// path by replacing whatever socket file is there,
// so a second receiver would silently steal the first one's subscribers:
// open() refuses an ipc:// path where some process still listens.
//
// Thread-safety: event() may be called from any thread; mtx_ guards the
// socket (a ZeroMQ socket is not thread-safe).
#include "outputs.h"
#include "cli_json.h"

#include <zmq.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace vizd
{

namespace
{

// pub_utf8_len - length of the valid UTF-8 sequence at s (n bytes left), 0
// if invalid
size_t pub_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    unsigned cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

// pub_utf8 - s with every byte that does not start valid UTF-8 replaced by
// U+FFFD (json-c copies string bytes as they are: the body must parse)
std::string pub_utf8(const std::string &s)
{
    std::string out;
    const unsigned char *p = (const unsigned char *)s.data();
    size_t n = s.size();
    for (size_t i = 0; i < n;) {
        size_t len = pub_utf8_len(p + i, n - i);
        if (len == 0) {
            out += "\xef\xbf\xbd";
            i++;
        } else {
            out.append(s, i, len);
            i += len;
        }
    }
    return out;
}

json_object *pub_json_string(const std::string &s)
{
    std::string u = pub_utf8(s);
    return json_object_new_string_len(u.data(), (int)u.size());
}

// pub_ipc_live - some process accepts connections on the ipc:// path
bool pub_ipc_live(const std::string &endpoint)
{
    if (endpoint.compare(0, 6, "ipc://") != 0 || endpoint.size() <= 6 || endpoint[6] == '@')
        return false;
    std::string path = endpoint.substr(6);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (path.size() >= sizeof sa.sun_path)
        return false; // ZeroMQ will say what is wrong with it
    memcpy(sa.sun_path, path.data(), path.size());
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool live = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return live;
}

class ZmqPublisher : public Publisher
{
  public:
    ~ZmqPublisher() override
    {
        if (sock_)
            zmq_close(sock_);
        if (ctx_)
            zmq_ctx_term(ctx_);
    }
    bool open(const std::string &endpoint, std::string *err);
    void event(const std::string &output, const Step &s,
               const std::vector<std::string> &paths) override;

  private:
    std::mutex mtx_;
    void *ctx_ = nullptr, *sock_ = nullptr;
    bool warned_ = false;
};

bool ZmqPublisher::open(const std::string &endpoint, std::string *err)
{
    ctx_ = zmq_ctx_new();
    if (!ctx_) {
        *err = std::string("events: cannot create a ZeroMQ context: ") + zmq_strerror(errno);
        return false;
    }
    sock_ = zmq_socket(ctx_, ZMQ_PUB);
    if (!sock_) {
        *err = std::string("events: cannot create a PUB socket: ") + zmq_strerror(errno);
        return false;
    }
    int linger = 200; // ms: at exit, a little time for the last events
    zmq_setsockopt(sock_, ZMQ_LINGER, &linger, sizeof linger);
    if (pub_ipc_live(endpoint)) {
        *err = "events: cannot bind " + endpoint + ": another process listens there";
        return false;
    }
    if (zmq_bind(sock_, endpoint.c_str()) != 0) {
        *err = "events: cannot bind " + endpoint + ": " + zmq_strerror(errno);
        return false;
    }
    return true;
}

void ZmqPublisher::event(const std::string &output, const Step &s,
                         const std::vector<std::string> &paths)
{
    json_object *o = json_object_new_object(), *arr = json_object_new_array();
    pio_cli_json_u64(o, "step", s.step);
    char t[40];
    snprintf(t, sizeof t, "%.17g", s.time);
    json_object_object_add(o, "time",
                           std::isfinite(s.time) ? json_object_new_double_s(s.time, t) : nullptr);
    json_object_object_add(o, "output", pub_json_string(output));
    for (const auto &p : paths)
        json_object_array_add(arr, pub_json_string(p));
    json_object_object_add(o, "paths", arr);
    const char *text =
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    std::string body = text ? text : "";
    json_object_put(o);
    if (body.empty()) // json-c out of memory: no event, as when PUB drops one
        return;

    std::lock_guard<std::mutex> g(mtx_);
    if (zmq_send(sock_, "step", 4, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(sock_, body.data(), body.size(), ZMQ_DONTWAIT) < 0) {
        // PUB drops rather than fail; an error here is worth one line
        if (!warned_ && errno != EAGAIN)
            fprintf(stderr, "pio-vizd: events: cannot send: %s\n", zmq_strerror(errno));
        warned_ = true;
    }
}

} // namespace

std::unique_ptr<Publisher> Publisher::open(const std::string &endpoint, std::string *err)
{
    std::unique_ptr<ZmqPublisher> p(new ZmqPublisher());
    if (!p->open(endpoint, err))
        return nullptr;
    return p;
}

} // namespace vizd
