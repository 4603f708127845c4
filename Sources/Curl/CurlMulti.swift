import CCurl

/// One libcurl multi handle: the transfers added to it share its connection cache, so requests to one host are
/// multiplexed as HTTP/2 streams over a few connections.
///
/// `curl_multi_cleanup` runs exactly once, in `deinit`, after the owner has removed every easy handle (libcurl
/// asks for that order). `@unchecked Sendable` because a multi handle is not thread-safe, yet only one thread
/// (`CurlMultiClient`'s loop) calls anything but `wakeup()`, which libcurl documents as callable from any thread.
final class CurlMulti: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer

    /// Makes a multi handle.
    /// - Throws: `CurlError` `.other` when libcurl cannot initialise or allocate one.
    init() throws(CurlError) {
        try requireCurlGlobalInit()
        guard let pointer = curl_multi_init() else {
            throw CurlError(code: .other, message: "curl_multi_init failed")
        }
        self.pointer = pointer
    }

    deinit {
        curl_multi_cleanup(pointer)
    }

    /// Sets a multi option that takes a long.
    /// - Throws: `CurlError` `.other` when libcurl refuses it.
    func set(_ option: CURLMoption, _ value: Int) throws(CurlError) {
        let code = ccurl_multi_setopt_long(pointer, option, value)
        guard code == CURLM_OK else { throw CurlError(multiCode: code, call: "curl_multi_setopt") }
    }

    /// Adds `handle`, whose request `start` set up, to the transfers the multi drives.
    /// - Throws: `CurlError` `.other` when libcurl refuses it.
    func add(_ handle: CurlHandle) throws(CurlError) {
        let code = curl_multi_add_handle(pointer, handle.pointer)
        guard code == CURLM_OK else { throw CurlError(multiCode: code, call: "curl_multi_add_handle") }
    }

    /// Takes `handle` out of the multi (finished or abandoned); it must be, before the handle is freed.
    func remove(_ handle: CurlHandle) {
        _ = curl_multi_remove_handle(pointer, handle.pointer)
    }

    /// Moves every transfer as far as it can go without waiting (curl_multi_perform).
    func perform() {
        var running: Int32 = 0
        _ = curl_multi_perform(pointer, &running)
    }

    /// Waits until a transfer's socket is ready, libcurl's next timeout, `wakeup()`, or `timeoutMilliseconds`.
    func poll(timeoutMilliseconds: Int32) {
        _ = curl_multi_poll(pointer, nil, 0, timeoutMilliseconds, nil)
    }

    /// Ends a `poll` under way at once; safe from any thread.
    func wakeup() {
        _ = curl_multi_wakeup(pointer)
    }

    /// The easy handle and result of the next finished transfer, or nil when no transfer has finished.
    func nextDone() -> (easy: UnsafeMutableRawPointer, result: CURLcode)? {
        var easy: UnsafeMutableRawPointer?
        var result = CURLE_OK
        guard ccurl_multi_next_done(pointer, &easy, &result) == 1, let easy else { return nil }
        return (easy, result)
    }
}
