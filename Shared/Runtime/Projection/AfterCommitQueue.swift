import Synchronization

/// The after-commit stage of a runner: effects of committed batches, run in commit order by
/// one worker at a time. Effects submitted while the worker is busy wait and are handed to
/// its next round together, so a slow round (a publish waiting for acknowledgements) is
/// paid once for every batch that committed meanwhile.
final class AfterCommitQueue<Effects: Sendable>: Sendable {
    private struct State {
        var pending: [[Effects]] = []
        var pendingCount = 0
        var worker: Task<Void, Never>?
    }

    private let state = Mutex(State())

    /// Batches waiting behind the running round.
    var pendingCount: Int { state.withLock { $0.pendingCount } }

    /// Queues the effects of one committed batch (its effects as `process` returned them) and
    /// starts a worker when none runs. `run` receives everything queued, oldest first.
    func submit(_ effects: [Effects], run: @escaping @Sendable ([Effects]) async -> Void) {
        state.withLock { state in
            state.pending.append(effects)
            state.pendingCount += 1
            guard state.worker == nil else { return }
            state.worker = Task { await self.work(run) }
        }
    }

    /// Waits until everything queued so far has run.
    func drained() async {
        while let worker = state.withLock({ $0.worker }) {
            await worker.value
        }
    }

    private func work(_ run: @Sendable ([Effects]) async -> Void) async {
        while true {
            let next: [Effects]? = state.withLock { state in
                guard !state.pending.isEmpty else {
                    state.worker = nil
                    return nil
                }
                defer { state.pending = []; state.pendingCount = 0 }
                return state.pending.flatMap { $0 }
            }
            guard let next else { return }
            await run(next)
        }
    }
}
