import Foundation

/// SuperMemo's SM-2 (P. A. Woźniak, *Optimization of learning*, master's thesis, Poznań
/// University of Technology, 1990; algorithm as published at supermemo.com, "SuperMemo 2"):
/// the mastery score 0–5 of the seed (`003_*` §五) is SM-2's response quality `q`.
///
/// - `q ≥ 3`: repetitions `n` += 1; the interval is 1 day after the first, 6 after the second,
///   then the previous interval × EF (rounded).
/// - `q < 3`: start again — `n` = 0, interval 1 day.
/// - EF' = EF + (0.1 − (5 − q)·(0.08 + (5 − q)·0.02)), never below 1.3; a new item starts at 2.5.
///
/// The review is due on the user's local day of the answer plus the interval.
public struct ReviewScheduler: Sendable {
    public struct State: Sendable, Hashable {
        public var repetition: Int
        public var intervalDays: Int
        public var easeFactor: Double

        public init(repetition: Int, intervalDays: Int, easeFactor: Double) {
            self.repetition = repetition
            self.intervalDays = intervalDays
            self.easeFactor = easeFactor
        }

        public static let new = State(repetition: 0, intervalDays: 0, easeFactor: 2.5)
    }

    public init() {}

    /// The state after an answer of quality `quality` (clamped to 0…5).
    public func next(after state: State, quality: Int) -> State {
        let q = Double(min(5, max(0, quality)))
        let ease = max(1.3, state.easeFactor + (0.1 - (5 - q) * (0.08 + (5 - q) * 0.02)))
        guard quality >= 3 else { return State(repetition: 0, intervalDays: 1, easeFactor: ease) }
        let interval = switch state.repetition {
        case 0: 1
        case 1: 6
        default: max(1, Int((Double(state.intervalDays) * state.easeFactor).rounded()))
        }
        return State(repetition: state.repetition + 1, intervalDays: min(interval, 36_500), easeFactor: ease)
    }
}
