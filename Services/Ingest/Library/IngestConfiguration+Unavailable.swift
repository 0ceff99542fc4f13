import Contracts
import HTTPRouting
import ServiceLogging

extension IngestConfiguration {
    /// 503 `SERVICE_UNAVAILABLE` with `Retry-After` (`INGEST_RETRY_AFTER_SECONDS`): the client keeps
    /// what it sent and tries again.
    func unavailable(_ message: String) -> HTTPError {
        HTTPError(.serviceUnavailable, code: ErrorCode.serviceUnavailable.rawValue, message: message,
                  headers: ["Retry-After": String(unavailableRetryAfterSeconds)])
    }

    /// The object store did not answer: logged, and answered as `unavailable`.
    func storageUnavailable(_ error: any Error, logger: Logger) -> HTTPError {
        logger.error("object store unavailable", metadata: ["error": "\(error)"])
        return unavailable("the object store is unavailable; retry later")
    }
}
