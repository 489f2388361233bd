/*
 * The floor under a step of `runner exec` on the bench's workload: the system calls a step
 * makes, and nothing else. One keep-alive connection to the bench's mock; per step, the
 * request written (`writev`, as large as the runner's, growing as its history does), the
 * process woken when the reply arrives (`epoll_wait`) and the streamed reply read whole;
 * the journal's in-flight record and the reply's events written; the directory listed as
 * `list_dir` lists it (open, `fstat`, `getdents64` to the end, `statx` of each visible
 * entry, close); the step's record, its events and its transcript written; the journal
 * synced every tenth step. The sizes are what the runner writes on this workload.
 *
 * Build: cc -O2 -o step_floor benches/peers/step_floor.c
 * Run:   step_floor BASE_URL STEPS DIR    (BASE_URL as `exec_overhead --mock STEPS` prints it;
 *        DIR holds what the runner's working directory does: the agent file, its own files
 *        hidden, so the listing has one entry to stat)
 * Prints `floor-usage CPU_MS`, the process's user + system time.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <arpa/inet.h>
#include <unistd.h>

static void fail(const char *what) {
    perror(what);
    exit(1);
}

/* A file of DIR/.floor opened for appending, as the runner's journal, events and transcript
 * are (out of the listing's sight, as the runner's are). */
static int append_to(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/.floor", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/.floor/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) fail(path);
    return fd;
}

static void write_bytes(int fd, const char *bytes, size_t len) {
    if (write(fd, bytes, len) != (ssize_t)len) fail("write");
}

/* `list_dir` of DIR: every entry read, each visible one stat'ed. */
static void list(const char *dir) {
    int fd = open(dir, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_DIRECTORY);
    if (fd < 0) fail(dir);
    struct stat st;
    if (fstat(fd, &st) != 0) fail("fstat");
    DIR *d = fdopendir(fd);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        struct statx sx;
        if (statx(fd, e->d_name, AT_SYMLINK_NOFOLLOW, STATX_ALL, &sx) != 0) fail("statx");
    }
    closedir(d);
}

/* Reads the reply until its last chunk, waking on the socket as the runner's runtime does. */
static void read_reply(int sock, int ep, char *buf, size_t cap) {
    size_t have = 0;
    for (;;) {
        ssize_t n = recv(sock, buf + have, cap - have - 1, 0);
        if (n > 0) {
            have += (size_t)n;
            buf[have] = 0;
            if (have >= 5 && memcmp(buf + have - 5, "0\r\n\r\n", 5) == 0) return;
            if (have + 1 >= cap) fail("reply too large");
            continue;
        }
        if (n == 0) fail("closed");
        struct epoll_event ev;
        if (epoll_wait(ep, &ev, 1, 10000) != 1) fail("epoll_wait");
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: step_floor BASE_URL STEPS DIR\n");
        return 2;
    }
    int port = 0;
    if (sscanf(argv[1], "http://127.0.0.1:%d", &port) != 1) fail("BASE_URL");
    int steps = atoi(argv[2]);
    const char *dir = argv[3];

    int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (connect(sock, (struct sockaddr *)&addr, sizeof addr) != 0) fail("connect");
    fcntl(sock, F_SETFL, O_NONBLOCK);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event want = {.events = EPOLLIN};
    epoll_ctl(ep, EPOLL_CTL_ADD, sock, &want);

    int journal = append_to(dir, "journal.jsonl");
    int events = append_to(dir, "events.jsonl");
    int transcript = append_to(dir, "transcript.txt");
    static char filler[1 << 20], reply[1 << 16], head[256];
    memset(filler, 'x', sizeof filler);

    /* One more reply than tool steps: the mock's final answer. */
    for (int step = 0; step <= steps; step++) {
        /* The runner's request body: 666 bytes, then 270 more for each step before. */
        size_t pad = 600 + 270 * (size_t)step;
        if (pad + 64 > sizeof filler) fail("too many steps");
        static char body_start[] = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"";
        static char body_end[] = "\"}],\"stream\":true}";
        size_t body_len = strlen(body_start) + pad + strlen(body_end);
        int head_len = snprintf(head, sizeof head,
                                "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:%d\r\n"
                                "content-type: application/json\r\ncontent-length: %zu\r\n\r\n",
                                port, body_len);
        struct iovec iov[4] = {{head, (size_t)head_len},
                               {body_start, strlen(body_start)},
                               {filler, pad},
                               {body_end, strlen(body_end)}};
        if (writev(sock, iov, 4) <= 0) fail("writev");
        read_reply(sock, ep, reply, sizeof reply);
        if (step == steps) break;
        write_bytes(journal, filler, 857);
        write_bytes(events, filler, 3261);
        list(dir);
        write_bytes(journal, filler, 801);
        write_bytes(events, filler, 2486);
        write_bytes(transcript, filler, 458);
        if (step % 10 == 9) fdatasync(journal);
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double ms = usage.ru_utime.tv_sec * 1e3 + usage.ru_utime.tv_usec / 1e3 +
                usage.ru_stime.tv_sec * 1e3 + usage.ru_stime.tv_usec / 1e3;
    fprintf(stderr, "floor-usage %.3f\n", ms);
    return 0;
}
