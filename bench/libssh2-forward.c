/*
 * The ceiling of this machine's libssh2 for a tunnel: the least a program must do to forward a
 * local TCP connection through one libssh2 direct-tcpip channel, and nothing more. One thread,
 * one non-blocking session, poll(2) on the two sockets, 256 KiB buffers, no copies beyond the one
 * into libssh2's packet buffer. bench/tunnel.sh runs it against the same sshd, target and payload
 * as `tether tunnel` and `ssh -N -L`, so "tether is at the library's limit" is measured, not
 * stated.
 *
 * usage: libssh2-forward SSH_PORT USER PRIVATE_KEY KNOWN_HOSTS TARGET_PORT
 * Connects to 127.0.0.1:SSH_PORT, checks the host key against KNOWN_HOSTS, authenticates with
 * PRIVATE_KEY (its .pub beside it), listens on 127.0.0.1 (a free port, printed on stdout), and
 * forwards each accepted connection, one at a time, to 127.0.0.1:TARGET_PORT as the SSH server
 * sees it. Runs until killed. Built by tunnel.sh with `cc -O2 … -lssh2`.
 */
#include <libssh2.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUFFER_SIZE (256 * 1024)

static void die(const char *what, LIBSSH2_SESSION *session) {
    char *message = NULL;
    if (session) libssh2_session_last_error(session, &message, NULL, 0);
    fprintf(stderr, "libssh2-forward: %s%s%s\n", what, message ? ": " : "", message ? message : "");
    exit(1);
}

static int tcp_connect(int port) {
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) die("cannot connect to sshd", NULL);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Waits until the session's socket can move in the direction libssh2 is blocked on (and, when
 * `local` >= 0, until the local socket is readable). */
static void wait_for(LIBSSH2_SESSION *session, int ssh, int local, short local_events) {
    struct pollfd fds[2] = {{.fd = ssh}, {.fd = local, .events = local_events}};
    int directions = libssh2_session_block_directions(session);
    if (directions & LIBSSH2_SESSION_BLOCK_INBOUND) fds[0].events |= POLLIN;
    if (directions & LIBSSH2_SESSION_BLOCK_OUTBOUND) fds[0].events |= POLLOUT;
    if (!fds[0].events) fds[0].events = POLLIN;
    poll(fds, local >= 0 ? 2 : 1, 100);
}

/* Forwards one local connection until both directions have ended. */
static void forward(LIBSSH2_SESSION *session, int ssh, int local, int target_port) {
    LIBSSH2_CHANNEL *channel;
    while (!(channel = libssh2_channel_direct_tcpip_ex(session, "127.0.0.1", target_port, "127.0.0.1", 0))) {
        if (libssh2_session_last_errno(session) != LIBSSH2_ERROR_EAGAIN) die("cannot open a direct-tcpip channel", session);
        wait_for(session, ssh, -1, 0);
    }
    static char up[BUFFER_SIZE], down[BUFFER_SIZE];
    size_t up_length = 0, up_offset = 0;
    int local_eof = 0, eof_sent = 0, remote_eof = 0;
    while (!(remote_eof && eof_sent)) {
        int progress = 0;
        /* Server → local. */
        if (!remote_eof) {
            ssize_t n = libssh2_channel_read(channel, down, sizeof down);
            if (n > 0) {
                for (ssize_t done = 0; done < n;) {
                    ssize_t w = send(local, down + done, (size_t)(n - done), MSG_NOSIGNAL);
                    if (w <= 0) { remote_eof = 1; break; }
                    done += w;
                }
                progress = 1;
            } else if (n == 0 && libssh2_channel_eof(channel)) {
                shutdown(local, SHUT_WR);
                remote_eof = 1;
                progress = 1;
            } else if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
                die("channel read failed", session);
            }
        }
        /* Local → server. */
        if (up_offset == up_length && !local_eof) {
            ssize_t n = recv(local, up, sizeof up, MSG_DONTWAIT);
            if (n > 0) {
                up_length = (size_t)n;
                up_offset = 0;
                progress = 1;
            } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                local_eof = 1;
                progress = 1;
            }
        }
        if (up_offset < up_length) {
            ssize_t w = libssh2_channel_write(channel, up + up_offset, up_length - up_offset);
            if (w > 0) {
                up_offset += (size_t)w;
                progress = 1;
            } else if (w != LIBSSH2_ERROR_EAGAIN) {
                die("channel write failed", session);
            }
        } else if (local_eof && !eof_sent) {
            int rc = libssh2_channel_send_eof(channel);
            if (rc == 0) { eof_sent = 1; progress = 1; }
            else if (rc != LIBSSH2_ERROR_EAGAIN) die("channel eof failed", session);
        }
        if (!progress) wait_for(session, ssh, local, (up_offset == up_length && !local_eof) ? POLLIN : 0);
    }
    while (libssh2_channel_close(channel) == LIBSSH2_ERROR_EAGAIN) wait_for(session, ssh, -1, 0);
    libssh2_channel_free(channel);
    close(local);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s SSH_PORT USER PRIVATE_KEY KNOWN_HOSTS TARGET_PORT\n", argv[0]);
        return 64;
    }
    int ssh_port = atoi(argv[1]), target_port = atoi(argv[5]);
    const char *user = argv[2], *key = argv[3], *known_hosts = argv[4];
    char public_key[4096];
    snprintf(public_key, sizeof public_key, "%s.pub", key);

    if (libssh2_init(0) != 0) die("libssh2_init failed", NULL);
    int ssh = tcp_connect(ssh_port);
    LIBSSH2_SESSION *session = libssh2_session_init();
    if (!session || libssh2_session_handshake(session, ssh) != 0) die("handshake failed", session);

    size_t key_length;
    int key_type;
    const char *host_key = libssh2_session_hostkey(session, &key_length, &key_type);
    LIBSSH2_KNOWNHOSTS *hosts = libssh2_knownhost_init(session);
    if (!host_key || !hosts || libssh2_knownhost_readfile(hosts, known_hosts, LIBSSH2_KNOWNHOST_FILE_OPENSSH) < 0)
        die("cannot read the host key or known_hosts", session);
    int check = libssh2_knownhost_checkp(hosts, "127.0.0.1", ssh_port, host_key, key_length,
                                         LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW, NULL);
    if (check != LIBSSH2_KNOWNHOST_CHECK_MATCH) die("the host key does not match known_hosts", session);
    libssh2_knownhost_free(hosts);
    if (libssh2_userauth_publickey_fromfile(session, user, public_key, key, NULL) != 0) die("authentication failed", session);
    libssh2_session_set_blocking(session, 0);

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = 0};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 16) != 0 ||
        getsockname(listener, (struct sockaddr *)&address, &length) != 0)
        die("cannot listen on 127.0.0.1", NULL);
    printf("%d\n", ntohs(address.sin_port));
    fflush(stdout);
    for (;;) {
        int local = accept(listener, NULL, NULL);
        if (local < 0) continue;
        int one = 1;
        setsockopt(local, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        forward(session, ssh, local, target_port);
    }
}
