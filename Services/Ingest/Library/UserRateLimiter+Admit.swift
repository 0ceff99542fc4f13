import Contracts
import HTTPRouting

extension UserRateLimiter {
    /// 429 `RATE_LIMITED` with `Retry-After` when `user` has no token left.
    func admit(_ user: String) throws(HTTPError) {
        if let retryAfter = acquire(user) {
            throw HTTPError(.tooManyRequests, code: ErrorCode.rateLimited.rawValue, message: "too many requests; retry later",
                            headers: ["Retry-After": String(retryAfter)])
        }
    }
}
