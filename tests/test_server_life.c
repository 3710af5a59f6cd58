/* The server's life around its load (server.c): /health says 503 while the
 * model loads, a stop asked for during the load (server_stop_load, what
 * zinc serve does on SIGTERM then) makes /health say it is shutting down at
 * once and server_load end at its next step without loading the rest, and a
 * server never stopped loads and says 200. On the demo model (models/, run
 * from the repository root), port 0, raw sockets. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"
#include "server.h"

#define DEMO "models/zinc-demo-qwen35.gguf"

/* GET path; the status (0: no answer), the body into body. */
static int get(int port, const char *path, char *body, size_t cap) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    body[0] = 0;
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0) close(fd);
        return 0;
    }
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    char buf[8192];
    size_t got = 0;
    if (send(fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
        ssize_t k;
        while (got < sizeof buf - 1 && (k = recv(fd, buf + got, sizeof buf - 1 - got, 0)) > 0) got += (size_t)k;
    }
    close(fd);
    buf[got] = 0;
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1) return 0;
    const char *b = strstr(buf, "\r\n\r\n");
    snprintf(body, cap, "%s", b ? b + 4 : "");
    return status;
}

static zn_server *start(void) {
    zn_server_cfg cfg = {.model_path = DEMO, .n_parallel = 1, .n_ctx = 256, .engine = engine_default_opts()};
    cfg.engine.backend = "cpu";
    cfg.engine.be.n_threads = 1;
    cfg.http.host = "127.0.0.1";
    zn_server *s = NULL;
    zn_err err = {0};
    zn_status st = server_start(&s, &cfg, &err);
    CHECK_MSG(st == ZN_OK, "server_start: %s", err.msg);
    return st == ZN_OK ? s : NULL;
}

static void test_stop_during_load(void) {
    zn_server *s = start();
    if (!s) return;
    char body[4096];
    CHECK_EQ_INT(get(server_port(s), "/health", body, sizeof body), 503);
    CHECK_MSG(strstr(body, "loading"), "/health before the load: %s", body);
    server_stop_load(s);
    CHECK_EQ_INT(get(server_port(s), "/health", body, sizeof body), 503);
    CHECK_MSG(strstr(body, "shutting down"), "/health once stopping: %s", body);
    CHECK_EQ_INT(get(server_port(s), "/v1/models", body, sizeof body), 200);  /* the small endpoints still answer */
    zn_err err = {0};
    double t0 = harness_now();
    zn_status st = server_load(s, &err);
    CHECK_EQ_INT(st, ZN_ERR_IO);
    CHECK_MSG(strstr(err.msg, "stopped while loading"), "server_load: %s", err.msg);
    CHECK_MSG(harness_now() - t0 < 0.5, "a stopped load took %.2f s", harness_now() - t0);
    CHECK_EQ_INT(get(server_port(s), "/health", body, sizeof body), 503);
    CHECK_EQ_INT(get(server_port(s), "/v1/models", body, sizeof body), 200);
    CHECK_MSG(!strstr(body, "n_params"), "the model was loaded: %s", body);
    server_free(s);
}

static void test_load_then_drain(void) {
    zn_server *s = start();
    if (!s) return;
    zn_err err = {0};
    zn_status st = server_load(s, &err);
    CHECK_MSG(st == ZN_OK, "server_load: %s", err.msg);
    char body[4096];
    CHECK_EQ_INT(get(server_port(s), "/health", body, sizeof body), 200);
    CHECK_EQ_STR(body, "{\"status\":\"ok\"}");
    CHECK_EQ_INT(get(server_port(s), "/v1/models", body, sizeof body), 200);
    CHECK_MSG(strstr(body, "n_params"), "/v1/models once loaded: %s", body);
    server_drain(s, 1.0);
    CHECK_EQ_INT(get(server_port(s), "/health", body, sizeof body), 503);
    server_free(s);
}

int main(void) {
    RUN(test_stop_during_load);
    RUN(test_load_then_drain);
    return harness_report("server_life");
}
