// Several downloads at once with libcurl's multi-socket API, driven by `Loop.main`: a descriptor source for each
// socket curl asks to watch, and a one-shot callback of the loop for curl's timeout. Usage: CurlMulti URL...
// Prints each transfer's HTTP status and size as it finishes; exits once all are done, 1 if any failed.
import CCurl
import Glibc
import RunLoopKit

/// One download: its URL and the bytes received so far (counted only: a real tool would keep or write them).
final class Transfer {
    let url: String
    var bytes = 0
    init(url: String) { self.url = url }
}

/// libcurl's multi handle on `Loop.main`: curl says which sockets to watch and when to time out; the loop watches
/// and calls curl back (Docs/LivingWithOtherEventLoops.md, "A C library that drives sockets through callbacks").
///
/// Main thread only: curl's callbacks come from inside `curl_multi_socket_action`, which the loop's handlers call.
@MainActor final class Downloads {
    private let multi: UnsafeMutableRawPointer  // A CURLM.
    private var transfers: [UnsafeMutableRawPointer: Transfer] = [:]  // By easy handle (a CURL).
    private var sources: [curl_socket_t: FileDescriptorSource] = [:]
    private var timeout: Loop.ScheduledCallback?
    /// How many transfers failed (curl's error: no connection, a timeout; an HTTP error status is a completed one).
    private(set) var failures = 0
    private(set) var mostRunning = 0  // The most transfers under way at once.

    init() {
        multi = curl_multi_init()
        // curl's callbacks reach this object through their data pointer: main keeps it until close().
        let me = Unmanaged.passUnretained(self).toOpaque()
        ccurl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, me)
        ccurl_multi_setopt_socket_function(multi) { _, socket, what, me, _ in
            MainActor.assumeIsolated { Unmanaged<Downloads>.fromOpaque(me!).takeUnretainedValue().watch(socket, what) }
            return 0
        }
        ccurl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, me)
        ccurl_multi_setopt_timer_function(multi) { _, milliseconds, me in
            MainActor.assumeIsolated {
                Unmanaged<Downloads>.fromOpaque(me!).takeUnretainedValue().setTimeout(milliseconds)
            }
            return 0
        }
    }

    /// Starts downloading `url`; curl asks for a timeout at once, and for sockets as it connects.
    func add(_ url: String) {
        let easy = curl_easy_init()!
        let transfer = Transfer(url: url)
        transfers[easy] = transfer
        ccurl_easy_setopt_string(easy, CURLOPT_URL, url)
        ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT, 30)  // Seconds: give up on a server that stalls.
        ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, Unmanaged.passUnretained(transfer).toOpaque())
        ccurl_easy_setopt_write_function(easy) { _, size, count, transfer in
            Unmanaged<Transfer>.fromOpaque(transfer!).takeUnretainedValue().bytes += size * count
            return size * count
        }
        curl_multi_add_handle(multi, easy)
    }

    /// Ends curl's multi handle, once every transfer is done: the loop forgets curl's sockets before curl closes them.
    func close() {
        if let timeout { Loop.main.cancel(timeout) }
        for source in sources.values { source.invalidate() }
        curl_multi_cleanup(multi)
    }

    /// curl's socket callback: watch `socket` for input, output or both (`CURL_POLL_IN`, `OUT`, `INOUT`), or forget
    /// it (`CURL_POLL_REMOVE`, after which curl may close it).
    private func watch(_ socket: curl_socket_t, _ what: Int32) {
        if what == CURL_POLL_REMOVE {
            sources.removeValue(forKey: socket)?.invalidate()
            return
        }
        var events: FileDescriptorSource.Events = []
        if what & CURL_POLL_IN != 0 { events.insert(.readable) }
        if what & CURL_POLL_OUT != 0 { events.insert(.writable) }
        if let source = sources[socket] {
            source.events = events  // A socket already watched: applies at once.
            return
        }
        do {
            let source = try FileDescriptorSource(descriptor: socket, events: events) { [weak self] _, ready in
                MainActor.assumeIsolated { self?.socketReady(socket, ready) }
            }
            try Loop.main.add(source)
            sources[socket] = source
        } catch {
            print("cannot watch socket \(socket): \(error)")  // Its transfer then times out.
        }
    }

    /// curl's timer callback: call curl back once after `milliseconds` (0: at the loop's next pass), or never (-1).
    private func setTimeout(_ milliseconds: Int) {
        if let timeout { Loop.main.cancel(timeout) }
        timeout = nil
        guard milliseconds >= 0 else { return }
        // Later, from the loop: curl is not to be called from inside its own callback. Throws only once main exited.
        timeout = try? Loop.main.schedule(after: .milliseconds(milliseconds)) {
            MainActor.assumeIsolated { self.act(on: ccurl_socket_timeout, events: 0) }
        }
    }

    private func socketReady(_ socket: curl_socket_t, _ ready: FileDescriptorSource.Events) {
        if ready.contains(.invalid) {  // Closed behind the loop's back: curl lost track of it.
            sources[socket] = nil
            return
        }
        var events: Int32 = 0
        if ready.contains(.readable) { events |= CURL_CSELECT_IN }
        if ready.contains(.writable) { events |= CURL_CSELECT_OUT }
        if !ready.isDisjoint(with: [.error, .hangUp]) { events |= CURL_CSELECT_ERR }
        act(on: socket, events: events)
    }

    /// Tells curl what happened (a socket's readiness, or its timeout), then reports the transfers it finished; stops
    /// the loop once none is left.
    private func act(on socket: curl_socket_t, events: Int32) {
        var running: Int32 = 0
        curl_multi_socket_action(multi, socket, events, &running)
        mostRunning = max(mostRunning, Int(running))
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            finish(easy, message.pointee.data.result)
        }
        if transfers.isEmpty { Loop.main.stop() }
    }

    private func finish(_ easy: UnsafeMutableRawPointer, _ result: CURLcode) {
        guard let transfer = transfers.removeValue(forKey: easy) else { return }
        var status = 0
        ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        curl_multi_remove_handle(multi, easy)
        curl_easy_cleanup(easy)
        if result == CURLE_OK {
            print("\(status) \(transfer.bytes) bytes \(transfer.url)")
        } else {
            failures += 1
            print("failed \(transfer.url): \(String(cString: curl_easy_strerror(result)))")
        }
    }
}

let urls = CommandLine.arguments.dropFirst()
guard !urls.isEmpty else {
    print("usage: CurlMulti URL...")
    exit(2)
}
curl_global_init(ccurl_global_default)
let downloads = Downloads()
let started = ContinuousClock.now
for url in urls { downloads.add(url) }
Loop.main.run()  // Until the last transfer is done: Downloads stops it.
downloads.close()
curl_global_cleanup()
let (elapsed, most) = (Int(started.duration(to: .now) / .milliseconds(1)), downloads.mostRunning)
print("\(urls.count) transfers done in \(elapsed) ms, at most \(most) at once, \(downloads.failures) failed")
exit(downloads.failures == 0 ? 0 : 1)
