import CWebSockets
import HTTPRouting
import ServiceLogging
import Synchronization

/// Service-thread bookkeeping of one upgraded connection.
final class LiveConnection {
    let connection: WebSocketConnection
    /// The message being reassembled from fragments.
    var inbound: [UInt8] = []
    /// A write outside the writeable callback failed: the next writeable callback closes.
    var failed = false

    init(connection: WebSocketConnection) { self.connection = connection }
}

extension ServiceLoop {
    /// Most writes one flush of a connection makes before yielding to other connections.
    static let writesPerCallback = 32

    /// Upgrade requested: asks the delegate, and answers a refusal as a plain HTTP response.
    func confirmUpgrade(_ wsi: OpaquePointer, protocol upgrade: String) -> Int32 {
        guard upgrade.lowercased() == "websocket" else { return -1 }
        let (_, path, _) = LWSRequestReader.target(wsi)  // a path that is not UTF-8 matches no endpoint
        let request = WebSocketUpgradeRequest(
            path: path, query: LWSRequestReader.query(wsi), headers: LWSRequestReader.headers(wsi),
            remoteAddress: LWSRequestReader.remoteAddress(wsi))
        let decision: WebSocketAcceptDecision
        if draining {
            decision = .reject(.serviceUnavailable, error: "server is shutting down")
        } else if path != configuration.path {
            decision = .reject(.notFound, error: "no websocket endpoint at \(path)")
        } else {
            decision = delegate.shouldAccept(request)
        }
        switch decision {
        case .accept:
            pendingUpgrades[wsi] = request
            return 0
        case .reject(let status, let body):
            logger.debug("websocket upgrade refused", metadata: ["http.path": path, "http.status": String(status.rawValue)])
            let response = HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(body.utf8))
            // An upgrade is always HTTP/1.1, but lws 4.1 has not recorded the request version
            // yet at this point (its status helper would say HTTP/1.0), so name it explicitly.
            guard writeHTTPHeaders(wsi, response, contentLength: response.body.count, statusLine: "HTTP/1.1") else { return -1 }
            guard writeBytes(wsi, response.body, LWS_WRITE_HTTP_FINAL) else { return -1 }
            return 1
        }
    }

    func connectionEstablished(_ wsi: OpaquePointer) {
        let request = pendingUpgrades.removeValue(forKey: wsi) ?? WebSocketUpgradeRequest(path: configuration.path)
        nextID += 1
        let connection = WebSocketConnection(
            id: nextID, request: request, maxQueuedMessages: configuration.maxQueuedMessages,
            maxQueuedBytes: configuration.maxQueuedBytes, waker: waker)
        connections[wsi] = LiveConnection(connection: connection)
        wsiByConnection[connection.id] = wsi
        logger.debug("websocket opened", metadata: ["ws.connection": String(connection.id), "http.path": request.path])
        delegate.connectionOpened(connection)
        if draining {
            connection.outbox.withLock { $0.forceClose(code: 1001, reason: "server shutting down") }
            lws_callback_on_writable(wsi)
        }
    }

    func receive(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard let live = connections[wsi] else { return 0 }
        if live.inbound.count + length > configuration.maxMessageBytes {
            logger.warning("websocket message too large", metadata: [
                "ws.connection": String(live.connection.id), "ws.limit": String(configuration.maxMessageBytes),
            ])
            live.inbound = []
            sendCloseReason(wsi, code: UInt16(LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE.rawValue), reason: "message too large")
            return -1
        }
        if let input, length > 0 {
            live.inbound.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
        }
        guard lws_is_final_fragment(wsi) != 0 else { return 0 }
        let message = live.inbound
        live.inbound = []
        if lws_frame_is_binary(wsi) != 0 {
            delegate.connection(live.connection, didReceiveBinary: message)
        } else {
            delegate.connection(live.connection, didReceiveText: String(decoding: message, as: UTF8.self))
        }
        return 0
    }

    /// `LWS_CALLBACK_SERVER_WRITEABLE`: writes what is queued; -1 closes the connection
    /// (after the close frame, when one is due).
    func writeWebSocket(_ wsi: OpaquePointer) -> Int32 {
        guard let live = connections[wsi] else { return 0 }
        if live.failed { return -1 }
        return flush(wsi, live, inWriteable: true) ? 0 : -1
    }

    /// Writes queued frames while the socket takes them, up to `writesPerCallback` writes;
    /// whatever is left re-arms the writeable callback.
    ///
    /// The frames queued on a socket leave together: each write carries the run of queued
    /// frames that fits in the configuration's `coalescedWriteBytes` (``Outbox/next(canClose:maxBytes:into:)``),
    /// framed into the scratch buffer and handed to lws as one raw write, so a socket with
    /// ten small messages waiting costs one `send()` instead of ten. A lone frame (or one
    /// larger than the budget) is written as before, from the shared frame itself with
    /// `LWS_WRITE_TEXT`. Server frames are unmasked and no extension is negotiated, so the
    /// bytes on the wire are the same either way.
    ///
    /// "Takes them" means lws holds no unsent bytes of an earlier write
    /// (`lws_partial_buffered`, a flag: no syscall). A write the kernel does not take in full
    /// leaves its tail (or all of it) in lws's own buffer, which lws sends first, before
    /// anything written later, on the next writeable event; nothing more is written until
    /// that buffer is empty. So a reader that stops reading costs at most one write (one
    /// message, or a run of at most `coalescedWriteBytes`) in lws plus its own bounded queue, and
    /// the queue then stops draining and overflows.
    ///
    /// Also called straight from the inbox drain (`inWriteable` false): the common case, one
    /// frame for an idle socket, is written at once instead of after another trip through
    /// `poll` for `POLLOUT`. A due close, which only the connection's own writeable callback
    /// can carry out (by returning -1), is left for that callback.
    /// Returns false if the connection must close.
    func flush(_ wsi: OpaquePointer, _ live: LiveConnection, inWriteable: Bool) -> Bool {
        let connection = live.connection
        defer { run.removeAll(keepingCapacity: run.capacity <= 1024) }
        for written in 0..<Self.writesPerCallback {
            if written == Self.writesPerCallback - 1 || lws_partial_buffered(wsi) != 0 {
                lws_callback_on_writable(wsi)
                return true
            }
            run.removeAll(keepingCapacity: true)
            switch connection.outbox.withLock({ $0.next(canClose: inWriteable, maxBytes: configuration.coalescedWriteBytes, into: &run) }) {
            case .idle:
                return true
            case .closeDue:
                lws_callback_on_writable(wsi)
                return true
            case .close(let code, let reason):
                sendCloseReason(wsi, code: code, reason: reason)
                return false
            case .messages(let more):
                guard writeRun(wsi) else {
                    if inWriteable { return false }
                    live.failed = true
                    lws_callback_on_writable(wsi)
                    return true
                }
                guard more else { return true }
            }
        }
        return true
    }

    /// Writes `run` with one `lws_write`: a lone frame from its own storage, several framed
    /// one after another into the scratch buffer and sent raw. False if lws failed.
    private func writeRun(_ wsi: OpaquePointer) -> Bool {
        messagesWritten.add(run.count, ordering: .relaxed)
        messageWrites.add(1, ordering: .relaxed)
        if run.count == 1 {
            let frame = run[0]
            return lws_write(wsi, frame.payload, frame.count, LWS_WRITE_TEXT) >= frame.count
        }
        var total = 0
        for frame in run { total += frame.wireCount }
        reserveScratch(total)
        var cursor = scratch + pre
        for frame in run { cursor += frame.encode(into: cursor) }
        // LWS_WRITE_HTTP is lws's LWS_WRITE_RAW (a macro Swift does not import): the bytes go
        // out as they are, through the same partial-write buffer as a framed write.
        return lws_write(wsi, scratch + pre, total, LWS_WRITE_HTTP) >= total
    }

    func connectionDidClose(_ live: LiveConnection) {
        let id = live.connection.id
        guard let wsi = wsiByConnection.removeValue(forKey: id) else { return }
        connections[wsi] = nil
        live.connection.outbox.withLock { $0.markClosed() }
        logger.debug("websocket closed", metadata: ["ws.connection": String(id)])
        delegate.connectionClosed(live.connection)
    }

    /// Sets the code and reason of the close frame lws sends when the callback returns -1.
    func sendCloseReason(_ wsi: OpaquePointer, code: UInt16, reason: String) {
        var bytes = Array(reason.utf8.prefix(123))
        lws_close_reason(wsi, lws_close_status(rawValue: UInt32(code)), &bytes, bytes.count)
    }

    /// `lws_write` through the scratch buffer (lws needs `LWS_PRE` writable bytes before the payload).
    func writeBytes<Bytes: Collection<UInt8>>(_ wsi: OpaquePointer, _ bytes: Bytes, _ kind: lws_write_protocol) -> Bool {
        let count = bytes.count
        reserveScratch(count)
        let payload = scratch + pre
        _ = UnsafeMutableBufferPointer(start: payload, count: count).initialize(from: bytes)
        return lws_write(wsi, payload, count, kind) >= count
    }
}
