import ServiceLogging
internal import CLibPQ

/// Routes server notices (NOTICE, WARNING, …) into the logger instead of libpq's default
/// of printing them to stderr. Owned by its connection, so it outlives the libpq handle
/// and is passed to libpq unretained.
final class NoticeLogger: Sendable {
    let logger: Logger

    init(logger: Logger) { self.logger = logger }

    func install(on handle: OpaquePointer) {
        PQsetNoticeReceiver(handle, noticeReceiver, Unmanaged.passUnretained(self).toOpaque())
    }
}

/// libpq notice receiver: a free function, context through `Unmanaged`.
private func noticeReceiver(_ context: UnsafeMutableRawPointer?, _ result: OpaquePointer?) {
    guard let context, let result else { return }
    let sink = Unmanaged<NoticeLogger>.fromOpaque(context).takeUnretainedValue()
    let message = backbone_pq_primary_message(result).map { String(cString: $0) } ?? ""
    let severity = backbone_pq_severity(result).map { String(cString: $0) } ?? "NOTICE"
    let level: Logger.Level = severity == "WARNING" ? .warning : .debug
    sink.logger.log(level, "postgres notice: \(message)", metadata: ["pg.severity": severity])
}
