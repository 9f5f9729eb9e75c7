// Typed wrappers for libssh2's function-like macros, which Swift does not import.
#ifndef TETHER_CLIBSSH2_SHIM_H
#define TETHER_CLIBSSH2_SHIM_H

#include <libssh2.h>
#include <stddef.h>
#include <string.h>

static inline LIBSSH2_SESSION *tether_ssh2_session_init(void) {
    return libssh2_session_init();
}

static inline int tether_ssh2_session_disconnect(LIBSSH2_SESSION *session, const char *description) {
    return libssh2_session_disconnect(session, description);
}

static inline int tether_ssh2_userauth_publickey_fromfile(LIBSSH2_SESSION *session, const char *user,
                                                          const char *publickey, const char *privatekey,
                                                          const char *passphrase) {
    return libssh2_userauth_publickey_fromfile(session, user, publickey, privatekey, passphrase);
}

/// A session channel, opened without blocking (libssh2_channel_open_session is a macro).
static inline LIBSSH2_CHANNEL *tether_ssh2_channel_open_session(LIBSSH2_SESSION *session, unsigned int window, unsigned int packet) {
    return libssh2_channel_open_ex(session, "session", sizeof("session") - 1, window, packet, NULL, 0);
}

/// Runs `command` on the channel (an "exec" request); its stderr is dropped as it arrives, so a
/// chatty command cannot fill the channel's window with data nobody reads.
static inline int tether_ssh2_channel_exec(LIBSSH2_CHANNEL *channel, const char *command) {
    int rc = libssh2_channel_handle_extended_data2(channel, LIBSSH2_CHANNEL_EXTENDED_DATA_IGNORE);
    if (rc != 0) return rc;
    return libssh2_channel_process_startup(channel, "exec", sizeof("exec") - 1, command, (unsigned int)strlen(command));
}

static inline ssize_t tether_ssh2_channel_read(LIBSSH2_CHANNEL *channel, char *buffer, size_t length) {
    return libssh2_channel_read(channel, buffer, length);
}

static inline ssize_t tether_ssh2_channel_write(LIBSSH2_CHANNEL *channel, const char *buffer, size_t length) {
    return libssh2_channel_write(channel, buffer, length);
}

static inline int tether_ssh2_channel_eof(LIBSSH2_CHANNEL *channel) {
    return libssh2_channel_eof(channel);
}

static inline LIBSSH2_CHANNEL *tether_ssh2_channel_direct_tcpip(LIBSSH2_SESSION *session, const char *host, int port) {
    return libssh2_channel_direct_tcpip(session, host, port);
}

static inline int tether_ssh2_eagain(void) { return LIBSSH2_ERROR_EAGAIN; }
static inline int tether_ssh2_block_inbound(void) { return LIBSSH2_SESSION_BLOCK_INBOUND; }
static inline int tether_ssh2_block_outbound(void) { return LIBSSH2_SESSION_BLOCK_OUTBOUND; }

#endif
