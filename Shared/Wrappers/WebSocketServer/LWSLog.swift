import CWebSockets
import Foundation
import ServiceLogging
import Synchronization

/// Routes libwebsockets' own log lines (warnings and errors only) into a `Logger`.
/// lws has one process-wide log sink, so the last server started wins.
enum LWSLog {
    private static let target = Mutex<Logger?>(nil)

    static func install(_ logger: Logger) {
        target.withLock { $0 = logger }
        lws_set_log_level(cws_log_levels(), lwsLogEmit)
    }

    fileprivate static func emit(level: Int32, line: String) {
        guard let logger = target.withLock({ $0 }) else { return }
        let message = line.trimmingCharacters(in: .whitespacesAndNewlines)
        if level & Int32(LLL_ERR) != 0 {
            logger.error(message, metadata: ["ws.source": "libwebsockets"])
        } else {
            logger.warning(message, metadata: ["ws.source": "libwebsockets"])
        }
    }
}

/// The C-callable emitter handed to `lws_set_log_level`.
private func lwsLogEmit(_ level: Int32, _ line: UnsafePointer<CChar>?) {
    guard let line else { return }
    LWSLog.emit(level: level, line: String(cString: line))
}
