/* The HTTP layer's timeouts (http.c), set small through zn_http_cfg: a
 * connection that sends nothing is closed after the idle timeout, a body
 * still trickling in after the read timeout is cut before the handler runs,
 * and clients within both limits are served. Raw sockets on 127.0.0.1, a
 * port the kernel picks. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"
#include "http.h"

static atomic_int handled;

static const char *route(void *app, const char *method, const char *path) { return "test"; }

static void handler(void *app, zn_http_req *r) {
    atomic_fetch_add(&handled, 1);
    char body[64];
    int n = snprintf(body, sizeof body, "ok:%zu", r->body_len);
    http_send(r, 200, "text/plain", body, (size_t)n, NULL);
}

static zn_http *start(unsigned idle_s, double read_s) {
    zn_http_cfg cfg = {.host = "127.0.0.1", .port = 0, .idle_timeout_s = idle_s, .read_timeout_s = read_s};
    zn_http *h = NULL;
    zn_err err = {0};
    zn_status st = http_start(&h, &cfg, route, handler, NULL, NULL, &err);
    CHECK_MSG(st == ZN_OK, "http_start: %s", err.msg);
    return st == ZN_OK ? h : NULL;
}

static int dial(const zn_http *h) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)http_port(h))};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        CHECK_MSG(0, "connect: %s", strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    struct timeval tv = {6, 0};  /* no test waits longer for an answer */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Reads until the server closes; what came, NUL-terminated. Returns the
 * byte count, -1 when the read timed out (the server kept it open). */
static ssize_t read_all(int fd, char *buf, size_t cap) {
    size_t n = 0;
    for (;;) {
        ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);
        if (k > 0) {
            n += (size_t)k;
            if (n == cap - 1) break;
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
        break;  /* closed (0) or reset */
    }
    buf[n] = 0;
    return (ssize_t)n;
}

static const char req_head[] = "POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n";

static void test_idle_timeout(void) {
    zn_http *h = start(1, 0);
    if (!h) return;
    /* silent: closed after about a second, nothing sent back */
    int fd = dial(h);
    double t0 = harness_now();
    char buf[512];
    ssize_t n = read_all(fd, buf, sizeof buf);
    double dt = harness_now() - t0;
    CHECK_MSG(n == 0, "a silent connection got %zd bytes (-1: still open after 6 s)", n);
    CHECK_MSG(dt > 0.7 && dt < 3.5, "a silent connection was closed after %.2f s (idle timeout 1 s)", dt);
    close(fd);
    /* speaking within the timeout: served */
    fd = dial(h);
    sleep_s(0.4);
    char req[256];
    int len = snprintf(req, sizeof req, req_head, 2);
    CHECK(send(fd, req, (size_t)len, MSG_NOSIGNAL) == len && send(fd, "hi", 2, MSG_NOSIGNAL) == 2);
    n = read_all(fd, buf, sizeof buf);
    CHECK_MSG(n > 0 && strstr(buf, "200 OK") && strstr(buf, "ok:2"), "reply: %s", n > 0 ? buf : "(none)");
    close(fd);
    http_stop(h);
}

/* Sends the body one byte per `gap` seconds; returns how many bytes went
 * before the server cut the connection (all of them when it did not). */
static int trickle(int fd, int len, double gap) {
    char req[256];
    int k = snprintf(req, sizeof req, req_head, len);
    if (send(fd, req, (size_t)k, MSG_NOSIGNAL) != k) return 0;
    for (int i = 0; i < len; i++) {
        sleep_s(gap);
        if (send(fd, "a", 1, MSG_NOSIGNAL) != 1) return i;
    }
    return len;
}

static void test_read_timeout(void) {
    zn_http *h = start(0, 1.0);  /* the idle timeout stays at its 30 s: only the read timeout acts */
    if (!h) return;
    atomic_store(&handled, 0);
    /* 40 bytes at 10 per second would take 4 s: cut after about 1 s, the handler never runs */
    int fd = dial(h);
    double t0 = harness_now();
    int sent = trickle(fd, 40, 0.1);
    char buf[512];
    ssize_t n = sent < 40 ? 0 : read_all(fd, buf, sizeof buf);
    double dt = harness_now() - t0;
    CHECK_MSG(sent < 40, "the whole trickled body went in (%.2f s)", dt);
    CHECK_MSG(n <= 0 || !strstr(buf, "200"), "a trickled body was served: %s", buf);
    CHECK_MSG(sent >= 5 && dt < 3.0, "cut after %d bytes, %.2f s (read timeout 1 s)", sent, dt);
    CHECK_EQ_INT(atomic_load(&handled), 0);
    close(fd);
    /* a slow body that completes within the limit is served */
    fd = dial(h);
    sent = trickle(fd, 5, 0.1);
    n = read_all(fd, buf, sizeof buf);
    CHECK_EQ_INT(sent, 5);
    CHECK_MSG(n > 0 && strstr(buf, "200 OK") && strstr(buf, "ok:5"), "reply: %s", n > 0 ? buf : "(none)");
    CHECK_EQ_INT(atomic_load(&handled), 1);
    close(fd);
    http_stop(h);
}

int main(void) {
    RUN(test_idle_timeout);
    RUN(test_read_timeout);
    return harness_report("http");
}
