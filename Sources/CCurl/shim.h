// The C side of msi-hub's libcurl interop. Swift cannot call C variadic functions, so each
// `curl_easy_setopt` / `curl_easy_getinfo` argument type we use gets a typed, prefixed wrapper.
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>

/// The signature of CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION callbacks.
typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *userdata);

/// curl_global_init with CURL_GLOBAL_DEFAULT (a macro Swift does not import as a constant).
static inline CURLcode ccurl_global_init_default(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}

/// The size of the buffer CURLOPT_ERRORBUFFER needs.
static inline size_t ccurl_error_size(void) {
    return CURL_ERROR_SIZE;
}

/// curl_easy_setopt for an option that takes a long.
static inline CURLcode ccurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for an option that takes a curl_off_t.
static inline CURLcode ccurl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for an option that takes a C string (libcurl copies it, except CURLOPT_POSTFIELDS).
static inline CURLcode ccurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for an option that takes an object pointer (userdata, buffers, slists).
static inline CURLcode ccurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for CURLOPT_WRITEFUNCTION or CURLOPT_HEADERFUNCTION.
static inline CURLcode ccurl_setopt_write_callback(CURL *handle, CURLoption option, ccurl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

/// curl_easy_getinfo for information returned as a long.
static inline CURLcode ccurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// The version of the libcurl loaded at run time, as 0xXXYYZZ (curl_version_info with CURLVERSION_NOW, a macro).
static inline unsigned int ccurl_version_num(void) {
    return curl_version_info(CURLVERSION_NOW)->version_num;
}

/// curl_multi_setopt for an option that takes a long (CURLMOPT_PIPELINING, CURLMOPT_MAX_HOST_CONNECTIONS, ...).
static inline CURLMcode ccurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

/// The next finished transfer of `multi` (curl_multi_info_read, skipping messages other than CURLMSG_DONE):
/// 1 with its easy handle and result, or 0 when none is left. Swift cannot read CURLMsg's union itself.
static inline int ccurl_multi_next_done(CURLM *multi, CURL **easy, CURLcode *result) {
    int queued = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(multi, &queued)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *easy = message->easy_handle;
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}

#endif
