// Typed wrappers for libcurl's variadic functions, which Swift cannot call directly.
#ifndef TETHER_CCURL_SHIM_H
#define TETHER_CCURL_SHIM_H

#include <curl/curl.h>
#include <signal.h>
#include <stddef.h>

static inline CURLcode tether_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode tether_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode tether_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode tether_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode tether_curl_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*tether_curl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);
typedef int (*tether_curl_xferinfo_callback)(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                                             curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode tether_curl_setopt_data_callback(CURL *handle, CURLoption option, tether_curl_data_callback cb) {
    return curl_easy_setopt(handle, option, cb);
}

static inline CURLcode tether_curl_setopt_xferinfo_callback(CURL *handle, tether_curl_xferinfo_callback cb) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, cb);
}

static inline CURLcode tether_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode tether_curl_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode tether_curl_getinfo_socket(CURL *handle, curl_socket_t *value) {
    return curl_easy_getinfo(handle, CURLINFO_ACTIVESOCKET, value);
}

/// libcurl writes to sockets whose peer may have gone; a SIGPIPE would kill the process.
static inline void tether_ignore_sigpipe(void) {
    signal(SIGPIPE, SIG_IGN);
}

/// The pause/unpause flags are macros Swift does not import.
static inline int tether_curlpause_all(void) { return CURLPAUSE_ALL; }
static inline int tether_curlpause_cont(void) { return CURLPAUSE_CONT; }
static inline size_t tether_curl_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }

/// CURLOPT_CONNECT_ONLY transfers (the WebSocket client): raw bytes over the connection libcurl
/// set up, through its TLS and proxy-tunnel layers. CURLE_AGAIN means "would block": poll the
/// socket from CURLINFO_ACTIVESOCKET and try again.
static inline CURLcode tether_curl_send(CURL *handle, const void *buffer, size_t length, size_t *sent) {
    return curl_easy_send(handle, buffer, length, sent);
}

static inline CURLcode tether_curl_recv(CURL *handle, void *buffer, size_t length, size_t *received) {
    return curl_easy_recv(handle, buffer, length, received);
}

/// CURLOPT_HTTP_VERSION's value for HTTP/1.1 (an enum constant Swift imports awkwardly): keeps
/// h2 out of TLS ALPN, since a WebSocket upgrade is HTTP/1.1.
static inline long tether_curl_http_version_1_1(void) { return CURL_HTTP_VERSION_1_1; }

#endif
