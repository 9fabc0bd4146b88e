// libcurl's C API for Swift: its header, and typed wrappers of the variadic calls Swift cannot make
// (curl_easy_setopt, curl_multi_setopt, curl_easy_getinfo), one per kind of argument. The constants whose macros
// Swift does not import come as constants.
#include <curl/curl.h>

static const long ccurl_global_default = CURL_GLOBAL_DEFAULT;
static const curl_socket_t ccurl_socket_timeout = CURL_SOCKET_TIMEOUT;

static inline CURLcode ccurl_easy_setopt_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode ccurl_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode ccurl_easy_setopt_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode ccurl_easy_setopt_write_function(CURL *easy, curl_write_callback function) {
    return curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, function);
}
static inline CURLcode ccurl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}
static inline CURLMcode ccurl_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
    return curl_multi_setopt(multi, option, value);
}
static inline CURLMcode ccurl_multi_setopt_socket_function(CURLM *multi, curl_socket_callback function) {
    return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, function);
}
static inline CURLMcode ccurl_multi_setopt_timer_function(CURLM *multi, curl_multi_timer_callback function) {
    return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, function);
}
